#!/usr/bin/env bash
# Template comparison benchmark (release build): `digest preview --compare` over every reader of a
# 1,000-reader demo, once with two identical folders (every reader composed twice, nothing drawn) and
# once with a one-word change in the Polish title (the Polish messages that use it drawn old and new).
# Time per reader composed comes from the first; time per changed message drawn from the difference.
# Writes the "## Template comparison" section of BENCHMARKS.md (between its bench-compare markers).
set -euo pipefail
cd "$(dirname "$0")/.."
users=${COMPARE_BENCH_USERS:-1000}
runs=${COMPARE_BENCH_RUNS:-5}
week=2026-W46
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

swift build -c release --product digest >/dev/null
bin="$(swift build -c release --show-bin-path)/digest"
"$bin" demo --out "$out/demo" --users "$users" --images 0 --week "$week" --as-of 2026-11-16T12:00:00Z >/dev/null
cp -r Templates "$out/new"
sed -i 's/Twój tydzień/Wasz tydzień/' "$out/new/pl/title.mustache"
grep -q 'Wasz tydzień' "$out/new/pl/title.mustache"

python3 - "$bin" "$out" "$week" "$runs" "$users" <<'PY'
import json, os, resource, statistics, subprocess, sys, time, datetime
bin, out, week, runs, users = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])

def compare(new, name):
    """Wall and CPU seconds of one comparison, and its totals."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    subprocess.run([bin, "preview", "--db", f"{out}/demo/digest.sqlite", "--week", week, "--compare", "Templates",
                    "--templates", new, "--out", f"{out}/{name}"], check=True, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    totals = json.load(open(f"{out}/{name}/compare.json"))["totals"]
    return wall, cpu, totals

same, changed = [], []
for i in range(runs):
    same.append(compare("Templates", f"same-{i}"))
    changed.append(compare(f"{out}/new", f"changed-{i}"))
totals = changed[0][2]
readers, drawn = totals["readers"], totals["changed"]
assert readers == users and drawn > 0 and same[0][2]["changed"] == 0, (totals, same[0][2])
med = lambda xs: statistics.median(xs)
same_wall, same_cpu = med([r[0] for r in same]), med([r[1] for r in same])
changed_wall, changed_cpu = med([r[0] for r in changed]), med([r[1] for r in changed])
pngs = len([f for f in os.listdir(f"{out}/changed-0/png") if f.endswith(".png")])
lines = ["## Template comparison", "",
  "| comparison | readers | messages | changed (drawn) | PNGs | median wall s | median CPU s | per reader composed (both folders) | per changed message drawn |",
  "|---|---|---|---|---|---|---|---|---|",
  f"| identical folders | {readers:,} | {same[0][2]['messages']:,} | 0 | 0 | {same_wall:.2f} | {same_cpu:.2f} | "
  f"{1000 * same_wall / readers:.2f} ms wall, {1000 * same_cpu / readers:.2f} ms CPU | — |",
  f"| one word of `pl/title.mustache` | {readers:,} | {totals['messages']:,} | {drawn:,} | {pngs:,} | {changed_wall:.2f} | {changed_cpu:.2f} | "
  f"(as above) | {1000 * (changed_wall - same_wall) / drawn:.1f} ms wall, {1000 * (changed_cpu - same_cpu) / drawn:.1f} ms CPU |",
  ""]
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip() or "unknown"
machine = subprocess.run([sys.executable, "scripts/bench-section.py", "--machine"], capture_output=True, text=True).stdout.strip()
lines += [
  "- Reference: none outside; the identical-folder run is the composing cost alone (the whole process: start, "
  "the week's articles, every reader's history read once and composed with both folders, compare.json and index.html). "
  "A changed message costs the difference: both sides' collapsed and expanded PNGs at scale 3 on the renderer pool "
  "(a thread per core, up to four), written under `png/`, and its entry.",
  f"- Command: `scripts/bench-compare.sh` (`make bench-compare`; knobs `COMPARE_BENCH_USERS={users}`, "
  f"`COMPARE_BENCH_RUNS={runs}`): `digest demo --users {users} --images 0 --week {week}`, then "
  f"`digest preview --compare Templates --templates NEW --week {week}` over every reader, {runs} runs of each in turns, medians.",
  f"- Machine: {machine} (a shared machine inflates every figure). Measured {datetime.date.today()} at {commit}, release build."]
section = "\n".join(lines) + "\n"
subprocess.run([sys.executable, "scripts/bench-section.py", "bench-compare", "scripts/bench-compare.sh (make bench-compare)"],
               input=section, text=True, check=True)
print(section)
PY
