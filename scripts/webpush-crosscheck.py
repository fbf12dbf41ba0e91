#!/usr/bin/env python3
"""Decrypts Web Push bodies that digest encrypted with another implementation: the `http-ece`
Python library (RFC 8188/8291, `aes128gcm`). By hand, not part of the tests:

    python3 -m venv /tmp/ece && /tmp/ece/bin/pip install http-ece
    /tmp/ece/bin/python scripts/webpush-crosscheck.py

It runs the test `samplesForTheCrossCheck` of the built test bundle (swift build --build-tests
first), which writes bodies with their receivers' keys, and decrypts each one.
"""
import base64, json, os, subprocess, sys, tempfile

import http_ece
from cryptography.hazmat.primitives.asymmetric import ec


def b64(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
bundle = os.path.join(root, ".build/debug/digestPackageTests.xctest")
with tempfile.TemporaryDirectory() as directory:
    samples = os.path.join(directory, "samples.jsonl")
    subprocess.run([bundle, "--testing-library", "swift-testing", "--filter", "samplesForTheCrossCheck"],
                   env=dict(os.environ, DIGEST_WEBPUSH_SAMPLES=samples), check=True, stdout=subprocess.DEVNULL)
    failures = 0
    with open(samples) as lines:
        for line in lines:
            sample = json.loads(line)
            key = ec.derive_private_key(int.from_bytes(b64(sample["private"]), "big"), ec.SECP256R1())
            plaintext = http_ece.decrypt(b64(sample["body"]), private_key=key, auth_secret=b64(sample["auth"]),
                                         version="aes128gcm")
            ok = plaintext == b64(sample["plaintext"])
            failures += not ok
            print(f"{'ok' if ok else 'MISMATCH'}: {len(plaintext)} bytes of plaintext, body {len(b64(sample['body']))} bytes")
    sys.exit(1 if failures else 0)
