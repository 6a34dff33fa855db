#!/usr/bin/env bash
# install-deps.sh — installs the Debian 12 packages servebench needs to build
# and test. Idempotent: does nothing when everything is present.
# Usage: scripts/install-deps.sh [--tests]   (--tests adds what the tests need)
set -euo pipefail

pkgs=(meson ninja-build pkg-config gcc libc6-dev libgsl-dev libjansson-dev
      libcurl4-openssl-dev libevent-dev gnuplot-nox)
if [[ "${1:-}" == "--tests" ]]; then
  # valgrind and sanitizer runtimes for the test setups; python3 (stdlib) for
  # result checks; the real llama.cpp target needs cmake, g++, git, npm, numpy.
  pkgs+=(valgrind python3 python3-numpy cmake g++ git curl ca-certificates)
  command -v npm >/dev/null 2>&1 || pkgs+=(npm)
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}" >&2
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi
