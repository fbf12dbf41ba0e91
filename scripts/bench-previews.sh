#!/usr/bin/env bash
# Previews benchmark (release build): time per PNG at 3x for each surface and state, against the
# reference of headless Chromium screenshotting an equivalent HTML mock-up of the collapsed Android
# card on the same machine. Writes the "## Previews" section of BENCHMARKS.md (between its bench-previews markers).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
iterations=${PREVIEW_BENCH_ITERATIONS:-200}
chromium_runs=${PREVIEW_BENCH_CHROMIUM_RUNS:-10}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

swift build -c release --product PreviewBenchmark >/dev/null
bin="$(swift build -c release --show-bin-path)/PreviewBenchmark"
"$bin" Tests/DigestPreviewTests/Fixtures "$iterations" 3 > "$out/renderer.tsv"

chromium_ms="n/a"
chromium_note="chromium not installed"
if command -v chromium >/dev/null 2>&1; then
  mock="file://$root/Benchmarks/Previews/reference/android-collapsed.html"
  args=(--headless --no-sandbox --disable-gpu --hide-scrollbars --force-device-scale-factor=3
        --window-size=376,108 --user-data-dir="$out/profile")
  chromium "${args[@]}" --screenshot="$out/warm.png" "$mock" >/dev/null 2>&1 || true
  start=$(date +%s%N)
  for i in $(seq "$chromium_runs"); do
    chromium "${args[@]}" --screenshot="$out/shot-$i.png" "$mock" >/dev/null 2>&1
  done
  end=$(date +%s%N)
  chromium_ms=$(python3 -c "print(f'{($end - $start) / 1e6 / $chromium_runs:.0f}')")
  chromium_note="headless Chromium $(chromium --version 2>/dev/null | awk '{print $2}'), one process per screenshot (start-up included), mean of $chromium_runs"
fi

python3 - "$out/renderer.tsv" "$chromium_ms" "$chromium_note" "$iterations" <<'PY'
import sys, datetime, os, subprocess
tsv, chromium_ms, note, iterations = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
rows = [line.rstrip("\n").split("\t") for line in open(tsv)]
first = next(r for r in rows if r[0] == "first")[1]
surfaces = [r for r in rows if r[0] != "first"]
collapsed = [float(r[3]) for r in surfaces if r[1] == "collapsed"]
lines = ["## Previews", "",
  "| surface | state | PNG px | median ms | p95 ms | PNG bytes |", "|---|---|---|---|---|---|"]
for name, state, size, median, p95, size_bytes in surfaces:
    lines.append(f"| {name} | {state} | {size.replace('x', '×')} | {median} | {p95} | {int(size_bytes):,} |")
lines.append("")
facts = (f"slowest collapsed card {max(collapsed):.2f} ms (target: under 20 ms). First render on a new thread (font map "
         f"set-up): {first} ms, paid once per thread of the renderers' fixed pool.")
if chromium_ms != "n/a":
    ratio = float(chromium_ms) / max(collapsed)
    lines.append(f"- Reference: Chromium rendering the collapsed Android card as HTML to a 3× screenshot: {chromium_ms} ms per "
                 f"PNG ({note}). The renderer is {ratio:.0f}× faster on its slowest collapsed card (target: 10×); " + facts)
else:
    lines.append(f"- Reference: not measured ({note}); " + facts)
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip() or "unknown"
machine = subprocess.run([sys.executable, "scripts/bench-section.py", "--machine"], capture_output=True, text=True).stdout.strip()
lines += [f"- Command: `scripts/bench-previews.sh` (a step of `make bench`; knobs `PREVIEW_BENCH_ITERATIONS={iterations}`, "
          f"`PREVIEW_BENCH_CHROMIUM_RUNS`): one rendering thread, scale 3, median and p95 of {iterations} renders each, layout + "
          "drawing + PNG encoding, fixtures from `Tests/DigestPreviewTests/Fixtures`.",
          f"- Machine: {machine} (a shared machine inflates every figure). Measured {datetime.date.today()} at {commit}, release build."]
section = "\n".join(lines) + "\n"
subprocess.run([sys.executable, "scripts/bench-section.py", "bench-previews", "scripts/bench-previews.sh"], input=section, text=True, check=True)
print(section)
PY
