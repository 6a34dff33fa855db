#!/usr/bin/env bash
# live_validate.sh — a model calibrated on a real llama-server predicts loads
# it was not calibrated on, and wrong models fail the same check (suite live).
#
#   live_validate.sh SERVEBENCH LLAMA_SH [SLOTS]
#
# 1. Start llama-server with SLOTS slots (default 2), 1 thread
#    (llama/llama.sh; stopped on exit).
# 2. Calibrate. At 2 slots from short runs of `servebench run` (one client at
#    32 and 256 prompt tokens, a sweep c = 1..3 at 128, pairs and fours sent
#    together), then `calibrate FILES`; at other counts with `calibrate --url`
#    (its own plan with prompts up to 512 tokens: one client at 16, 256 and
#    512 tokens up and back, a sweep at 256/64 tokens, pinned decode passes),
#    twice, minutes apart (step 6). (The default plan's 1024 and 2048-token
#    prompts took 2 x 136 s of the 20-minute test, for prompts 6-16x longer
#    than the 128 it judges; validate-live-slots runs the default plan.)
# 3. Validate twice with one seed and the prompt cache off, so both send the
#    same prompts at the same times (closed loop c = 1..S+2, open loop at
#    validate's default 30/50/70/90% of the predicted capacity), with
#    --drift-ref --drift-each-level: each validation re-measures, before,
#    between every two levels and after, a load the
#    calibration itself measured (one client at its lengths) — the server's
#    speed against its own earlier speed, measured against measured.
#    What is judged differs from what was calibrated on: the prompts are 192
#    tokens at 2 slots (calibrated at 32, 128, 256) and 128 at other counts
#    (calibrated at 16, 256 and 512), and no calibration ran open loop.
# 4. Replay both measurements (`validate --measured`, no server time) through
#    the model and through wrong models — all times x1.2, decode passes of
#    two or more sequences x1.25, prefill per token x1.25, one slot fewer,
#    and beyond 2 slots the other KV layout — each validation at the
#    server's speed of its drift runs, pooled (--speed-factors from
#    livecheck.py pooled-factors: read from measurements alone).
# 5. livecheck.py judges (its header has the rule): per regime (unloaded,
#    batched, open loop), quantity and class, the model's error against
#    GOAL + noise, the noise being the two measurements' difference and how
#    far the pooled speed factors can be from the calibration's speed; inconclusive (exit 77) when the noise
#    is too large to tell a 15% error from none; and every wrong model must
#    fail the same bound.
#    Beyond 2 slots the second calibration's model replays them too, at
#    its own reference's speed: how far it lands from the judged model is
#    reported beside each cell, not judged (livecheck recal_term).
# 6. Beyond 2 slots: the two calibrations' predictions of the same requests
#    differ by no more than GOAL + the server's drift between the two
#    calibrations (their one-client prompt runs, same lengths: measured
#    against measured), judged apart from the prediction (livecheck cal2cal).
# Exit 0 pass, 1 fail, 77 inconclusive.
set -euo pipefail

usage="usage: live_validate.sh SERVEBENCH LLAMA_SH [SLOTS]"
SB=${1:?$usage}
LLAMA=${2:?$usage}
SLOTS=${3:-2}
NAME=validate-live-${SLOTS}slots
N=${SERVEBENCH_LIVE_N:-12}
source "$(dirname "$0")/lib.sh"

start_server "$SLOTS"
api=()
[[ $SLOTS != 2 ]] && api=(--api llama-completion)   # records carry the slot

if [[ $SLOTS == 2 ]]; then
  echo "== calibration runs"
  c=(run --url "$URL" --model live --quiet --output-len 32 --warmup 1)
  sb 1 "${c[@]}" --concurrency 1 --input-len 32 --num-requests 8 --seed 1 --out cal-32.json
  sb 1 "${c[@]}" --concurrency 1 --input-len 256 --num-requests 8 --seed 2 --out cal-256.json
  sb 1 "${c[@]}" --concurrency 1,2,3 --input-len 128 --num-requests 10 --seed 3 --out cal-sweep.json
  # sent together to the idle server: pairs, and fours of which two wait
  c=(run --url "$URL" --model live --quiet --input-len 128 --output-len 1 --warmup 0)
  sb 1 "${c[@]}" --concurrency 2,2,2,2,2,2 --num-requests 2 --seed 4 --out cal-pairs.json
  sb 1 "${c[@]}" --concurrency 4,4,4,4,4,4 --num-requests 4 --seed 5 --out cal-fours.json
  sb 0 calibrate cal-32.json cal-256.json cal-sweep.json cal-pairs.json cal-fours.json \
    --slots 2 -o model.json --quiet
  ref=cal-sweep.json   # its c = 1 level: 128/32 tokens
  IL=192
else
  for k in "" 2; do
    echo "== calibrate --url ($SLOTS slots)${k:+, again}"
    calibrate_url "$SLOTS" "cal$k" "model$k.json"
    grep -E '^(server time|slots|  decode_ms)' "cal$k.txt" || true
  done
  ref=cal/prompt-256.json   # one client, 256/32 tokens
  IL=128
fi

echo "== validate, twice with the same requests"
validate_twice v model.json "$ref" "${api[@]}" --concurrency "$(seq -s, 1 $((SLOTS + 2)))" \
  --input-len $IL --output-len 32 --num-requests "$N" --warmup 1
replay_all v model.json "$SLOTS" "$ref"
if [[ $SLOTS != 2 ]]; then
  # the second calibration's model replays the same measurements at the
  # speed factors against its own reference: the calibration repeated,
  # reported (livecheck recal_term)
  for k in 1 2; do
    f=$("$PY" "$LC" pooled-factors "cal2/prompt-256.json,cal2/prompt-256-back.json" "v-m$k.json")
    sb 1 validate --measured "v-m$k.json" --model-file model2.json --speed-factors "$f" \
      --seed 11 --no-forecast --quiet --json "v-recal-$k.json" >/dev/null
  done
  JUDGE_ARGS+=(--recal v-recal-1.json v-recal-2.json)
fi
rc=0
"$PY" "$LC" judge --test "$NAME" "${JUDGE_ARGS[@]}" || rc=$?
if [[ $SLOTS != 2 ]]; then
  # both calibrations' predictions of the first measurement, as calibrated
  for k in "" 2; do
    sb 1 validate --measured v-m1.json --model-file "model$k.json" --seed 11 --no-forecast \
      --quiet --json "cal$k-pred.json" >/dev/null
  done
  c2=0
  "$PY" "$LC" cal2cal --test "$NAME-calibrations" --first cal-pred.json \
    --second cal2-pred.json --cal cal --cal2 cal2 || c2=$?
  rc=$(worse $rc $c2)
fi
exit "$rc"
