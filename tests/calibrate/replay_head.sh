#!/bin/sh
# replay_head.sh SBSIM SERVEBENCH TRUTH — calibrate --engine vllm on a file
# with more fitted requests than --search-requests (default 3000; here 450
# to keep the test quick, calibrate/replayfit.c make_head): sbsim simulates
# vllm-truth.json at 3, 8 and 14 req/s, 400 requests each, and the first
# 75% of each level (900 requests) are fitted. Checked:
#  - the fit says it searched on the head: fit.search_requests is 450 (the
#    levels' shares, rounded up: 450 to 452), and the report says so;
#  - the polish on the whole file predicts the held-out quarter within
#    the issue's goals (mean E2E and TPOT 5%, mean TTFT 10%), as the whole
#    search does on replay_recovery.sh's file.
set -eu
SBSIM=$1 SB=$2 TRUTH=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$SBSIM" --model-file "$TRUTH" --rate 3,8,14 --requests 400 --warmup 0 \
  --input-len lognormal:6.2,0.8 --output-len lognormal:5.0,0.7 --seed 11 \
  --no-uncertainty --json "$T/sim.json" --json-requests > /dev/null
"$SB" calibrate --engine vllm --max-num-seqs 64 --max-num-batched-tokens 1024 --block-size 16 \
  --gpu-blocks 1500 --fit-first 0.75 --search-requests 450 "$T/sim.json" -o "$T/fit.json" > "$T/fit.txt"
cat "$T/fit.txt"
grep -q "the search and the bootstrap on its first 45[0-2] fitted requests" "$T/fit.txt" ||
  { echo "FAIL: the report does not say the search ran on the head"; exit 1; }
python3 - "$T/fit.json" <<'PY'
import json, sys
fit = json.load(open(sys.argv[1]))["fit"]
bad = []
head = fit.get("search_requests")
if head is None or not 450 <= head <= 452:
    bad.append(f"search_requests {head}, expected 450 (the head of 900 fitted requests)")
for k, g in {"e2e_mean_ms": 0.05, "tpot_mean_ms": 0.05, "ttft_mean_ms": 0.10}.items():
    err = fit["held_out"][k]["error"]
    print(f"held out {k}: {100*err:+.1f}% (goal {100*g:.0f}%)")
    if abs(err) > g:
        bad.append(f"held-out {k} off by {100*err:+.1f}% > {100*g:.0f}%")
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
