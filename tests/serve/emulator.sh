#!/bin/sh
# emulator.sh — `servebench run` against `sbsim serve` must reproduce sbsim's
# own prediction of the same requests (sbsim --compare replays them): closed
# loop across the knee (1, 4 and 8 clients on 4 slots) and open loop at
# about 45% and 85% of capacity, the knee at the same level.
# The bound comes from the measurement itself: the same workload (one seed:
# the same prompts, lengths and send times) is measured three times, and
# each level's mean TTFT, TPOT, E2E and request rate may miss the
# prediction by 4 x the run-to-run standard deviation (pooled over the
# levels, from the three runs) plus time the model does not know of: the
# emulator's own HTTP path (the median round trip of GET /health), how
# late the client sent each level's requests and, for the request rate, how
# long it took to send the next one after a completion (its records; sbsim's
# clients send at once). A model
# 10% slower (--scale all=1.1) must fail that bound in the same run for
# every figure, or the run is too noisy to decide (exit 77, inconclusive).
# servebench run's sample of the server's own count (/metrics) must match
# the client's L obs in closed loop within 4 standard errors of its samples
# plus the HTTP path's share.
# The model is the embedded default with its release time set to 0: sbsim
# ends TPOT and E2E at the last token, the emulator's reply at the last token
# plus the release time (serve/serve.h), which servebench run counts.
# usage: emulator.sh SBSIM SERVEBENCH SRCROOT
set -eu
sbsim=$1
sb=$2
src=$3
here=$(dirname "$0")
. "$here/lib.sh"
model_without "$src/data/default-model.json" "$dir/model.json" scheduler.release_ms
start_emulator "$dir/model.json" 11
measure_rtt "$dir/rtt.txt"

common="--url $url --model sbsim --input-len 64 --output-len 32 --seed 5 --quiet"
for rep in a b c; do
	"$sb" run $common --concurrency 1,4,8 --num-requests 40 --out "$dir/closed-$rep.json"
	"$sb" run $common --mode rate --levels 6,11 --num-requests 60 --out "$dir/open-$rep.json"
done
for kind in closed open; do
	"$sbsim" --compare "$dir/$kind-a.json" --model-file "$dir/model.json" --replications 20 \
		--json "$dir/$kind-pred.json" > "$dir/$kind-compare.txt"
	"$sbsim" --compare "$dir/$kind-a.json" --model-file "$dir/model.json" --replications 20 \
		--scale all=1.1 --json "$dir/$kind-wrong.json" > "$dir/$kind-wrong.txt"
done
grep -h "knee of" "$dir/closed-compare.txt" "$dir/closed-wrong.txt" || true
python3 "$here/emulator_check.py" "$dir"
