#!/usr/bin/env bash
# live_slots.sh — a model calibrated at 3 slots predicts servers of 2 and 4
# slots, and wrong models fail the same check (suite live).
#
#   live_slots.sh SERVEBENCH LLAMA_SH
#
# 1. `calibrate --url` on a 3-slot llama-server (its own plan, prompts up to
#    512 tokens, the native API so records carry the slot; saved in cal/).
# 2. For a server of 2 slots and one of 4 (each started afresh): validate
#    the 3-slot model twice with the same requests (closed loop c = 1..S+1,
#    open loop at validate's default rates, 128 prompt / 32 output tokens:
#    the calibration used 16, 256 and 512-token prompts, 64 output tokens in
#    its sweep), each re-measuring the calibration's one-client 256-token
#    load before and after (--drift-ref). validate simulates the server's
#    slot count and says the model was calibrated at 3 (at 4, decode passes
#    beyond 3 are extrapolated, and the model states that rule's error as
#    an interval: errors there are judged outside it, lib.sh replay_all).
# 3. Replay both measurements through the model and the wrong models at the
#    server's speed of the day and judge each server apart (livecheck.py;
#    lib.sh replay_all): per regime, quantity and class, error <= GOAL +
#    noise measured without the model; inconclusive when too noisy to tell;
#    every wrong model must fail.
# Also asserted: validate's report says the model was calibrated at 3 slots
# and simulated at the server's count.
# Exit 0 pass, 1 fail, 77 inconclusive (either server's; a failure wins).
set -euo pipefail

usage="usage: live_slots.sh SERVEBENCH LLAMA_SH"
SB=${1:?$usage}
LLAMA=${2:?$usage}
NAME=validate-live-slots
N=${SERVEBENCH_LIVE_N:-12}
source "$(dirname "$0")/lib.sh"
api=(--api llama-completion)

start_server 3
echo "== calibrate --url (3 slots)"
calibrate_url 3 cal model3.json
grep -E '^(server time|slots|  decode_ms)' cal.txt || true
stop_servers

verdicts=()
for S in 2 4; do
  start_server "$S"
  echo "== validate the 3-slot model on $S slots, twice with the same requests"
  validate_twice "s$S" model3.json cal/prompt-256.json "${api[@]}" \
    --concurrency "$(seq -s, 1 $((S + 1)))" --input-len 128 --output-len 32 \
    --num-requests "$N" --warmup 1 | tee "out-$S.txt"
  stop_servers
  want="model calibrated at 3 slots, server has $S: simulated with $S slots"
  grep -qF "$want" "out-$S.txt" || die "$S slots: the report does not say '$want'"
  # at 4 slots, beyond the 3 calibrated, errors are judged outside the band
  # of the decode rule's stated form interval (lib.sh replay_all)
  replay_all "s$S" model3.json "$S" cal/prompt-256.json
  rc=0
  "$PY" "$LC" judge --test "$NAME-$S" "${JUDGE_ARGS[@]}" || rc=$?
  verdicts+=("$rc")
done
exit "$(worse "${verdicts[@]}")"
