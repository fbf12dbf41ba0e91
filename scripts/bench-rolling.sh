#!/usr/bin/env bash
# `make bench-rolling` (and a step of `make bench`): issue 14's rolling runs against the week's run,
# on SQLite and on PostgreSQL, written to BENCHMARKS.md between bench-rolling markers (scripts/bench-section.py).
#
# Three runs make a turn, each timed with /usr/bin/time -v (wall time, user + system CPU, peak RSS):
#   (a) the week's run:       digest run --db DB --week WEEK --send-at now
#   (b) one rolling run:      digest run --db DB --as-of AS_OF --send-at now, at an instant after the
#                             week has ended in every zone (default: the Monday after it, 12:00 UTC,
#                             when UTC-12 ends it), so it walks every zone;
#   (c) the next hourly run:  digest run --db DB --as-of NEXT --send-at now (default AS_OF + 1 h) on
#                             what (b) left: it must find nothing to do and enqueue nothing.
# (a) and (b) each start from the same history (SQLite: a fresh copy of one generated file;
# PostgreSQL: the week's runs, zone plans, chunks, picks and outbox rows cleared, the outbox put back
# as generated, VACUUM (ANALYZE) and CHECKPOINT); (c) follows (b) on its file or database, with only
# a wait for a quiet machine between them. The order alternates by turn (a b c, then b c a, …), so
# that a drift of the machine does not fall on one side. Optionally (ROLL_PARTIAL_TURNS, default 1
# on each store), on another fresh history: (b') a rolling run while the week is still under way in
# some zones (default: the week's Sunday 19:30 UTC: UTC+14 to +05:30 have ended it, +03:00 has not),
# then (c') the hour after (20:30 UTC), when no further zone has ended it: it finds nothing to do
# either, with zones still in the week.
# Checked: (b) enqueued the same number of messages as (a) (the outbox rows of the week are
# counted in the store), (c) and (c') enqueued 0; the script stops when not.
#
# SQLite: `digest-bench generate` (as scripts/bench.sh) writes one history (not timed).
# PostgreSQL: a throwaway cluster (scripts/pg-cluster.sh, as scripts/bench-postgres.sh: same
# settings), `digest migrate` and scripts/postgres-bench-data.sql; one worker per run; the server's
# CPU (the postmaster and its processes, from /proc) is recorded next to the run's.
#
# As root the whole script runs in a session of its own whose scheduling group has nice -10
# (ROLL_NICE), the PostgreSQL server in it; before each timed step it waits (at most ROLL_QUIET_WAIT
# seconds) until other processes use at most ROLL_QUIET_CORES cores, and records what they used
# before and during the step either way.
#
# Knobs (environment): ROLL_PARTS="sqlite postgres", ROLL_USERS=1000000 (SQLite),
# ROLL_READS_PER_USER=20, ROLL_PAIRS=3 (SQLite turns), ROLL_PG_USERS=200000,
# ROLL_PG_READS_PER_USER=20, ROLL_PG_PAIRS=3, ROLL_PARTIAL_TURNS=1 (0: no (b')/(c')),
# ROLL_WEEK=2026-W46, ROLL_AS_OF, ROLL_NEXT, ROLL_PARTIAL_AS_OF, ROLL_PARTIAL_NEXT (RFC 3339; defaults
# from the week as above), ROLL_SEED=2026, ROLL_CHUNK_SIZE=1000 (PostgreSQL), ROLL_OUT=bench-out/rolling,
# ROLL_REPORT=BENCHMARKS.md (none: no report), ROLL_KEEP=0 (1 keeps the PostgreSQL cluster),
# ROLL_QUIET_CORES=0.3, ROLL_QUIET_WAIT=120, ROLL_NICE=-10, ROLL_SKIP_BUILD=0, ROLL_COMMIT (what to
# call the code measured; default git's HEAD). The report's section is built from the results of both
# stores in ROLL_OUT: a run of one store keeps the other's last results.
set -euo pipefail
cd "$(dirname "$0")/.."

