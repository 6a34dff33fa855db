#!/bin/sh
# test_sbsim_context.sh SBSIM — sbsim's context and KV-memory flags:
# --kv-memory-gb without KV bytes per token or a context per slot, with
# --slots, too small, negative values: exit 2 naming what is wrong; the slots
# that fit said above the table (16 GiB / (114688 B x 4096) = 36.57 -> 36)
# and simulated; too-long prompts said under the table and counted in the
# JSON (every prompt of 5000 tokens in a 4096 context: all rejected, or all
# truncated to 4096 - 2046 = 2050). With MODEL (a model file) given a
# fit.support of prompts 16-256 and contexts 80-320 tokens: prompts of 1024
# are said to lie beyond it (text and JSON "beyond_data"), prompts of 128
# are not.
set -u
SBSIM=$1
MODEL=${2:-}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT INT TERM
fails=0

# bad, ok, has
. "$(dirname "$0")/sbsim_checks.sh"

bad "KV bytes per token are unknown" --rate 1 --kv-memory-gb 16 --ctx-per-slot 4096
bad "context per slot is unknown" --rate 1 --kv-memory-gb 16 --kv-bytes-per-token 1000
bad "not both" --rate 1 --kv-memory-gb 16 --ctx-per-slot 4096 --kv-bytes-per-token 1000 --slots 2
bad "does not hold one slot" --rate 1 --kv-memory-gb 0.001 --ctx-per-slot 4096 --kv-bytes-per-token 114688
bad "--kv-memory-gb: -1" --rate 1 --kv-memory-gb -1
bad "--ctx-per-slot: -5" --rate 1 --ctx-per-slot -5
bad "--ctx-per-slot: 0" --rate 1 --ctx-per-slot 0
bad "--kv-bytes-per-token: -2" --rate 1 --kv-bytes-per-token -2
bad '"shift"' --rate 1 --ctx-per-slot 100 --context-overflow shift
bad "'lots'" --rate 1 --kv-memory-gb lots

"$SBSIM" --concurrency 4 --requests 50 --kv-memory-gb 16 --ctx-per-slot 4096 \
	--kv-bytes-per-token 114688 --json "$T/m.json" >"$T/out" 2>"$T/err" ||
	{ echo "FAIL: --kv-memory-gb run"; cat "$T/err"; fails=$((fails+1)); }
has "$T/out" "16 GiB of KV cache at 4096 tokens per slot: 36 slots (114688 B/token)"
has "$T/out" "server: 36 slots"
has "$T/m.json" '"slots": 36'

"$SBSIM" --concurrency 2 --requests 30 --input-len 5000 --output-len 8 --ctx-per-slot 4096 \
	--json "$T/r.json" >"$T/out" 2>"$T/err" ||
	{ echo "FAIL: too-long run"; cat "$T/err"; fails=$((fails+1)); }
has "$T/out" "context: 4096 tokens per slot; longer prompts rejected (llama.cpp)"
has "$T/out" "level 2: 30 of 30 requests rejected as too long"
has "$T/r.json" '"too_long": 30'
has "$T/r.json" '"rejected": 30'

"$SBSIM" --concurrency 2 --requests 30 --input-len 5000 --output-len 8 --ctx-per-slot 4096 \
	--context-overflow truncate --json "$T/t.json" >"$T/out" 2>"$T/err" ||
	{ echo "FAIL: truncate run"; cat "$T/err"; fails=$((fails+1)); }
has "$T/out" "level 2: 30 of 30 prompts truncated to 2050 tokens"
has "$T/t.json" '"truncated": 30'
has "$T/t.json" '"rejected": 0'

if [ -n "$MODEL" ]; then
	python3 -c 'import json, sys
m = json.load(open(sys.argv[1]))
m.setdefault("fit", {})["support"] = {"prompt_tokens": [16, 256], "context_tokens": [80, 320]}
json.dump(m, open(sys.argv[2], "w"))' "$MODEL" "$T/sup.json" || fails=$((fails+1))
	ok --model-file "$T/sup.json" --concurrency 1 --requests 10 --input-len 1024 \
		--output-len 64 --json "$T/b.json"
	has "$T/out" "beyond the data the model was fitted to: prompts of 1024 tokens (measured 16-256, 4x the longest"
	has "$T/out" "contexts to 1088 tokens (measured 80-320, 3.4x the longest: the context cost extrapolated)"
	has "$T/b.json" '"beyond_data"'
	ok --model-file "$T/sup.json" --concurrency 1 --requests 10 --input-len 128 \
		--output-len 64 --json "$T/i.json"
	grep -q "beyond the data" "$T/out" && { echo "FAIL: 128/64 said beyond 16-256"; fails=$((fails+1)); }
	grep -q '"beyond_data"' "$T/i.json" && { echo "FAIL: beyond_data in 128/64"; fails=$((fails+1)); }
fi

if [ $fails -ne 0 ]; then
	echo "$fails failure(s)"; exit 1
fi
echo "all context CLI checks passed"
