#!/usr/bin/env python3
"""An independent check of digest-fake-apns: Python's aioapns client (PyPI; not needed by CI) sends
through the fake as it would to Apple, and what the fake answers is held to what Apple documents.

Usage: scripts/fake-apns-aioapns.py [--binary .build/debug/digest-fake-apns] [--count 500]
Needs: pip install aioapns (a virtualenv is fine), curl with HTTP/2; the binary built (swift build --product digest-fake-apns).
"""
import argparse
import asyncio
import json
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import time

from aioapns import APNs, NotificationRequest, PushType
from aioapns import connection as apns_connection


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=".build/debug/digest-fake-apns")
    parser.add_argument("--count", type=int, default=500)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as work:
        port_file, key_file, ca_file = (os.path.join(work, name) for name in ("port", "AuthKey.p8", "ca.pem"))
        server = subprocess.Popen(
            [args.binary, "--port-file", port_file, "--key-file", key_file, "--ca-out", ca_file,
             "--unregistered-rate", "0.05", "--delay-ms", "5"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            for _ in range(200):
                if os.path.exists(port_file) and os.path.getsize(port_file) > 0 and os.path.exists(ca_file):
                    break
                time.sleep(0.05)
            port = int(open(port_file).read())
            failures = asyncio.run(exercise(port, key_file, ca_file, args.count))
        finally:
            server.send_signal(signal.SIGTERM)
            output, _ = server.communicate(timeout=10)
        print(output.strip())
        print("FAIL" if failures else "OK", *failures, sep="\n  ")
        return 1 if failures else 0


async def exercise(port: int, key_file: str, ca_file: str, count: int) -> list:
    # aioapns connects to Apple's host name on 443: point its protocol at the fake instead.
    apns_connection.APNsProductionClientProtocol.APNS_SERVER = "127.0.0.1"
    apns_connection.APNsProductionClientProtocol.APNS_PORT = port
    context = ssl.create_default_context(cafile=ca_file)
    context.set_alpn_protocols(["h2"])
    client = APNs(key=open(key_file).read(), key_id="ABC123DEFG", team_id="DEF123GHIJ", topic="com.example.digest",
                  use_sandbox=False, ssl_context=context, max_connections=2)
    failures = []

    def token(i: int) -> str:
        return f"{i * 2654435761 % (1 << 64):016x}" * 4

    async def send(i: int, **overrides):
        request = NotificationRequest(device_token=token(i), message={"aps": {"alert": {"title": "Your week", "body": f"{i} stories"}}},
                                      push_type=PushType.ALERT, priority=10, collapse_key="digest-2026-W46")
        for name, value in overrides.items():
            setattr(request, name, value)
        return await client.send_notification(request)

    results = await asyncio.gather(*(send(i) for i in range(count)))
    statuses = {}
    for result in results:
        statuses[(result.status, result.description)] = statuses.get((result.status, result.description), 0) + 1
    print("answers:", statuses)
    accepted = sum(1 for r in results if r.is_successful)
    gone = [r for r in results if r.status == "410"]
    if accepted + len(gone) != count:
        failures.append(f"expected only 200 and 410, got {statuses}")
    if not 0 < len(gone) < count // 5:
        failures.append(f"expected about 5% Unregistered, got {len(gone)}")
    if any(r.description != "Unregistered" or r.timestamp is None for r in gone):
        failures.append("a 410 without reason Unregistered and a timestamp")
    for r in results:
        if r.is_successful and len(r.notification_id) != 36:
            failures.append(f"200 without the request's apns-id: {r.notification_id!r}")
            break

    # Refusals aioapns can provoke.
    bad = await send(1, device_token="not-a-token")
    if (bad.status, bad.description) != ("400", "BadDeviceToken"):
        failures.append(f"bad token: {bad.status} {bad.description}")
    topic = await send(2, apns_topic="com.example.other")
    if (topic.status, topic.description) != ("400", "TopicDisallowed"):
        failures.append(f"other topic: {topic.status} {topic.description}")
    large = await send(3, message={"aps": {"alert": "x" * 5000}})
    if (large.status, large.description) != ("413", "PayloadTooLarge"):
        failures.append(f"large payload: {large.status} {large.description}")
    client.pool.close()

    # The fake speaks HTTP/2 only: curl, not urllib.
    stats = json.loads(subprocess.run(["curl", "-sS", "--http2", "--cacert", ca_file, f"https://127.0.0.1:{port}/stats"],
                                      check=True, capture_output=True, text=True, timeout=10).stdout)
    print("stats:", json.dumps(stats, sort_keys=True))
    # aioapns signs a token per connection (Apple counts token updates per connection), and its first
    # flight may open a stream before reading the fake's SETTINGS (1): that stream is refused and retried.
    if stats["delivered"] != accepted or not 1 <= stats["providerTokens"] <= stats["connections"]:
        failures.append(f"stats disagree: delivered {stats['delivered']} (accepted {accepted}), "
                        f"providerTokens {stats['providerTokens']} over {stats['connections']} connections")
    if stats["maxStreamsUsed"] < 2:
        failures.append("aioapns never had more than one stream open: the SETTINGS raise did not reach it")
    return failures


if __name__ == "__main__":
    sys.exit(main())