PARTS=${ROLL_PARTS:-"sqlite postgres"}
USERS=${ROLL_USERS:-1000000}
READS_PER_USER=${ROLL_READS_PER_USER:-20}
PAIRS=${ROLL_PAIRS:-3}
PG_USERS=${ROLL_PG_USERS:-200000}
PG_READS_PER_USER=${ROLL_PG_READS_PER_USER:-20}
PG_PAIRS=${ROLL_PG_PAIRS:-3}
PARTIAL_TURNS=${ROLL_PARTIAL_TURNS:-1}
WEEK=${ROLL_WEEK:-2026-W46}
SEED=${ROLL_SEED:-2026}
CHUNK_SIZE=${ROLL_CHUNK_SIZE:-1000}
OUT=${ROLL_OUT:-bench-out/rolling}
REPORT=${ROLL_REPORT:-BENCHMARKS.md}
KEEP=${ROLL_KEEP:-0}
QUIET_CORES=${ROLL_QUIET_CORES:-0.3}
QUIET_WAIT=${ROLL_QUIET_WAIT:-120}
HZ=$(getconf CLK_TCK)
if [ "$(id -u)" -eq 0 ]; then NICE=${ROLL_NICE:--10}; else NICE=${ROLL_NICE:-0}; fi

log() { printf 'bench-rolling: %s\n' "$*" >&2; }
. scripts/bench-lib.sh  # the scripts run from the package root (field, seconds, now, commas, wait_quiet, reexec_prioritized)

# The instants: the Monday after the week 12:00 and 13:00 UTC; its Sunday 19:30 and 20:30 UTC.
read -r D_AS_OF D_NEXT D_PARTIAL D_PARTIAL_NEXT < <(python3 -c '
import datetime, sys
year, week = sys.argv[1].split("-W")
end = datetime.datetime.combine(datetime.date.fromisocalendar(int(year), int(week), 1) + datetime.timedelta(days=7), datetime.time())
hour = datetime.timedelta(hours=1)
print(*[(end + h * hour).strftime("%Y-%m-%dT%H:%M:%SZ") for h in (12, 13, -4.5, -3.5)])' "$WEEK")
AS_OF=${ROLL_AS_OF:-$D_AS_OF}
NEXT=${ROLL_NEXT:-$D_NEXT}
PARTIAL_AS_OF=${ROLL_PARTIAL_AS_OF:-$D_PARTIAL}
PARTIAL_NEXT=${ROLL_PARTIAL_NEXT:-$D_PARTIAL_NEXT}

# ---------------------------------------------------------------------------------------------
# Outer part: installs and builds, then everything again in a session of its own (see above).
if [ -z "${ROLL_INNER:-}" ]; then
  need=()
  [ -x /usr/bin/time ] || need+=(time)
  if [[ " $PARTS " == *" postgres "* ]]; then
    ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql postgresql-contrib)
  fi
  . scripts/apt-lib.sh
  install_packages bench-rolling ${need[@]+"${need[@]}"}
  if [ "${ROLL_SKIP_BUILD:-0}" != 1 ]; then
    log "building digest (release)"
    swift build -c release --product digest
    if [[ " $PARTS " == *" sqlite "* ]]; then
      log "building digest-bench (release)"
      swift build -c release --product digest-bench
    fi
  fi
  mkdir -p "$OUT"
  # The binary measured is a copy, so that a rebuild in this checkout cannot swap it mid-run.
  cp .build/release/digest "$OUT/digest"
  reexec_prioritized ROLL_INNER "$0" "$@"
fi

