#!/usr/bin/env bash
# Installs the system packages digest needs when they are missing (Debian/Ubuntu, as root).
set -euo pipefail

packages=(pkg-config libsqlite3-dev libjpeg-dev libpng-dev tzdata ca-certificates)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ! command -v swift >/dev/null 2>&1; then
  echo "setup: swift is not on the PATH; install Swift 6.1 or later (https://www.swift.org/install/)" >&2
  exit 1
fi

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "setup: missing system packages: ${missing[*]}" >&2
  echo "setup: run as root, or: sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
