#!/bin/sh
# bench/steps.sh — how long `validate` takes to read a level's step speed
# from its streamed tokens (validate/steps.c), on synthetic levels of
# N requests x T tokens, S slots busy in every gap. Prints requests, tokens,
# gaps read and milliseconds (best of 3).
#
# usage: bench/steps.sh [BUILD_DIR]      (default: build)
# knobs: TOKENS=128 SLOTS=4 SIZES="200 1000 5000"
set -eu
BUILD=${1:-build}
BIN=$BUILD/bench/steps_bench
[ -x "$BIN" ] || { echo "steps.sh: $BIN missing (ninja -C $BUILD)"; exit 1; }
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
# shellcheck disable=SC2086
"$BIN" "${TOKENS:-128}" "${SLOTS:-4}" ${SIZES:-200 1000 5000}
