#!/usr/bin/env bash
# make demo-send: the demo's weekly run with every message due now, delivered end to end on loopback
# to the fake FCM server (digest-fake-fcm), which generates a throwaway service-account key at start.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${DEMO_OUT:-demo-out}"
BIN="$(swift build --show-bin-path)"
mkdir -p "$OUT"

"$BIN/digest" demo --out "$OUT" --send-at now

rm -f "$OUT/fake-fcm.port"
"$BIN/digest-fake-fcm" --port 0 --port-file "$OUT/fake-fcm.port" --credentials "$OUT/service-account.json" \
    --unavailable-rate "${FAKE_FCM_UNAVAILABLE:-0.05}" --unregistered-rate "${FAKE_FCM_UNREGISTERED:-0.01}" \
    > "$OUT/fake-fcm.log" 2>&1 &
FAKE=$!
trap 'kill "$FAKE" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do [ -s "$OUT/fake-fcm.port" ] && break; sleep 0.1; done
PORT="$(cat "$OUT/fake-fcm.port")"

echo
echo "delivering to the fake FCM server on 127.0.0.1:$PORT (5% 503 with Retry-After, 1% UNREGISTERED tokens)"
# --time-scale shrinks retry waits (Retry-After, backoff) so the demo does not wait minutes.
"$BIN/digest" send --db "$OUT/digest.sqlite" --credentials "$OUT/service-account.json" \
    --endpoint "http://127.0.0.1:$PORT" --drain --time-scale 0.01 --poll-interval 0.2
echo
"$BIN/digest" queue stats --db "$OUT/digest.sqlite"
kill -TERM "$FAKE"
wait "$FAKE" || true
trap - EXIT
echo
echo "fake FCM server:"
sed 's/^/  /' "$OUT/fake-fcm.log"
echo "service account (throwaway key, made at start): $OUT/service-account.json"
