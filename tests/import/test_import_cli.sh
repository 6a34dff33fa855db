#!/bin/sh
# test_import_cli.sh SERVEBENCH SBSIM DATA_DIR — other tools' files through the
# commands that read results files: `sbsim --compare` prints its table for a
# CSV, a vllm bench serve JSON, LLMServingSim requests.jsonl, AIPerf
# profile_export.jsonl, inference-perf per_request_lifecycle_metrics.json and
# GuideLLM benchmarks.json (two levels); `servebench
# calibrate` from vllm files written from simulated runs gives the same
# coefficients as from the runs themselves (admit_delay_ms aside: vllm saves
# no queue waits); `validate --measured` reads them; bad files exit 2 naming
# the file and what is wrong, from each command.
set -u
SB=$1
SBSIM=$2
DATA=$3
HERE=$(dirname "$0")
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT INT TERM
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# simulated runs: concurrency 1 at two prompt lengths, a sweep 2, 4, 6
"$SBSIM" --concurrency 1 --input-len 128 --output-len 32 --requests 20 --seed 3 --warmup 0 \
	--json-requests --json "$T/s1.json" >/dev/null || fail "sbsim s1"
"$SBSIM" --concurrency 1 --input-len 1024 --output-len 32 --requests 20 --seed 4 --warmup 0 \
	--json-requests --json "$T/s2.json" >/dev/null || fail "sbsim s2"
"$SBSIM" --concurrency 2,4,6 --input-len 256 --output-len 64 --requests 40 --seed 5 --warmup 0 \
	--json-requests --json "$T/s3.json" >/dev/null || fail "sbsim s3"
"$SBSIM" --rate 20 --input-len 256 --output-len 64 --requests 60 --seed 6 --warmup 0 \
	--json-requests --json "$T/r1.json" >/dev/null || fail "sbsim r1"
for s in s1 s2 s3 r1; do
	python3 "$HERE/to_other.py" "$T/$s.json" "$T/$s" || fail "to_other.py $s"
done

# sbsim --compare on each format prints the replay table
for f in "$T/r1-L0.csv" "$T/r1-L0.json" "$T/s3-L1.json" "$DATA/llmservingsim/requests.jsonl" \
	"$DATA/aiperf/profile_export.jsonl" "$DATA/inference-perf/per_request_lifecycle_metrics.json" \
	"$DATA/guidellm/benchmarks.json"; do
	out=$("$SBSIM" --compare "$f" 2>&1)
	rc=$?
	[ $rc -le 1 ] || fail "sbsim --compare $f: exit $rc: $out"
	echo "$out" | grep -q "replay of the measured requests" || fail "sbsim --compare $f: no table: $out"
	echo "$out" | grep -q "^TTFT ms" || fail "sbsim --compare $f: no TTFT row"
done
# GuideLLM: one level per benchmark, the open-loop one first
out=$("$SBSIM" --compare "$DATA/guidellm/benchmarks.json" 2>&1)
echo "$out" | grep -q "^== open loop 2.5 req/s: 3 requests" || fail "guidellm: no open-loop level: $out"
echo "$out" | grep -q "^== closed loop c=2: 3 requests" || fail "guidellm: no closed-loop level: $out"
# open loop from the CSV and the vllm file: the same measured side as the run itself
for f in "$T/r1-L0.csv" "$T/r1-L0.json"; do
	"$SBSIM" --compare "$f" --seed 1 | grep -E "^(TTFT|E2E) ms" | awk '{print $1, $3}' >"$T/m.txt"
	"$SBSIM" --compare "$T/r1.json" --seed 1 | grep -E "^(TTFT|E2E) ms" | awk '{print $1, $3}' >"$T/o.txt"
	cmp -s "$T/m.txt" "$T/o.txt" || fail "$f: measured side differs from the run's: $(cat "$T/m.txt") vs $(cat "$T/o.txt")"
done

# calibrate: vllm files of the same runs give the same coefficients
coef() { sed -n '/^coefficients/,/^fits/p' "$1" | grep -v admit_delay_ms; }
"$SB" calibrate --slots 4 "$T/s1.json" "$T/s2.json" "$T/s3.json" -o "$T/m0.json" >"$T/c0.txt" 2>&1 ||
	fail "calibrate on the runs: $(cat "$T/c0.txt")"
