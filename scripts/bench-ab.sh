#!/usr/bin/env bash
# Two builds side by side: the weekly run on SQLite and on PostgreSQL, `digest send` and the preview
# renderer, each measured on build A and build B in turns (A B, then B A, …) on the same data, in CPU
# time per user, message or PNG. For a change that may cost speed: build the previous commit in a
# second checkout and compare.
#
#   git worktree add --detach ../digest-base HEAD~1
#   scripts/bench-ab.sh --build ../digest-base .      # builds both (release), then measures
#
# Each checkout needs (what --build makes): .build/release/{digest,digest-fake-fcm},
# Benchmarks/.build/release/digest-bench and Benchmarks/Previews/.build/release/PreviewBenchmark.
# Data come from A's digest-bench and A's demo, so both builds see the same rows.
#
# Knobs (environment): AB_ROUNDS=3 (turns per build and benchmark), AB_USERS=100000 (SQLite run, 10
# reads each), AB_PG_USERS=200000 (PostgreSQL run, 10 reads each), AB_SEND_USERS=6000 (the demo whose
# outbox `digest send` delivers), AB_PREVIEW_ITERATIONS=100, AB_WEEK=2026-W46, AB_OUT=bench-out/ab,
# AB_PARTS="sqlite postgres send previews". Prints a Markdown table (also in $AB_OUT/ab.md).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=0
if [ "${1:-}" = "--build" ]; then BUILD=1; shift; fi
[ $# -eq 2 ] || { echo "usage: scripts/bench-ab.sh [--build] CHECKOUT_A CHECKOUT_B" >&2; exit 64; }
A=$(cd "$1" && pwd)
B=$(cd "$2" && pwd)
ROUNDS=${AB_ROUNDS:-3}
USERS=${AB_USERS:-100000}
PG_USERS=${AB_PG_USERS:-200000}
SEND_USERS=${AB_SEND_USERS:-6000}
PREVIEW_ITERATIONS=${AB_PREVIEW_ITERATIONS:-100}
WEEK=${AB_WEEK:-2026-W46}
OUT=$(mkdir -p "${AB_OUT:-bench-out/ab}" && cd "${AB_OUT:-bench-out/ab}" && pwd)
PARTS=${AB_PARTS:-"sqlite postgres send previews"}
log() { printf 'bench-ab: %s\n' "$*" >&2; }
CLUSTER="" SERVER=""
as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
  [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null || true
  if [ -n "$CLUSTER" ]; then as_pg "$PGBIN/pg_ctl" -D "$CLUSTER/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$CLUSTER"; fi
}
trap cleanup EXIT

. scripts/apt-lib.sh
[ -x /usr/bin/time ] || install_packages bench-ab time

if [ "$BUILD" = 1 ]; then
  for dir in "$A" "$B"; do
    log "building $dir (release)"
    (cd "$dir" && swift build -c release --product digest >/dev/null && swift build -c release --product digest-fake-fcm >/dev/null \
      && swift build -c release --package-path Benchmarks --scratch-path Benchmarks/.build --product digest-bench >/dev/null \
      && (cd Benchmarks/Previews && swift build -c release >/dev/null))
  done
fi

RESULTS="$OUT/results.tsv"
printf 'part\tbuild\tround\tunits\tcpu_s\twall_s\n' >"$RESULTS"
# Runs a command under time(1) and appends "part build round units cpu wall" to the results.
timed() {
  local part=$1 build=$2 round=$3 units=$4
  shift 4
  /usr/bin/time -f "%U %S %e" -o "$OUT/time" "$@" >"$OUT/$part-$build-$round.log" 2>&1 || {
    echo "bench-ab: $part on $build failed:" >&2; tail -n 20 "$OUT/$part-$build-$round.log" >&2; exit 1; }
  awk -v p="$part" -v b="$build" -v r="$round" -v u="$units" '{ printf "%s\t%s\t%s\t%s\t%.2f\t%.2f\n", p, b, r, u, $1 + $2, $3 }' \
    "$OUT/time" >>"$RESULTS"
}
# The builds in this round's order: A B, then B A, …
order() { if [ $(($1 % 2)) -eq 1 ]; then echo "A B"; else echo "B A"; fi; }
dir_of() { if [ "$1" = A ]; then echo "$A"; else echo "$B"; fi; }

# ---- the weekly run on SQLite ----
if [[ " $PARTS " == *" sqlite "* ]]; then
  log "sqlite: generating $USERS users, $((USERS * 10)) reads"
  rm -f "$OUT"/gen.sqlite*
  "$A/Benchmarks/.build/release/digest-bench" generate --db "$OUT/gen.sqlite" --users "$USERS" --reads "$((USERS * 10))" \
    --week "$WEEK" >/dev/null
  for round in $(seq "$ROUNDS"); do
    for build in $(order "$round"); do
      rm -f "$OUT"/run.sqlite*
      cp "$OUT/gen.sqlite" "$OUT/run.sqlite"
      log "sqlite: round $round, $build"
      timed sqlite "$build" "$round" "$USERS" \
        "$(dir_of "$build")/.build/release/digest" run --db "$OUT/run.sqlite" --week "$WEEK" --send-at now --progress-interval 0
    done
  done
  rm -f "$OUT"/run.sqlite* "$OUT"/gen.sqlite*
fi

# ---- the weekly run on PostgreSQL (a throwaway cluster) ----
if [[ " $PARTS " == *" postgres "* ]]; then
  PGBIN=$(dirname "$(command -v initdb 2>/dev/null || ls /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n1)")
  CLUSTER=$(mktemp -d /tmp/digest-ab-pg.XXXXXX)
  chmod 755 "$CLUSTER"
  if [ "$(id -u)" -eq 0 ]; then chown postgres "$CLUSTER"; fi
  PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  as_pg "$PGBIN/initdb" -D "$CLUSTER/data" -A trust -U postgres --no-sync >/dev/null
  as_pg "$PGBIN/pg_ctl" -D "$CLUSTER/data" -w -l "$CLUSTER/log" \
    -o "-c listen_addresses=127.0.0.1 -c port=$PORT -c unix_socket_directories=$CLUSTER -c shared_buffers=1GB -c max_wal_size=8GB" \
    start >/dev/null
  PSQL=(psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PORT" -U postgres)
  "${PSQL[@]}" -d postgres -c "CREATE DATABASE bench"
  URL="postgres://postgres@127.0.0.1:$PORT/bench?sslmode=disable"
  "$A/.build/release/digest" migrate --db "$URL" >/dev/null
  log "postgres: generating $PG_USERS users, $((PG_USERS * 10)) reads in the server"
  "${PSQL[@]}" -d bench -v users="$PG_USERS" -v reads="$((PG_USERS * 10))" -v week="$WEEK" \
    -f scripts/postgres-bench-data.sql >/dev/null
  for round in $(seq "$ROUNDS"); do
    for build in $(order "$round"); do
      "${PSQL[@]}" -d bench -c "DELETE FROM digest_runs WHERE week = '$WEEK'" -c "TRUNCATE digest_outbox" -c "CHECKPOINT"
      log "postgres: round $round, $build"
      timed postgres "$build" "$round" "$PG_USERS" \
        "$(dir_of "$build")/.build/release/digest" run --db "$URL" --week "$WEEK" --send-at now --progress-interval 0
    done
  done
fi

# ---- digest send against the fake FCM server (A's), from the same outbox each time ----
if [[ " $PARTS " == *" send "* ]]; then
  log "send: the demo's run for $SEND_USERS users, every message due now"
  rm -rf "$OUT/demo"
  "$A/.build/release/digest" demo --out "$OUT/demo" --users "$SEND_USERS" --send-at now >/dev/null
  python3 -c "import sqlite3; sqlite3.connect('$OUT/demo/digest.sqlite').execute('PRAGMA wal_checkpoint(TRUNCATE)')"
  cp "$OUT/demo/digest.sqlite" "$OUT/outbox-fresh.sqlite"
  MESSAGES=$("$A/.build/release/digest" queue stats --db "$OUT/outbox-fresh.sqlite" --json \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["due"])')
  rm -f "$OUT/port"
  "$A/.build/release/digest-fake-fcm" --port 0 --port-file "$OUT/port" --credentials "$OUT/sa.json" --static-token bench-token \
    >"$OUT/fake-fcm.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 1 100); do [ -s "$OUT/port" ] && break; sleep 0.1; done
  for round in $(seq "$ROUNDS"); do
    for build in $(order "$round"); do
      rm -f "$OUT"/outbox.sqlite*
      cp "$OUT/outbox-fresh.sqlite" "$OUT/outbox.sqlite"
      log "send: round $round, $build ($MESSAGES messages)"
      timed send "$build" "$round" "$MESSAGES" "$(dir_of "$build")/.build/release/digest" send --db "$OUT/outbox.sqlite" \
        --credentials "$OUT/sa.json" --endpoint "http://127.0.0.1:$(cat "$OUT/port")" --concurrency 64 --drain
    done
  done
  kill -TERM "$SERVER"; wait "$SERVER" || true
  SERVER=""
fi

# ---- the preview renderer (PreviewBenchmark: every surface and state, scale 3) ----
if [[ " $PARTS " == *" previews "* ]]; then
  for round in $(seq "$ROUNDS"); do
    for build in $(order "$round"); do
      log "previews: round $round, $build"
      dir=$(dir_of "$build")
      surfaces=$("$dir/Benchmarks/Previews/.build/release/PreviewBenchmark" "$dir/Tests/DigestPreviewTests/Fixtures" 1 3 | grep -vc '^first')
      timed previews "$build" "$round" "$((surfaces * PREVIEW_ITERATIONS))" \
        "$dir/Benchmarks/Previews/.build/release/PreviewBenchmark" "$dir/Tests/DigestPreviewTests/Fixtures" "$PREVIEW_ITERATIONS" 3
    done
  done
fi

python3 - "$RESULTS" "$A" "$B" <<'PY' | tee "$OUT/ab.md"
import statistics, sys
path, a, b = sys.argv[1:4]
rows = [line.rstrip("\n").split("\t") for line in open(path)][1:]
units = {"sqlite": "user", "postgres": "user", "send": "message", "previews": "PNG"}
print(f"A = {a}, B = {b}; turns A B, B A, …; CPU = user + system time of the measured process.\n")
print("| benchmark | units | A: CPU-µs per unit (median; runs) | B: CPU-µs per unit (median; runs) | B ÷ A | spread of A (max ÷ min) |")
print("|---|---|---|---|---|---|")
for part in ["sqlite", "postgres", "send", "previews"]:
    per = {}
    for build in "AB":
        per[build] = [float(r[4]) / int(r[3]) * 1e6 for r in rows if r[0] == part and r[1] == build]
    if not per["A"] or not per["B"]:
        continue
    n = next(int(r[3]) for r in rows if r[0] == part)
    ma, mb = statistics.median(per["A"]), statistics.median(per["B"])
    fmt = lambda xs: ", ".join(f"{x:.1f}" for x in xs)
    print(f"| {part} | {n:,} {units[part]}s | {ma:.1f} ({fmt(per['A'])}) | {mb:.1f} ({fmt(per['B'])}) | {mb / ma:.3f} | {max(per['A']) / min(per['A']):.3f} |")
PY
