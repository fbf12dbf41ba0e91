#!/usr/bin/env bash
# `make bench-postgres` (and the last step of `make bench`): the weekly run on PostgreSQL, one worker
# and two, against its physical reference, written to BENCHMARKS.md between bench-postgres markers (scripts/bench-section.py).
#
# 1. Installs PostgreSQL (Debian package `postgresql`) when no initdb is found, and `time`.
# 2. Builds `digest` (release) and measures a copy of it.
# 3. Starts a throwaway cluster: initdb (as the user postgres when run as root: initdb refuses root)
#    in a temporary directory, the postmaster on 127.0.0.1 and a free port, torn down on exit.
#    Settings: shared_buffers=1GB, max_wal_size=8GB, checkpoint_timeout=30min (no checkpoint inside
#    a timed step: one is forced before each), maintenance_work_mem=1GB, pg_stat_statements loaded
#    (statement profile of each run in the raw output). fsync, synchronous_commit, full_page_writes
#    and wal_level stay at their defaults (on, on, on, replica), for the run and the reference alike.
# 4. `digest migrate`, then scripts/postgres-bench-data.sql generates the history in the server
#    (1,000,000 users, 20,000,000 reads over 2026-W46 and the three weeks before, 40,000 articles,
#    and in the outbox the sent digests of the two previous weeks, five picks each; not timed as part
#    of the run, its time is reported). Those outbox rows are saved in bench_outbox_before.
# 5. Timed: `digest run --send-at now` with one worker, then with two worker processes started
#    together (PGBENCH_TWO_WORKER_RUNS times). Before each run: the week's digest_runs row is deleted
#    (its chunks go with it), digest_outbox truncated and refilled from bench_outbox_before (the
#    previous weeks' digests, as generated), then VACUUM (ANALYZE) and CHECKPOINT: every run starts
#    from the same outbox. /usr/bin/time -v gives each process's wall
#    time, CPU and peak RSS; users/s = users / (last worker's exit - first worker's start).
#    CPU of the postgres processes (postmaster, its live children and the children it reaped) and
#    of everything else on the machine is read from /proc before and after, and every 5 s.
# 6. After each run, its outbox rows (the week's: not the previous weeks') are exported with COPY TO,
#    the outbox emptied, and the reference
#    timed: `\copy digest_outbox_ref (...) FROM file` into `CREATE TABLE digest_outbox_ref (LIKE
#    digest_outbox INCLUDING ALL)` (same columns, defaults, identity, checks and indexes), fresh and
#    empty each time: the same number of rows of the same sizes, in one COPY.
#
# As root the timed part runs in a session of its own whose scheduling group has nice -10
# (PGBENCH_NICE), postmaster included (it is started directly, not through `pg_ctl start`, which
# would put it in a session, and so a scheduling group, of its own): the run's processes and the
# server share the cores as ordinary threads do, ahead of other people's builds.
#
# Knobs (environment): PGBENCH_USERS=1000000, PGBENCH_READS=20000000, PGBENCH_ARTICLES=40000,
# PGBENCH_WEEKS=4 (weeks of reads), PGBENCH_DIGESTS=2 (previous weeks' digests in the outbox),
# PGBENCH_WEEK=2026-W46, PGBENCH_SEED=2026, PGBENCH_CHUNK_SIZE=1000, PGBENCH_ONE_WORKER_RUNS=1,
# PGBENCH_TWO_WORKER_RUNS=2, PGBENCH_OUT=bench-out/postgres, PGBENCH_REPORT=BENCHMARKS.md
# (PGBENCH_REPORT=none writes no report), PGBENCH_KEEP=0 (1 keeps the cluster directory and prints
# how to reach it: stop it yourself), PGBENCH_QUIET_CORES=0.3 and PGBENCH_QUIET_WAIT=120 (as in
# scripts/bench.sh), PGBENCH_NICE=-10, PGBENCH_SKIP_BUILD=0, PGBENCH_COMMIT (what to call the code
# measured; default git's HEAD), PGBENCH_RUN_ARGS (extra arguments for every `digest run`).
set -euo pipefail
cd "$(dirname "$0")/.."

