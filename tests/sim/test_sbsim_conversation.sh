#!/bin/sh
# test_sbsim_conversation.sh SBSIM — conversations (--conversations,
# --turns): each turn's prompt is the history so far (earlier prompts and
# answers) and then its own tokens, and the prompt cache keeps the history.
# Known answers on one slot (overhead 5 ms, 0.1 ms per prefilled and 0.01
# per restored token, 10 ms per decode step), 3 turns of 100 own tokens and
# 2 output tokens: prompts of 100, 202 and 304 tokens, of which 0, 102 and
# 204 are the history:
#  - "slot" cache: TTFT 15, 16.02, 17.04 ms (5 + 10 + 0.01 x history), mean
#    16.02 over two conversations; 612 of 1212 prompt tokens reused;
#  - no cache: TTFT 15, 25.2, 35.4 ms, mean 25.2; nothing reused;
#  - open loop (conversations begun at 0.01/s, a shared cache): the same 612
#    of 1212 (each turn is sent after the last one's answer, so the history
#    is always held);
#  - records carry prefix_group (the conversation), prefix_tokens (the
#    history) and turn; the workload its turns; the load line says so;
#  - a replay of a closed loop of two conversations on two slots (--compare,
#    no noise) sends each conversation's turns in order on one client, as
#    they were simulated: every request's TTFT and E2E as before, and so
#    every percentile (sent in list order instead, a turn can overtake the
#    one before it and miss its history: TTFT p90 +56%);
#  - so does an open loop's replay (later turns sent after the replay's
#    answer to the turn before, by their measured pause);
#  - a conversation's last turn is the prompt sbsim compares with the
#    lengths the model was fitted to ("beyond the data": 8 turns, not 2);
#  - --turns below 1, and conversations with a shared prefix, are refused.
set -u
SBSIM=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT INT TERM
fails=0
. "$(dirname "$0")/sbsim_checks.sh"

cat > "$T/m.json" <<JSON
{"schema": "servebench.model/1", "name": "conversation test",
 "server": {"slots": 1, "max_queue": -1, "batch_tokens": 4096, "prompt_cache": "slot"},
 "overhead_ms": 5.0, "overhead_sd_ms": 0,
 "step_ms": {"decode_ms": {"1": 10.0}, "per_kv_token": 0,
             "per_prefill_token": 0.1, "per_cached_token": 0.01},
 "noise": {"kind": "none", "cv": 0}}
JSON
base="--model-file $T/m.json --warmup 0 --requests 6 --input-len 100 --output-len 2 --no-uncertainty"
common="$base --turns 3"
lv="d['levels'][0]"

ok $common --conversations 1 --json "$T/slot.json" --json-requests
want "$T/slot.json" "round($lv['ttft_ms']['mean'], 6)" 16.02 "cached TTFT mean"
want "$T/slot.json" "[round(r['ttft_ms'], 6) for r in $lv['requests']]" \
	"[15.0, 16.02, 17.04, 15.0, 16.02, 17.04]" "cached TTFT per turn"
want "$T/slot.json" "$lv['prompt_cache']['cached_tokens'], $lv['prompt_cache']['prompt_tokens']" \
	"612 1212" "tokens reused"
want "$T/slot.json" "[(r['prefix_group'], r['turn'], r['prefix_tokens']) for r in $lv['requests'][:4]]" \
	"[(0, 1, 0), (0, 2, 102), (0, 3, 204), (1, 1, 0)]" "records' conversation, turn, history"
want "$T/slot.json" "d['workload']['turns']" 3.0 "workload's turns"
ok $common --conversations 1
has "$T/out" "conversations of det:3 turns (one per client; prompt cache: slot)"

ok $common --conversations 1 --prompt-cache none --json "$T/none.json"
want "$T/none.json" "round($lv['ttft_ms']['mean'], 6)" 25.2 "uncached TTFT mean"
want "$T/none.json" "$lv.get('prompt_cache')" None "nothing reused without a cache"

ok $common --rate 0.01 --prompt-cache shared --json "$T/open.json"
want "$T/open.json" "$lv['prompt_cache']['cached_tokens'], $lv['prompt_cache']['prompt_tokens']" \
	"612 1212" "open loop: tokens reused"
ok $common --rate 0.01
has "$T/out" "(the rate counts conversations begun"

# a replay of conversations keeps each one's turns in order on one client
ok --model-file "$T/m.json" --slots 2 --conversations 2 --turns 4 --input-len 64 \
	--output-len 8 --requests 40 --warmup 0 --no-noise --json "$T/two.json" --json-requests
ok --model-file "$T/m.json" --slots 2 --no-noise --compare "$T/two.json"
has "$T/out" "per request: median |error| TTFT 0.0%, E2E 0.0%"
has "$T/out" "TTFT          0.0%      0.0%"

# an open loop of conversations replayed: each later turn sent its measured
# pause after the replay's answer to the turn before, the rest at their times
ok --model-file "$T/m.json" --slots 2 --rate 2 --turns 4 --think 0.2 --input-len 64 \
	--output-len 8 --requests 60 --warmup 0 --no-noise --json "$T/open2.json" --json-requests
ok --model-file "$T/m.json" --slots 2 --no-noise --compare "$T/open2.json"
has "$T/out" "per request: median |error| TTFT 0.0%, E2E 0.0%"
has "$T/out" "TTFT          0.0%      0.0%"
# ... also through a model 3x slower: no later turn is sent before the
# replay's answer to the turn before (sent at their recorded times, 43 of 44
# were)
ok --model-file "$T/m.json" --slots 2 --no-noise --compare "$T/open2.json" --scale all=3 \
	--json "$T/open3.json"
python3 - "$T/open2.json" "$T/open3.json" <<'PY' || fails=$((fails+1))
import json, sys
meas, pred = (json.load(open(f))["levels"][0]["requests"] for f in sys.argv[1:3])
p = {r["id"]: r for r in pred}
turns = {(r["prefix_group"], r["turn"]): r["id"] for r in meas}
pairs = [(a, turns[(g, k + 1)]) for (g, k), a in turns.items() if (g, k + 1) in turns]
early = [b for a, b in pairs if p[b]["t_sent_s"] < p[a]["t_done_s"] - 1e-9]
if not pairs or early:
    sys.exit(f"FAIL: {len(early)} of {len(pairs)} later turns sent before the answer before them")
PY

# a model fitted on prompts up to 512 tokens: 8 turns of 64 + 32 end in
# prompts of 64 + 7 x 96 = 736 tokens, beyond its data; 2 turns do not
python3 - "$T/m.json" "$T/ms.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["fit"] = {"support": {"prompt_tokens": [16, 512], "context_tokens": [48, 544]}}
json.dump(m, open(sys.argv[2], "w"))
PY
ok --model-file "$T/ms.json" --conversations 1 --turns 8 --input-len 64 --output-len 32 --requests 20
has "$T/out" "beyond the data the model was fitted to: prompts of 736 tokens"
ok --model-file "$T/ms.json" --conversations 1 --turns 2 --input-len 64 --output-len 32 --requests 20
if grep -q "beyond the data" "$T/out"; then echo "FAIL: 2 turns called beyond the data"; fails=$((fails+1)); fi

bad "--turns: '0' must average at least 1" $base --conversations 1 --turns 0
bad "conversations with a shared prefix" $common --conversations 1 --prefix-len 10

[ $fails -eq 0 ] && echo "sbsim conversations: all checks passed"
exit $((fails > 0))
