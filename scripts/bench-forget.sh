#!/usr/bin/env bash
# `digest readers forget` on SQLite (release build): FORGET readers (default 10,000, every
# USERS/FORGET-th) forgotten by `--file` in a USERS-reader store (default 1,000,000) from `digest-bench
# generate` (devices, reads over four weeks, two earlier weeks' digests and their picks in the outbox).
# Times the command (wall, CPU, peak RSS; its batches and the closing TRUNCATE checkpoint included),
# and checks that every other reader's rows are unchanged: a fingerprint (row counts and a SHA-256 of
# the rows in key order) of users, devices, reads, outbox and picks without the forgotten readers,
# before and after, and that none of the forgotten readers' rows is left. Writes the "## Forgetting
# readers" section of BENCHMARKS.md (bench-forget markers).
# Usage: scripts/bench-forget.sh   (knobs: FORGET_USERS=1000000, FORGET_COUNT=10000, FORGET_READS_PER_USER=20,
#        BENCH_SKIP_BUILD=1 to use the release binaries as they are)
set -euo pipefail
cd "$(dirname "$0")/.."
USERS="${FORGET_USERS:-1000000}"
COUNT="${FORGET_COUNT:-10000}"
READS=$((USERS * ${FORGET_READS_PER_USER:-20}))
WEEK=2026-W46
OUT="bench-out/forget"
log() { echo "bench-forget: $*" >&2; }

if [ -z "${BENCH_SKIP_BUILD:-}" ]; then
  swift build -c release --product digest >/dev/null
  swift build -c release --product digest-bench >/dev/null
fi
BIN="$(swift build -c release --show-bin-path)"
rm -rf "$OUT" && mkdir -p "$OUT"
DB="$OUT/store.sqlite"

log "generating $USERS readers, $READS reads"
"$BIN/digest-bench" generate --db "$DB" --users "$USERS" --reads "$READS" --week "$WEEK" >"$OUT/generate.json"
"$BIN/digest" migrate --db "$DB" >/dev/null