# ---------------------------------------------------------------------------------------------
# Inner part.
DIGEST="$OUT/digest"
BENCH=.build/release/digest-bench
COMMIT=${ROLL_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
if [ -z "${ROLL_COMMIT:-}" ] && [ -n "$(git status --porcelain -- Sources Templates Package.swift 2>/dev/null)" ]; then
  COMMIT="$COMMIT (with uncommitted changes under Sources/, Templates/ or Package.swift)"
fi
STARTED_AT=$(date -u +%Y-%m-%dT%H:%M:%SZ)
COLUMNS_HEADER='store\tturn\trun\tusers\twall_s\tcpu_s\tserver_cpu_s\tmax_rss_mb\tlooked_at\tenqueued\tweek_rows\tothers_before\tothers_during\tsummary'

# The runs in a turn's order: (a) first in odd turns, last in even ones; (b) always right before (c).
turn_order() { if [ $(($1 % 2)) -eq 1 ]; then echo "a b c"; else echo "b c a"; fi; }

# Users looked at, messages enqueued, and the first line of each week's summary, from a run's
# --report (one summary for --week, a list for a rolling run).
report_numbers() {
  python3 -c '
import json, sys
data = json.load(open(sys.argv[1]))
runs = data if isinstance(data, list) else [data]
def head(r):
    if r.get("waitingForReads"): return "week %s: waiting for reads" % r["week"]
    if r.get("offsets") is not None:
        return "week %s: %s (%d zones ended, %d still in the week)" % (r["week"], ", ".join(r["offsets"]) or "no new users", r.get("zones") or 0, r.get("zonesLeft") or 0)
    return "week %s%s" % (r["week"], " (already complete)" if r.get("wasComplete") else "")
print(sum(r["thisRun"]["users"] for r in runs), sum(r["thisRun"]["enqueued"] for r in runs),
      "; ".join(head(r) for r in runs) or "nothing to do")' "$1"
}

# timed STORE TURN RUN USERS DIR WEEK_ROWS_COMMAND… -- DIGEST_RUN_ARGUMENTS…: waits for a quiet machine,
# times `digest run ARGUMENTS --send-at now --progress-interval 10 --report FILE`, counts the week's
# outbox rows with WEEK_ROWS_COMMAND and appends a row to DIR/results.tsv.
timed() {
  local store=$1 turn=$2 run=$3 users=$4 dir=$5
  shift 5
  local count=()
  while [ "$1" != -- ]; do count+=("$1"); shift; done
  shift
  local name="$dir/turn$turn-$run" quiet b0 b1 p0 p1
  quiet=$(wait_quiet)
  log "$store, turn $turn, ($run): digest run $* (other processes were using $quiet cores)"
  b0=$(busy_jiffies)
  p0=$(pg_jiffies)
  if ! /usr/bin/time -v -o "$name.time" "$DIGEST" run "$@" --send-at now --progress-interval 10 --report "$name.json" \
    >"$name.log" 2>&1; then
    echo "bench-rolling: digest run failed; its output:" >&2
    tail -n 30 "$name.log" >&2
    exit 1
  fi
  if [ -n "${POSTMASTER:-}" ]; then sleep 0.5; fi  # the backends exit after their clients: let the postmaster reap them
  b1=$(busy_jiffies)
  p1=$(pg_jiffies)
  local wall cpu rss looked enqueued summary rows
  wall=$(seconds "$(field "$name.time" 'Elapsed (wall clock) time (h:mm:ss or m:ss)')")
  cpu=$(awk '/User time|System time/ { s += $NF } END { printf "%.2f", s }' "$name.time")
  rss=$(awk '/Maximum resident set size/ { printf "%.0f", $NF / 1024 }' "$name.time")
  read -r looked enqueued summary < <(report_numbers "$name.json")
  rows=$("${count[@]}")
  awk -v OFS='\t' -v store="$store" -v turn="$turn" -v run="$run" -v users="$users" -v wall="$wall" -v cpu="$cpu" \
    -v p=$((p1 - p0)) -v b=$((b1 - b0)) -v hz="$HZ" -v rss="$rss" -v looked="$looked" -v enq="$enqueued" -v rows="$rows" \
    -v quiet="$quiet" -v pg="${POSTMASTER:-}" -v summary="$summary" 'BEGIN {
      others = (b - p) / hz - cpu; others = wall > 0 ? others / wall : 0; if (others < 0) others = 0
      print store, turn, run, users, wall, cpu, (pg == "" ? "" : sprintf("%.2f", p / hz)), rss, looked, enq, rows, quiet, sprintf("%.2f", others), summary }' \
    >>"$dir/results.tsv"
  log "$store, turn $turn, ($run): $wall s, CPU $cpu s$([ -n "${POSTMASTER:-}" ] && awk -v p=$((p1 - p0)) -v hz="$HZ" 'BEGIN { printf " (server %.2f s)", p / hz }'), peak RSS $rss MB; $looked users looked at, $enqueued enqueued, $rows outbox rows of $WEEK; $summary"
}

