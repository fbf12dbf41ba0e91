#!/usr/bin/env bash
# Image renditions benchmark: source → hero rendition (1024×512 cover crop, JPEG q82) with this
# project (1 and 2 threads) against vipsthumbnail, Pillow (Image.draft), ImageMagick and
# GraphicsMagick, and libjpeg-turbo's djpeg at the same DCT scale as the decode floor; then a weekly
# run where 100,000 users share 200 images. Writes the "## Image renditions" section of
# BENCHMARKS.md (between its bench-images markers, through scripts/bench-section.py; the rest of the file is left alone).
#
# Needs root once to install the reference tools (Debian packages and Pillow from PyPI).
# Environment: PASSES (default 5), USERS (default 100000), SKIP_RUN=1 to skip the weekly run.
set -euo pipefail
cd "$(dirname "$0")/.."

PASSES=${PASSES:-5}
USERS=${USERS:-100000}
OUT=bench-out/images
CORPUS=$OUT/corpus
mkdir -p "$OUT"
LOAD_BEFORE=$(cut -d" " -f1-3 /proc/loadavg)

# --- tools ------------------------------------------------------------------------------------
need=()
command -v vipsthumbnail >/dev/null || need+=(libvips-tools)
[ -x /usr/bin/convert-im6.q16 ] || need+=(imagemagick)
command -v gm >/dev/null || need+=(graphicsmagick)
command -v djpeg >/dev/null || need+=(libjpeg-turbo-progs)
[ -x /usr/bin/time ] || need+=(time)
. scripts/apt-lib.sh  # the scripts run from the package root
install_packages bench-images ${need[@]+"${need[@]}"}
python3 -c "import PIL" 2>/dev/null || python3 -m pip install --quiet pillow
IM=/usr/bin/convert-im6.q16   # the Debian binary: a `convert` earlier on PATH may be something else

echo "bench-images: building (release)"
swift build -c release --product digest 2>&1 | grep -v "unhandled; explicitly declare" | tail -1
swift build -c release --product digest-bench 2>&1 \
  | grep -v "unhandled; explicitly declare" | tail -1
BIN=.build/release/digest
# The timing drivers (`images render --passes`, `images shared`) are digest-bench's, not the CLI's.
BENCH=.build/release/digest-bench

# --- corpus -----------------------------------------------------------------------------------
if [ ! -f "$CORPUS/.complete" ]; then
  rm -rf "$CORPUS"
  "$BIN" images samples --kind bench --count 3 --out "$CORPUS"
  touch "$CORPUS/.complete"
fi
declare -A GROUPS_=(
  [large-baseline]="$CORPUS/large-*-baseline.jpg"
  [large-progressive]="$CORPUS/large-*-progressive.jpg"
  [medium-baseline]="$CORPUS/medium-*-baseline.jpg"
  [medium-progressive]="$CORPUS/medium-*-progressive.jpg"
  [rgba-png]="$CORPUS/medium-*-rgba.png"
  [palette-png]="$CORPUS/medium-*-palette.png"
)
ORDER=(large-baseline large-progressive medium-baseline medium-progressive rgba-png palette-png)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

now() { date +%s.%N; }
# median of numbers on stdin
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# The DCT scale our pipeline picks for a file (largest of 8, 4, 2 keeping the 2:1 crop ≥ 1024×512).
dct_scale() {
  python3 - "$1" <<'EOF'
import struct, sys
data = open(sys.argv[1], 'rb').read()
i = 2
while i < len(data):
    marker = data[i + 1]; length = struct.unpack('>H', data[i + 2:i + 4])[0]
    if marker in (0xC0, 0xC1, 0xC2):
        h, w = struct.unpack('>HH', data[i + 5:i + 9]); break
    i += 2 + length
cw, ch = (h * 2, h) if w / h > 2 else (w, w / 2)
print(next((s for s in (8, 4, 2) if cw / s >= 1024 and ch / s >= 512), 1))
EOF
}

# Runs a shell command; prints "wall_ms cpu_ms" (CPU = user + system of it and its children).
measure() {
  local t0 t1
  t0=$(now)
  /usr/bin/time -f "%U %S" -o "$TMP/rusage" sh -c "$1" >/dev/null 2>&1
  t1=$(now)
  echo "$(echo "($t1 - $t0) * 1000" | bc -l) $(awk '{print ($1 + $2) * 1000}' "$TMP/rusage")"
}

