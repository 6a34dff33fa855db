#!/bin/sh
# calibrate_loop.sh — the whole loop on a server whose truth is known:
# `servebench calibrate --url` against `sbsim serve --model-file M` must
# recover M's coefficients, and `servebench validate` with what it fitted
# must meet the product's goals against the same emulator.
# M is the embedded default model with its release time and overhead spread
# set to 0: the emulator ends a reply at its last token plus the release
# time, which servebench counts in E2E (serve/serve.h), and it does not
# scatter the first token's arrival.
# Coefficients (calibrate_loop_check.py): each of M's must lie in the fitted
# 95% interval widened to a family-wise 95% over the coefficients judged
# (Bonferroni), plus, for the overheads, the emulator's own HTTP path (the
# median round trip of GET /health: time M does not know of). The same
# intervals must exclude M's values 10% off for every coefficient judged,
# or the run is too noisy to decide (77).
# Validate: goals met (exit 0); the same measured requests replayed through
# the fitted model 10% slow (--scale all=1.1) must miss them (exit 1).
# usage: calibrate_loop.sh SBSIM SERVEBENCH SRCROOT
set -eu
sbsim=$1
sb=$2
src=$3
here=$(dirname "$0")
. "$here/lib.sh"
model_without "$src/data/default-model.json" "$dir/truth.json" scheduler.release_ms overhead_sd_ms
start_emulator "$dir/truth.json" 7
measure_rtt "$dir/rtt.txt"

"$sb" calibrate --url "$url" -o "$dir/fitted.json" > "$dir/calibrate.txt" 2>&1 || {
	echo "FAIL: calibrate --url exited $?"; tail -20 "$dir/calibrate.txt"; exit 1; }
grep -A40 "^coefficients" "$dir/calibrate.txt" | sed -n '1,30p'
set +e
python3 "$here/calibrate_loop_check.py" "$dir/truth.json" "$dir/fitted.json" "$dir/rtt.txt"
coef=$?
"$sb" validate --model-file "$dir/fitted.json" --url "$url" --model sbsim \
	--concurrency 1,2,4,6,8 --num-requests 24 --input-len 256 --output-len 32 --probe 1 \
	--seed 3 --out-measured "$dir/measured.json" > "$dir/validate.txt" 2>&1
val=$?
"$sb" validate --model-file "$dir/fitted.json" --measured "$dir/measured.json" --seed 3 \
	--scale all=1.1 > "$dir/wrong.txt" 2>&1
wrong=$?
set -e
grep -E "^summary|^TTFT |^TPOT |^E2E |^all |goals" "$dir/validate.txt" || true
echo "validate: exit $val; the same requests through the model 10% slow: exit $wrong"
grep -E "goals" "$dir/wrong.txt" || true
[ $coef = 1 ] && exit 1
[ $val != 0 ] && { echo "FAIL: validate against the emulator missed the goals (exit $val)";
	tail -30 "$dir/validate.txt"; exit 1; }
[ $coef = 77 ] && exit 77
[ $wrong != 1 ] && { echo "INCONCLUSIVE: a model 10% slow met the goals too (exit $wrong)";
	exit 77; }
echo "ok: M recovered, goals met, a model 10% slow misses them"