USERS=${PGBENCH_USERS:-1000000}
READS=${PGBENCH_READS:-20000000}
ARTICLES=${PGBENCH_ARTICLES:-40000}
WEEKS=${PGBENCH_WEEKS:-4}
DIGESTS=${PGBENCH_DIGESTS:-2}
WEEK=${PGBENCH_WEEK:-2026-W46}
SEED=${PGBENCH_SEED:-2026}
CHUNK_SIZE=${PGBENCH_CHUNK_SIZE:-1000}
ONE_RUNS=${PGBENCH_ONE_WORKER_RUNS:-1}
TWO_RUNS=${PGBENCH_TWO_WORKER_RUNS:-2}
OUT=${PGBENCH_OUT:-bench-out/postgres}
REPORT=${PGBENCH_REPORT:-BENCHMARKS.md}
KEEP=${PGBENCH_KEEP:-0}
QUIET_CORES=${PGBENCH_QUIET_CORES:-0.3}
QUIET_WAIT=${PGBENCH_QUIET_WAIT:-120}
RUN_ARGS=${PGBENCH_RUN_ARGS:-}
HZ=$(getconf CLK_TCK)
if [ "$(id -u)" -eq 0 ]; then NICE=${PGBENCH_NICE:--10}; else NICE=${PGBENCH_NICE:-0}; fi

log() { printf 'bench-postgres: %s\n' "$*" >&2; }

# ---------------------------------------------------------------------------------------------
# Outer part: installs, build, then the timed part in a session of its own (see above).
if [ -z "${PGBENCH_INNER:-}" ]; then
  need=()
  [ -x /usr/bin/time ] || need+=(time)
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql postgresql-contrib)
  . scripts/apt-lib.sh  # the scripts run from the package root
  install_packages bench-postgres ${need[@]+"${need[@]}"}
  if [ "${PGBENCH_SKIP_BUILD:-0}" != 1 ]; then
    log "building digest (release)"
    swift build -c release --product digest
  fi
  mkdir -p "$OUT"
  # The binary measured is a copy, so that a rebuild in this checkout cannot swap it mid-run.
  cp .build/release/digest "$OUT/digest"
  . scripts/bench-lib.sh  # reexec_prioritized
  reexec_prioritized PGBENCH_INNER "$0" "$@"
fi

