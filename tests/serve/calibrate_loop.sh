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
# (Bonferroni); overhead_ms, less the emulator's own path (time M does not
# know of: HTTP, JSON, a timer's lateness), measured without the fitted
# model before and after the calibration (measure_path). (Until 2026-12-07
# the path was the median GET /health round trip: 0.18 ms here, where the
# path of a completion request is 0.12-0.6 ms and grows with the prompt;
# CI under load failed a fitted overhead 0.33 ms above M's.) The same
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
# the path emulator: M with overhead_ms = path_ms (it still waits for it, as
# M's emulator waits for M's overhead)
path_ms=1
model_without "$dir/truth.json" "$dir/path.json" overhead_ms=$path_ms

# measure_path TAG: one client at the calibration's prompt lengths on the path
# emulator; TTFT - server prompt_ms - path_ms per request is the path.
measure_path() {
	start_emulator "$dir/path.json" 7
	for P in 16 256 1024 2048; do
		"$sb" run --url "$url" --model sbsim --api llama-completion --concurrency 1 \
			--num-requests 8 --warmup 1 --input-len $P --output-len 2 --seed 5 \
			--out "$dir/path-$1-$P.json" > "$dir/path.txt" 2>&1 || {
			echo "FAIL: measuring the emulator's path exited $?"; tail "$dir/path.txt"; exit 1; }
	done
	stop_emulator
}

measure_path before
start_emulator "$dir/truth.json" 7
"$sb" calibrate --url "$url" -o "$dir/fitted.json" > "$dir/calibrate.txt" 2>&1 || {
	echo "FAIL: calibrate --url exited $?"; tail -20 "$dir/calibrate.txt"; exit 1; }
stop_emulator
measure_path after
grep -A40 "^coefficients" "$dir/calibrate.txt" | sed -n '1,30p'
set +e
python3 "$here/calibrate_loop_check.py" "$dir/truth.json" "$dir/fitted.json" "$path_ms" \
	"$dir"/path-before-*.json -- "$dir"/path-after-*.json
coef=$?
start_emulator "$dir/truth.json" 7
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
