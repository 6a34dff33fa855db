#!/bin/sh
# test_sbsim_trace.sh SBSIM MODEL TRACEDIR — sbsim --trace: each public
# format (tests/sim/data/traces) replays every request it keeps; --json's
# results read back by --compare reproduce themselves exactly (no noise);
# --trace-speedup, --trace-window and --requests take the right requests;
# Mooncake's shared blocks reused by a slot or shared prompt cache (known
# answers, below);
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

# Mooncake's hash_ids through a prompt cache, known answers (1 slot, 5 ms
# overhead, 0.1 ms per prefilled and 0.01 per reused token, no noise): a
# 1200-token prompt of blocks 0,1,2 (TTFT 125 ms), 10 s later 1100 tokens
# of blocks 0,1,3 reusing 2 blocks of 512 (5 + 7.6 + 10.24 = 22.84 ms; 115
# without a cache), then 600 tokens of new blocks (65 ms)
cat > "$T/cache.jsonl" <<'JSONL'
{"timestamp": 0, "input_length": 1200, "output_length": 2, "hash_ids": [0, 1, 2]}
{"timestamp": 10000, "input_length": 1100, "output_length": 2, "hash_ids": [0, 1, 3]}
{"timestamp": 20000, "input_length": 600, "output_length": 2, "hash_ids": [4, 5]}
JSONL
for pc in shared slot none; do
	cat > "$T/m-$pc.json" <<JSON
{"schema": "servebench.model/1", "name": "trace cache", "overhead_ms": 5.0, "overhead_sd_ms": 0,
 "server": {"slots": 1, "max_queue": -1, "batch_tokens": 4096, "prompt_cache": "$pc"},
 "step_ms": {"decode_ms": {"1": 10.0}, "per_kv_token": 0, "per_prefill_token": 0.1,
             "per_cached_token": 0.01}, "noise": {"kind": "none", "cv": 0}}
JSON
	ok --model-file "$T/m-$pc.json" --trace "$T/cache.jsonl" --no-noise --json "$T/c-$pc.json"
	want=$([ $pc = none ] && echo "[125.0, 115.0, 65.0]" || echo "[125.0, 22.84, 65.0]")
	want "$T/c-$pc.json" "[round(r['ttft_ms'], 6) for r in d['levels'][0]['requests']]" \
		"$want" "hash_ids, $pc cache: TTFT per request"
	ok --model-file "$T/m-$pc.json" --trace "$T/cache.jsonl" --no-noise
	[ $pc = none ] || has "$T/out" "the model's prompt cache reuses what it holds of them"
done
# its records keep the blocks: --compare replays them through the cache too
want "$T/c-shared.json" "d['levels'][0]['requests'][1]['hash_ids']" "[0, 1, 3]"
ok --model-file "$T/m-shared.json" --compare "$T/c-shared.json" --no-noise --json "$T/c-again.json"
want "$T/c-again.json" "round(d['levels'][0]['ttft_ms']['mean'], 6)" \
	"$(field "$T/c-shared.json" "round(d['levels'][0]['ttft_ms']['mean'], 6)")" \
	"hash_ids replayed by --compare"
# ... also when the records say what the server prefilled (a measured run's
# llama.cpp timings: 76 of the second prompt's 1100 tokens): the replay
# sends all 1100 and the cache decides, not 76 less 1024 cached
python3 - "$T/c-shared.json" "$T/c-timed.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r, n in zip(d["levels"][0]["requests"], (1200, 76, 600)):
    r["server"] = {"prompt_n": n, "cache_n": r["prompt_tokens"] - n}
json.dump(d, open(sys.argv[2], "w"))
PY
ok --model-file "$T/m-shared.json" --compare "$T/c-timed.json" --no-noise --json "$T/c-timed2.json"
want "$T/c-timed2.json" "round(d['levels'][0]['ttft_ms']['mean'], 6)" \
	"$(field "$T/c-shared.json" "round(d['levels'][0]['ttft_ms']['mean'], 6)")" \
	"hash_ids with server timings replayed by --compare"

# two slots: a "ram" cache (llama.cpp's) restores only prompts that left a
# slot. Block 0 prefilled on slot 0, still decoding there when a prompt of
# blocks 0,2 takes slot 1: reused by "shared" only; 30 s later a prompt of
# blocks 0,3 finds block 0 in its own slot whatever the kind but none
cat > "$T/two.jsonl" <<'JSONL'
{"timestamp": 0, "input_length": 1200, "output_length": 200, "hash_ids": [0, 1]}
{"timestamp": 500, "input_length": 1100, "output_length": 2, "hash_ids": [0, 2]}
{"timestamp": 30000, "input_length": 1100, "output_length": 2, "hash_ids": [0, 3]}
JSONL
for pc in shared ram slot none; do
	sed 's/"slots": 1/"slots": 2/; s/"prompt_cache": "[a-z]*"/"prompt_cache": "'$pc'"/' \
		"$T/m-none.json" > "$T/m2-$pc.json"
	ok --model-file "$T/m2-$pc.json" --trace "$T/two.jsonl" --no-noise --json "$T/t2-$pc.json"
done
python3 - "$T" <<'PY' || fails=$((fails+1))
import json, sys
t = {k: [r["ttft_ms"] for r in json.load(open("%s/t2-%s.json" % (sys.argv[1], k)))["levels"][0]["requests"]]
     for k in ("shared", "ram", "slot", "none")}
ok = (t["shared"][1] < t["ram"][1] == t["slot"][1] == t["none"][1] and
      t["shared"][2] == t["ram"][2] == t["slot"][2] < t["none"][2])
if not ok:
    sys.exit("FAIL: ram against shared, slot and none: %r" % t)
PY

# one slot, "ram": llama.cpp saves a slot's prompt only when the slot is
# not taken for its similarity (the LRU path). Blocks 0,1 then 0,2 (taken for
# block 0: 0,1 not saved), then 5 (0,2 saved), then 0,1,7: block 0 restored,
# block 1 never saved: 512 reused (5 + 108.8 + 5.12 = 118.92 ms); a shared
# cache has both (1024: 72.84 ms)
cat > "$T/lru.jsonl" <<'JSONL'
{"timestamp": 0, "input_length": 1200, "output_length": 2, "hash_ids": [0, 1]}
{"timestamp": 10000, "input_length": 1100, "output_length": 2, "hash_ids": [0, 2]}
{"timestamp": 20000, "input_length": 600, "output_length": 2, "hash_ids": [5]}
{"timestamp": 30000, "input_length": 1600, "output_length": 2, "hash_ids": [0, 1, 7]}
JSONL
for pc in ram shared; do
	sed 's/"prompt_cache": "[a-z]*"/"prompt_cache": "'$pc'"/' "$T/m-none.json" > "$T/m1-$pc.json"
	ok --model-file "$T/m1-$pc.json" --trace "$T/lru.jsonl" --no-noise --json "$T/l-$pc.json"
done
want "$T/l-ram.json" "round(d['levels'][0]['requests'][3]['ttft_ms'], 6)" 118.92 \
	"ram: a prompt that left its slot by similarity is not saved"
want "$T/l-shared.json" "round(d['levels'][0]['requests'][3]['ttft_ms'], 6)" 72.84 \
	"shared: every block prefilled is kept"

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
