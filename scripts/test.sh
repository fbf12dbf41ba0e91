#!/usr/bin/env bash
# Runs every test of the debug build (`make test` builds first). A run still going after
# DIGEST_TEST_TIMEOUT (default 40m; the whole suite takes about 7 minutes on 2 cores) is stopped,
# and the tests that had started but not ended are listed: a hung test then fails the run with its
# name instead of silently using up the CI's time.
set -uo pipefail
cd "$(dirname "$0")/.."
limit=${DIGEST_TEST_TIMEOUT:-40m}
log=$(mktemp /tmp/digest-test-log.XXXXXX)
trap 'rm -f "$log"' EXIT
# Line-buffered, so that the log holds every line up to the moment of a stop.
timeout --kill-after=30s "$limit" stdbuf -oL -eL "${SWIFT:-swift}" test --skip-build "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    # swift test's runner may outlive it: stop this checkout's.
    pkill -KILL -f "$PWD/.build/.*/digestPackageTests.xctest" || true
    echo
    echo "The tests were still running after $limit and were stopped. Started and not ended:"
    python3 - "$log" <<'PY'
import re, sys
started, ended = {}, set()
for line in open(sys.argv[1], errors="replace"):
    m = re.search(r"◇ Test (.+?) started\.", line)
    if m:
        started.setdefault(m.group(1), line.strip())
        continue
    m = re.search(r"[✔✘] Test (.+?)(?: with \d+ test cases?)? (?:passed|failed) after", line)
    if m:
        ended.add(m.group(1))
for name, line in started.items():
    if name not in ended and name != "run" and not name.startswith("case "):
        print("  " + name)
PY
fi
exit "$status"
