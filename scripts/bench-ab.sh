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
# digest-bench (.build/release, or Benchmarks/.build/release in checkouts from before it joined the
# root package) and PreviewBenchmark (.build/release/PreviewBenchmark, or in
# Benchmarks/Previews/.build/release in checkouts from before the previews left the library products).
#
# Data (AB_DATA):
#   same (the default)  A's digest-bench, A's scripts/postgres-bench-data.sql (after A's `digest
#                       migrate`) and A's demo make the data, so both builds see the same rows (B must
#                       read A's schema).
#   own                 for the weekly runs, each build's data come from its own checkout: its own
#                       `digest-bench generate` (SQLite) and its own `digest migrate` and
#                       scripts/postgres-bench-data.sql (PostgreSQL, a database per build in the one
#                       cluster), each with its own defaults, at the same user count; the reads per
#                       user are the checkout's own (scripts/bench.sh's BENCH_READS_PER_USER default;
#                       the SQL file's default reads over its default users). Each commit is measured
#                       the way its own `make bench` measures it: for a change of schema or of the
#                       data's shape, when the builds cannot, or should not, run on the same rows.
#                       `send` and `previews` use A's data either way.
# In both modes the reads per user are the generating checkout's defaults as above (10 when it
# names none). The PostgreSQL outbox is put back as generated before every turn (the earlier weeks'
# digests a generator may write stay; the run's week goes), and the server's CPU (the postmaster and
# its processes, from /proc) is recorded next to the run's.
#
# Knobs (environment): AB_DATA=same, AB_ROUNDS=3 (turns per build and benchmark), AB_USERS=100000
# (SQLite run), AB_PG_USERS=200000 (PostgreSQL run), AB_SEND_USERS=6000 (the demo whose outbox
# `digest send` delivers), AB_PREVIEW_ITERATIONS=100, AB_WEEK=2026-W46, AB_OUT=bench-out/ab,
# AB_RUN_FLAGS_A/AB_RUN_FLAGS_B (more `digest run` options per build), AB_GENERATE_FLAGS_A/AB_GENERATE_FLAGS_B
# (more `digest-bench generate` options for each build's SQLite data, e.g. "--preferences 30"), AB_PARTS="sqlite postgres send previews" (and send-h2: `digest send` with its defaults over TLS to the
# fake FCM answering AB_SEND_DELAY=80 ms late; give it AB_SEND_USERS=34000 for ~50,000 messages). Prints a Markdown table (also in $AB_OUT/ab.md).
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
DATA=${AB_DATA:-same}
case "$DATA" in same | own) ;; *) echo "bench-ab: AB_DATA must be same or own, not $DATA" >&2; exit 64 ;; esac
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
      && if [ -f Benchmarks/Package.swift ]; then swift build -c release --package-path Benchmarks --scratch-path Benchmarks/.build --product digest-bench >/dev/null
         else swift build -c release --product digest-bench >/dev/null; fi \
      && if [ -f Benchmarks/Previews/Package.swift ]; then (cd Benchmarks/Previews && swift build -c release >/dev/null)
         else swift build -c release --product PreviewBenchmark >/dev/null; fi)
  done
fi

# A checkout's digest-bench: in its root package, or in Benchmarks/ (checkouts before 2026-11-28).
digest_bench() {
  if [ -f "$1/Benchmarks/Package.swift" ]; then echo "$1/Benchmarks/.build/release/digest-bench"; else echo "$1/.build/release/digest-bench"; fi
}

# A checkout's PreviewBenchmark: in its root package, or in Benchmarks/Previews (older checkouts).
preview_benchmark() {
  if [ -x "$1/.build/release/PreviewBenchmark" ] && [ ! -f "$1/Benchmarks/Previews/Package.swift" ]; then
    echo "$1/.build/release/PreviewBenchmark"
  else
    echo "$1/Benchmarks/Previews/.build/release/PreviewBenchmark"
  fi
}