# The readers to forget: every (USERS / COUNT)-th id of the store, in id order.
python3 - "$DB" "$COUNT" "$OUT/ids.txt" <<'PY'
import sqlite3, sys
db, count, path = sqlite3.connect(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
total = db.execute("SELECT count(*) FROM users").fetchone()[0]
step = max(1, total // count)
ids = [row[0] for i, row in enumerate(db.execute("SELECT id FROM users ORDER BY id")) if i % step == 0][:count]
open(path, "w").write("".join(i + "\n" for i in ids))
PY

# fingerprint: per table, the rows of every reader not forgotten (count and SHA-256 in key order),
# and the rows of forgotten readers left (must be 0 after).
cat >"$OUT/fingerprint.py" <<'PY'
import hashlib, json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("CREATE TEMP TABLE gone (id TEXT PRIMARY KEY)")
db.executemany("INSERT INTO gone VALUES (?)", [(l.strip(),) for l in open(sys.argv[2]) if l.strip()])
queries = {
    "users": "SELECT * FROM users WHERE id NOT IN (SELECT id FROM gone) ORDER BY pk",
    "devices": "SELECT d.* FROM devices d JOIN users u ON u.pk = d.user_pk WHERE u.id NOT IN (SELECT id FROM gone) ORDER BY d.user_pk, d.token",
    "reads": "SELECT r.* FROM reads r JOIN users u ON u.pk = r.user_pk WHERE u.id NOT IN (SELECT id FROM gone) ORDER BY r.user_pk, r.read_at, r.article_pk",
    "digest_outbox": "SELECT * FROM digest_outbox WHERE user_id NOT IN (SELECT id FROM gone) ORDER BY id",
    "digest_picks": "SELECT * FROM digest_picks WHERE user_id NOT IN (SELECT id FROM gone) ORDER BY user_id, week",
}
left = {
    "users": "SELECT count(*) FROM users WHERE id IN (SELECT id FROM gone)",
    "digest_outbox": "SELECT count(*) FROM digest_outbox WHERE user_id IN (SELECT id FROM gone)",
    "digest_picks": "SELECT count(*) FROM digest_picks WHERE user_id IN (SELECT id FROM gone)",
    "orphan devices": "SELECT count(*) FROM devices d LEFT JOIN users u ON u.pk = d.user_pk WHERE u.pk IS NULL",
    "orphan reads": "SELECT count(*) FROM reads r LEFT JOIN users u ON u.pk = r.user_pk WHERE u.pk IS NULL",
}
result = {"kept": {}, "left": {}}
for table, sql in queries.items():
    h, n = hashlib.sha256(), 0
    for row in db.execute(sql):
        h.update(repr(row).encode())
        n += 1
    result["kept"][table] = [n, h.hexdigest()]
for name, sql in left.items():
    result["left"][name] = db.execute(sql).fetchone()[0]
print(json.dumps(result, sort_keys=True))
PY
log "fingerprint before"
python3 "$OUT/fingerprint.py" "$DB" "$OUT/ids.txt" >"$OUT/before.json"
FILE_MB=$(python3 -c "import os; print(round(os.path.getsize('$DB') / 1e6))")

log "forgetting $COUNT readers"
/usr/bin/time -v "$BIN/digest" readers forget --db "$DB" --file "$OUT/ids.txt" --json >"$OUT/forget.json" 2>"$OUT/forget.err"
cat "$OUT/forget.json"
WALL=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$OUT/forget.err")
CPU=$(awk -F': ' '/User time/ { u = $2 } /System time/ { s = $2 } END { print u + s }' "$OUT/forget.err")
RSS=$(awk -F': ' '/Maximum resident/ { print int($2 / 1024) }' "$OUT/forget.err")
WAL_BYTES=$(stat -c %s "$DB-wal" 2>/dev/null || echo 0)

log "fingerprint after"
python3 "$OUT/fingerprint.py" "$DB" "$OUT/ids.txt" >"$OUT/after.json"
CHECK=$(python3 - "$OUT/before.json" "$OUT/after.json" <<'PY'
import json, sys
before, after = (json.load(open(p)) for p in sys.argv[1:3])
problems = [f"{t}: {before['kept'][t][0]} rows before, {after['kept'][t][0]} after" for t in before["kept"] if before["kept"][t] != after["kept"][t]]
problems += [f"{name}: {n} left" for name, n in after["left"].items() if n]
kept = ", ".join(f"{t} {after['kept'][t][0]:,}" for t in after["kept"])
print("; ".join(problems) if problems else f"unchanged ({kept}); none of the forgotten readers' rows left")
PY
)
log "$CHECK"
case "$CHECK" in unchanged*) ;; *) log "the other readers' rows changed"; exit 1 ;; esac

READERS=$(python3 -c "import json; print(json.load(open('$OUT/forget.json'))['readers'])")
REMOVED=$(python3 -c "import json; r = json.load(open('$OUT/forget.json'))['removed']; print(', '.join(f'{t} {n:,}' for t, n in sorted(r.items())))")
RATE=$(python3 -c "print(int($READERS / $WALL))")
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
python3 scripts/bench-section.py bench-forget 'scripts/bench-forget.sh' <<MD
## Forgetting readers

| store | readers forgotten | wall, s | readers/s | CPU, s | peak RSS, MB | \`-wal\` after, bytes |
|---|---:|---:|---:|---:|---:|---:|
| SQLite, $(python3 -c "print(f'{$USERS:,}')") readers ($FILE_MB MB) | $(python3 -c "print(f'{$READERS:,}')") | $WALL | $RATE | $CPU | $RSS | $WAL_BYTES |

- Rows removed: $REMOVED. The other readers' rows: $CHECK (fingerprints of users, devices, reads, outbox and
  picks before and after).
- Command: \`scripts/bench-forget.sh\` (knobs \`FORGET_USERS=$USERS\`, \`FORGET_COUNT=$COUNT\`): a store from
  \`digest-bench generate\` (1–3 devices a reader, $((READS / USERS)) reads a reader over four weeks, two earlier weeks'
  digests and their picks), then \`digest readers forget --file\` of every $((USERS / COUNT))th reader, timed with
  \`/usr/bin/time -v\`: its batches of 500 readers and its closing TRUNCATE checkpoint.
- Machine: $(python3 scripts/bench-section.py --machine); release build.
  Measured $(date -u +%Y-%m-%d) at $COMMIT.
MD
log "BENCHMARKS.md: ## Forgetting readers updated"