"$SB" calibrate --slots 4 "$T/s1-L0.json" "$T/s2-L0.json" "$T/s3-L0.json" "$T/s3-L1.json" \
	"$T/s3-L2.json" -o "$T/m1.json" >"$T/c1.txt" 2>&1 || fail "calibrate on vllm files: $(cat "$T/c1.txt")"
coef "$T/c0.txt" >"$T/k0.txt"
coef "$T/c1.txt" >"$T/k1.txt"
[ -s "$T/k1.txt" ] && cmp -s "$T/k0.txt" "$T/k1.txt" || fail "calibrate: coefficients differ: $(diff "$T/k0.txt" "$T/k1.txt")"

# validate --measured reads each format (0 goals met, 1 missed; never 2)
for f in "$T/r1-L0.csv" "$T/s3-L1.json" "$DATA/llmservingsim/requests.jsonl" \
	"$DATA/aiperf/profile_export.jsonl" "$DATA/inference-perf/per_request_lifecycle_metrics.json" \
	"$DATA/guidellm/benchmarks.json"; do
	"$SB" validate --measured "$f" --model-file "$T/m0.json" >"$T/v.txt" 2>&1
	rc=$?
	[ $rc -le 1 ] || fail "validate --measured $f: exit $rc: $(tail -3 "$T/v.txt")"
done

# bad files: exit 2, the file and what is wrong named, from every command
printf 't_sent_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms,error\n0,1,1,x,2,\n' >"$T/bad.csv"
printf '{"ttfts": [0.1], "input_lens": [1, 2], "output_lens": [1], "latencies": [1]}' >"$T/bad.json"
printf '{"hello": 1}' >"$T/shape.json"
: >"$T/empty.csv"
printf '{"metadata": {"request_start_ns": 5}, "metrics": {}, "error": null}\n' >"$T/bad-aiperf.jsonl"
printf '[{"start_time": 2, "end_time": 1, "info": {}}]' >"$T/bad-ip.json"
printf '{"benchmarks": [{"config": {"strategy": {"type_": "concurrent", "streams": 2}}, "requests": {"successful": [{"info": {"timings": {"request_start": 1.0, "request_end": 2.0}}, "prompt_tokens": 3, "output_tokens": 2}]}}]}' >"$T/bad-gl.json"
check_bad() { # WANT FILE CMD...
	want=$1
	shift
	out=$("$@" 2>&1)
	rc=$?
	[ $rc -eq 2 ] || fail "$*: exit $rc, want 2"
	echo "$out" | grep -qF "$want" || fail "$*: no \"$want\" in: $out"
}
check_bad "bad.csv:2: ttft_ms: \"x\" is not a number" "$SBSIM" --compare "$T/bad.csv"
check_bad "bad.json: \"input_lens\" has 2 entries" "$SBSIM" --compare "$T/bad.json"
check_bad "shape.json: a JSON object of unknown shape" "$SBSIM" --compare "$T/shape.json"
check_bad "empty.csv: empty file" "$SBSIM" --compare "$T/empty.csv"
check_bad "bad-aiperf.jsonl:1: metrics.time_to_first_token" "$SBSIM" --compare "$T/bad-aiperf.jsonl"
check_bad "bad-ip.json: [0]: end_time 1.000000 is before start_time" "$SB" calibrate "$T/bad-ip.json" \
	-o "$T/x.json"
check_bad "bad-gl.json: benchmarks[0].requests.successful[0].info.timings.first_token_iteration: missing" \
	"$SBSIM" --compare "$T/bad-gl.json"
check_bad "bad-gl.json: benchmarks[0].requests.successful[0].info.timings.first_token_iteration" \
	"$SB" calibrate "$T/bad-gl.json" -o "$T/x.json"
check_bad "bad.csv:2: ttft_ms" "$SB" calibrate "$T/bad.csv" -o "$T/x.json"
check_bad "empty.csv: empty file" "$SB" calibrate "$T/empty.csv" -o "$T/x.json"
check_bad "bad.json: \"input_lens\" has 2 entries" "$SB" validate --measured "$T/bad.json" \
	--model-file "$T/m0.json"

# --help says so
"$SBSIM" --help 2>&1 | grep -q "vllm bench serve" || fail "sbsim --help does not mention other tools' files"
"$SB" calibrate --help 2>&1 | grep -q "vllm bench serve" || fail "calibrate --help does not mention them"
"$SB" validate --help 2>&1 | grep -q "vllm bench serve" || fail "validate --help does not mention them"

[ $fails -eq 0 ] && echo "import-cli: all passed"
[ $fails -eq 0 ]
