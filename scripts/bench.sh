#!/usr/bin/env bash
# `make bench`: the weekly run on SQLite against its physical reference, written to BENCHMARKS.md.
#
# For each size (100,000 and 1,000,000 users, 20 reads each over four weeks): generate a history once (not timed),
# then for each pair copy it, time `digest run` with /usr/bin/time -v (wall time, peak RSS), time
# checkpointing what it left in the WAL, and right after, `digest-bench reference` (the same number of
# outbox rows, same byte sizes, inserted with prepared statements in 2000-row transactions). Release builds. Safe to rerun: every run
# starts from fresh copies and replaces the results in bench-out/ and the section in BENCHMARKS.md.
#
# Knobs (environment): BENCH_SIZES="100000 1000000", BENCH_PAIRS_SMALL=3 (sizes up to 100k),
# BENCH_PAIRS_LARGE=2, BENCH_READS_PER_USER=20, BENCH_WEEK=2026-W46, BENCH_SEED=2026,
# BENCH_OUT=bench-out, BENCH_KEEP_DB=0 (1 keeps the SQLite files), BENCH_REPORT=BENCHMARKS.md,
# BENCH_QUIET_CORES=0.3 and BENCH_QUIET_WAIT=120: before each timed step, wait (at most that many
# seconds) until other processes use at most that many cores; what they used is recorded either way.
# BENCH_COMMIT: what to call the code measured in the report (default: git's HEAD, noting changes).
# BENCH_SKIP_BUILD=1: measure the release builds already in .build (another
# checkout's digest-bench copied there, say, so that two commits' runs see the same generated rows).
# BENCH_NICE=-10 (as root; 0 otherwise): the timed programs run at this priority (in a session of
# their own), so that builds of others on a shared machine take less of the cores from them.
set -euo pipefail
cd "$(dirname "$0")/.."

SIZES=${BENCH_SIZES:-"100000 1000000"}
PAIRS_SMALL=${BENCH_PAIRS_SMALL:-3}
PAIRS_LARGE=${BENCH_PAIRS_LARGE:-2}
READS_PER_USER=${BENCH_READS_PER_USER:-20}
WEEK=${BENCH_WEEK:-2026-W46}
SEED=${BENCH_SEED:-2026}
OUT=${BENCH_OUT:-bench-out}
KEEP_DB=${BENCH_KEEP_DB:-0}
REPORT=${BENCH_REPORT:-BENCHMARKS.md}
QUIET_CORES=${BENCH_QUIET_CORES:-0.3}
QUIET_WAIT=${BENCH_QUIET_WAIT:-120}
HZ=$(getconf CLK_TCK)
if [ "$(id -u)" -eq 0 ]; then NICE=${BENCH_NICE:--10}; else NICE=${BENCH_NICE:-0}; fi

DIGEST=.build/release/digest
BENCH=.build/release/digest-bench

log() { printf 'bench: %s\n' "$*"; }

# /usr/bin/time -v (Debian package `time`) gives the wall time and the peak RSS.
. scripts/apt-lib.sh  # the scripts run from the package root
[ -x /usr/bin/time ] || install_packages bench time

if [ "${BENCH_SKIP_BUILD:-0}" = 1 ]; then
  log "not building (BENCH_SKIP_BUILD=1): measuring $DIGEST and $BENCH as they are"
  [ -x "$DIGEST" ] && [ -x "$BENCH" ] || { log "BENCH_SKIP_BUILD=1 needs $DIGEST and $BENCH"; exit 1; }
else
  log "building digest (release)"
  swift build -c release --product digest
  log "building digest-bench (release)"
  swift build -c release --product digest-bench
fi

