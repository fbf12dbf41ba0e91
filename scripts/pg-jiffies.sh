# Sourced by the benchmark scripts: pg_jiffies prints the CPU jiffies of the PostgreSQL server whose
# postmaster pid is in $POSTMASTER (the postmaster, its live children and the children it has
# reaped); 0 while no server is up.
pg_jiffies() {
  [ -n "${POSTMASTER:-}" ] || { echo 0; return; }
  local total
  total=$(awk '{ sub(/^.*\) /, ""); print $12 + $13 + $14 + $15 }' "/proc/$POSTMASTER/stat")
  for child in $(pgrep -P "$POSTMASTER"); do
    total=$((total + $(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$child/stat" 2>/dev/null || echo 0)))
  done
  echo "$total"
}
