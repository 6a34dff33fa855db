#!/bin/sh
# vllm_cover.sh SCRIPT BUILD-DIR — the vLLM-class replay fit's 90% intervals:
# SCRIPT (experiments/vllm_coverage.py) simulates 20 per-request files from a
# known vLLM-class model, calibrates each on its levels' first halves, and
# predicts the rest and another workload (prompts twice as long);
# check_vllm_cover.py asserts that no figure's or coefficient's intervals hold
# the truth less than 80% of the time beyond chance, and that per_seq's and
# per_kv_token's intervals a tenth as wide fail that rule. Fixed seeds: the same binaries give the same
# draws. About 3 minutes on 2 cores.
set -u
SCRIPT=$1 BUILD=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT INT TERM
python3 "$SCRIPT" --build "$BUILD" --draws 20 --jobs 2 --json "$T/c.json" >"$T/table" 2>&1 || {
	echo "FAIL: $SCRIPT"
	cat "$T/table"
	exit 1
}
cat "$T/table"
python3 "$(dirname "$0")/check_vllm_cover.py" "$T/c.json"