for f in "$CORPUS"/*.jpg; do dct_scale "$f" > "$f.scale"; done

cat > "$TMP/pillow_hero.py" <<'EOF'
import sys, time
from PIL import Image
passes, files = int(sys.argv[1]), sys.argv[2:]
TW, TH = 1024, 512
times, cpu = [], []
for _ in range(passes):
    t0 = time.perf_counter()
    c0 = time.process_time()
    for n, path in enumerate(files):
        im = Image.open(path)
        w, h = im.size
        cw, ch = (h * TW / TH, h) if w / h > TW / TH else (w, w * TH / TW)
        # Shrink-on-load: ask for the smallest size whose crop still covers the rendition.
        im.draft('RGB', (int(TW * w / cw) + 1, int(TH * h / ch) + 1))
        sw, sh = im.size
        fx, fy = sw / w, sh / h
        box = ((w - cw) / 2 * fx, (h - ch) / 2 * fy, (w + cw) / 2 * fx, (h + ch) / 2 * fy)
        if im.mode == 'P' or im.mode == 'RGBA':
            im = im.convert('RGBA')
            out = im.resize((TW, TH), Image.LANCZOS, box=box)
            bg = Image.new('RGB', (TW, TH), (255, 255, 255)); bg.paste(out, mask=out.split()[3]); out = bg
        else:
            out = im.convert('RGB').resize((TW, TH), Image.LANCZOS, box=box)
        out.save(f'/dev/null', 'JPEG', quality=82)
    times.append((time.perf_counter() - t0) * 1000 / len(files))
    cpu.append((time.process_time() - c0) * 1000 / len(files))
times.sort(); cpu.sort()
print(times[len(times) // 2], cpu[len(cpu) // 2])
EOF

# Each pass runs every tool once on the group, one after the other, so a change in the machine's load
# (it is shared) falls on all tools alike; figures are medians over the passes.
declare -A R
for g in "${ORDER[@]}"; do
  pattern=${GROUPS_[$g]}
  files=($pattern)
  n=${#files[@]}
  scale=1; [[ $g == *png ]] || scale=$(cat "${files[0]}.scale")
  echo "bench-images: $g ($n files, $PASSES passes)"
  declare -A W=() C=()
  for pass in $(seq "$PASSES"); do
    # This project: two rounds of the group per process (6 images), its own wall clock; CPU from rusage.
    for threads in 1 2; do
      /usr/bin/time -f "%U %S" -o "$TMP/rusage" "$BENCH" images render --renditions hero --threads $threads --passes 2 $pattern > "$TMP/ours.txt"
      W[ours$threads]+="$(awk '/^total:/ {for (i = 1; i <= NF; i++) if ($i == "per") print $(i - 2)}' "$TMP/ours.txt") "
      C[ours$threads]+="$(awk -v n=$((2 * n)) '{print ($1 + $2) * 1000 / n}' "$TMP/rusage") "
    done
    # vipsthumbnail: the group twice in one process.
    read -r w c < <(measure "vipsthumbnail $pattern $pattern --size 1024x512 --smartcrop centre -o '$TMP/%s-vips.jpg[Q=82]'")
    W[vips]+="$(echo "$w / (2 * $n)" | bc -l) "; C[vips]+="$(echo "$c / (2 * $n)" | bc -l) "
    read -r w c < <(python3 "$TMP/pillow_hero.py" 1 $pattern)
    W[pillow]+="$w "; C[pillow]+="$c "
    read -r w c < <(measure "for f in $pattern; do $IM \$f -resize 1024x512^ -gravity center -extent 1024x512 -quality 82 $TMP/im.jpg; done")
    W[im]+="$(echo "$w / $n" | bc -l) "; C[im]+="$(echo "$c / $n" | bc -l) "
    read -r w c < <(measure "for f in $pattern; do gm convert \$f -resize 1024x512^ -gravity center -extent 1024x512 -quality 82 $TMP/gm.jpg; done")
    W[gm]+="$(echo "$w / $n" | bc -l) "; C[gm]+="$(echo "$c / $n" | bc -l) "
    if [[ $g != *png ]]; then
      read -r w c < <(measure "for f in $pattern; do djpeg -scale 1/$scale -outfile /dev/null \$f; done")
      W[djpeg]+="$(echo "$w / $n" | bc -l) "; C[djpeg]+="$(echo "$c / $n" | bc -l) "
    fi
  done
  for t in ours1 ours2 vips pillow im gm djpeg; do
    if [ -n "${W[$t]:-}" ]; then
      R[$g,$t]=$(echo ${W[$t]} | tr ' ' '\n' | median)
      R[$g,$t,cpu]=$(echo ${C[$t]} | tr ' ' '\n' | median)
    else
      R[$g,$t]="–"; R[$g,$t,cpu]="–"
    fi
  done
  R[$g,scale]=$([[ $g == *png ]] && echo "–" || echo "1/$scale")
  unset W C
done

# What the machine gives two threads right now: djpeg on one file, 12 decodes in one stream against
# 6 + 6 in two parallel streams (the same ratio for independent processes, no shared state).
echo "bench-images: machine check, 1 vs 2 parallel djpeg streams"
ref=$(ls $CORPUS/large-*-baseline.jpg | head -1)
scales=()
for _ in $(seq 3); do
  t0=$(now); for i in $(seq 12); do djpeg -scale 1/2 -outfile /dev/null "$ref"; done; t1=$(now)
  (for i in $(seq 6); do djpeg -scale 1/2 -outfile /dev/null "$ref"; done) &
  (for i in $(seq 6); do djpeg -scale 1/2 -outfile /dev/null "$ref"; done) &
  wait; t2=$(now)
  scales+=("$(echo "($t1 - $t0) / ($t2 - $t1)" | bc -l)")
done
MACHINE_SCALE=$(printf '%s\n' "${scales[@]}" | median | xargs printf '%.2f')

echo "bench-images: peak memory, 2 threads, whole corpus"
/usr/bin/time -v "$BENCH" images render --renditions hero,icon --threads 2 --passes 2 "$CORPUS"/*.jpg "$CORPUS"/*.png > /dev/null 2> "$TMP/time.txt"
PEAK_MB=$(awk -F: '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$TMP/time.txt")

RUN_LINE="skipped (SKIP_RUN=1)"
SHARED_LINE="skipped (SKIP_RUN=1)"
if [ "${SKIP_RUN:-0}" != 1 ]; then
  echo "bench-images: $USERS users asking the attachment provider for 200 shared images"
  rm -rf "$OUT/shared" "$OUT/shared-pictures"
  "$BIN" images samples --kind demo --count 200 --out "$OUT/shared-pictures" > /dev/null
  "$BENCH" images shared --users "$USERS" --pictures "$OUT/shared-pictures" --out "$OUT/shared" > "$TMP/shared.txt" 2>/dev/null
  cat "$TMP/shared.txt"
  SHARED_DOWNLOADS=$(grep -o 'downloads: [0-9]*' "$TMP/shared.txt" | awk '{print $2}')
  SHARED_LINE="\`digest-bench images shared --users $USERS\` with the 200 pictures of \`digest images samples --kind demo --count 200\` (user i asks for picture i mod 200, 1,000 users at a time, pictures served on 127.0.0.1): $(grep '^downloads:' "$TMP/shared.txt"); $(grep '^time:' "$TMP/shared.txt"). Downloads: **${SHARED_DOWNLOADS:-?}** (target: exactly 200)."

  echo "bench-images: weekly run, $USERS users, articles sharing 200 pictures"
  rm -rf "$OUT/run"
  "$BIN" demo --out "$OUT/run" --users "$USERS" --articles 2000 --images 200 --no-broken-image --send-at now \
    --progress-interval 30 > "$TMP/run.txt" 2>/dev/null
  grep -E "^(image files|top-pick images|variants|time|served):" "$TMP/run.txt" || true
  RUN_FILES=$(grep '^image files:' "$TMP/run.txt" | sed 's/^image files: //')
  RUN_TIME=$(grep '^time:' "$TMP/run.txt" | sed 's/^time: //')
  RUN_SERVED=$(grep '^served:' "$TMP/run.txt" | sed 's/^served: *//')
  RUN_READY=$(grep '^top-pick images:' "$TMP/run.txt" | sed 's/^top-pick images: //')
  RUN_LINE="\`digest demo --users $USERS --articles 2000 --images 200 --no-broken-image --send-at now\` (the whole weekly run; 2,000 articles share 200 pictures, but only the pictures of articles that are someone's top pick are asked for): top-pick images: $RUN_READY; image files: $RUN_FILES; server: $RUN_SERVED; run: $RUN_TIME."