mkdir -p "$OUT"
rm -rf "$OUT"/users-*
# The binary measured is a copy, so that a rebuild in this checkout while the bench runs cannot swap it.
cp .build/release/digest "$OUT/digest"
DIGEST="$OUT/digest"
COMMIT=${BENCH_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
if [ -z "${BENCH_COMMIT:-}" ] && [ -n "$(git status --porcelain -- Sources Templates Package.swift 2>/dev/null)" ]; then
  COMMIT="$COMMIT (with uncommitted changes under Sources/, Templates/ or Package.swift)"
fi

json_number() { sed -n "s/.*\"$2\": *\([0-9.]*\).*/\1/p" "$1" | head -n1; }

. scripts/bench-lib.sh  # the scripts run from the package root (field, seconds, wait_quiet, …)

# Runs a program at priority NICE in a session of its own. The kernel shares the cores between
# sessions first (autogroups), so a plain `nice` would count only against this script's own session;
# the new session's autogroup gets the priority instead. The program keeps the caller's process id.
prioritized() {
  if [ "$NICE" = 0 ] || [ ! -w /proc/self/autogroup ]; then
    "$@"
  else
    setsid bash -c 'echo "$0" >/proc/self/autogroup 2>/dev/null; exec nice -n "$0" "$@"' "$NICE" "$@"
  fi
}

# The process id of the first descendant of $1 whose name is $2 (empty when none).
descendant() {
  local queue=("$1") next pid
  while [ ${#queue[@]} -gt 0 ]; do
    next=()
    for pid in "${queue[@]}"; do
      for child in $(pgrep -P "$pid" || true); do
        if [ "$(cat "/proc/$child/comm" 2>/dev/null)" = "$2" ]; then
          echo "$child"
          return 0
        fi
        next+=("$child")
      done
    done
    queue=("${next[@]+"${next[@]}"}")
  done
}

# While the run goes: every 10 s, its busiest threads (top -H, over one second) and the WAL's size.
sample() {
  local time_pid=$1 db=$2 log=$3 pid=""
  for _ in $(seq 50); do
    pid=$(descendant "$time_pid" digest)
    [ -n "$pid" ] && break
    sleep 0.1
  done
  [ -z "$pid" ] && return 0
  local started=$SECONDS
  while kill -0 "$pid" 2>/dev/null; do
    {
      echo "=== t=$((SECONDS - started))s wal=$(stat -c %s "$db-wal" 2>/dev/null || echo 0) bytes" \
        "db=$(stat -c %s "$db" 2>/dev/null || echo 0) bytes" \
        "rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$pid/status" 2>/dev/null) kB" \
        "shm-mapped-rss=$(awk '/-shm/ { shm = 1; next } /^[0-9a-f]+-[0-9a-f]+ / { shm = 0 } shm && /^Rss:/ { s += $2 } END { print s + 0 }' "/proc/$pid/smaps" 2>/dev/null) kB"
      top -H -b -d 1 -n 2 -p "$pid" 2>/dev/null | awk '/^top - /{frame++} frame == 2' | sed -n '7,13p'
    } >>"$log" 2>/dev/null || true
    sleep 9
  done
}

for USERS in $SIZES; do
  READS=$((USERS * READS_PER_USER))
  if [ "$USERS" -le 100000 ]; then PAIRS=$PAIRS_SMALL; else PAIRS=$PAIRS_LARGE; fi
  DIR="$OUT/users-$USERS"
  mkdir -p "$DIR"
  GENERATED="$DIR/generated.sqlite"

  log "users $USERS: generating $READS reads for $WEEK (not timed)"
  "$BENCH" generate --db "$GENERATED" --users "$USERS" --reads "$READS" --week "$WEEK" --seed "$SEED" \
    >"$DIR/generate.json"
  cat "$DIR/generate.json"

  for PAIR in $(seq "$PAIRS"); do
    RUN_DB="$DIR/run.sqlite"
    REF_DB="$DIR/reference.sqlite"
    rm -f "$RUN_DB" "$RUN_DB-wal" "$RUN_DB-shm" "$RUN_DB.lock" "$REF_DB" "$REF_DB-wal" "$REF_DB-shm"
    cp "$GENERATED" "$RUN_DB"
    sync
    QUIET=$(wait_quiet)
    cat /proc/loadavg >"$DIR/load-$PAIR.txt"

    log "users $USERS, pair $PAIR/$PAIRS: digest run (other processes were using $QUIET cores)"
    BUSY_BEFORE=$(busy_jiffies)
    prioritized /usr/bin/time -v -o "$DIR/run-$PAIR.time" \
      "$DIGEST" run --db "$RUN_DB" --week "$WEEK" --send-at now --progress-interval 10 \
      --report "$DIR/run-$PAIR.json" >"$DIR/run-$PAIR.log" 2>&1 &
    TIME_PID=$!
    sample "$TIME_PID" "$RUN_DB" "$DIR/threads-$PAIR.log" &
    SAMPLER_PID=$!
    if ! wait "$TIME_PID"; then
      wait "$SAMPLER_PID" || true
      echo "bench: digest run failed; its output:" >&2
      cat "$DIR/run-$PAIR.log" >&2
      exit 1
    fi
    BUSY_AFTER=$(busy_jiffies)
    wait "$SAMPLER_PID" || true
    WALL=$(seconds "$(field "$DIR/run-$PAIR.time" 'Elapsed (wall clock) time (h:mm:ss or m:ss)')")
    RSS_KB=$(field "$DIR/run-$PAIR.time" 'Maximum resident set size (kbytes)')
    CPU=$(field "$DIR/run-$PAIR.time" 'Percent of CPU this job got')
    OWN_CPU=$(awk '/User time|System time/ { s += $NF } END { print s }' "$DIR/run-$PAIR.time")
    OTHERS=$(awk -v d=$((BUSY_AFTER - BUSY_BEFORE)) -v hz="$HZ" -v own="$OWN_CPU" -v w="$WALL" \
      'BEGIN { o = (d / hz - own) / w; if (o < 0) o = 0; printf "%.2f", o }')
    echo "$QUIET $OTHERS" >"$DIR/others-$PAIR.txt"
    grep -E '^(users|messages|time):' "$DIR/run-$PAIR.log" | sed 's/^/  /'
    log "users $USERS, pair $PAIR/$PAIRS: other processes used $OTHERS cores on average during the run"

    # Whatever the run left in the WAL (before 9b6c11b: its whole outbox) still has to reach the file;
    # the reference's timed part includes its checkpoints, so time this one before anything else opens it.
    prioritized "$BENCH" checkpoint --db "$RUN_DB" >"$DIR/checkpoint-$PAIR.json"
    log "users $USERS, pair $PAIR/$PAIRS: deferred WAL checkpoint: $(cat "$DIR/checkpoint-$PAIR.json")"

    QUIET=$(wait_quiet)
    log "users $USERS, pair $PAIR/$PAIRS: reference (same rows and sizes, fresh outbox; other processes were using $QUIET cores)"
    sync
    prioritized "$BENCH" reference --db "$REF_DB" --like "$RUN_DB" >"$DIR/reference-$PAIR.json"
    echo "$QUIET" >"$DIR/reference-others-$PAIR.txt"
    REF_S=$(json_number "$DIR/reference-$PAIR.json" seconds)
    REF_ROWS=$(json_number "$DIR/reference-$PAIR.json" rows)
    awk -v u="$USERS" -v w="$WALL" -v r="$RSS_KB" -v c="$CPU" -v rs="$REF_S" -v rr="$REF_ROWS" -v p="$PAIR" 'BEGIN {
      printf "bench: users %d, pair %d: run %.2f s (%.0f users/s, CPU %s, peak RSS %.0f MB); reference %.2f s for %d rows; ratio %.2f\n",
        u, p, w, u / w, c, r / 1024, rs, rr, w / rs }'
    rm -f "$REF_DB" "$REF_DB-wal" "$REF_DB-shm"
    if [ "$KEEP_DB" != 1 ]; then rm -f "$RUN_DB" "$RUN_DB-wal" "$RUN_DB-shm" "$RUN_DB.lock"; fi
  done
  if [ "$KEEP_DB" != 1 ]; then rm -f "$GENERATED"; fi
done

# Every pair in full (digest-bench report's tables) goes to $OUT/report.md; BENCHMARKS.md gets the
# one-table section below, between the same markers digest-bench report writes ("bench"), so either
# writer replaces the other's section wholly.
SWIFT_VERSION=$(swift --version 2>/dev/null | head -n1)
log "writing $OUT/report.md (every pair) and $REPORT (one table)"
"$BENCH" report --dir "$OUT" --out "$OUT/report.md" --command "make bench" \
  --swift "$SWIFT_VERSION" --commit "$COMMIT" --nice="$NICE" >/dev/null
python3 - "$OUT" "$COMMIT" "$(python3 scripts/bench-section.py --machine)" "$SWIFT_VERSION" "$NICE" "$WEEK" "$READS_PER_USER" <<'PY' |
import glob, json, os, re, statistics, sys
out, commit, machine, swift, nice, week, reads_per_user = sys.argv[1:8]

def field(text, name):
    m = re.search(r"^\s*" + re.escape(name) + r": (.*)$", text, re.M)
    return m.group(1).strip() if m else ""

def clock(s):
    v = 0.0
    for part in s.split(":"):
        v = v * 60 + float(part)
    return v

def load(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return None

def listed(xs, fmt):
    return ", ".join(fmt.format(x) for x in xs)

med = statistics.median
print("## Weekly run on SQLite")
print()
print("| users | pairs | run, s (median; pairs) | users/s | digest CPU, s (median; pairs) | CPU-µs a user | messages | "
      "reference, s | ratio run/reference | peak RSS, MB | others during, cores |")
print("|---:|---:|---|---:|---|---:|---:|---:|---:|---:|---|")
for d in sorted(glob.glob(os.path.join(out, "users-*")), key=lambda p: int(p.rsplit("-", 1)[1])):
    users = int(d.rsplit("-", 1)[1])
    pairs = []
    for i in range(1, 101):
        run, ref = load(f"{d}/run-{i}.json"), load(f"{d}/reference-{i}.json")
        if run is None or ref is None or not os.path.exists(f"{d}/run-{i}.time"):
            continue
        t = open(f"{d}/run-{i}.time").read()
        others = (open(f"{d}/others-{i}.txt").read().split() + ["?", "?"]) if os.path.exists(f"{d}/others-{i}.txt") else ["?", "?"]
        wall = clock(field(t, "Elapsed (wall clock) time (h:mm:ss or m:ss)"))
        cpu = float(field(t, "User time (seconds)") or 0) + float(field(t, "System time (seconds)") or 0)
        pairs.append(dict(wall=wall, cpu=cpu, rss=int(field(t, "Maximum resident set size (kbytes)") or 0) / 1024,
                          messages=int((run.get("thisRun") or {}).get("messages", 0)), ref=float(ref["seconds"]),
                          rows=int(ref["rows"]), ratio=wall / float(ref["seconds"]), others=others[1]))
    if not pairs:
        continue
    w = med([p["wall"] for p in pairs])
    c = med([p["cpu"] for p in pairs])
    print(f"| {users:,} | {len(pairs)} | {w:.1f} ({listed([p['wall'] for p in pairs], '{:.1f}')}) | {users / w:,.0f} | "
          f"{c:.1f} ({listed([p['cpu'] for p in pairs], '{:.1f}')}) | {c / users * 1e6:.0f} | {med([p['messages'] for p in pairs]):,.0f} | "
          f"{med([p['ref'] for p in pairs]):.1f} | {med([p['ratio'] for p in pairs]):.2f} | {max(p['rss'] for p in pairs):.0f} | "
          f"{', '.join(p['others'] for p in pairs)} |")
print()
print("- Reference: `digest-bench reference` inserts the run's number of outbox rows with the same byte sizes into an "
      "empty `digest_outbox` with one prepared statement, 2,000 rows a transaction, WAL and `synchronous = NORMAL` as in "
      "the run: the physical floor of the run's writes. Ratio: the run's wall time ÷ the reference's, median over the pairs.")
print(f"- Command: `make bench` (`scripts/bench.sh`; knobs `BENCH_SIZES=\"100000 1000000\"`, `BENCH_PAIRS_SMALL=3`, "
      f"`BENCH_PAIRS_LARGE=2`, `BENCH_READS_PER_USER={reads_per_user}`, `BENCH_WEEK={week}`, `BENCH_SEED`, `BENCH_NICE`, "
      f"`BENCH_SKIP_BUILD`; data from `digest-bench generate`). Each pair times `digest run --week {week} --send-at now` "
      f"on a fresh copy with `/usr/bin/time -v` (CPU = user + system), then the reference. Every pair in full "
      f"(`digest-bench report`): `{out}/report.md`.")
print(f"- Machine: {machine}; {swift}, release build; the timed programs at nice {nice} in a session of their own; "
      f"\"others during\" = the cores other processes used during each run. Measured "
      f"{__import__('datetime').datetime.now(__import__('datetime').timezone.utc):%Y-%m-%dT%H:%M:%SZ} at {commit}.")
PY
  python3 scripts/bench-section.py --report "$REPORT" bench '`make bench` (scripts/bench.sh)'
log "done: $REPORT; raw output in $OUT/"
