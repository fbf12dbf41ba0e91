#!/usr/bin/env bash
# Event collector benchmark (release build, loopback only): events/s that `digest collect` records
# with 8 clients posting 200 events a request (wrk, 8 connections), on SQLite and on PostgreSQL, every
# event new (distinct message, type and action). Same-run reference: the same server and requests
# whose events all fail the body check (an unknown type: parsed, refused, the store never asked), so
# the difference is what the store costs. Writes the "## Event collector" section of BENCHMARKS.md (bench-collect markers)
# with the medians of RUNS runs (default 3) and the CPU time per event of the collector (and of the
# PostgreSQL server).
# Usage: scripts/bench-collect.sh [messages]   (default 200000 outbox messages to name)
set -euo pipefail
cd "$(dirname "$0")/.."
MESSAGES="${1:-200000}"
OUT="bench-out/collect"
DURATION="${WRK_DURATION:-10s}"
RUNS="${RUNS:-3}"
KEEP=0
WEEK=2026-W47
HZ=$(getconf CLK_TCK)
log() { echo "bench-collect: $*" >&2; }
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

need=()
command -v wrk >/dev/null || need+=(wrk)
. scripts/apt-lib.sh
install_packages bench-collect ${need[@]+"${need[@]}"}

if [ -n "${DIGEST_BIN:-}" ]; then
  DIGEST="$DIGEST_BIN"  # a try of the script itself (e.g. with the debug build); not for figures
else
  swift build -c release --product digest >/dev/null
  DIGEST="$(swift build -c release --show-bin-path)/digest"
fi
rm -rf "$OUT" && mkdir -p "$OUT"
echo "bench-key-0123456789abcdef" > "$OUT/keys"
echo "bench-reply-secret-0123456789abcdef" > "$OUT/reply-keys"

# The outbox: MESSAGES sent messages of WEEK whose ids the requests name (ids.txt: the id and its reply
# key, a line each; keys.txt: the reply keys alone), each of its own reader.
python3 - "$MESSAGES" "$OUT/ids.txt" "$OUT/reply-keys" <<'PY'
import base64, hashlib, hmac, sys
n, path, secrets = int(sys.argv[1]), sys.argv[2], sys.argv[3]
secret = open(secrets).readline().strip().encode()
with open(path, "w") as f:
    for i in range(n):
        mid = hashlib.sha256(f"2026-W47:u{i}:t{i}".encode()).hexdigest()[:32]
        key = base64.urlsafe_b64encode(hmac.new(secret, mid.encode("ascii"), hashlib.sha256).digest()[:16]).rstrip(b"=").decode()
        f.write(f"{mid} {key}\n")
PY

