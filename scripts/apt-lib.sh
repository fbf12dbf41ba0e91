# Shared by the scripts (sourced; they run from the package root): installing Debian packages.

# install_packages WHO [PACKAGE…]: installs the packages (none given: nothing to do). As root with
# apt-get; otherwise says what to run and exits 1. Messages go to stderr, prefixed with WHO.
install_packages() {
  local who=$1
  shift
  [ $# -gt 0 ] || return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "$who: missing system packages: $*" >&2
    echo "$who: run as root, or: sudo apt-get install -y --no-install-recommends $*" >&2
    exit 1
  fi
  echo "$who: installing $*" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
