#!/bin/sh
# test_sbsim_trace.sh SBSIM MODEL TRACEDIR — sbsim --trace: each public
# format (tests/sim/data/traces) replays every request it keeps; --json's
# results read back by --compare reproduce themselves exactly (no noise);
# --trace-speedup, --trace-window and --requests take the right requests;
# bad combinations and a bad trace exit 2 naming what is wrong.
set -u
SBSIM=$1 MODEL=$2 D=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT INT TERM
fails=0
. "$(dirname "$0")/sbsim_checks.sh"

ok --model-file "$MODEL" --trace "$D/mooncake.jsonl"
has "$T/out" "(mooncake): 6 requests over 2.0 s"
has "$T/out" "2 requests share a prefix"
ok --model-file "$MODEL" --trace "$D/azure.csv"
has "$T/out" "(azure): 4 requests over 2.5 s"
ok --model-file "$MODEL" --trace "$D/burstgpt.csv"
has "$T/out" "(burstgpt): 3 requests over 2.2 s (0.889 req/s), 1 left out"
ok --model-file "$MODEL" --trace "$D/mooncake.jsonl" --trace-speedup 2
has "$T/out" "6 requests over 1.0 s"
ok --model-file "$MODEL" --trace "$D/mooncake.jsonl" --trace-window 0.4,1.2
has "$T/out" "2 requests over 0.5 s"
ok --model-file "$MODEL" --trace "$D/mooncake.jsonl" --requests 3
has "$T/out" "3 requests over 0.5 s"

# the prediction as a results file, replayed by --compare: the same figures
ok --model-file "$MODEL" --trace "$D/mooncake.jsonl" --no-noise --json "$T/pred.json"
ok --model-file "$MODEL" --compare "$T/pred.json" --no-noise --json "$T/again.json"
python3 - "$T/pred.json" "$T/again.json" <<'PY' || fails=$((fails+1))
import json, sys
a, b = (json.load(open(f))["levels"][0] for f in sys.argv[1:3])
assert json.load(open(sys.argv[1]))["trace"]["format"] == "mooncake"
for k in ("ttft_ms", "tpot_ms", "e2e_ms"):
    x, y = a[k]["mean"], b[k]["mean"]
    if abs(x - y) > 1e-6 * abs(x):
        sys.exit(f"FAIL: {k} mean {x} from --trace, {y} from --compare of its results")
PY

bad "--trace-speedup and --trace-window go with --trace" --model-file "$MODEL" --rate 1 --trace-speedup 2
bad "(not --rate)" --model-file "$MODEL" --trace "$D/mooncake.jsonl" --rate 1
bad "--trace: /nonexistent.jsonl" --model-file "$MODEL" --trace /nonexistent.jsonl
printf '{"timestamp": 0, "input_length": 5, "output_length": 2}\n{"timestamp": 1, "input_length": 5}\n' > "$T/bad.jsonl"
bad "bad.jsonl:2: output_length: missing" --model-file "$MODEL" --trace "$T/bad.jsonl"
bad "--trace-window" --model-file "$MODEL" --trace "$D/mooncake.jsonl" --trace-window 3,1

echo "sbsim trace: $fails failure(s)"
[ $fails -eq 0 ]
