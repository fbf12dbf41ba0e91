# Shared by the benchmark scripts (sourced): how busy the machine is, and waiting for it to be quiet.
# Needs HZ (getconf CLK_TCK), QUIET_CORES, QUIET_WAIT and a log function from the caller.

# CPU time used by every process so far (jiffies: user, nice, system, irq, softirq, steal).
busy_jiffies() { awk '/^cpu /{ print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }

# Waits (at most QUIET_WAIT s) until the machine is quiet; prints the cores in use over the last 5 s.
wait_quiet() {
  local deadline=$((SECONDS + QUIET_WAIT)) b0 b1 cores
  while :; do
    b0=$(busy_jiffies)
    sleep 5
    b1=$(busy_jiffies)
    cores=$(awk -v d=$((b1 - b0)) -v hz="$HZ" 'BEGIN { printf "%.2f", d / hz / 5 }')
    if awk -v c="$cores" -v t="$QUIET_CORES" 'BEGIN { exit !(c <= t) }' || [ $SECONDS -ge $deadline ]; then
      echo "$cores"
      return 0
    fi
    log "other processes use $cores cores; waiting for a quieter machine (at most ${QUIET_WAIT}s in all)" >&2
  done
}
