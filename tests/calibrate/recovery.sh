#!/bin/sh
# recovery.sh — simulate runs from a model with known coefficients, then
# check that calibration recovers them (test_recovery does the checking).
# usage: recovery.sh SBSIM CHECKER TRUTH-MODEL.json
set -eu
sbsim=$1
check=$2
truth=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/sb-recovery.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM HUP
# Single-client runs at four prompt lengths (prefill, TPOT vs context) and a
# closed-loop sweep through the slot count and past it (decode per batch
# size, slot inference, admission delay). Fixed seeds: the same data on
# every run.
for p in 16 256 1024 2048; do
	"$sbsim" --model-file "$truth" --concurrency 1 --input-len "$p" --output-len 64 \
		--requests 100 --seed "$p" --json "$dir/c1-$p.json" --json-requests >/dev/null
done
"$sbsim" --model-file "$truth" --concurrency 2,4,5,6 --input-len 256 --output-len 128 \
	--requests 200 --seed 7 --json "$dir/sweep.json" --json-requests >/dev/null
rc=0
"$check" "$truth" "$dir"/c1-16.json "$dir"/c1-256.json "$dir"/c1-1024.json \
	"$dir"/c1-2048.json "$dir"/sweep.json || rc=$?
exit "$rc"
