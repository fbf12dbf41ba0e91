#!/usr/bin/env bash
# make demo-send: the demo's weekly run with every message due now, delivered end to end on loopback
# by one `digest send` to the fake FCM server (digest-fake-fcm, a throwaway service-account key made
# at start), the fake APNs server (digest-fake-apns, a throwaway .p8 key) and the fake Web Push service
# (digest-fake-webpush, which remakes the demo subscribers' keys and decrypts what it gets; a throwaway
# VAPID key), the last two over TLS with one throwaway certificate.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${DEMO_OUT:-demo-out}"
BIN="$(swift build --show-bin-path)"
mkdir -p "$OUT"
rm -f "$OUT/fake-fcm.port" "$OUT/fake-apns.port" "$OUT/fake-webpush.port" "$OUT/vapid.pem"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=localhost \
    -addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout "$OUT/fake-tls-key.pem" -out "$OUT/fake-ca.pem" 2>/dev/null

# The push service first: the demo's subscriptions point at its port.
"$BIN/digest-fake-webpush" --port 0 --port-file "$OUT/fake-webpush.port" --demo-subscribers \
    --tls-cert "$OUT/fake-ca.pem" --tls-key "$OUT/fake-tls-key.pem" --unavailable-rate "${FAKE_WEBPUSH_UNAVAILABLE:-0.05}" \
    > "$OUT/fake-webpush.log" 2>&1 &
FAKE_WEBPUSH=$!
trap 'kill "$FAKE_WEBPUSH" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do [ -s "$OUT/fake-webpush.port" ] && break; sleep 0.1; done
WEBPUSH_PORT="$(cat "$OUT/fake-webpush.port")"

"$BIN/digest" demo --out "$OUT" --send-at now --webpush-base "https://127.0.0.1:$WEBPUSH_PORT/push"
"$BIN/digest" webpush keygen --out "$OUT/vapid.pem" > /dev/null

"$BIN/digest-fake-fcm" --port 0 --port-file "$OUT/fake-fcm.port" --credentials "$OUT/service-account.json" \
    --unavailable-rate "${FAKE_FCM_UNAVAILABLE:-0.05}" --unregistered-rate "${FAKE_FCM_UNREGISTERED:-0.01}" \
    > "$OUT/fake-fcm.log" 2>&1 &
FAKE=$!
"$BIN/digest-fake-apns" --port 0 --port-file "$OUT/fake-apns.port" --key-file "$OUT/AuthKey_DEMO123456.p8" \
    --key-id DEMO123456 --team-id TEAM123456 --topic com.example.digest --tls-cert "$OUT/fake-ca.pem" --tls-key "$OUT/fake-tls-key.pem" \
    --unavailable-rate "${FAKE_APNS_UNAVAILABLE:-0.05}" --unregistered-rate "${FAKE_APNS_UNREGISTERED:-0.01}" \
    > "$OUT/fake-apns.log" 2>&1 &
FAKE_APNS=$!
trap 'kill "$FAKE" "$FAKE_APNS" "$FAKE_WEBPUSH" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do [ -s "$OUT/fake-fcm.port" ] && [ -s "$OUT/fake-apns.port" ] && break; sleep 0.1; done
PORT="$(cat "$OUT/fake-fcm.port")"
APNS_PORT="$(cat "$OUT/fake-apns.port")"

echo
echo "delivering to the fake FCM server on 127.0.0.1:$PORT, the fake APNs server on 127.0.0.1:$APNS_PORT"
echo "and the fake Web Push service on 127.0.0.1:$WEBPUSH_PORT (each: 5% 503 answers; FCM and APNs: 1% unregistered tokens)"
# The fakes' 503s are retried after their Retry-After (FCM's: 1 s) or the first backoff (0.5 to 1 s):
# the demo waits seconds, not minutes.
"$BIN/digest" send --db "$OUT/digest.sqlite" --credentials "$OUT/service-account.json" \
    --endpoint "http://127.0.0.1:$PORT" \
    --apns-key-file "$OUT/AuthKey_DEMO123456.p8" --apns-key-id DEMO123456 --apns-team-id TEAM123456 \
    --apns-topic com.example.digest --apns-endpoint "https://127.0.0.1:$APNS_PORT" --ca-file "$OUT/fake-ca.pem" \
    --vapid-key-file "$OUT/vapid.pem" --vapid-subject mailto:demo@example.com --allow-push-hosts 127.0.0.1 \
    --drain
echo
"$BIN/digest" queue stats --db "$OUT/digest.sqlite"
kill -TERM "$FAKE" "$FAKE_APNS" "$FAKE_WEBPUSH"
wait "$FAKE" || true
wait "$FAKE_APNS" || true
wait "$FAKE_WEBPUSH" || true
trap - EXIT
echo
echo "fake FCM server:"
sed 's/^/  /' "$OUT/fake-fcm.log"
echo "fake APNs server:"
sed 's/^/  /' "$OUT/fake-apns.log"
echo "fake Web Push service:"
sed 's/^/  /' "$OUT/fake-webpush.log"
echo "throwaway keys, made at start: $OUT/service-account.json, $OUT/AuthKey_DEMO123456.p8, $OUT/vapid.pem"
