#!/usr/bin/env bash
# live_conversation.sh — chat conversations, each turn's prompt the whole
# history, with llama.cpp's prompt cache on and off: one model, calibrated
# by `calibrate --url` (whose survey measures the cache), predicts both, and
# the TTFT the cache saves; the same model without its cache must fail the
# cached load (suite live).
#
#   live_conversation.sh SERVEBENCH LLAMA_SH
#
# 1. `calibrate --url` on a 2-slot llama-server (prompts up to 512 tokens,
#    the native API; saved in cal/).
# 2. The load: closed loop of c = 1 and 2 conversations of 4 turns, 64 new
#    tokens a turn and 16 output tokens (prompts of 64 to about 300 tokens,
#    three quarters of the last one history), the user thinking 0.3 s on
#    average (exponential) between an answer and the next turn; the replay
#    sends each turn as long after the last answer as the measured client
#    did. (Without thinking, two conversations run in lockstep and the
#    server's choice of which turn's prompt it prefills first decides a
#    whole run: a known gap, docs/model-notes.md.) Cached: validated twice with
#    the same requests, each time on a server started afresh. Uncached:
#    twice with --no-cache-prompt. Both re-measure the calibration's
#    one-client 256-token load around every level (--drift-ref).
# 3. Each pair replayed through the model and the wrong models at the
#    server's speed and judged apart (livecheck.py judge; lib.sh
#    replay_all): error <= GOAL + noise measured without the model,
#    inconclusive when too noisy; on the cached pair the model without its
#    prompt cache is one more wrong model.
# 4. The TTFT the cache saves at each level, predicted (the replays) against
#    measured (the two pairs), within 10 percentage points + the two pairs'
#    own difference; the model without its cache (predicting no saving) must
#    miss it (livecheck.py saving).
# Exit 0 pass, 1 fail, 77 inconclusive (a failure wins).
set -euo pipefail

usage="usage: live_conversation.sh SERVEBENCH LLAMA_SH"
SB=${1:?$usage}
LLAMA=${2:?$usage}
NAME=validate-live-conversation
N=${SERVEBENCH_LIVE_N:-16}
source "$(dirname "$0")/lib.sh"
api=(--api llama-completion)

start_server 2
echo "== calibrate --url (2 slots)"
calibrate_url 2 cal model.json
grep -E '^server time' cal.txt || true
cache=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['server'].get('prompt_cache', 'none'))" model.json)
[[ $cache != none ]] || die "the calibration found no prompt cache on llama-server (cache_prompt is on by default)"
load=(--concurrency 1,2 --rates none --turns 4 --think exp:0.3 --input-len 64
      --output-len 16 --num-requests "$N" --warmup 1)

verdicts=()
cache_on_off conversations "${api[@]}" "${load[@]}"
stop_servers
echo "== the TTFT the cache saves"
ctl=$(ls cached-ctl*-1.json | sort -V | tail -1)   # the last control: no prompt cache
rc=0
"$PY" "$LC" saving --test "$NAME-saving" --cached cached-right-1.json cached-right-2.json \
  --uncached uncached-right-1.json uncached-right-2.json \
  --control "no prompt cache" "$ctl" "${ctl%-1.json}-2.json" || rc=$?
verdicts+=("$rc")
exit "$(worse "${verdicts[@]}")"