# The week's outbox rows in turn T's runs: (a) and (b) must agree, (c) must add none.
check_turn() {
  local dir=$1 turn=$2
  awk -F'\t' -v t="$turn" -v week="$WEEK" '
    $2 == t { rows[$3] = $11; enq[$3] = $10 }
    END {
      bad = 0
      if (("a" in rows) && ("b" in rows) && rows["a"] != rows["b"]) { printf "bench-rolling: turn %s: the rolling run left %s outbox rows of %s, the week'"'"'s run %s\n", t, rows["b"], week, rows["a"] > "/dev/stderr"; bad = 1 }
      if (("c" in enq) && enq["c"] != 0) { printf "bench-rolling: turn %s: the next hourly run enqueued %s messages\n", t, enq["c"] > "/dev/stderr"; bad = 1 }
      if (("c" in rows) && rows["c"] != rows["b"]) { printf "bench-rolling: turn %s: the next hourly run changed the outbox (%s rows, %s before)\n", t, rows["c"], rows["b"] > "/dev/stderr"; bad = 1 }
      if (("cp" in enq) && enq["cp"] != 0) { printf "bench-rolling: turn %s: the hour after the partial run enqueued %s messages\n", t, enq["cp"] > "/dev/stderr"; bad = 1 }
      exit bad }' "$dir/results.tsv"
}

POSTMASTER=""
. scripts/pg-jiffies.sh  # pg_jiffies: 0 while no server is up

# ---- SQLite ----
if [[ " $PARTS " == *" sqlite "* ]]; then
  DIR="$OUT/sqlite"
  rm -rf "$DIR"
  mkdir -p "$DIR"
  printf "$COLUMNS_HEADER\n" >"$DIR/results.tsv"
  GENERATED="$DIR/generated.sqlite"
  READS=$((USERS * READS_PER_USER))
  log "sqlite: generating $USERS users, $READS reads for $WEEK (not timed)"
  "$BENCH" generate --db "$GENERATED" --users "$USERS" --reads "$READS" --week "$WEEK" --seed "$SEED" >"$DIR/generate.json"
  cat "$DIR/generate.json" >&2
  RUN_DB="$DIR/run.sqlite"
  fresh() { rm -f "$RUN_DB" "$RUN_DB-wal" "$RUN_DB-shm" "$RUN_DB.lock"; cp "$GENERATED" "$RUN_DB"; sync; }
  week_rows() {
    python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM digest_outbox WHERE week = ?", (sys.argv[2],)).fetchone()[0])' \
      "$RUN_DB" "$WEEK"
  }
  for TURN in $(seq "$PAIRS"); do
    for RUN in $(turn_order "$TURN"); do
      case $RUN in
        a) fresh; timed sqlite "$TURN" a "$USERS" "$DIR" week_rows -- --db "$RUN_DB" --week "$WEEK" ;;
        b) fresh; timed sqlite "$TURN" b "$USERS" "$DIR" week_rows -- --db "$RUN_DB" --as-of "$AS_OF" ;;
        c) timed sqlite "$TURN" c "$USERS" "$DIR" week_rows -- --db "$RUN_DB" --as-of "$NEXT" ;;
      esac
    done
    check_turn "$DIR" "$TURN"
  done
  for TURN in $(seq "$PARTIAL_TURNS"); do
    fresh
    timed sqlite "p$TURN" bp "$USERS" "$DIR" week_rows -- --db "$RUN_DB" --as-of "$PARTIAL_AS_OF"
    timed sqlite "p$TURN" cp "$USERS" "$DIR" week_rows -- --db "$RUN_DB" --as-of "$PARTIAL_NEXT"
    check_turn "$DIR" "p$TURN"
  done
  rm -f "$RUN_DB" "$RUN_DB-wal" "$RUN_DB-shm" "$RUN_DB.lock" "$GENERATED"
  echo "$STARTED_AT $COMMIT" >"$DIR/measured.txt"
fi

