# Sourced by the benchmark scripts (they run from the package root): a throwaway PostgreSQL cluster,
# the benchmark history in it, and putting the measured week back before a run. Needs PGBIN, OUT,
# KEEP (1 keeps the cluster), WEEK and a log function from the caller; pg_generate_history also
# DIGEST, USERS, READS, ARTICLES, WEEKS, DIGESTS and SEED.

. scripts/pg-jiffies.sh  # pg_jiffies: the server's CPU (the postmaster and its children)

if [ "$(id -u)" -eq 0 ]; then
  as_pg() { runuser -u postgres -- "$@"; }
else
  as_pg() { "$@"; }
fi

# CPU jiffies of the given processes (threads included).
pids_jiffies() {
  local total=0
  for pid in "$@"; do
    total=$((total + $(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$pid/stat" 2>/dev/null || echo 0)))
  done
  echo "$total"
}

# pg_cluster_start: initdb (as the user postgres when run as root: initdb refuses root) in a
# temporary directory, the postmaster on 127.0.0.1 and a free port, started directly (not through
# `pg_ctl start`, which would put it in a session, and so a scheduling group, of its own), the
# database bench with pg_stat_statements. Sets CLUSTER, DATA, PORT, URL, PSQL (psql on bench) and
# POSTMASTER; logs go to $OUT/initdb.log and $OUT/postgres.log. The caller stops it with
# pg_cluster_stop (from its EXIT trap).
pg_cluster_start() {
  CLUSTER=$(mktemp -d /tmp/digest-pgbench.XXXXXX)
  DATA="$CLUSTER/data"
  if [ "$(id -u)" -eq 0 ]; then chown postgres "$CLUSTER"; fi
  PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null \
    || shuf -i 20000-60000 -n 1)
  URL="postgres://postgres@127.0.0.1:$PORT/bench?sslmode=disable"
  export PGOPTIONS="-c client_min_messages=warning"
  PSQL=(psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PORT" -U postgres -d bench)
  POSTMASTER=""
  log "cluster: initdb in $CLUSTER (PostgreSQL $("$PGBIN/postgres" --version | awk '{ print $3 }')), port $PORT"
  as_pg "$PGBIN/initdb" -D "$DATA" -A trust --no-sync -U postgres -E UTF8 --locale=C.UTF-8 >"$OUT/initdb.log"
  local settings=(
    -c listen_addresses=127.0.0.1 -c port="$PORT" -c unix_socket_directories="$CLUSTER"
    -c shared_buffers=1GB -c max_wal_size=8GB -c checkpoint_timeout=30min -c maintenance_work_mem=1GB
    -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.max=1000
    -c log_checkpoints=on -c max_connections=100
  )
  as_pg "$PGBIN/postgres" -D "$DATA" "${settings[@]}" >"$OUT/postgres.log" 2>&1 &
  for _ in $(seq 300); do
    if [ -s "$DATA/postmaster.pid" ] && "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$PORT"; then break; fi
    sleep 0.1
  done
  "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$PORT" || { cat "$OUT/postgres.log" >&2; exit 1; }
  POSTMASTER=$(head -n1 "$DATA/postmaster.pid")
  psql -X -q -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -c "CREATE DATABASE bench"
  "${PSQL[@]}" -c "CREATE EXTENSION pg_stat_statements"
}

# Stops the cluster and removes its directory, or (KEEP=1) says where it is.
pg_cluster_stop() {
  [ -n "${CLUSTER:-}" ] || return 0
  if [ "$KEEP" = 1 ]; then
    log "cluster kept in $CLUSTER ($URL); stop it with: runuser -u postgres -- $PGBIN/pg_ctl -D $DATA stop"
  else
    if [ -n "${POSTMASTER:-}" ]; then as_pg "$PGBIN/pg_ctl" -D "$DATA" stop -m immediate >/dev/null 2>&1; fi
    rm -rf "$CLUSTER"
  fi
}

wal_lsn() { "${PSQL[@]}" -At -c "SELECT pg_current_wal_lsn() - '0/0'::pg_lsn"; }

# pg_generate_history: `digest migrate`, then scripts/postgres-bench-data.sql in the server (not timed
# as part of a run; GEN_SECONDS says how long), checked to leave the migrated schema unchanged; sets
# N_USERS N_DEVICES N_ARTICLES N_READS N_OPTED N_NODEV N_PREVIOUS N_INDEXES DB_MB, and keeps the
# previous weeks' digests in bench_outbox_before (pg_reset_week puts them back).
pg_generate_history() {
  log "digest migrate"
  "$DIGEST" migrate --db "$URL" >"$OUT/migrate.log"
  local schema_filter='^\\(un)?restrict '
  "$PGBIN/pg_dump" -s -h 127.0.0.1 -p "$PORT" -U postgres bench | grep -Ev "$schema_filter" >"$OUT/schema-migrated.sql"
  log "generating $USERS users, $READS reads over $WEEKS weeks, $ARTICLES articles, $DIGESTS previous weeks' digests for $WEEK in the server (scripts/postgres-bench-data.sql)"
  local gen_start
  gen_start=$(now)
  "${PSQL[@]}" -v users="$USERS" -v reads="$READS" -v articles="$ARTICLES" -v weeks="$WEEKS" -v digests="$DIGESTS" \
    -v week="$WEEK" -v seed="$SEED" -f scripts/postgres-bench-data.sql >"$OUT/generate.log"
  GEN_SECONDS=$(awk -v a="$gen_start" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }')
  "$PGBIN/pg_dump" -s -h 127.0.0.1 -p "$PORT" -U postgres bench | grep -Ev "$schema_filter" >"$OUT/schema-generated.sql"
  if ! diff -u "$OUT/schema-migrated.sql" "$OUT/schema-generated.sql" >"$OUT/schema.diff"; then
    echo "the generator left a schema different from the migration's: $OUT/schema.diff" >&2
    exit 1
  fi
  read -r N_USERS N_DEVICES N_ARTICLES N_READS N_OPTED N_NODEV N_PREVIOUS N_INDEXES DB_MB < <("${PSQL[@]}" -At -F ' ' -c "
    SELECT (SELECT count(*) FROM digest_users), (SELECT count(*) FROM digest_devices),
           (SELECT count(*) FROM digest_articles), (SELECT count(*) FROM digest_reads),
           (SELECT count(*) FROM digest_users WHERE opted_out),
           (SELECT count(*) FROM digest_users u WHERE NOT EXISTS (SELECT 1 FROM digest_devices d WHERE d.user_id = u.id)),
           (SELECT count(*) FROM digest_outbox), (SELECT count(*) FROM pg_index WHERE indrelid = 'digest_outbox'::regclass),
           pg_database_size('bench') / 1048576")
  log "generated in ${GEN_SECONDS}s: $N_USERS users ($N_OPTED opted out, $N_NODEV without devices), $N_DEVICES devices, $N_ARTICLES articles, $N_READS reads, $N_PREVIOUS previous weeks' digests in the outbox; database $DB_MB MB"
  # The previous weeks' digests, put back into the outbox before every run (pg_reset_week).
  "${PSQL[@]}" -c "CREATE TABLE bench_outbox_before AS SELECT * FROM digest_outbox"
}

# Before a run: nothing of $WEEK's runs (its digest_runs row, with the chunks of the week-wide and
# the rolling runs alike, its zones' plans, its picks), the outbox as generated (the previous weeks'
# digests only), its statistics fresh, and a CHECKPOINT.
pg_reset_week() {
  "${PSQL[@]}" -c "DELETE FROM digest_runs WHERE week = '$WEEK'" -c "DELETE FROM digest_run_chunks WHERE week = '$WEEK'" \
    -c "DELETE FROM digest_zone_runs WHERE week = '$WEEK'" -c "TRUNCATE digest_outbox" \
    -c "DELETE FROM digest_picks WHERE week = '$WEEK'" \
    -c "INSERT INTO digest_outbox OVERRIDING SYSTEM VALUE SELECT * FROM bench_outbox_before ORDER BY id" \
    -c "VACUUM (ANALYZE) digest_outbox" -c "CHECKPOINT"
}
