#!/usr/bin/env bash
# build.sh — configures and builds servebench into ./build (release-like,
# debug info kept). Usage: scripts/build.sh [BUILD_DIR [meson options...]]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
if [[ ! -f "$dir/build.ninja" ]]; then
  meson setup "$dir" "$@" >/dev/null
fi
meson compile -C "$dir" >/dev/null || meson compile -C "$dir"