# ---------------------------------------------------------------------------------------------
# Inner part.
DIGEST="$OUT/digest"
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)
COMMIT=${PGBENCH_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
if [ -z "${PGBENCH_COMMIT:-}" ] && [ -n "$(git status --porcelain -- Sources Templates Package.swift 2>/dev/null)" ]; then
  COMMIT="$COMMIT (with uncommitted changes under Sources/, Templates/ or Package.swift)"
fi
rm -f "$OUT"/run-* "$OUT"/ref-* "$OUT"/*.log "$OUT"/*.txt "$OUT"/*.tsv "$OUT"/*.json
STARTED_AT=$(date -u +%Y-%m-%dT%H:%M:%SZ)

. scripts/bench-lib.sh  # the scripts run from the package root (field, seconds, now, median, commas, wait_quiet, …)

# ---- the cluster and the history ----
. scripts/pg-cluster.sh  # pg_cluster_start/stop, pg_generate_history, pg_reset_week, pg_jiffies, pids_jiffies, wal_lsn
WORKERS=()
SAMPLER=""
teardown() {
  local status=$?
  set +e
  for pid in "${WORKERS[@]+"${WORKERS[@]}"}" $SAMPLER; do kill "$pid" 2>/dev/null; done
  pg_cluster_stop
  exit "$status"
}
trap teardown EXIT
trap 'exit 130' INT TERM

pg_cluster_start
pg_generate_history

COLUMNS_LIST="dedupe_key, week, user_id, platform, variant, message, report, available_at, created_at"

# Before the reference: nothing in the outbox.
empty_outbox() {
  "${PSQL[@]}" -c "DELETE FROM digest_runs WHERE week = '$WEEK'" -c "TRUNCATE digest_outbox" \
    -c "DELETE FROM digest_picks WHERE week = '$WEEK'" -c "CHECKPOINT"
}

# While a run goes: every 5 s, cores used by the server, by the workers and by everything else.
sample() {
  local out=$1
  shift
  local t0 b0 p0 d0 b1 p1 d1 t1
  t0=$(now); b0=$(busy_jiffies); p0=$(pg_jiffies); d0=$(pids_jiffies "$@")
  printf 't_s\tpostgres_cores\tdigest_cores\tothers_cores\tload1\n' >"$out"
  while :; do
    sleep 5
    local alive=0
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 1 ] || break
    t1=$(now); b1=$(busy_jiffies); p1=$(pg_jiffies); d1=$(pids_jiffies "$@")
    awk -v t="$t1" -v s="$t0" -v b=$((b1 - b0)) -v p=$((p1 - p0)) -v d=$((d1 - d0)) -v hz="$HZ" -v l="$(cut -d' ' -f1 /proc/loadavg)" \
      -v start="$SAMPLE_START" 'BEGIN { w = (t - s) * hz; o = (b - p - d) / w; if (o < 0) o = 0;
        printf "%.0f\t%.2f\t%.2f\t%.2f\t%s\n", t - start, p / w, d / w, o, l }' >>"$out"
    t0=$t1; b0=$b1; p0=$p1; d0=$d1
  done
}

# The digest processes under the /usr/bin/time processes given.
digest_children() {
  local found=()
  for tpid in "$@"; do
    for _ in $(seq 50); do
      child=$(pgrep -P "$tpid" | head -n1 || true)
      [ -n "$child" ] && break
      sleep 0.05
    done
    [ -n "$child" ] && found+=("$child")
  done
  echo "${found[@]}"
}

RESULTS="$OUT/results.tsv"
printf 'run\tworkers\twall_s\tusers_per_s\tmessages\tdigest_cpu_s\tpostgres_cpu_s\tothers_cores\tquiet_before\tload_before\tload_after\tmax_rss_mb\trss_mb_each\twal_mb\tref_s\tref_rows\tref_wal_mb\tref_postgres_cpu_s\tratio\tstatus\n' >"$RESULTS"

one_run() {
  local name=$1 workers=$2
  pg_reset_week
  "${PSQL[@]}" -c "SELECT pg_stat_statements_reset()" >/dev/null
  local quiet load_before
  quiet=$(wait_quiet)
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  log "$name: digest run with $workers worker(s) (other processes were using $quiet cores)"
  local wal0 b0 p0 start end
  wal0=$(wal_lsn); b0=$(busy_jiffies); p0=$(pg_jiffies)
  WORKERS=()
  start=$(now)
  for w in $(seq "$workers"); do
    # shellcheck disable=SC2086
    /usr/bin/time -v -o "$OUT/$name-w$w.time" "$DIGEST" run --db "$URL" --week "$WEEK" --send-at now \
      --chunk-size "$CHUNK_SIZE" --worker "bench-$name-w$w" --progress-interval 10 \
      --report "$OUT/$name-w$w.json" $RUN_ARGS >"$OUT/$name-w$w.log" 2>&1 &
    WORKERS+=($!)
  done
  SAMPLE_START=$start
  sample "$OUT/$name-cpu.tsv" $(digest_children "${WORKERS[@]}") &
  SAMPLER=$!
  local failed=0
  for pid in "${WORKERS[@]}"; do wait "$pid" || failed=1; done
  end=$(now)
  WORKERS=()
  wait "$SAMPLER" 2>/dev/null || true
  SAMPLER=""
  sleep 0.5  # the backends exit after their clients: let the postmaster reap them
  local b1 p1 wal1
  b1=$(busy_jiffies); p1=$(pg_jiffies); wal1=$(wal_lsn)
  local load_after
  load_after=$(cut -d' ' -f1-3 /proc/loadavg)
  if [ "$failed" = 1 ]; then
    for w in $(seq "$workers"); do echo "--- worker $w:" >&2; tail -n 20 "$OUT/$name-w$w.log" >&2; done
    echo "bench-postgres: digest run failed" >&2
    exit 1
  fi
  "$DIGEST" run --db "$URL" --week "$WEEK" --status | paste -sd' ' >"$OUT/$name-status.txt"
  "${PSQL[@]}" -At -F $'\t' -c "
    SELECT round(total_exec_time::numeric / 1000, 2) AS total_s, calls, rows, round(mean_exec_time::numeric, 3) AS mean_ms,
           shared_blks_hit, shared_blks_read, wal_bytes, left(regexp_replace(query, '\s+', ' ', 'g'), 300)
    FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 25" >"$OUT/$name-statements.tsv"
  local messages digest_cpu rss_each max_rss
  messages=$("${PSQL[@]}" -At -c "SELECT count(*) FROM digest_outbox WHERE week = '$WEEK'")
  digest_cpu=$(cat "$OUT/$name"-w*.time | awk '/User time|System time/ { s += $NF } END { printf "%.1f", s }')
  rss_each=$(for w in $(seq "$workers"); do awk '/Maximum resident set size/ { printf "%.0f", $NF / 1024 }' "$OUT/$name-w$w.time"; echo; done | paste -sd/)
  max_rss=$(tr '/' '\n' <<<"$rss_each" | sort -n | tail -n1)
  local wall
  wall=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
  local row
  row=$(awk -v wall="$wall" -v u="$N_USERS" -v b=$((b1 - b0)) -v p=$((p1 - p0)) -v d="$digest_cpu" -v hz="$HZ" \
    -v wal=$((wal1 - wal0)) 'BEGIN { o = (b / hz - p / hz - d) / wall; if (o < 0) o = 0;
      printf "%.2f\t%.0f\t%s\t%.1f\t%.1f\t%.2f\t%.0f", wall, u / wall, "", d, p / hz, o, wal / 1048576 }')
  # messages goes in the third column.
  row=$(awk -F'\t' -v OFS='\t' -v m="$messages" '{ $3 = m; print }' <<<"$row")
  log "$name: $(cut -f1 <<<"$row") s, $(cut -f2 <<<"$row") users/s, $messages messages; digest CPU ${digest_cpu}s, postgres CPU $(cut -f5 <<<"$row")s, others $(cut -f6 <<<"$row") cores; peak RSS $rss_each MB; $(cat "$OUT/$name-status.txt")"

  # ---- the reference: the same rows, COPY into an identical empty table ----
  local copy_file="$CLUSTER/outbox.copy"
  "${PSQL[@]}" -c "\\copy (SELECT $COLUMNS_LIST FROM digest_outbox WHERE week = '$WEEK' ORDER BY id) TO '$copy_file'"
  empty_outbox
  "${PSQL[@]}" -c "DROP TABLE IF EXISTS digest_outbox_ref" -c "CREATE TABLE digest_outbox_ref (LIKE digest_outbox INCLUDING ALL)" \
    -c "CHECKPOINT"
  local rquiet
  rquiet=$(wait_quiet)
  log "$name: reference: COPY of $messages rows ($(du -m "$copy_file" | cut -f1) MB of COPY text) into digest_outbox_ref (others were using $rquiet cores)"
  local rw0 rp0 rs re rw1 rp1
  rw0=$(wal_lsn); rp0=$(pg_jiffies)
  rs=$(now)
  /usr/bin/time -v -o "$OUT/$name-ref.time" "${PSQL[@]}" -c "\\copy digest_outbox_ref ($COLUMNS_LIST) FROM '$copy_file'" \
    >"$OUT/$name-ref.log" 2>&1
  re=$(now)
  sleep 0.2
  rw1=$(wal_lsn); rp1=$(pg_jiffies)
  local ref_rows
  ref_rows=$("${PSQL[@]}" -At -c "SELECT count(*) FROM digest_outbox_ref")
  "${PSQL[@]}" -c "DROP TABLE digest_outbox_ref" -c "CHECKPOINT"
  rm -f "$copy_file"
  local ref
  ref=$(awk -v a="$rs" -v b="$re" -v wall="$wall" -v wal=$((rw1 - rw0)) -v p=$((rp1 - rp0)) -v hz="$HZ" \
    'BEGIN { r = b - a; printf "%.2f\t%.0f\t%.1f\t%.2f", r, wal / 1048576, p / hz, wall / r }')
  log "$name: reference $(cut -f1 <<<"$ref") s for $ref_rows rows; ratio run/reference $(cut -f4 <<<"$ref")"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
    "$name" "$workers" "$(cut -f1-6 <<<"$row")" "$quiet" "$load_before" "$load_after" "$max_rss" "$rss_each" \
    "$(cut -f7 <<<"$row")" "$(cut -f1 <<<"$ref")" "$ref_rows" "$(cut -f2-4 <<<"$ref")" "$(cat "$OUT/$name-status.txt")" >>"$RESULTS"
}

for i in $(seq "$ONE_RUNS"); do one_run "run-1w-$i" 1; done
for i in $(seq "$TWO_RUNS"); do one_run "run-2w-$i" 2; done
log "results: $RESULTS"
column -t -s $'\t' "$RESULTS" >&2 || cat "$RESULTS" >&2

[ "$REPORT" = none ] && exit 0
log "writing $REPORT"
PG_VERSION=$("$PGBIN/postgres" --version | awk '{ print $3 }')
# One table (medians over the runs of each worker count), then the reference, the statements, the
# command and the machine; scripts/bench-section.py puts it between the bench-postgres markers.
python3 - "$RESULTS" "$OUT" "$COMMIT" "$STARTED_AT" "$(python3 scripts/bench-section.py --machine)" "$PG_VERSION" \
  "$N_USERS" "$WEEK" "$CHUNK_SIZE" "$N_READS" "$N_PREVIOUS" "$NICE" "$RUN_ARGS" <<'PY' |
import csv, os, statistics, sys
results, out, commit, started, machine, pg_version, users, week, chunk, reads, previous, nice, run_args = sys.argv[1:14]
users, med = int(users), statistics.median
rows = list(csv.DictReader(open(results), delimiter="\t"))
f = lambda r, k: float(r[k]) if r.get(k, "") not in ("", None) else 0.0
print("## Weekly run on PostgreSQL")
print()
print("| workers | runs | run, s | users/s | messages | digest CPU, s | server CPU, s | CPU-µs a user: digest + server | "
      "WAL, MB | COPY reference, s | ratio run/COPY | others during, cores |")
print("|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|")
for w in sorted({int(r["workers"]) for r in rows}):
    rs = [r for r in rows if int(r["workers"]) == w]
    m = lambda k: med([f(r, k) for r in rs])
    d, s = m("digest_cpu_s") / users * 1e6, m("postgres_cpu_s") / users * 1e6
    print(f"| {w} | {len(rs)} | {m('wall_s'):.1f} | {users / m('wall_s'):,.0f} | {m('messages'):,.0f} | {m('digest_cpu_s'):.1f} | "
          f"{m('postgres_cpu_s'):.1f} | {d:.0f} + {s:.0f} = {d + s:.0f} | {m('wal_mb'):,.0f} | {m('ref_s'):.1f} | {m('ratio'):.2f} | "
          f"{m('others_cores'):.2f} |")
print()
print("- Reference: the run's own outbox rows exported and loaded again with one `COPY` into an empty copy of "
      "`digest_outbox` (same columns and indexes, one commit): the server's floor for writing them. "
      + "; ".join(f"{r['run']}: COPY {f(r, 'ref_s'):.1f} s, its WAL {f(r, 'ref_wal_mb'):,.0f} MB, its server CPU "
                  f"{f(r, 'ref_postgres_cpu_s'):.1f} s" for r in rows) + ".")
statements = os.path.join(out, "run-1w-1-statements.tsv")
if os.path.exists(statements):
    top = []
    for line in list(open(statements))[:6]:
        cols = line.rstrip("\n").split("\t")
        if len(cols) >= 8:
            query = " ".join(cols[7].replace("`", "'").split())[:60]
            top.append(f"{float(cols[0]):.1f} s for {int(cols[1]):,} calls of `{query}…`")
    if top:
        print("- Statements of the first one-worker run (`pg_stat_statements`, execution time): " + "; ".join(top) + ".")
print(f"- Command: `make bench-postgres` (`scripts/bench-postgres.sh`; knobs `PGBENCH_USERS`, `PGBENCH_READS`, "
      f"`PGBENCH_ARTICLES`, `PGBENCH_WEEKS`, `PGBENCH_DIGESTS`, `PGBENCH_CHUNK_SIZE`, `PGBENCH_ONE_WORKER_RUNS`, "
      f"`PGBENCH_TWO_WORKER_RUNS`, `PGBENCH_RUN_ARGS`). A throwaway PostgreSQL {pg_version} cluster on the same machine "
      f"(shared_buffers=1GB, max_wal_size=8GB, fsync and synchronous_commit on), data from "
      f"`scripts/postgres-bench-data.sql`: {users:,} users, {int(reads):,} reads, {int(previous):,} earlier digests in the "
      f"outbox; N workers `digest run --week {week} --send-at now --chunk-size {chunk}{(' ' + run_args) if run_args else ''}` "
      f"started together; users/s over the first start to the last exit. Every run in full: `{out}/results.tsv`.")
print(f"- Machine: {machine}; PostgreSQL on the same cores as the workers; the timed part at nice {nice}. "
      f"Measured {started} at {commit}, release build.")
PY
  python3 scripts/bench-section.py --report "$REPORT" bench-postgres 'scripts/bench-postgres.sh (make bench-postgres; a step of make bench)'
log "done: $REPORT; raw output in $OUT/"