fi

# --- report -----------------------------------------------------------------------------------
fmt() { [[ $1 == "–" ]] && echo "–" || printf '%.1f' "$1"; }
ratio() { echo "$1 / $2" | bc -l | xargs printf '%.2f'; }
jpeg_groups=(large-baseline large-progressive medium-baseline medium-progressive)
cell() { [[ $1 == "–" ]] && echo "–" || echo "$(fmt "$1") ($(fmt "$2"))"; }
{
  echo "## Image renditions"
  echo
  echo "Milliseconds per image, wall time (CPU time, user + system, in brackets; for 2 threads summed over both):"
  echo
  echo "| source | DCT scale | this, 1 thread | this, 2 threads | vipsthumbnail | Pillow (draft) | ImageMagick | GraphicsMagick | djpeg floor |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
  for g in "${ORDER[@]}"; do
    echo "| $g | ${R[$g,scale]} | $(cell "${R[$g,ours1]}" "${R[$g,ours1,cpu]}") | $(cell "${R[$g,ours2]}" "${R[$g,ours2,cpu]}") | $(cell "${R[$g,vips]}" "${R[$g,vips,cpu]}") | $(cell "${R[$g,pillow]}" "${R[$g,pillow,cpu]}") | $(cell "${R[$g,im]}" "${R[$g,im,cpu]}") | $(cell "${R[$g,gm]}" "${R[$g,gm,cpu]}") | $(cell "${R[$g,djpeg]}" "${R[$g,djpeg,cpu]}") |"
  done
  echo
  targets=()
  for g in "${jpeg_groups[@]}"; do
    best=vips; for t in pillow im gm; do (( $(echo "${R[$g,$t]} < ${R[$g,$best]}" | bc -l) )) && best=$t; done
    targets+=("$g: ÷ fastest other ($best) $(ratio ${R[$g,ours1]} ${R[$g,$best]}), ÷ djpeg $(ratio ${R[$g,ours1]} ${R[$g,djpeg]}), 2-thread speed-up $(ratio ${R[$g,ours1]} ${R[$g,ours2]}), ImageMagick ÷ this $(ratio ${R[$g,im]} ${R[$g,ours1]})")
  done
  echo "- Reference: the other tools on the same files; targets on JPEG sources (wall time): this ÷ the fastest other ≤ 1, this ÷ djpeg's decode floor ≤ 1.5, 2-thread speed-up ≥ 1.8, ImageMagick ÷ this ≥ 3. Measured: $(printf '%s; ' "${targets[@]}" | sed 's/; $//'). Task: source → hero rendition (2:1 cover crop, 1024×512, JPEG q82, written); corpus from \`digest images samples --kind bench\` (3 files a row; large 4000×3000 JPEG q90, ~$(du -k "$CORPUS"/large-1-baseline.jpg | cut -f1) KB, medium 1600×1200, RGBA PNG with alpha, palette PNG); medians over $PASSES passes. This project: \`digest-bench images render --renditions hero --passes 2\` (start-up excluded); vipsthumbnail \`--size 1024x512 --smartcrop centre\`; Pillow with \`Image.draft\`; ImageMagick 6 and GraphicsMagick one process per file; djpeg \`-scale 1/N\` decoding only."
  echo "- Two threads on this machine during the run: djpeg in two parallel streams against one gave ${MACHINE_SCALE}× (the ceiling of the 2-thread column). Peak memory, 2 threads, hero and icon of the whole corpus: ${PEAK_MB} MB (target: under 200 MB)."
  echo "- Shared images, provider alone: $SHARED_LINE Whole weekly run: $RUN_LINE"
  echo "- Command: \`scripts/bench-images.sh\` (a step of \`make bench\`; knobs \`PASSES=$PASSES\`, \`USERS=$USERS\`, \`SKIP_RUN=1\`; installs vipsthumbnail, ImageMagick, GraphicsMagick, djpeg and Pillow)."
  echo "- Machine: $(python3 scripts/bench-section.py --machine); load average before: $LOAD_BEFORE; $(swift --version 2>/dev/null | head -1), release build. Measured $(date -u +%Y-%m-%dT%H:%M:%SZ) at $(git rev-parse --short HEAD)."
} > "$OUT/section.md"
python3 scripts/bench-section.py bench-images scripts/bench-images.sh <"$OUT/section.md"
cat "$OUT/section.md"
