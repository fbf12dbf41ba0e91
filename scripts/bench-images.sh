#!/usr/bin/env bash
# Image renditions benchmark: source → hero rendition (1024×512 cover crop, JPEG q82) with this
# project (1 and 2 threads) against vipsthumbnail, Pillow (Image.draft), ImageMagick and
# GraphicsMagick, and libjpeg-turbo's djpeg at the same DCT scale as the decode floor; then a weekly
# run where 100,000 users share 200 images. Writes the "## Image renditions" section of
# BENCHMARKS.md (between its own markers; the rest of the file is left alone).
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

# --- tools ------------------------------------------------------------------------------------
need=()
command -v vipsthumbnail >/dev/null || need+=(libvips-tools)
[ -x /usr/bin/convert-im6.q16 ] || need+=(imagemagick)
command -v gm >/dev/null || need+=(graphicsmagick)
command -v djpeg >/dev/null || need+=(libjpeg-turbo-progs)
[ -x /usr/bin/time ] || need+=(time)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then echo "bench-images: missing ${need[*]}; run as root" >&2; exit 1; fi
  echo "bench-images: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
python3 -c "import PIL" 2>/dev/null || python3 -m pip install --quiet pillow
IM=/usr/bin/convert-im6.q16   # the Debian binary: a `convert` earlier on PATH may be something else

echo "bench-images: building (release)"
swift build -c release --product digest 2>&1 | grep -v "unhandled; explicitly declare" | tail -1
BIN=.build/release/digest

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

