#!/usr/bin/env bash
# Install (Debian/Ubuntu, apt-get) what the real-target scripts need, only when
# missing: cmake, make, g++, git, curl, python3-numpy, and npm/nodejs if there
# is no npm at all. Silent and quick when everything is present.
set -euo pipefail

die() { printf 'ensure-deps: error: %s\n' "$*" >&2; exit 1; }

pkgs=()
command -v cmake >/dev/null 2>&1 || pkgs+=(cmake)
command -v make  >/dev/null 2>&1 || pkgs+=(make)
command -v g++   >/dev/null 2>&1 || pkgs+=(g++)
command -v git   >/dev/null 2>&1 || pkgs+=(git)
command -v curl  >/dev/null 2>&1 || pkgs+=(curl)
command -v flock >/dev/null 2>&1 || pkgs+=(util-linux)
command -v npm   >/dev/null 2>&1 || pkgs+=(nodejs npm)
if [[ ! -x /usr/bin/python3 ]]; then
    pkgs+=(python3 python3-numpy)
elif ! /usr/bin/python3 -c 'import numpy' >/dev/null 2>&1; then
    pkgs+=(python3-numpy)
fi

((${#pkgs[@]})) || exit 0

command -v apt-get >/dev/null 2>&1 || die "missing: ${pkgs[*]}; no apt-get here, install them by hand"
sudo=()
if ((EUID != 0)); then
    command -v sudo >/dev/null 2>&1 || die "missing: ${pkgs[*]}; run as root to install them"
    sudo=(sudo)
fi

printf 'ensure-deps: installing %s\n' "${pkgs[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
if ! "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null 2>&1; then
    "${sudo[@]}" apt-get update -qq >/dev/null
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null \
        || die "apt-get install ${pkgs[*]} failed"
fi
printf 'ensure-deps: done\n' >&2
