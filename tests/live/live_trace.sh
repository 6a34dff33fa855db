#!/usr/bin/env bash
# live_trace.sh — a recorded request trace, measured live with `run --trace`
# and predicted by a model calibrated with `calibrate --url`, judged as the
# other live tests; the model without its prompt cache must fail (by hand,
# not in the suite).
#
#   live_trace.sh SERVEBENCH LLAMA_SH [TRACE]
#
# 1. `calibrate --url` (its default plan, prompts to 2048 tokens) on a
#    4-slot llama-server with 2560 tokens of context per slot.
# 2. TRACE (default tests/live/data/trace-24.jsonl: Mooncake JSONL, 24
#    requests in 28 s, prompts of 570-890 tokens each beginning with one of
#    two shared 512-token blocks, 16 output tokens), sent at 0.75 of its
#    speed (--trace-speedup; SERVEBENCH_TRACE_SPEEDUP) by `run --trace`
#    twice, each on a server started afresh (the second run's blocks would
#    be cached from the first). Before and after each run the calibration's
#    one-client 256-token load is re-measured (10 requests, no cache).
# 3. Both runs replayed (`validate --measured`: the trace's arrivals and
#    blocks, the model's prompt cache deciding what is reused) through the
#    model and wrong models (without its prompt cache, every time x1.2,
#    prefill per token x1.25) at the server's speed of the day (the drift
#    runs against the calibration's own measurement of that load), and
#    judged by livecheck.py: open loop, error <= GOAL + noise (the two
#    runs' difference and the drift runs' spread, both measured without the
#    model); inconclusive when too noisy; every wrong model must fail.
# Exit 0 pass, 1 fail, 77 inconclusive. About 10 minutes.
set -euo pipefail

usage="usage: live_trace.sh SERVEBENCH LLAMA_SH [TRACE]"
SB=${1:?$usage}
LLAMA=${2:?$usage}
TRACE=${3:-$(dirname "$0")/data/trace-24.jsonl}
TRACE=$(cd "$(dirname "$TRACE")" && pwd)/$(basename "$TRACE")
SPEEDUP=${SERVEBENCH_TRACE_SPEEDUP:-0.75}
NAME=validate-live-trace
source "$(dirname "$0")/lib.sh"
LIVE_CTX=10240

start_server 4
echo "== calibrate --url (4 slots, the default plan)"
sb 0 calibrate --url "$URL" --model live --save cal -o model.json >cal.txt
grep -E '^(server time|  per_cached_token)|prompt_cache' cal.txt || true

drift_run() {   # SEED: the calibration's one-client 256-token load
  sb 1 run --url "$URL" --model live --quiet --concurrency 1 --num-requests 10 \
    --input-len 256 --output-len 32 --warmup 1 --no-cache-prompt --seed "$1" --out "drift-$1.json"
}
for k in 1 2; do
  stop_servers
  start_server 4
  echo "== the trace, run $k (x$SPEEDUP), between two drift runs"
  drift_run "${k}1"
  sb 1 run --url "$URL" --model live --quiet --trace "$TRACE" --trace-speedup "$SPEEDUP" \
    --out "trace-$k.json"
  drift_run "${k}2"
done
stop_servers
"$PY" "$LC" measure-drift cal/prompt-256.json drift-*.json >drift.json
f=$("$PY" "$LC" factors drift.json)
echo "the server's speed against the calibration's measurement (TTFT, ITL): x$f"
replay() {   # NAME FLAGS...: both runs through the model changed by FLAGS
  local k
  for k in 1 2; do
    sb 1 validate --measured "trace-$k.json" --model-file model.json --speed-factors "$f" \
      --seed 3 --no-forecast --quiet --json "$1-$k.json" "${@:2}" >/dev/null
  done
}
replay right
args=(--slots 4 --drift drift.json --right right-1.json right-2.json)
n=0
for c in "no prompt cache:--prompt-cache none" "all x1.2:--scale all=1.2" \
         "prefill/token x1.25:--scale prefill_token=1.25"; do
  n=$((n + 1))
  # shellcheck disable=SC2086
  replay "ctl$n" ${c#*:}
  args+=(--control "${c%%:*}" "ctl$n-1.json" "ctl$n-2.json")
done
"$PY" "$LC" judge --test "$NAME" "${args[@]}"