RESULTS="$OUT/results.tsv"
printf 'part\tbuild\tround\tunits\tcpu_s\twall_s\tserver_cpu_s\n' >"$RESULTS"
rm -f "$OUT"/data-*.txt
# Server CPU jiffies (postgres part): the postmaster, its live children and the children it reaped.
POSTMASTER=""
HZ=$(getconf CLK_TCK)
. scripts/pg-jiffies.sh  # pg_jiffies: the server's CPU while $POSTMASTER is set
# Runs a command under time(1) and appends "part build round units cpu wall server_cpu" to the
# results (server CPU while a cluster is up, else empty).
timed() {
  local part=$1 build=$2 round=$3 units=$4
  shift 4
  local p0 p1
  p0=$(pg_jiffies)
  /usr/bin/time -f "%U %S %e" -o "$OUT/time" "$@" >"$OUT/$part-$build-$round.log" 2>&1 || {
    echo "bench-ab: $part on $build failed:" >&2; tail -n 20 "$OUT/$part-$build-$round.log" >&2; exit 1; }
  if [ -n "$POSTMASTER" ]; then sleep 0.5; fi  # the backends exit after their clients: let the postmaster reap them
  p1=$(pg_jiffies)
  awk -v p="$part" -v b="$build" -v r="$round" -v u="$units" -v s=$((p1 - p0)) -v hz="$HZ" -v pg="$POSTMASTER" \
    '{ printf "%s\t%s\t%s\t%s\t%.2f\t%.2f\t%s\n", p, b, r, u, $1 + $2, $3, (pg == "" ? "" : sprintf("%.2f", s / hz)) }' \
    "$OUT/time" >>"$RESULTS"
}
# The builds in this round's order: A B, then B A, …
order() { if [ $(($1 % 2)) -eq 1 ]; then echo "A B"; else echo "B A"; fi; }
dir_of() { if [ "$1" = A ]; then echo "$A"; else echo "$B"; fi; }
# More `digest run` options for a build's weekly runs (AB_RUN_FLAGS_A, AB_RUN_FLAGS_B): one build twice
# with different options, e.g. AB_RUN_FLAGS_B="--deliver-at habit" with A and B the same checkout.
run_flags() { if [ "$1" = A ]; then echo "${AB_RUN_FLAGS_A:-}"; else echo "${AB_RUN_FLAGS_B:-}"; fi; }
# The builds whose checkouts generate data: A alone, or each (AB_DATA=own); whose data a build runs on.
# More `digest-bench generate` options for the data a build's SQLite runs read (AB_GENERATE_FLAGS_A,
# AB_GENERATE_FLAGS_B): one build on two datasets, e.g. AB_GENERATE_FLAGS_B="--preferences 30" with A
# and B the same checkout. With either set, each build's SQLite data are its own (as AB_DATA=own).
generate_flags() { if [ "$1" = A ]; then echo "${AB_GENERATE_FLAGS_A:-}"; else echo "${AB_GENERATE_FLAGS_B:-}"; fi; }
GENERATE_APART=0
if [ -n "${AB_GENERATE_FLAGS_A:-}${AB_GENERATE_FLAGS_B:-}" ]; then GENERATE_APART=1; fi
data_builds() { if [ "$DATA" = own ]; then echo "A B"; else echo "A"; fi; }
data_of() { if [ "$DATA" = own ]; then echo "$1"; else echo A; fi; }
sqlite_data_builds() { if [ "$GENERATE_APART" = 1 ]; then echo "A B"; else data_builds; fi; }
sqlite_data_of() { if [ "$GENERATE_APART" = 1 ]; then echo "$1"; else data_of "$1"; fi; }
# A checkout's reads per user: its scripts/bench.sh default (SQLite), or its SQL file's default reads
# over its default users (PostgreSQL); 10 when it names none.
sqlite_reads_per_user() {
  sed -n 's/^READS_PER_USER=${BENCH_READS_PER_USER:-\([0-9]*\)}$/\1/p' "$1/scripts/bench.sh" 2>/dev/null | grep . || echo 10
}
postgres_reads_per_user() {
  local users reads
  users=$(sed -n 's/^\\if :{?users} \\else \\set users \([0-9]*\) \\endif$/\1/p' "$1/scripts/postgres-bench-data.sql")
  reads=$(sed -n 's/^\\if :{?reads} \\else \\set reads \([0-9]*\) \\endif$/\1/p' "$1/scripts/postgres-bench-data.sql")
  if [ -n "$users" ] && [ -n "$reads" ]; then echo $((reads / users)); else echo 10; fi
}

