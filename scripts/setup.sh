#!/usr/bin/env bash
# Installs the system packages digest needs when they are missing (Debian/Ubuntu, as root).
#
#   scripts/setup.sh            what building digest and `make demo` need (the demo runs on SQLite)
#   scripts/setup.sh --tests    that, and what only the tests and benchmarks use: PostgreSQL (throwaway
#                               clusters) and Chromium (the preview page's browser test; optional)
set -euo pipefail

tests=0
case "${1:-}" in
  "") ;;
  --tests) tests=1 ;;
  *) echo "usage: scripts/setup.sh [--tests]" >&2; exit 64 ;;
esac

packages=(
  pkg-config libsqlite3-dev libjpeg-dev libpng-dev tzdata ca-certificates
  # The digest binary links jemalloc as its allocator (Package.swift).
  libjemalloc-dev
  # Previews (the demo writes some): Pango/Cairo text and drawing, GdkPixbuf to read renditions,
  # libpng to write PNGs, and the faces the surfaces use (Roboto for Android and Chrome, Inter standing
  # in for SF Pro, Noto CJK and colour emoji as fallbacks through fontconfig).
  libcairo2-dev libpango1.0-dev libharfbuzz-dev libfreetype-dev libfontconfig-dev libgdk-pixbuf-2.0-dev libpng-dev
  fonts-roboto fonts-inter fonts-noto-core fonts-noto-cjk fonts-noto-color-emoji
)
optional=()
if [ "$tests" = 1 ]; then
  # PostgreSQL: the tests start throwaway clusters with its initdb and pg_ctl (no server is left running).
  packages+=(postgresql)
  # FoundationXML's libxml2: the report chart's test reads the SVG back with XMLParser.
  packages+=(libxml2)
  # Wanted but not required: the browser test of the preview page is skipped (with its reason) without it.
  optional+=(chromium)
fi

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

optional_missing=()
for package in ${optional[@]+"${optional[@]}"}; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    optional_missing+=("$package")
  fi
done
if [ ${#optional_missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    missing+=("${optional_missing[@]}")
  else
    echo "setup: optional packages missing (their tests are skipped): ${optional_missing[*]}" >&2
  fi
fi

if ! command -v swift >/dev/null 2>&1; then
  echo "setup: swift is not on the PATH; install Swift 6.1 or later (https://www.swift.org/install/)" >&2
  exit 1
fi

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

. "$(dirname "$0")/apt-lib.sh"
install_packages setup "${missing[@]}"