# Per-image milliseconds of one tool on one group: median over passes of (pass time / files).
time_per_process() {  # group, command template with {in} {out}
  local files=($1) template=$2 times=()
  for _ in $(seq "$PASSES"); do
    local t0 t1 n=0
    t0=$(now)
    for f in "${files[@]}"; do
      local cmd=${template//\{in\}/$f}
      cmd=${cmd//\{out\}/$TMP/out-$n.jpg}
      cmd=${cmd//\{scale\}/$(cat "$f.scale" 2>/dev/null || echo 1)}
      eval "$cmd" >/dev/null 2>&1
      n=$((n + 1))
    done
    t1=$(now)
    times+=("$(echo "($t1 - $t0) * 1000 / ${#files[@]}" | bc -l)")
  done
  printf '%s\n' "${times[@]}" | median
}

for f in "$CORPUS"/*.jpg; do dct_scale "$f" > "$f.scale"; done

cat > "$TMP/pillow_hero.py" <<'EOF'
import sys, time
from PIL import Image
passes, files = int(sys.argv[1]), sys.argv[2:]
TW, TH = 1024, 512
times = []
for _ in range(passes):
    t0 = time.perf_counter()
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
times.sort()
print(times[len(times) // 2])
EOF

ours() {  # group, threads → per-image ms (median over passes), from the program's own timer
  "$BIN" images render --renditions hero --threads "$2" --passes "$PASSES" $1 | awk '/^total:/ {for (i = 1; i <= NF; i++) if ($i == "per") print $(i - 2)}'
}

declare -A R
for g in "${ORDER[@]}"; do
  pattern=${GROUPS_[$g]}
  echo "bench-images: $g"
  R[$g,ours1]=$(ours "$pattern" 1)
  R[$g,ours2]=$(ours "$pattern" 2)
  # vipsthumbnail does all files of a group in one process, like ours.
  vips_times=()
  for _ in $(seq "$PASSES"); do
    t0=$(now); vipsthumbnail $pattern --size 1024x512 --smartcrop centre -o "$TMP/%s-vips.jpg[Q=82]" 2>/dev/null; t1=$(now)
    vips_times+=("$(echo "($t1 - $t0) * 1000 / $(ls $pattern | wc -l)" | bc -l)")
  done
  R[$g,vips]=$(printf '%s\n' "${vips_times[@]}" | median)
  R[$g,pillow]=$(python3 "$TMP/pillow_hero.py" "$PASSES" $pattern)
  R[$g,im]=$(time_per_process "$pattern" "$IM {in} -resize 1024x512^ -gravity center -extent 1024x512 -quality 82 {out}")
  R[$g,gm]=$(time_per_process "$pattern" "gm convert {in} -resize 1024x512^ -gravity center -extent 1024x512 -quality 82 {out}")
  if [[ $g == *png ]]; then
    R[$g,djpeg]="–"; R[$g,scale]="–"
  else
    R[$g,djpeg]=$(time_per_process "$pattern" "djpeg -scale 1/{scale} -outfile /dev/null {in}")
    R[$g,scale]="1/$(cat $(ls $pattern | head -1).scale)"
  fi
done

echo "bench-images: peak memory, 2 threads, whole corpus"
/usr/bin/time -v "$BIN" images render --renditions hero,icon --threads 2 --passes 2 "$CORPUS"/*.jpg "$CORPUS"/*.png > /dev/null 2> "$TMP/time.txt"
PEAK_MB=$(awk -F: '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$TMP/time.txt")

RUN_LINE="skipped (SKIP_RUN=1)"
if [ "${SKIP_RUN:-0}" != 1 ]; then
  echo "bench-images: weekly run, $USERS users sharing 200 images"
  rm -rf "$OUT/run"
  "$BIN" demo --out "$OUT/run" --users "$USERS" --articles 2000 --images 200 --no-broken-image --send-at now \
    --progress-interval 30 > "$TMP/run.txt" 2>/dev/null
  cat "$TMP/run.txt" | grep -E "^(image files|top-pick images|variants|time|served):" || true
  RUN_FILES=$(grep '^image files:' "$TMP/run.txt" | sed 's/^image files: //')
  RUN_TIME=$(grep '^time:' "$TMP/run.txt" | sed 's/^time: //')
  RUN_SERVED=$(grep '^served:' "$TMP/run.txt" | sed 's/^served: *//')
  DOWNLOADS=$(echo "$RUN_FILES" | grep -o 'downloads [0-9]*' | awk '{print $2}')
  RUN_LINE="$USERS users, 2,000 articles sharing 200 pictures served on 127.0.0.1: image files: $RUN_FILES; server: $RUN_SERVED; run: $RUN_TIME. Downloads: **${DOWNLOADS:-?}** (target: exactly 200)."
fi

# --- report -----------------------------------------------------------------------------------
fmt() { [[ $1 == "–" ]] && echo "–" || printf '%.1f' "$1"; }
ratio() { echo "$1 / $2" | bc -l | xargs printf '%.2f'; }
jpeg_groups=(large-baseline large-progressive medium-baseline medium-progressive)
{
  echo "## Image renditions"
  echo
  echo "Produced by \`scripts/bench-images.sh\` on $(date -u +%Y-%m-%dT%H:%M:%SZ), at commit $(git rev-parse --short HEAD)."
  echo
  echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/ {print $2}') GiB RAM, $(swift --version 2>/dev/null | head -1), release build; load average before: $(cut -d' ' -f1-3 /proc/loadavg)."
  echo
  echo "Task: source file → hero rendition (2:1 cover crop, 1024×512, JPEG quality 82, written). Corpus generated by \`digest images samples --kind bench\`: 3 files per row — large = 4000×3000 photo-like pictures (JPEG q90, ~$(du -k "$CORPUS"/large-1-baseline.jpg | cut -f1) KB), medium = 1600×1200; RGBA PNG with an alpha mask; palette PNG (6×6×6 cube). Figures are milliseconds per image, the median over $PASSES passes of (pass time ÷ files). This project and vipsthumbnail process a whole row in one process (\`digest images render --renditions hero\`, \`vipsthumbnail --size 1024x512 --smartcrop centre\`), Pillow in one Python process (\`Image.draft\` shrink-on-load, LANCZOS resize of the crop box, save q82), ImageMagick 6 (\`convert IN -resize 1024x512^ -gravity center -extent 1024x512 -quality 82\`) and GraphicsMagick (same arguments) one process per file, as they are usually run; djpeg (\`djpeg -scale 1/N -outfile /dev/null\`, one process per file) decodes the whole frame at the DCT scale this project picks, with no resize or encode: the decode floor."
  echo
  echo "| source | DCT scale | this, 1 thread | this, 2 threads | vipsthumbnail | Pillow (draft) | ImageMagick | GraphicsMagick | djpeg floor |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
  for g in "${ORDER[@]}"; do
    echo "| $g | ${R[$g,scale]} | $(fmt ${R[$g,ours1]}) | $(fmt ${R[$g,ours2]}) | $(fmt ${R[$g,vips]}) | $(fmt ${R[$g,pillow]}) | $(fmt ${R[$g,im]}) | $(fmt ${R[$g,gm]}) | $(fmt ${R[$g,djpeg]}) |"
  done
  echo
  echo "Targets on JPEG sources (ratios from the table above, same run):"
  echo
  echo "| source | fastest other tool (ms) | this ÷ fastest other (≤ 1) | this ÷ djpeg floor (≤ 1.5) | 2-thread speed-up (≥ 1.8) | ImageMagick ÷ this (≥ 3) |"
  echo "|---|---|---:|---:|---:|---:|"
  for g in "${jpeg_groups[@]}"; do
    best=vips; for t in pillow im gm; do (( $(echo "${R[$g,$t]} < ${R[$g,$best]}" | bc -l) )) && best=$t; done
    echo "| $g | $best $(fmt ${R[$g,$best]}) | $(ratio ${R[$g,ours1]} ${R[$g,$best]}) | $(ratio ${R[$g,ours1]} ${R[$g,djpeg]}) | $(ratio ${R[$g,ours1]} ${R[$g,ours2]}) | $(ratio ${R[$g,im]} ${R[$g,ours1]}) |"
  done
  echo
  echo "Peak memory, 2 threads, hero and icon of the whole corpus (\`/usr/bin/time -v\`, maximum RSS): **${PEAK_MB} MB** (target: under 200 MB)."
  echo
  echo "Shared images: $RUN_LINE"
} > "$OUT/section.md"

python3 - "$OUT/section.md" <<'EOF'
import os, sys
section = open(sys.argv[1]).read().rstrip() + "\n"
begin = "<!-- bench-images:begin: written by scripts/bench-images.sh; edit outside these markers -->"
end = "<!-- bench-images:end -->"
path = "BENCHMARKS.md"
text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
block = f"{begin}\n{section}{end}\n"
if begin in text and end in text:
    text = text[:text.index(begin)] + block + text[text.index(end) + len(end) + 1:]
else:
    text = text.rstrip() + "\n\n" + block
open(path, "w").write(text)
EOF
cat "$OUT/section.md"
echo "bench-images: wrote the Image renditions section of BENCHMARKS.md"