# ---- the weekly run on SQLite ----
if [[ " $PARTS " == *" sqlite "* ]]; then
  rm -f "$OUT"/gen-*.sqlite*
  for data in $(sqlite_data_builds); do
    dir=$(dir_of "$data")
    reads=$((USERS * $(sqlite_reads_per_user "$dir")))
    log "sqlite: generating $USERS users, $reads reads with $data's digest-bench ($dir) $(generate_flags "$data")"
    "$(digest_bench "$dir")" generate --db "$OUT/gen-$data.sqlite" --users "$USERS" --reads "$reads" \
      --week "$WEEK" $(generate_flags "$data") >"$OUT/generate-sqlite-$data.json"
    echo "$data's \`digest-bench generate --users $USERS --reads $reads --week $WEEK $(generate_flags "$data")\`: $(cat "$OUT/generate-sqlite-$data.json")" \
      >"$OUT/data-sqlite-$data.txt"
    # Both builds' migrations first, so no measured run pays for one (as for send below).
    for build in A B; do "$(dir_of "$build")/.build/release/digest" migrate --db "$OUT/gen-$data.sqlite" >/dev/null 2>&1 || true; done
  done
  for round in $(seq "$ROUNDS"); do
    for build in $(order "$round"); do
      rm -f "$OUT"/run.sqlite*
      cp "$OUT/gen-$(sqlite_data_of "$build").sqlite" "$OUT/run.sqlite"
      log "sqlite: round $round, $build"
      timed sqlite "$build" "$round" "$USERS" \
        "$(dir_of "$build")/.build/release/digest" run --db "$OUT/run.sqlite" --week "$WEEK" --send-at now --progress-interval 0 --templates "$(dir_of "$build")/Templates" $(run_flags "$build")
    done
  done
  rm -f "$OUT"/run.sqlite* "$OUT"/gen-*.sqlite*
fi

