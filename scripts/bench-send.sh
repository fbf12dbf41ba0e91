#!/usr/bin/env bash
# Delivery benchmark (release build, loopback only): messages/s that `digest send` delivers to the
# fake FCM server with 64 requests in flight, against the same server fed by wrk (64 connections,
# prepared requests, no database, no OAuth) as the reference, and by async-http-client alone
# (`digest-fcm-load`, an executable target of the package: the same prepared requests through the sender's client
# configuration and request path, 64 in flight), the ceiling of any sender built on it. Writes the "## Delivery on loopback" section of
# BENCHMARKS.md (between its bench-send markers) with the medians of RUNS runs of each (default 3; the machine is shared, so the
# load average and the CPU time per message are written too).
# Usage: scripts/bench-send.sh [users]   (default 25000 users ≈ 47,000 messages)
set -euo pipefail
cd "$(dirname "$0")/.."
USERS="${1:-25000}"
OUT="bench-out/send"
DURATION="${WRK_DURATION:-15s}"
RUNS="${RUNS:-3}"
median() { python3 -c 'import statistics, sys; print(statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }

need=()
command -v wrk >/dev/null || need+=(wrk)
[ -x /usr/bin/time ] || need+=(time)
. scripts/apt-lib.sh  # the scripts run from the package root
install_packages bench-send ${need[@]+"${need[@]}"}

swift build -c release --product digest >/dev/null
swift build -c release --product digest-fake-fcm >/dev/null
swift build -c release --product digest-fcm-load >/dev/null
BIN="$(swift build -c release --show-bin-path)"
LOAD=.build/release/digest-fcm-load
rm -rf "$OUT" && mkdir -p "$OUT"

start_server() {
    rm -f "$OUT/port"
    "$BIN/digest-fake-fcm" --port 0 --port-file "$OUT/port" --credentials "$OUT/sa.json" --static-token bench-token \
        "${@:2}" > "$OUT/fake-fcm-$1.log" 2>&1 &
    SERVER=$!
    for _ in $(seq 1 100); do [ -s "$OUT/port" ] && break; sleep 0.1; done
    PORT="$(cat "$OUT/port")"
}
stop_server() { kill -TERM "$SERVER"; wait "$SERVER" || true; }
trap 'kill "${SERVER:-0}" 2>/dev/null || true' EXIT

# The messages: the demo's weekly run, every message due now.
"$BIN/digest" demo --out "$OUT/demo" --users "$USERS" --send-at now --apns-devices 0 --webpush-devices 0 > "$OUT/demo.log"
MESSAGES="$("$BIN/digest" queue stats --db "$OUT/demo/digest.sqlite" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["due"])')"

# Reference: wrk posting prepared bodies (one per token, 1,000 distinct) with a static bearer token.
cat > "$OUT/send.lua" <<'LUA'
local requests = {}
local n = 0
init = function(args)
  local headers = { ["Authorization"] = "Bearer bench-token", ["Content-Type"] = "application/json; charset=UTF-8" }
  for i = 1, 1000 do
    local body = '{"message":{"token":"bench-token-' .. i .. '-' .. string.rep("x", 140) .. '",' ..
      '"data":{"digest_id":"2026-W46:u' .. i .. '","deep_link":"https://digest.example/weekly/2026-W46"},' ..
      '"android":{"collapse_key":"digest-2026-W46","ttl":"604800s","priority":"normal","data":{"title":"Your week in reading",' ..
      '"body":"5 articles, 42 minutes\\n• One\\n• Two\\n• Three","type":"BigText","actions":"[]"}}}}'
    requests[i] = wrk.format("POST", "/v1/projects/digest-test/messages:send", headers, body)
  end
end
request = function()
  n = n % 1000 + 1
  return requests[n]
end
LUA
# The sender: digest send --drain with 64 in flight, from the SQLite outbox to the same server; each
# of its runs starts from a copy of the run's database (resetting rows in place left SQLite pages that cost
# later runs more).
python3 -c "import sqlite3; sqlite3.connect('$OUT/demo/digest.sqlite').execute('PRAGMA wal_checkpoint(TRUNCATE)')"
cp "$OUT/demo/digest.sqlite" "$OUT/outbox-fresh.sqlite"
reset_outbox() {
    rm -f "$OUT/demo/digest.sqlite-wal" "$OUT/demo/digest.sqlite-shm"
    cp "$OUT/outbox-fresh.sqlite" "$OUT/demo/digest.sqlite"
}
# Each round runs wrk, async-http-client alone and the sender one after another against a new server,
# so the three see about the same machine (it is shared; the per-round ratios show how much it moved).
REFERENCES=() WRK_SERVER_US=() AHC_RATES=() AHC_US=() AHC_SERVER_US=() AHC_LOADS=()
RATES=() SECONDS_=() SEND_CPUS=() SERVER_CPUS=() LOADS=() ROUND_RATIOS=()
for run in $(seq 1 "$RUNS"); do
    start_server "wrk-$run"
    wrk -t2 -c64 -d"$DURATION" -s "$OUT/send.lua" "http://127.0.0.1:$PORT" > "$OUT/wrk-$run.txt"
    SERVER_CPU="$(awk '{print ($14 + $15) / 100}' "/proc/$SERVER/stat")"
    stop_server
    REFERENCES+=("$(awk '/Requests\/sec/ {printf "%d", $2}' "$OUT/wrk-$run.txt")")
    WRK_SERVER_US+=("$(python3 -c "print($SERVER_CPU * 1e6 / $(awk '/requests in/ {print $1}' "$OUT/wrk-$run.txt"))")")

    start_server "ahc-$run"
    "$LOAD" --endpoint "http://127.0.0.1:$PORT" --concurrency 64 --seconds "${DURATION%s}" > "$OUT/ahc-$run.txt"
    SERVER_CPU="$(awk '{print ($14 + $15) / 100}' "/proc/$SERVER/stat")"
    AHC_LOADS+=("$(cut -d' ' -f1 /proc/loadavg)")
    stop_server
    AHC_REQUESTS="$(awk '/^requests:/ {print $2}' "$OUT/ahc-$run.txt" | tr -d ,)"
    AHC_RATES+=("$(awk '/^requests\/s:/ {print $2}' "$OUT/ahc-$run.txt")")
    AHC_US+=("$(grep -o 'cpu µs/request: [0-9.]*' "$OUT/ahc-$run.txt" | awk '{print $3}')")
    AHC_SERVER_US+=("$(python3 -c "print($SERVER_CPU * 1e6 / $AHC_REQUESTS)")")

    reset_outbox
    start_server "send-$run"
    START=$(date +%s.%N)
    /usr/bin/time -f "%U %S" -o "$OUT/send-$run.cpu" "$BIN/digest" send --db "$OUT/demo/digest.sqlite" --credentials "$OUT/sa.json" \
        --endpoint "http://127.0.0.1:$PORT" --concurrency 64 --connections 64 --rate 0 --drain > "$OUT/send-$run.txt"
    END=$(date +%s.%N)
    SERVER_CPUS+=("$(awk '{print ($14 + $15) / 100}' "/proc/$SERVER/stat")")
    LOADS+=("$(cut -d' ' -f1 /proc/loadavg)")
    stop_server
    SENT="$(awk '/^sent:/ {print $2}' "$OUT/send-$run.txt")"
    DELIVERED="$(grep -o 'delivered: [0-9]*' "$OUT/fake-fcm-send-$run.log" | awk '{print $2}')"
    [ "$SENT" = "$MESSAGES" ] && [ "$DELIVERED" = "$MESSAGES" ] || { echo "run $run: sent $SENT, delivered $DELIVERED of $MESSAGES" >&2; exit 1; }
    RATES+=("$(python3 -c "print(int($SENT / ($END - $START)))")")
    SECONDS_+=("$(python3 -c "print($END - $START)")")
    SEND_CPUS+=("$(awk '{print $1 + $2}' "$OUT/send-$run.cpu")")
    ROUND_RATIOS+=("$(python3 -c "print(f'{${RATES[-1]} / ${REFERENCES[-1]}:.2f}')")")
done
REFERENCE="$(median "${REFERENCES[@]}" | cut -d. -f1)"
WRK_SERVER_US="$(median "${WRK_SERVER_US[@]}" | cut -d. -f1)"
AHC_RATE="$(median "${AHC_RATES[@]}" | cut -d. -f1)"
AHC_US="$(median "${AHC_US[@]}" | cut -d. -f1)"
AHC_SERVER_US="$(median "${AHC_SERVER_US[@]}" | cut -d. -f1)"
AHC_RATIO="$(python3 -c "print(f'{$AHC_RATE / $REFERENCE:.2f}')")"

RATE="$(median "${RATES[@]}" | cut -d. -f1)"
ELAPSED="$(median "${SECONDS_[@]}")"
SEND_CPU="$(median "${SEND_CPUS[@]}")"
SERVER_CPU="$(median "${SERVER_CPUS[@]}")"
LOAD="$(printf '%s ' "${LOADS[@]}")"
RATIO="$(python3 -c "print(f'{$RATE / $REFERENCE:.2f}')")"

# The same over HTTPS, where async-http-client negotiates HTTP/2 (one connection, 64 streams), as
# with FCM itself; a throwaway self-signed certificate made by openssl.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=localhost \
    -addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout "$OUT/key.pem" -out "$OUT/cert.pem" 2>/dev/null
reset_outbox
start_server h2 --tls-cert "$OUT/cert.pem" --tls-key "$OUT/key.pem"
H2_START=$(date +%s.%N)
"$BIN/digest" send --db "$OUT/demo/digest.sqlite" --credentials "$OUT/sa.json" --endpoint "https://127.0.0.1:$PORT" \
    --ca-file "$OUT/cert.pem" --concurrency 64 --rate 0 --drain > "$OUT/send-h2.txt"
H2_END=$(date +%s.%N)
H2_STATS="$(python3 -c "import json, urllib.request, ssl; ctx = ssl.create_default_context(cafile='$OUT/cert.pem'); print(json.load(urllib.request.urlopen('https://127.0.0.1:$PORT/stats', context=ctx))['http2Requests'])")"
stop_server
H2_SENT="$(awk '/^sent:/ {print $2}' "$OUT/send-h2.txt")"
H2_RATE="$(python3 -c "print(int($H2_SENT / ($H2_END - $H2_START)))")"

cat "$OUT/wrk-$RUNS.txt"; cat "$OUT/send-$RUNS.txt"
echo "reference (wrk): $REFERENCE requests/s (runs: ${REFERENCES[*]}); digest send: $RATE messages/s (runs: ${RATES[*]}); ratio $RATIO"
echo "async-http-client alone: $AHC_RATE requests/s (runs: ${AHC_RATES[*]}), $AHC_US CPU-µs a request; ratio $AHC_RATIO"
echo "sender CPU $SEND_CPU s, server CPU $SERVER_CPU s; load averages: $LOAD"

US_A_MESSAGE="$(python3 -c "print(f'{$SEND_CPU * 1e6 / $MESSAGES:.0f}')")"
SERVER_US="$(python3 -c "print(f'{$SERVER_CPU * 1e6 / $MESSAGES:.0f}')")"
# The best a sender on async-http-client and the SQLite outbox could do: async-http-client alone, with
# the outbox's SQLite work (about 20 µs a message, from perf) added to its CPU per request, at the same
# share of the machine.
BEST_RATIO="$(python3 -c "print(f'{$AHC_RATE * ($AHC_US + $AHC_SERVER_US) / ($AHC_US + 20 + $AHC_SERVER_US) / $REFERENCE:.2f}')")"
commas_list() { python3 -c 'import sys; print(", ".join(f"{int(float(x)):,}" for x in sys.argv[1:]))' "$@"; }
fmt_int() { python3 -c 'import sys; print(f"{int(float(sys.argv[1])):,}")' "$1"; }
python3 scripts/bench-section.py bench-send 'scripts/bench-send.sh (make bench-send)' <<MD
## Delivery on loopback

| what | rate (median) | runs | CPU-µs each: client or sender | CPU-µs each: fake server |
|---|---:|---|---:|---:|
| reference: \`wrk -t2 -c64\` posting prepared requests (no database, no OAuth), $DURATION | $(fmt_int "$REFERENCE") requests/s | $(commas_list "${REFERENCES[@]}") | — | $WRK_SERVER_US |
| ceiling: async-http-client alone (\`digest-fcm-load\`, the sender's client and request path, 64 in flight), $DURATION | $(fmt_int "$AHC_RATE") requests/s | $(commas_list "${AHC_RATES[@]}") | $AHC_US | $AHC_SERVER_US |
| \`digest send --concurrency 64 --connections 64 --rate 0 --drain\`, HTTP/1.1: lease from SQLite, OAuth, POST, settle | $(fmt_int "$RATE") messages/s | $(commas_list "${RATES[@]}") | $US_A_MESSAGE | $SERVER_US |
| the same over HTTPS (HTTP/2: $H2_STATS of $MESSAGES requests came as HTTP/2 streams) | $(fmt_int "$H2_RATE") messages/s | one run | — | — |

- Reference: wrk against the same fake FCM server (\`digest-fake-fcm\`, HTTP/1.1, every request checked against the
  v1 rules). Sender ÷ wrk: $RATIO (per round $(printf '%s, ' "${ROUND_RATIOS[@]}" | sed 's/, $//')); async-http-client
  alone ÷ wrk: $AHC_RATIO; that client plus the outbox's ~20 µs a message of SQLite work would reach about
  $BEST_RATIO. The sender's target is FCM's quota at FCM's latency (next section), not this ratio.
- Command: \`make bench-send\` (\`scripts/bench-send.sh [users]\`, default 25,000 users: the demo's run, here
  $USERS users and $MESSAGES messages due now; knobs \`RUNS=$RUNS\`, \`WRK_DURATION=$DURATION\`); sender wall time
  $(python3 -c "print(f'{$ELAPSED:.1f}')") s (median, start-up included). It then runs \`scripts/bench-send-latency.sh\`.
- Machine: $(python3 scripts/bench-section.py --machine); loopback; the sender (or wrk) and the server share the cores;
  load average after each sender run: $(printf '%s ' "${LOADS[@]}")(async-http-client runs: ${AHC_LOADS[*]}). Measured
  $(date -u +%Y-%m-%d) at $(git rev-parse --short HEAD 2>/dev/null || echo unknown), release build.
MD