# wrk: each request 200 events, (message, type, action) never repeated: the messages in turn, each
# with received, displayed, opened, dismissed, then actions a1, a2, … as the rounds go on; thread t
# of T starts at message t and steps by T. BAD=1 gives every event an unknown type (the reference).
# MIX=1 makes every second event a press with its reply key, on a cursor of its own starting at
# PRESS_OFFSET: the messages in turn with "fewer", then "pause", then "off".
cat > "$OUT/collect.lua" <<'LUA'
local ids = {}
local replies = {}
local threads = {}
setup = function(thread)
  table.insert(threads, thread)
  thread:set("index", #threads)
end
init = function(args)
  for line in io.lines(os.getenv("IDS")) do
    local id, reply = line:match("^(%S+) (%S+)$")
    ids[#ids + 1] = id
    replies[#replies + 1] = reply
  end
  step = tonumber(os.getenv("THREADS"))
  cursor = index - 1 + tonumber(os.getenv("OFFSET"))
  presses = index - 1 + tonumber(os.getenv("PRESS_OFFSET") or "0")
  bad = os.getenv("BAD") == "1"
  mix = os.getenv("MIX") == "1"
  headers = { ["Authorization"] = "Bearer bench-key-0123456789abcdef", ["Content-Type"] = "application/json" }
end
local types = { "received", "displayed", "opened", "dismissed" }
local buttons = { "fewer", "pause", "off" }
request = function()
  local events = {}
  for i = 1, 200 do
    if mix and i % 2 == 0 then
      local m = presses % #ids + 1
      local action = buttons[math.floor(presses / #ids) % 3 + 1]
      events[i] = '{"message_id":"' .. ids[m] .. '","type":"action","action":"' .. action .. '","reply_key":"' .. replies[m] .. '","at":"2026-11-23T10:00:00Z"}'
      presses = presses + step
    else
      local m = cursor % #ids + 1
      local round = math.floor(cursor / #ids)
      local kind = types[round + 1]  -- rounds 0–3: the four types; later rounds: action a<round>
      if bad then
        events[i] = '{"message_id":"' .. ids[m] .. '","type":"clicked","at":"2026-11-23T10:00:00Z"}'
      elseif kind then
        events[i] = '{"message_id":"' .. ids[m] .. '","type":"' .. kind .. '","at":"2026-11-23T10:00:00Z"}'
      else
        events[i] = '{"message_id":"' .. ids[m] .. '","type":"action","action":"a' .. round .. '","at":"2026-11-23T10:00:00Z"}'
      end
      cursor = cursor + step
    end
  end
  return wrk.format("POST", "/v1/events", headers, '{"events":[' .. table.concat(events, ",") .. ']}')
end
LUA

pids_jiffies() {
  local total=0
  for pid in "$@"; do
    total=$((total + $(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$pid/stat" 2>/dev/null || echo 0)))
  done
  echo "$total"
}

# run_wrk DB NAME BAD OFFSET [MIX PRESS_OFFSET]: a collector on DB, wrk for DURATION starting at event
# OFFSET (so that no run repeats another's events), with MIX=1 half the events presses from
# PRESS_OFFSET; sets EPS (events/s), US (collector CPU-µs an event), PG_US (server's).
run_wrk() {
  local db=$1 name=$2 bad=$3 offset=$4 mix=${5:-0} press_offset=${6:-0}
  "$DIGEST" collect --db "$db" --key-file "$OUT/keys" --reply-key-file "$OUT/reply-keys" --port 0 >"$OUT/$name.out" 2>"$OUT/$name.err" &
  local server=$!
  for _ in $(seq 300); do grep -q "collecting events on" "$OUT/$name.out" 2>/dev/null && break; sleep 0.1; done
  local port
  port=$(sed -n 's|.*http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$OUT/$name.out")
  local j0 p0
  j0=$(pids_jiffies "$server")
  p0=$(pg_server_jiffies)
  IDS="$OUT/ids.txt" THREADS=2 BAD="$bad" OFFSET="$offset" MIX="$mix" PRESS_OFFSET="$press_offset" wrk -t2 -c8 -d"$DURATION" -s "$OUT/collect.lua" "http://127.0.0.1:$port/v1/events" >"$OUT/$name.wrk"
  local j1 p1
  j1=$(pids_jiffies "$server")
  p1=$(pg_server_jiffies)
  kill -TERM "$server"
  wait "$server" || true
  local requests seconds
  requests=$(awk '/requests in/ { print $1 }' "$OUT/$name.wrk")
  seconds=$(awk '/requests in/ { sub(/s,/, "", $4); print $4 }' "$OUT/$name.wrk")
  if grep -q "Non-2xx" "$OUT/$name.wrk"; then log "non-2xx answers in $name: see $OUT/$name.wrk"; exit 1; fi
  REQUESTS=$requests
  EPS=$(python3 -c "print(int($requests * 200 / $seconds))")
  US=$(python3 -c "print(f'{($j1 - $j0) / $HZ * 1e6 / ($requests * 200):.1f}')")
  PG_US=$(python3 -c "print(f'{($p1 - $p0) / $HZ * 1e6 / ($requests * 200):.1f}')")
}
pg_server_jiffies() { if [ -n "${POSTMASTER:-}" ]; then pg_jiffies; else echo 0; fi; }

# measure STORE DB: RUNS runs of the reference, the events and the half-presses mix; sets the medians.
# Run r's presses are the r-th round over the messages ("fewer", "pause", "off"), so none repeats.
measure() {
  local store=$1 db=$2 eps=() us=() pgus=() ref=() refus=() mix=() mixus=() press_offset=0
  for run in $(seq 1 "$RUNS"); do
    run_wrk "$db" "$store-ref-$run" 1 0
    ref+=("$EPS"); refus+=("$US")
    run_wrk "$db" "$store-$run" 0 $((run * 10000000))
    eps+=("$EPS"); us+=("$US"); pgus+=("$PG_US")
    run_wrk "$db" "$store-mix-$run" 0 $((run * 10000000 + 5000000)) 1 "$press_offset"
    mix+=("$EPS"); mixus+=("$US")
    press_offset=$((press_offset + REQUESTS * 100 + 2))
    log "$store run $run: ${eps[-1]} events/s plain, ${mix[-1]} with half presses (reference ${ref[-1]} events/s)"
  done
  MIX_MED=$(echo "${mix[*]}" | median); MIX_US_MED=$(echo "${mixus[*]}" | median); MIX_ALL="${mix[*]}"
  if [ "$press_offset" -gt $((3 * MESSAGES)) ]; then log "$store: $press_offset presses for $MESSAGES messages: some were repeats (give more messages)"; fi
  EPS_MED=$(echo "${eps[*]}" | median); US_MED=$(echo "${us[*]}" | median); PG_US_MED=$(echo "${pgus[*]}" | median)
  REF_MED=$(echo "${ref[*]}" | median); REF_US_MED=$(echo "${refus[*]}" | median)
  EPS_ALL="${eps[*]}"; REF_ALL="${ref[*]}"
}

# SQLite.
SQLITE="$OUT/events.sqlite"
"$DIGEST" migrate --db "$SQLITE" >/dev/null
python3 - "$SQLITE" "$OUT/ids.txt" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
ids = [l.split()[0] for l in open(sys.argv[2])]
db.executemany("INSERT INTO users (id, locale, time_zone) VALUES (?, 'en', 'Europe/Warsaw')", [(f"u{i}",) for i in range(len(ids))])
db.executemany(
    "INSERT INTO digest_outbox (dedupe_key, week, user_id, platform, variant, message, report, available_at, state, created_at, message_id, locale)"
    " VALUES (?, '2026-W47', ?, ?, ?, '{}', ?, 0, 'sent', 0, ?, 'en')",
    [(f"2026-W47:u{i}:t{i}", f"u{i}", ("android", "ios", "web")[i % 3], ("BigText", "Image")[i % 2],
      '{"arm":"%s","fewer_topic":"topic-%d"}' % (("text", "image")[i % 2], i % 20), mid) for i, mid in enumerate(ids)])
db.commit()
PY
POSTMASTER=""
measure sqlite "$SQLITE"
SQ=("$EPS_MED" "$US_MED" "$REF_MED" "$REF_US_MED" "$EPS_ALL" "$REF_ALL" "$MIX_MED" "$MIX_US_MED" "$MIX_ALL")
SQ_ROWS=$(python3 -c "import sqlite3; print(sqlite3.connect('$SQLITE').execute('SELECT count(*) FROM digest_events').fetchone()[0])")
SQ_CHANGES=$(python3 -c "import sqlite3; print(sqlite3.connect('$SQLITE').execute(\"SELECT count(*) FROM digest_preference_changes WHERE source = 'action'\").fetchone()[0])")
[ "$SQ_CHANGES" -gt 0 ] || { log "SQLite: no press changed a reader's preferences"; exit 1; }

# PostgreSQL: a throwaway cluster (scripts/pg-cluster.sh), the same outbox.
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)
. scripts/pg-cluster.sh
trap 'pg_cluster_stop' EXIT
pg_cluster_start
"$DIGEST" migrate --db "$URL" >/dev/null
"${PSQL[@]}" <<SQL
CREATE TABLE bench_ids (n serial, id text, reply text);
\copy bench_ids (id, reply) FROM '$OUT/ids.txt' WITH (DELIMITER ' ')
INSERT INTO digest_import_users (id, locale, time_zone) SELECT 'u' || (n - 1), 'en', 'Europe/Warsaw' FROM bench_ids;
INSERT INTO digest_outbox (dedupe_key, week, user_id, platform, variant, message, report, available_at, state, created_at, message_id, locale)
SELECT '2026-W47:u' || (n - 1) || ':t' || (n - 1), '2026-W47', 'u' || (n - 1), (ARRAY['android','ios','web'])[(n - 1) % 3 + 1],
       (ARRAY['BigText','Image'])[(n - 1) % 2 + 1], '{}', jsonb_build_object('arm', (ARRAY['text','image'])[(n - 1) % 2 + 1], 'fewer_topic', 'topic-' || ((n - 1) % 20)),
       to_timestamp(0), 'sent', to_timestamp(0), id, 'en' FROM bench_ids;
DROP TABLE bench_ids;
SQL
measure postgres "$URL"
PG=("$EPS_MED" "$US_MED" "$REF_MED" "$REF_US_MED" "$EPS_ALL" "$REF_ALL" "$PG_US_MED" "$MIX_MED" "$MIX_US_MED" "$MIX_ALL")
PG_ROWS=$("${PSQL[@]}" -At -c "SELECT count(*) FROM digest_events")
PG_CHANGES=$("${PSQL[@]}" -At -c "SELECT count(*) FROM digest_preference_changes WHERE source = 'action'")
[ "$PG_CHANGES" -gt 0 ] || { log "PostgreSQL: no press changed a reader's preferences"; exit 1; }
"${PSQL[@]}" -c "SELECT calls, round(total_exec_time) AS ms, rows, left(regexp_replace(query, '\s+', ' ', 'g'), 160) AS query
  FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 8" >"$OUT/pg-statements.txt"

SQ_MIX_RATIO=$(python3 -c "print(f'{${SQ[6]} / ${SQ[0]}:.3f}')")
PG_MIX_RATIO=$(python3 -c "print(f'{${PG[7]} / ${PG[0]}:.3f}')")
log "half the events presses ÷ plain events, events/s: SQLite $SQ_MIX_RATIO, PostgreSQL $PG_MIX_RATIO"
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
python3 scripts/bench-section.py bench-collect 'scripts/bench-collect.sh (a step of make bench)' <<MD
## Event collector

| store | events/s recorded | collector CPU-µs an event | half the events presses: events/s (÷ plain) | its CPU-µs an event | reference events/s (no store) | reference CPU-µs an event |
|---|---|---|---|---|---|---|
| SQLite (one writer thread, one transaction a request) | ${SQ[0]} (runs: ${SQ[4]}) | ${SQ[1]} | ${SQ[6]} ($SQ_MIX_RATIO; runs: ${SQ[8]}) | ${SQ[7]} | ${SQ[2]} (runs: ${SQ[5]}) | ${SQ[3]} |
| PostgreSQL (4 connections in turn, one transaction a request; server ${PG[6]} CPU-µs an event) | ${PG[0]} (runs: ${PG[4]}) | ${PG[1]} | ${PG[7]} ($PG_MIX_RATIO; runs: ${PG[9]}) | ${PG[8]} | ${PG[2]} (runs: ${PG[5]}) | ${PG[3]} |

- Half the events presses: every second event of a request a press of "fewer", "pause" or "off" with its message's
  reply key (the collector started with \`--reply-key-file\`, as in every arm), each the first of its kind for its
  message, so each verifies its key, changes its reader's preferences and records the change (changes recorded
  with source \`action\` afterwards: SQLite $SQ_CHANGES, PostgreSQL $PG_CHANGES).
- Reference: the same server and requests with every event's type unknown (parsed and refused by index; the store is
  never asked), in the same run: the difference is what the store costs.
- Command: \`scripts/bench-collect.sh [messages]\` (a step of \`make bench\`, alone \`make bench-collect\`; default
  200,000 sent messages in the outbox to name, each of its own reader, here $MESSAGES; knobs \`RUNS=$RUNS\`, \`WRK_DURATION=$DURATION\`):
  \`digest collect\` fed by wrk with 8 connections (2 threads), each request 200 events, every event new; medians of
  $RUNS runs of $DURATION. Rows in \`digest_events\` afterwards: SQLite $SQ_ROWS, PostgreSQL $PG_ROWS.
- Machine: $(python3 scripts/bench-section.py --machine); loopback, release build.
  Measured $(date -u +%Y-%m-%d) at $COMMIT.
MD
log "BENCHMARKS.md: ## Event collector updated"
