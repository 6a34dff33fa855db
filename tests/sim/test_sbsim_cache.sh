#!/bin/sh
# test_sbsim_cache.sh SBSIM SERVEBENCH — prompts that share prefixes (--prefix-len,
# --prefix-groups) through a model with a prompt cache (server.prompt_cache):
#  - known answer, one slot, one prefix group, "slot" cache: every counted
#    prompt of 900 shared + 100 own tokens finds its prefix in the slot and
#    prefills 100 tokens (100 x 0.1 ms) after restoring 900 (900 x 0.01 ms)
#    and 5 ms of overhead: TTFT 24 ms, E2E 34 ms (one more token at 10 ms);
#    without a cache (--prompt-cache none) TTFT 105 ms;
#  - the JSON counts what was reused (prompt_cache.cached_tokens of all
#    prompt_tokens) and the text says it under the table;
#  - two prefix groups on one slot: the slot's last prompt is reused about
#    half the time, a shared cache nearly always;
#  - a vllm engine reuses whole blocks only (896 of 900 tokens, blocks of 16);
#  - two replicas of one slot, two groups: round-robin reuses about half the
#    prefixes, prefix-affinity (each group kept on one replica) nearly all;
#  - a measurement with prefix groups replayed (--compare): each request is
#    given its recorded group, so one whose predecessor on the slot had the
#    same prefix is prefilled from the cache (24 ms), the others whole
#    (105 ms); without a cache, or without the workload's prefix_len, all
#    whole; `servebench validate --measured` replays it the same way, and
#    its --prompt-cache none what-if too; a run measured with the cache off
#    (target.cache_prompt false) is replayed without the model's cache, and
#    the report says so;
#  - --prefix-groups without --prefix-len and an unknown cache kind are
#    refused naming what was wrong.
set -u
SBSIM=$1
SB=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT INT TERM
fails=0
. "$(dirname "$0")/sbsim_checks.sh"

model() { # CACHE ENGINE
	cat > "$T/m.json" <<JSON
{"schema": "servebench.model/1", "name": "cache test",
 "server": {"slots": 1, "max_queue": -1, "batch_tokens": 4096,
            "engine": "$2", "prompt_cache": "$1"},
 "overhead_ms": 5.0, "overhead_sd_ms": 0,
 "step_ms": {"decode_ms": {"1": 10.0}, "per_kv_token": 0,
             "per_prefill_token": 0.1, "per_cached_token": 0.01},
 "noise": {"kind": "none", "cv": 0}}
JSON
}
common="--concurrency 1 --warmup 1 --input-len 100 --output-len 2 --prefix-len 900 --no-uncertainty"

model slot llama.cpp
ok --model-file "$T/m.json" $common --requests 5 --json "$T/slot.json"
want "$T/slot.json" "round(d['levels'][0]['ttft_ms']['mean'], 6)" 24.0 "cached TTFT mean"
want "$T/slot.json" "round(d['levels'][0]['e2e_ms']['mean'], 6)" 34.0 "cached E2E mean"
want "$T/slot.json" "d['levels'][0]['prompt_cache']['cached_tokens']" 4500 "tokens reused"
want "$T/slot.json" "d['levels'][0]['prompt_cache']['prompt_tokens']" 5000 "prompt tokens"
want "$T/slot.json" "d['workload']['prefix_len'], d['workload']['prefix_groups']" "900 1" \
	"workload's prefix"
ok --model-file "$T/m.json" $common --requests 5
has "$T/out" "after a shared prefix of 900 tokens (prompt cache: slot)"
has "$T/out" "90% of prompt tokens reused from the prompt cache (slot)"

ok --model-file "$T/m.json" $common --requests 5 --prompt-cache none --json "$T/none.json"
want "$T/none.json" "round(d['levels'][0]['ttft_ms']['mean'], 6)" 105.0 "uncached TTFT mean"
want "$T/none.json" "'prompt_cache' in d['levels'][0]" False "no cache counts without a cache"

# two groups, one slot: the slot holds the last group (a hit when two in a
# row share it, about half); a shared cache holds both after their first
ok --model-file "$T/m.json" $common --requests 400 --prefix-groups 2 --json "$T/g2slot.json"
ok --model-file "$T/m.json" $common --requests 400 --prefix-groups 2 --prompt-cache shared \
	--json "$T/g2shared.json"
share() { field "$1" "round(100 * d['levels'][0]['prompt_cache']['cached_tokens'] / d['levels'][0]['prompt_cache']['prompt_tokens'])"; }
s1=$(share "$T/g2slot.json") s2=$(share "$T/g2shared.json")
# 400 draws of p = 1/2: sd 2.5 points of the hit rate, x 0.9 of the tokens
[ "$s1" -ge 38 ] && [ "$s1" -le 52 ] || { echo "FAIL: slot cache, 2 groups: $s1% reused, want ~45%"; fails=$((fails+1)); }
[ "$s2" -ge 89 ] || { echo "FAIL: shared cache, 2 groups: $s2% reused, want ~90%"; fails=$((fails+1)); }