# ---- PostgreSQL ----
if [[ " $PARTS " == *" postgres "* ]]; then
  DIR="$OUT/postgres"
  rm -rf "$DIR"
  mkdir -p "$DIR"
  printf "$COLUMNS_HEADER\n" >"$DIR/results.tsv"
  PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)
  (
    # pg_cluster_start and pg_generate_history read these (scripts/bench-postgres.sh's defaults for
    # articles, weeks and digests), and write their logs to OUT.
    OUT=$DIR USERS=$PG_USERS READS=$((PG_USERS * PG_READS_PER_USER)) ARTICLES=40000 WEEKS=4 DIGESTS=2
    . scripts/pg-cluster.sh  # pg_cluster_start/stop, pg_generate_history, pg_reset_week, pg_jiffies
    trap 'status=$?; pg_cluster_stop; exit $status' EXIT
    trap 'exit 130' INT TERM
    pg_cluster_start
    pg_generate_history
    echo "$GEN_SECONDS $N_USERS $N_DEVICES $N_ARTICLES $N_READS $N_PREVIOUS $DB_MB $("$PGBIN/postgres" --version | awk '{ print $3 }')" \
      >"$DIR/generated.txt"
    week_rows() { "${PSQL[@]}" -At -c "SELECT count(*) FROM digest_outbox WHERE week = '$WEEK'"; }
    pg_run() {
      local turn=$1 run=$2
      shift 2
      "${PSQL[@]}" -c "SELECT pg_stat_statements_reset()" >/dev/null
      timed postgres "$turn" "$run" "$N_USERS" "$DIR" week_rows -- --db "$URL" --chunk-size "$CHUNK_SIZE" \
        --worker "bench-$turn-$run" "$@"
      "${PSQL[@]}" -At -F $'\t' -c "
        SELECT round(total_exec_time::numeric / 1000, 3) AS total_s, calls, rows, round(mean_exec_time::numeric, 3) AS mean_ms,
               shared_blks_hit, shared_blks_read, left(regexp_replace(query, '\s+', ' ', 'g'), 300)
        FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 25" >"$DIR/turn$turn-$run-statements.tsv"
    }
    for TURN in $(seq "$PG_PAIRS"); do
      for RUN in $(turn_order "$TURN"); do
        case $RUN in
          a) pg_reset_week; pg_run "$TURN" a --week "$WEEK" ;;
          b) pg_reset_week; pg_run "$TURN" b --as-of "$AS_OF" ;;
          c) pg_run "$TURN" c --as-of "$NEXT" ;;
        esac
      done
      check_turn "$DIR" "$TURN"
    done
    for TURN in $(seq "$PARTIAL_TURNS"); do
      pg_reset_week
      pg_run "p$TURN" bp --as-of "$PARTIAL_AS_OF"
      pg_run "p$TURN" cp --as-of "$PARTIAL_NEXT"
      check_turn "$DIR" "p$TURN"
    done
  )
  echo "$STARTED_AT $COMMIT" >"$DIR/measured.txt"
fi

[ "$REPORT" = none ] && exit 0

# ---- the report: the section between the bench-rolling markers ----
log "writing $REPORT"
SECTION="$OUT/section.md"
python3 - "$OUT" "$WEEK" "$AS_OF" "$NEXT" "$PARTIAL_AS_OF" "$PARTIAL_NEXT" "$CHUNK_SIZE" "$NICE" \
  "$(python3 scripts/bench-section.py --machine); $(swift --version 2>/dev/null | head -n1), release build" \
  >"$SECTION" <<'PY'
import json, os, statistics, sys
out, week, as_of, nxt, partial, partial_next, chunk, nice, machine = sys.argv[1:10]

def rows(store):
    path = os.path.join(out, store, "results.tsv")
    if not os.path.exists(path):
        return None
    lines = [l.rstrip("\n").split("\t") for l in open(path)]
    head = lines[0]
    return [dict(zip(head, l)) for l in lines[1:]]

def read(path, default=""):
    return open(path).read().strip() if os.path.exists(path) else default

def num(x):
    return f"{int(round(float(x))):,}"

def med(xs):
    return statistics.median(xs) if xs else float("nan")

def spread(xs):
    return max(xs) / min(xs) if xs and min(xs) > 0 else float("nan")

names = {"a": f"(a) `--week {week}`", "b": f"(b) rolling, `--as-of {as_of}`", "c": f"(c) next hour, `--as-of {nxt}`",
         "bp": f"(b′) rolling while the week goes on, `--as-of {partial}`", "cp": f"(c′) the hour after, `--as-of {partial_next}`"}
