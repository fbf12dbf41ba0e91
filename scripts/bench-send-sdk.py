"""The Firebase Admin Python SDK on the outbox's messages, against the fake FCM server (scripts/bench-send.sh).

Usage: python bench-send-sdk.py OUTBOX.sqlite SERVICE_ACCOUNT.json ENDPOINT MODE
MODE: send_each_async (HTTP/2, asyncio) or send_each (HTTP/1.1, a thread pool).

Each message body in the outbox (FCM v1 JSON) becomes a `messaging.Message` with the same fields, sent in
batches of 500 (the SDK's limit a call). Only the SDK's FCM URL is patched, to ENDPOINT; the service
account's token_uri already points at the fake server. Trust the fake's certificate with SSL_CERT_FILE
(and REQUESTS_CA_BUNDLE). Prints one line: messages, seconds, messages/s, steady messages/s (after the first
second), and the success count.
"""
import asyncio
import warnings
import datetime
import json
import sqlite3
import sys
import time

import firebase_admin
from firebase_admin import credentials, messaging

warnings.filterwarnings("ignore", category=DeprecationWarning)  # 7.x: Message.token, still what FCM v1 takes


def to_message(body):
    m = json.loads(body)["message"]
    android = apns = webpush = None
    if "android" in m:
        a = m["android"]
        ttl = a.get("ttl")
        android = messaging.AndroidConfig(
            collapse_key=a.get("collapse_key"), priority=a.get("priority"),
            ttl=datetime.timedelta(seconds=float(ttl[:-1])) if ttl else None, data=a.get("data"))
    if "apns" in m:
        a = m["apns"]
        payload = a.get("payload", {})
        aps = payload.get("aps", {})
        alert = aps.get("alert", {})
        custom = {k: v for k, v in payload.items() if k != "aps"}
        apns = messaging.APNSConfig(
            headers=a.get("headers"),
            payload=messaging.APNSPayload(
                aps=messaging.Aps(
                    alert=messaging.ApsAlert(title=alert.get("title"), body=alert.get("body")),
                    category=aps.get("category"), thread_id=aps.get("thread-id"),
                    mutable_content=bool(aps.get("mutable-content"))),
                **custom),
            fcm_options=messaging.APNSFCMOptions(image=a["fcm_options"]["image"]) if "fcm_options" in a else None)
    if "webpush" in m:
        w = m["webpush"]
        n = w.get("notification", {})
        webpush = messaging.WebpushConfig(
            headers=w.get("headers"), data=w.get("data"),
            notification=messaging.WebpushNotification(
                title=n.get("title"), body=n.get("body"), icon=n.get("icon"), image=n.get("image"), tag=n.get("tag"),
                actions=[messaging.WebpushNotificationAction(x["action"], x["title"], icon=x.get("icon")) for x in n.get("actions", [])]),
            fcm_options=messaging.WebpushFCMOptions(link=w["fcm_options"]["link"]) if "fcm_options" in w else None)
    return messaging.Message(token=m["token"], data=m.get("data"), android=android, apns=apns, webpush=webpush)


def main():
    db, account, endpoint, mode = sys.argv[1:5]
    messages = [to_message(body) for (body,) in sqlite3.connect(db).execute("SELECT message FROM digest_outbox ORDER BY id")]
    # The one patch: where the SDK posts (its FCM_URL, formatted with the project path).
    messaging._MessagingService.FCM_URL = endpoint.rstrip("/") + "/v1/projects/{0}/messages:send"
    firebase_admin.initialize_app(credentials.Certificate(account))
    batches = [messages[i:i + 500] for i in range(0, len(messages), 500)]
    marks = []  # (seconds since start, messages done)
    start = time.monotonic()
    ok = 0
    if mode == "send_each_async":
        async def run():
            nonlocal ok
            done = 0
            for batch in batches:
                response = await messaging.send_each_async(batch)
                ok += response.success_count
                done += len(batch)
                marks.append((time.monotonic() - start, done))
        asyncio.run(run())
    else:
        done = 0
        for batch in batches:
            response = messaging.send_each(batch)
            ok += response.success_count
            done += len(batch)
            marks.append((time.monotonic() - start, done))
    elapsed = time.monotonic() - start
    first = next(((t, n) for t, n in marks if t >= 1.0), marks[0])
    steady = (len(messages) - first[1]) / (elapsed - first[0]) if elapsed > first[0] else len(messages) / elapsed
    print(f"{len(messages)} {elapsed:.2f} {len(messages) / elapsed:.0f} {steady:.0f} {ok}")


if __name__ == "__main__":
    main()
