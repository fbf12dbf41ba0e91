# Shared by the benchmark scripts (sourced): how busy the machine is, and waiting for it to be quiet.
# Needs HZ (getconf CLK_TCK), QUIET_CORES, QUIET_WAIT, NICE (reexec_prioritized) and a log function from the caller.

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

# "time -v" field → value.
field() { sed -n "s/^[[:space:]]*$2: //p" "$1"; }
# h:mm:ss or m:ss.ss → seconds.
seconds() { awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; printf "%.2f", s }' <<<"$1"; }
# The time now, in seconds with fractions.
now() { date +%s.%N; }
# The median of the numbers on standard input (separated by spaces or lines); nan when none.
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# 1234567 → 1,234,567
commas() { sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/' -e 'ta' <<<"$1"; }

# reexec_prioritized VAR SCRIPT [ARG…]: unless VAR is set, runs SCRIPT again (with VAR=1) in a session
# of its own whose scheduling group has nice NICE, and exits with its status; when NICE is 0 or the
# scheduling group cannot be set (not root), exports VAR=1 and returns. The kernel shares the cores
# between sessions first (autogroups), so a plain `nice` would count only inside the caller's session.
# Everything the script starts directly (a postmaster too, not through `pg_ctl start`, which makes a
# session of its own) then shares the cores as ordinary threads do, ahead of other sessions' builds.
reexec_prioritized() {
  local var=$1
  shift
  [ -z "${!var:-}" ] || return 0
  if [ "$NICE" != 0 ] && [ -w /proc/self/autogroup ]; then
    # A background job of a non-interactive shell is not a group leader, so setsid(1) does not
    # fork: $! is the new session's leader, and a signal to its group reaches the whole timed part.
    env "$var=1" setsid bash -c 'echo "$0" >/proc/self/autogroup 2>/dev/null; exec nice -n "$0" "$@"' \
      "$NICE" "$@" &
    local inner=$! status
    # shellcheck disable=SC2064
    trap "kill -TERM -- -$inner 2>/dev/null || true" INT TERM
    set +e
    wait "$inner"
    status=$?
    # A trapped signal interrupts the first wait; the inner part still tears down what it started.
    while kill -0 "$inner" 2>/dev/null; do wait "$inner"; status=$?; done
    exit "$status"
  fi
  export "$var=1"
}

# replace_section NAME SECTION REPORT: puts the file SECTION (which starts with a "<!-- NAME:begin…"
# line and ends with "<!-- NAME:end -->") in place of REPORT's lines between those markers, or at
# REPORT's end when it has none yet; the rest of REPORT is kept.
replace_section() {
  local name=$1 section=$2 report=$3
  if grep -q "^<!-- $name:begin" "$report" 2>/dev/null; then
    awk -v section="$section" -v begin="^<!-- $name:begin" -v end="^<!-- $name:end -->" '
      $0 ~ begin { while ((getline line < section) > 0) print line; skip = 1; next }
      $0 ~ end { skip = 0; next }
      !skip' "$report" >"$report.tmp"
  else
    { [ -f "$report" ] && cat "$report" && echo; cat "$section"; } >"$report.tmp"
  fi
  mv "$report.tmp" "$report"
}