# ---- the weekly run on PostgreSQL (a throwaway cluster) ----
if [[ " $PARTS " == *" postgres "* ]]; then
  PGBIN=$(dirname "$(command -v initdb 2>/dev/null || ls /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n1)")
  CLUSTER=$(mktemp -d /tmp/digest-ab-pg.XXXXXX)
  chmod 755 "$CLUSTER"
  if [ "$(id -u)" -eq 0 ]; then chown postgres "$CLUSTER"; fi
  PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  as_pg "$PGBIN/initdb" -D "$CLUSTER/data" -A trust -U postgres --no-sync >/dev/null
  # shared_buffers holds both databases (AB_DATA=own).
  as_pg "$PGBIN/pg_ctl" -D "$CLUSTER/data" -w -l "$CLUSTER/log" \
    -o "-c listen_addresses=127.0.0.1 -c port=$PORT -c unix_socket_directories=$CLUSTER -c shared_buffers=2GB -c max_wal_size=8GB" \
    start >/dev/null
  POSTMASTER=$(head -n1 "$CLUSTER/data/postmaster.pid")
  PSQL=(psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PORT" -U postgres)
  url() { echo "postgres://postgres@127.0.0.1:$PORT/$1?sslmode=disable"; }
  for data in $(data_builds); do
    dir=$(dir_of "$data")
    db="bench_$(tr AB ab <<<"$data")"
    "${PSQL[@]}" -d postgres -c "CREATE DATABASE $db"
    "$dir/.build/release/digest" migrate --db "$(url "$db")" >/dev/null
    reads=$((PG_USERS * $(postgres_reads_per_user "$dir")))
    log "postgres: generating $PG_USERS users, $reads reads in the server with $data's scripts/postgres-bench-data.sql ($dir)"
    "${PSQL[@]}" -d "$db" -v users="$PG_USERS" -v reads="$reads" -v week="$WEEK" \
      -f "$dir/scripts/postgres-bench-data.sql" >/dev/null
    echo "$data's \`digest migrate\`, then \`psql -v users=$PG_USERS -v reads=$reads -v week=$WEEK -f scripts/postgres-bench-data.sql\`: $("${PSQL[@]}" -d "$db" -At -c "
      SELECT (SELECT count(*) FROM digest_users) || ' users, ' || (SELECT count(*) FROM digest_devices) || ' devices, '
        || (SELECT count(*) FROM digest_articles) || ' articles, ' || (SELECT count(*) FROM digest_reads) || ' reads from '
        || (SELECT min(read_at)::date FROM digest_reads) || ' to ' || (SELECT max(read_at)::date FROM digest_reads) || ', '
        || (SELECT count(*) FROM digest_outbox) || ' earlier weeks'' outbox rows, schema version '
        || (SELECT max(version) FROM digest_schema) || ', database ' || pg_size_pretty(pg_database_size(current_database()))")" \
      >"$OUT/data-postgres-$data.txt"
    # What the generator left in the outbox (earlier weeks' digests), put back before every turn.
    "${PSQL[@]}" -d "$db" -c "CREATE TABLE bench_outbox_before AS SELECT * FROM digest_outbox"
  done
  for round in $(seq "$ROUNDS"); do
    for build in $(order "$round"); do
      db="bench_$(data_of "$build" | tr AB ab)"
      "${PSQL[@]}" -d "$db" -c "DELETE FROM digest_runs WHERE week = '$WEEK'" -c "TRUNCATE digest_outbox" \
        -c "DO \$\$ BEGIN IF to_regclass('digest_picks') IS NOT NULL THEN DELETE FROM digest_picks WHERE week = '$WEEK'; END IF; END \$\$" \
        -c "INSERT INTO digest_outbox OVERRIDING SYSTEM VALUE SELECT * FROM bench_outbox_before ORDER BY id" \
        -c "VACUUM (ANALYZE) digest_outbox" -c "CHECKPOINT"
      log "postgres: round $round, $build (database $db)"
      timed postgres "$build" "$round" "$PG_USERS" \
        "$(dir_of "$build")/.build/release/digest" run --db "$(url "$db")" --week "$WEEK" --send-at now --progress-interval 0 --templates "$(dir_of "$build")/Templates" $(run_flags "$build")
    done
  done
  as_pg "$PGBIN/pg_ctl" -D "$CLUSTER/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$CLUSTER"
  CLUSTER="" POSTMASTER=""
fi

# ---- digest send against the fake FCM server (A's), from the same outbox each time ----
if [[ " $PARTS " == *" send "* ]]; then
  log "send: the demo's run for $SEND_USERS users, every message due now"
  rm -rf "$OUT/demo"
  # FCM messages only: this sender has only FCM's credentials, and every due message is counted
  # (builds from before Web Push in the demo take no --webpush-devices; before APNs, no --apns-devices).
  "$A/.build/release/digest" demo --out "$OUT/demo" --users "$SEND_USERS" --send-at now --apns-devices 0 --webpush-devices 0 >/dev/null 2>&1 \
    || "$A/.build/release/digest" demo --out "$OUT/demo" --users "$SEND_USERS" --send-at now --apns-devices 0 >/dev/null 2>&1 \
    || "$A/.build/release/digest" demo --out "$OUT/demo" --users "$SEND_USERS" --send-at now >/dev/null
  python3 -c "import sqlite3; sqlite3.connect('$OUT/demo/digest.sqlite').execute('PRAGMA wal_checkpoint(TRUNCATE)')"
  cp "$OUT/demo/digest.sqlite" "$OUT/outbox-fresh.sqlite"
  # Both builds' migrations first, so no measured send pays for one (the newer build's migrates; the
  # older build's refuses the newer schema, and its send runs on it: new columns have defaults).
  for build in A B; do "$(dir_of "$build")/.build/release/digest" migrate --db "$OUT/outbox-fresh.sqlite" >/dev/null 2>&1 || true; done
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
        --credentials "$OUT/sa.json" --endpoint "http://127.0.0.1:$(cat "$OUT/port")" --concurrency 64 --connections 64 --drain
    done
  done
  kill -TERM "$SERVER"; wait "$SERVER" || true
  SERVER=""
fi

# ---- digest send with its defaults over TLS (HTTP/2, 100 streams) to A's fake FCM server answering
# AB_SEND_DELAY ms late: the sender's own connections at FCM's latency ----
if [[ " $PARTS " == *" send-h2 "* ]]; then
  log "send-h2: the demo's run for $SEND_USERS users, every message due now"
  rm -rf "$OUT/demo-h2"
  # FCM messages only (builds from before Web Push in the demo take no --webpush-devices; before APNs, no --apns-devices).
  "$A/.build/release/digest" demo --out "$OUT/demo-h2" --users "$SEND_USERS" --send-at now --apns-devices 0 --webpush-devices 0 >/dev/null 2>&1 \
    || "$A/.build/release/digest" demo --out "$OUT/demo-h2" --users "$SEND_USERS" --send-at now --apns-devices 0 >/dev/null 2>&1 \
    || "$A/.build/release/digest" demo --out "$OUT/demo-h2" --users "$SEND_USERS" --send-at now >/dev/null
  python3 -c "import sqlite3; sqlite3.connect('$OUT/demo-h2/digest.sqlite').execute('PRAGMA wal_checkpoint(TRUNCATE)')"
  cp "$OUT/demo-h2/digest.sqlite" "$OUT/outbox-h2-fresh.sqlite"
  for build in A B; do "$(dir_of "$build")/.build/release/digest" migrate --db "$OUT/outbox-h2-fresh.sqlite" >/dev/null 2>&1 || true; done
  MESSAGES=$("$A/.build/release/digest" queue stats --db "$OUT/outbox-h2-fresh.sqlite" --json \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["due"])')
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=localhost \
    -addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout "$OUT/key.pem" -out "$OUT/cert.pem" 2>/dev/null
  rm -f "$OUT/port"
  "$A/.build/release/digest-fake-fcm" --port 0 --port-file "$OUT/port" --credentials "$OUT/sa.json" \
    --delay-ms "${AB_SEND_DELAY:-80}" --max-concurrent-streams 100 --tls-cert "$OUT/cert.pem" --tls-key "$OUT/key.pem" \
    >"$OUT/fake-fcm-h2.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 1 100); do [ -s "$OUT/port" ] && break; sleep 0.1; done
  for round in $(seq "$ROUNDS"); do
    for build in $(order "$round"); do
      rm -f "$OUT"/outbox-h2.sqlite*
      cp "$OUT/outbox-h2-fresh.sqlite" "$OUT/outbox-h2.sqlite"
      log "send-h2: round $round, $build ($MESSAGES messages)"
      timed send-h2 "$build" "$round" "$MESSAGES" "$(dir_of "$build")/.build/release/digest" send --db "$OUT/outbox-h2.sqlite" \
        --credentials "$OUT/sa.json" --endpoint "https://127.0.0.1:$(cat "$OUT/port")" --ca-file "$OUT/cert.pem" --drain
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
      surfaces=$("$(preview_benchmark "$dir")" "$dir/Tests/DigestPreviewTests/Fixtures" 1 3 | grep -vc '^first')
      timed previews "$build" "$round" "$((surfaces * PREVIEW_ITERATIONS))" \
        "$(preview_benchmark "$dir")" "$dir/Tests/DigestPreviewTests/Fixtures" "$PREVIEW_ITERATIONS" 3
    done
  done
fi

python3 - "$RESULTS" "$A" "$B" "$DATA" "$OUT" "$GENERATE_APART" <<'PY' | tee "$OUT/ab.md"
import os, statistics, sys
path, a, b, data, out, apart = sys.argv[1:7]
rows = [line.rstrip("\n").split("\t") for line in open(path)][1:]
units = {"sqlite": "user", "postgres": "user", "send": "message", "send-h2": "message", "previews": "PNG"}
print(f"A = {a}, B = {b}; turns A B, B A, …; CPU = user + system time of the measured process "
      "(postgres: server = the server's processes during the run, from /proc).\n")
if data == "own":
    print("Data: each build's own (AB_DATA=own): A's and B's weekly runs each ran on data made by their own checkout's "
          "generator with its own defaults, at the same user count, the way each one's own `make bench` measures "
          "it; not the same rows.\n")
else:
    print("Data: A's (AB_DATA=same): both builds ran on the same rows, made by A's generators"
          + (" (SQLite: each build's own rows, with its AB_GENERATE_FLAGS_A/B, below)" if apart == "1" else "") + ".\n")
notes = [(part, build) for part in ["sqlite", "postgres"] for build in "AB"
         if os.path.exists(os.path.join(out, f"data-{part}-{build}.txt"))]
for part, build in notes:
    print(f"- {part}, {build}: {open(os.path.join(out, f'data-{part}-{build}.txt')).read().strip()}")
if notes:
    print()
print("| benchmark | units | A: CPU-µs per unit (median; runs) | B: CPU-µs per unit (median; runs) | B ÷ A | spread of A (max ÷ min) | spread of B (max ÷ min) |")
print("|---|---|---|---|---|---|---|")
def line(label, part, value):
    per = {}
    for build in "AB":
        per[build] = [value(r) / int(r[3]) * 1e6 for r in rows if r[0] == part and r[1] == build]
    if not per["A"] or not per["B"]:
        return
    n = next(int(r[3]) for r in rows if r[0] == part)
    ma, mb = statistics.median(per["A"]), statistics.median(per["B"])
    fmt = lambda xs: ", ".join(f"{x:.1f}" for x in xs)
    print(f"| {label} | {n:,} {units[part]}s | {ma:.1f} ({fmt(per['A'])}) | {mb:.1f} ({fmt(per['B'])}) | {mb / ma:.3f} | "
          f"{max(per['A']) / min(per['A']):.3f} | {max(per['B']) / min(per['B']):.3f} |")
for part in ["sqlite", "postgres", "send", "send-h2", "previews"]:
    line(part, part, lambda r: float(r[4]))
    if part == "send-h2":
        # Wall time a message (µs): the rate the run reached (paced to 10,000 a second by default).
        line("send-h2: wall µs", part, lambda r: float(r[5]))
    if part == "postgres":
        line("postgres: server", part, lambda r: float(r[6]))
        line("postgres: digest + server", part, lambda r: float(r[4]) + float(r[6]))
PY