fleet="--replicas 2 --concurrency 2 --warmup 1 --input-len 100 --output-len 2 --prefix-len 900 --prefix-groups 2 --requests 400 --no-uncertainty"
ok --model-file "$T/m.json" $fleet --route round-robin --json "$T/rr.json"
ok --model-file "$T/m.json" $fleet --route prefix-affinity --json "$T/pa.json"
s1=$(share "$T/rr.json") s2=$(share "$T/pa.json")
[ "$s1" -ge 38 ] && [ "$s1" -le 52 ] || { echo "FAIL: round-robin, 2 groups: $s1% reused, want ~45%"; fails=$((fails+1)); }
[ "$s2" -ge 89 ] || { echo "FAIL: prefix-affinity, 2 groups: $s2% reused, want ~90%"; fails=$((fails+1)); }

model shared vllm
ok --model-file "$T/m.json" $common --requests 5 --json "$T/vllm.json"
want "$T/vllm.json" "d['levels'][0]['prompt_cache']['cached_tokens']" 4480 "vllm: whole blocks reused"

model slot llama.cpp
measured() { # PREFIX_LEN [CACHE_PROMPT]: 6 requests one after another, groups 0 0 1 1 0 1
	python3 - "$1" "${2:-}" > "$T/meas.json" <<'PY'
import json, sys
reqs = [{"id": i, "t_scheduled_s": 0.06 * i, "t_sent_s": 0.06 * i, "t_done_s": 0.06 * i + 0.05,
         "ttft_ms": 40.0, "e2e_ms": 50.0, "prompt_tokens": 1000, "output_tokens": 2,
         "prefix_group": g, "error": None} for i, g in enumerate([0, 0, 1, 1, 0, 1])]
w = {"mode": "concurrency", "levels": [1], "input_len": 100, "output_len": 2, "requests": 6}
if int(sys.argv[1]):
    w.update(prefix_len=int(sys.argv[1]), prefix_groups=2)
target = {"server": "llama.cpp", "slots": 1}
if sys.argv[2]:
    target["cache_prompt"] = sys.argv[2] == "true"
print(json.dumps({"schema": "servebench.results/1", "source": "measured",
                  "target": target, "workload": w,
                  "levels": [{"level": 1, "mode": "concurrency", "requests_ok": 6,
                              "requests_failed": 0, "requests": reqs}]}))
PY
}
measured 900
ok --model-file "$T/m.json" --compare "$T/meas.json" --json "$T/replay.json"
want "$T/replay.json" "' '.join('%g' % r['ttft_ms'] for r in d['levels'][0]['requests'])" \
	"105 24 105 24 105 105" "replayed prefix groups: TTFTs"
ok --model-file "$T/m.json" --compare "$T/meas.json" --prompt-cache none --json "$T/replay0.json"
want "$T/replay0.json" "' '.join('%g' % r['ttft_ms'] for r in d['levels'][0]['requests'])" \
	"105 105 105 105 105 105" "replayed without a cache: TTFTs"
for cache in slot none; do
	"$SB" validate --model-file "$T/m.json" --measured "$T/meas.json" --prompt-cache $cache \
		--quiet --json "$T/v-$cache.json" > /dev/null 2>&1
done
want "$T/v-slot.json" "' '.join('%g' % r['ttft_ms_predicted'] for r in d['levels'][0]['requests'])" \
	"105 24 105 24 105 105" "validate --measured: replayed prefix groups' TTFTs"
want "$T/v-none.json" "' '.join('%g' % r['ttft_ms_predicted'] for r in d['levels'][0]['requests'])" \
	"105 105 105 105 105 105" "validate --measured --prompt-cache none: TTFTs"
measured 900 true
ok --model-file "$T/m.json" --compare "$T/meas.json" --json "$T/replay3.json"
want "$T/replay3.json" "' '.join('%g' % r['ttft_ms'] for r in d['levels'][0]['requests'])" \
	"105 24 105 24 105 105" "a run measured with the cache on: TTFTs"
measured 900 false
ok --model-file "$T/m.json" --compare "$T/meas.json" --json "$T/replay2.json"
want "$T/replay2.json" "' '.join('%g' % r['ttft_ms'] for r in d['levels'][0]['requests'])" \
	"105 105 105 105 105 105" "a run measured with the cache off: TTFTs"
has "$T/out" "replayed without the model's prompt cache"
measured 0
ok --model-file "$T/m.json" --compare "$T/meas.json" --json "$T/replay1.json"
want "$T/replay1.json" "' '.join('%g' % r['ttft_ms'] for r in d['levels'][0]['requests'])" \
	"105 105 105 105 105 105" "groups without the workload's prefix_len: TTFTs"

bad "prefix_groups" --model-file "$T/m.json" --concurrency 1 --prefix-groups 3
model lru llama.cpp
bad 'model.server.prompt_cache: "lru"' --model-file "$T/m.json" --concurrency 1

echo "sbsim cache: $fails failure(s)"
[ $fails -eq 0 ]
