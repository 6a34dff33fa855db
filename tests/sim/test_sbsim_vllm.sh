#!/bin/sh
# test_sbsim_vllm.sh SBSIM — the vLLM-class engine (core/model.h, engine
# "vllm") through sbsim:
#  - known answer: one request of 3000 prompt tokens under a 1024-token
#    budget is prefilled in 3 chunks (3 x base 10 ms + 3000 x 0.01 ms) after
#    5 ms of overhead: TTFT 65 ms; its 10 further tokens at decode_ms(1) =
#    10.5 ms: E2E 170 ms;
#  - paged KV: 1500 blocks of 16 tokens under long prompts at a high rate
#    preempt (said under the table, counted in the JSON) and every request
#    still completes; unlimited blocks never preempt;
#  - a prompt longer than all the blocks is rejected as too long;
#  - an unknown engine name is refused naming the field.
set -u
SBSIM=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT INT TERM
fails=0
. "$(dirname "$0")/sbsim_checks.sh"

model() { # BLOCKS ENGINE
	cat > "$T/m.json" <<JSON
{"schema": "servebench.model/1", "name": "vllm test",
 "server": {"slots": 32, "max_queue": -1, "batch_tokens": 1024,
            "engine": "$2", "block_size": 16, "gpu_blocks": $1},
 "overhead_ms": 5.0, "overhead_sd_ms": 0,
 "step_ms": {"decode_ms": {"1": 10.5, "2": 11.0}, "per_kv_token": 0,
             "per_prefill_token": 0.01},
 "noise": {"kind": "none", "cv": 0}}
JSON
}

model 0 vllm
ok --model-file "$T/m.json" --concurrency 1 --requests 3 --warmup 0 --input-len 3000 \
  --output-len 11 --no-uncertainty --json "$T/one.json"
for k in "ttft_ms 65.0" "e2e_ms 170.0"; do
	set -- $k
	got=$(field "$T/one.json" "round(d['levels'][0]['$1']['mean'], 6)")
	[ "$got" = "$2" ] || { echo "FAIL: $1 mean $got, want $2"; fails=$((fails+1)); }
done

model 1500 vllm
ok --model-file "$T/m.json" --rate 20 --requests 300 --input-len 2000 --output-len 400 \
  --no-uncertainty --json "$T/kv.json"
has "$T/out" "preemptions in"
pre=$(field "$T/kv.json" "d['levels'][0]['preempted']")
okn=$(field "$T/kv.json" "d['levels'][0]['requests_ok']")
[ "$pre" -gt 0 ] || { echo "FAIL: no preemption counted with 1500 blocks"; fails=$((fails+1)); }
[ "$okn" = 300 ] || { echo "FAIL: $okn of 300 requests completed"; fails=$((fails+1)); }

model 0 vllm
ok --model-file "$T/m.json" --rate 20 --requests 300 --input-len 2000 --output-len 400 \
  --no-uncertainty --json "$T/nokv.json"
grep -q "preemptions in" "$T/out" && { echo "FAIL: preemptions without a block limit"; fails=$((fails+1)); }
pre=$(field "$T/nokv.json" "d['levels'][0]['preempted']")
[ "$pre" = 0 ] || { echo "FAIL: $pre preemptions without a block limit"; fails=$((fails+1)); }

model 10 vllm
ok --model-file "$T/m.json" --rate 1 --requests 5 --input-len 500 --output-len 4 --no-uncertainty
has "$T/out" "rejected as too long"

model 0 tgi
bad 'model.server.engine: "tgi"' --model-file "$T/m.json" --rate 1

echo "sbsim vllm: $fails failure(s)"
[ $fails -eq 0 ]