f = lambda r, k: float(r[k]) if r[k] != "" else 0.0
table, data_lines, measured_lines, spreads, checks = [], [], [], [], []
for store, title in (("sqlite", "SQLite"), ("postgres", "PostgreSQL")):
    data = rows(store)
    if not data:
        continue
    measured = read(os.path.join(out, store, "measured.txt"), "? ?").split(" ", 1)
    users = int(data[0]["users"])
    pg = store == "postgres"
    measured_lines.append(f"{title} measured {measured[0]} at {measured[1]}")
    if pg:
        g = read(os.path.join(out, store, "generated.txt")).split()
        data_lines.append(f"PostgreSQL {g[7]} from `scripts/postgres-bench-data.sql` ({int(g[1]):,} users, {int(g[2]):,} devices, "
                          f"{int(g[3]):,} articles, {int(g[4]):,} reads over 4 weeks, {int(g[5]):,} earlier digests; {int(g[6]):,} MB)")
    else:
        gen = json.load(open(os.path.join(out, store, "generate.json")))
        data_lines.append(f"SQLite from `digest-bench generate` ({gen['users']:,} users, {gen['devices']:,} devices, "
                          f"{gen['articles']:,} articles, {gen['reads']:,} reads over {gen['weeks']} weeks, "
                          f"{gen['previousDigests']:,} earlier digests; {gen['bytes'] / 1048576:,.0f} MB)")
    by = {}
    for r in data:
        by.setdefault(r["run"], []).append(r)
    per_user = lambda rs: med([(f(r, "cpu_s") + f(r, "server_cpu_s")) / users * 1e6 for r in rs])
    base = per_user(by["a"]) if "a" in by else float("nan")
    for run in ("a", "b", "c", "bp", "cp"):
        if run not in by:
            continue
        rs = by[run]
        cpu, server = med([f(r, "cpu_s") for r in rs]), med([f(r, "server_cpu_s") for r in rs])
        per = per_user(rs)
        ratio = "1" if run == "a" else (f"{per / base:.3f}" if per / base >= 0.01 else f"{per / base:.4f}")
        table.append(f"| {title}, {users:,} | {names[run]} | {len(rs)} | {med([f(r, 'wall_s') for r in rs]):.2f} | "
                     f"{f'{cpu:.2f} + {server:.2f}' if pg else f'{cpu:.2f}'} | {per:.1f} | {ratio} | "
                     f"{num(med([f(r, 'enqueued') for r in rs]))} |")
    if "a" in by:
        a_cpu = [(f(r, "cpu_s") + f(r, "server_cpu_s")) for r in by["a"]]
        spreads.append(f"{title} {spread(a_cpu):.3f}")
    if "a" in by and "b" in by:
        msgs = sorted({r["week_rows"] for r in by["a"] + by["b"]})
        checks.append(f"{title}: (a) and (b) left {', '.join(num(m) for m in msgs)} outbox rows of the week"
                      + ("" if len(msgs) == 1 else " (NOT the same)"))

print("## Rolling runs")
print()
print("| store, users | run | turns | wall, s (median) | CPU, s: digest (+ server) | CPU-µs a user | CPU ÷ (a)'s | enqueued |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for line in table:
    print(line)
print()
print(f"- Reference: (a), the week's run over the same history. (b) walks every zone once the week has ended everywhere "
      f"and must cost within 10% of (a); (c), the next hourly run, must find nothing to do without rescanning the readers; "
      f"(b′) and (c′) do the same while the week still goes on in some zones. CPU per user divides by every user in the "
      f"store (digest + server on PostgreSQL). Spread of (a)'s CPU (max ÷ min): {'; '.join(spreads)}. Checked by the "
      f"script: {'; '.join(checks)}; (c) and (c′) enqueued none.")
print(f"- Command: `make bench-rolling` (`scripts/bench-rolling.sh`; knobs `ROLL_PARTS=\"sqlite postgres\"`, `ROLL_USERS`, "
      f"`ROLL_PAIRS`, `ROLL_PG_USERS`, `ROLL_PG_PAIRS`, `ROLL_PARTIAL_TURNS`, `ROLL_READS_PER_USER`, `ROLL_WEEK`, `ROLL_AS_OF`, "
      f"`ROLL_NEXT`, `ROLL_CHUNK_SIZE={chunk}`, `ROLL_SKIP_BUILD`). Data: {'; '.join(data_lines)}; one worker; turns alternate "
      f"the order (a b c, b c a, …). Every run in full: `{out}/*/results.tsv`.")
print(f"- Machine: {machine}; the script at nice {nice} in a session of its own. {'; '.join(measured_lines)}.")
PY
python3 scripts/bench-section.py --report "$REPORT" bench-rolling 'scripts/bench-rolling.sh (make bench-rolling; a step of make bench)' <"$SECTION"
log "done: $REPORT; raw output in $OUT/"
