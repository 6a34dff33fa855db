#!/usr/bin/env bash
# live_validate.sh — `servebench validate` against a real llama-server, small
# scale (suite live).
#
#   live_validate.sh SERVEBENCH LLAMA_SH [SLOTS]
#
# 1. Start llama-server with SLOTS slots (default 2) and 1 thread
#    (target/llama.sh; stopped on exit).
# 2. Calibrate. At 2 slots from short runs: concurrency 1 at prompts of 32
#    and 256 tokens, a sweep c = 1,2,3 at 128 tokens, and six pairs and six
#    groups of four one-token requests sent together (`servebench run`,
#    then `servebench calibrate FILES --slots 2`). At any other slot count
#    with `servebench calibrate --url` (its own plan, which pins requests to
#    slots to measure each decode pass, 256-token prompts and 64 output
#    tokens in its sweep).
#    At other slot counts it calibrates a second time, minutes later, and
#    validate replays the requests through both models (--second-model).
# 3. Validate: closed loop c = 1..S+2 at 128 prompt / 32 output tokens
#    (at 2 slots c = 4 was not used for calibration; at other counts none of
#    these lengths was) and open loop at the default 30/50/70/90% of the
#    predicted capacity (none used for calibration); the measured requests
#    are replayed through the simulator.
# 4. Measure the closed-loop levels once more (fresh prompts) to see how
#    much two live runs of this size differ by themselves.
# 5. Assert, per quantity (TTFT, TPOT, E2E) and class (mean/p50, p90/p99):
#        median |prediction error| over all levels
#            <=  2 x median |run-to-run difference| + floor
#    with floors of 5% (mean/p50) and 10% (p90/p99), the project's goals.
#    The run-to-run difference is taken over the closed-loop levels only:
#    there, two runs offer the same load (same concurrency and lengths) and
#    differ only by the server's own noise (CPU contention from whatever
#    else runs on the 2 cores, scheduling), which is exactly what a replay
#    cannot remove. Two open-loop runs also differ by their random arrivals
#    (TTFT p50 by up to ~300% in our 10-request runs), which the replay
#    does remove, so including them would make the bound too loose to
#    catch anything. If the model were exact, the prediction's error would
#    be one run's noise (sd s) and the difference of two runs has sd 1.4 s,
#    so 2x the difference is a wide margin; the floors keep an unusually
#    quiet repeat from failing a model that meets the goals.
#    The run-to-run difference is the largest of three: the repeat against the
#    validation (noise), and the calibration sweep's c = 1..3 against the
#    validation's (the same load two minutes earlier: how far the server's
#    own speed moved between calibrating and validating, which no model
#    can know; on this VM one client's TPOT wanders by up to 15% within
#    minutes), or the model's own predicted spread for a run of this size
#    (median sd / mean of its replications: step noise and the split draws,
#    2-8% here), when larger: on a quiet machine a repeat can differ by
#    1.4% while a c = 2 level still lands in lockstep or split (+-15%
#    TTFT), and one CI run failed TTFT central 8.0% > 7.8% that way. A
#    model error larger than all three still fails. Also asserted:
#    the knee of the closed-loop TTFT p99 is predicted at the level where
#    it is measured.
#    Beyond 2 slots there is no calibration sweep at the validation's
#    lengths; the drift term is then how far validate's one-client probes
#    are from the model (a probe p% off makes an exact model err by
#    -p/(1+p)), as in live_slots.sh. And the model is one calibration of
#    many the server could have given: how far the second calibration's
#    prediction of the same requests is from the first's (step 5b) is the
#    pipeline's own run-to-run difference, a term too. A CI run failed this
#    test (its log was not kept); a rerun showed how: one calibration put the
#    server's batch-2 steps at 23 ms where most runs measure 27-31 ms (the
#    one-client probes moved 1-5%), and two calibrations minutes apart
#    differed by as much.
# 5b. Beyond 2 slots: the two calibrations' predictions of the same requests
#    differ by at most 2 x the larger of the repeat's difference and the
#    server's drift between the two calibrations (their one-client prompt
#    sweeps, concurrency sweeps and pinned decode passes, same lengths and
#    loads: the largest) + the same floors.
# 6. The speed-adjusted prediction (each level's prefill and decode times
#    scaled by validate's one-client probes beside it; c = 1 left out) is
#    held to the same form of bound, the run-to-run term being the largest
#    of the repeat's difference, the consecutive probes' difference (the
#    scale factors are 3-request medians and carry that noise; one CI run
#    read TPOT probes of -19% then +14% a minute apart) and the model's own
#    spread (as in step 5): with the server's current speed given, what
#    remains is the model's error about load.
# Exit 0 pass, 1 fail. Run time about 3 minutes on a busy 2-core machine
# (3m47s measured with the open-loop repeat this no longer makes).
set -euo pipefail

SB=${1:?usage: live_validate.sh SERVEBENCH LLAMA_SH [SLOTS]}
LLAMA=${2:?usage: live_validate.sh SERVEBENCH LLAMA_SH [SLOTS]}
SLOTS=${3:-2}
# meson passes paths relative to the build directory; the script works in
# its own temporary directory
SB=$(cd "$(dirname "$SB")" && pwd)/$(basename "$SB")
LLAMA=$(cd "$(dirname "$LLAMA")" && pwd)/$(basename "$LLAMA")
PY=${SERVEBENCH_PYTHON:-python3}
# the bounds' shared terms (live_bounds.py beside this script)
export PYTHONPATH="$(cd "$(dirname "$0")" && pwd)${PYTHONPATH:+:$PYTHONPATH}"

work=$(mktemp -d "${TMPDIR:-/tmp}/sb-live-validate.XXXXXX")
pidfile=""
cleanup() {
  if [[ -n "$pidfile" ]]; then
    "$LLAMA" stop "$pidfile" >/dev/null 2>&1 || true
  fi
  if [[ -n "${SERVEBENCH_LIVE_KEEP:-}" ]]; then
    # debugging aid: keep the measurements and the model
    mkdir -p "$SERVEBENCH_LIVE_KEEP" && cp "$work"/*.json "$SERVEBENCH_LIVE_KEEP"/ 2>/dev/null || true
    cp -r "$work"/cal "$work"/cal2 "$SERVEBENCH_LIVE_KEEP"/ 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

export SERVEBENCH_RUN_DIR="$work/srv"
if [[ -n "${SERVEBENCH_VALIDATE_URL:-}" ]]; then
  # debugging aid: a server (SLOTS slots) the caller already runs
  URL=$SERVEBENCH_VALIDATE_URL
else
  # One thread (llama.sh's default): llama.cpp's threads meet at a barrier
  # every step, so with two threads on a 2-core machine any other busy
  # process stalls each step by a scheduler time slice (steps of 5 ms became
  # 100-300 ms in our runs); one thread only slows down in proportion to the
  # CPU share it gets.
  if ! start_out=$("$LLAMA" start --np "$SLOTS" 2>"$work/start.log"); then
    echo "live_validate: llama-server did not start:"; tail -20 "$work/start.log"
    exit 1
  fi
  eval "$start_out"   # URL PID PIDFILE LOG ...
  pidfile=$PIDFILE
  echo "llama-server at $URL (pid $PID)"
fi

common=(--url "$URL" --model live --quiet)
# the calibration sweeps' and the repeat's lengths (a flag may be given once)
std=(--output-len 32 --warmup 1)
# Beyond 2 slots the server's choice of slot matters (per-slot KV streams:
# one pass per run of consecutive busy slots): llama.cpp's native
# /completion reports each request's slot, which the replay then uses.
api=()
[[ $SLOTS != 2 ]] && api=(--api llama-completion)
common+=("${api[@]}")
cd "$work"

# `servebench run` exits 1 when some requests failed: they are left out of
# calibration and comparison, so that is not fatal here; anything else is.
sbrun() {
  local rc=0
  "$SB" run "${common[@]}" "$@" || rc=$?
  if [[ $rc -eq 1 ]]; then
    echo "(some requests failed; they are left out)"
  elif [[ $rc -ne 0 ]]; then
    echo "live_validate: servebench run $* failed with status $rc"
    exit 1
  fi
}

levels=$(seq -s, 1 "$SLOTS"),$((SLOTS + 2))
[[ $SLOTS == 2 ]] && levels=1,2,3,4
if [[ $SLOTS != 2 ]]; then
  echo "== calibrate --url ($SLOTS slots)"
  "$SB" calibrate --url "$URL" --model live "${api[@]}" --slots "$SLOTS" --save cal -o model.json \
    | grep -E '^(server time|slots|split|  decode_ms|  - KV)' || true
  # and again, minutes later: two calibrations of one server must predict
  # the same requests as closely as two measurements of them agree
  echo "== calibrate --url again (repeatability of calibration)"
  "$SB" calibrate --url "$URL" --model live "${api[@]}" --slots "$SLOTS" --save cal2 -o model2.json --quiet
  echo '{"levels": []}' >cal-sweep.json   # no sweep at the validation's lengths
else
echo "== calibration runs"
sbrun "${std[@]}" --concurrency 1 --input-len 32 --num-requests 8 --seed 1 --out cal-32.json
sbrun "${std[@]}" --concurrency 1 --input-len 256 --num-requests 8 --seed 2 --out cal-256.json
sbrun "${std[@]}" --concurrency 1,2,3 --input-len 128 --num-requests 10 --seed 3 --out cal-sweep.json
# groups sent together to the idle server, as `calibrate --url` sends them:
# does it prefill those it admits in one step (split_prob for pairs,
# split_prob_crowded for fours, two of which wait for a slot)?
sbrun --concurrency 2,2,2,2,2,2 --input-len 128 --num-requests 2 --seed 4 \
  --output-len 1 --warmup 0 --out cal-pairs.json
sbrun --concurrency 4,4,4,4,4,4 --input-len 128 --num-requests 4 --seed 5 \
  --output-len 1 --warmup 0 --out cal-fours.json
"$SB" calibrate cal-32.json cal-256.json cal-sweep.json cal-pairs.json cal-fours.json \
  --slots 2 -o model.json --quiet
fi

second=()
[[ $SLOTS != 2 ]] && second=(--second-model model2.json)
echo "== validate"
set +e
"$SB" validate --model-file model.json "${second[@]}" --url "$URL" --model live "${api[@]}" \
  --concurrency "$levels" \
  --input-len 128 --output-len 32 --num-requests 10 --warmup 1 --seed 11 \
  --out-measured v1.json --out-simulated v1-sim.json --json cmp1.json
rc=$?
set -e
if [[ $rc -ge 2 ]]; then
  echo "live_validate: servebench validate failed with status $rc"
  exit 1
fi

echo "== repeat measurement of the closed-loop levels"
sbrun "${std[@]}" --concurrency "$levels" --input-len 128 --num-requests 10 --seed 21 --out r-closed.json

"$PY" - v1.json r-closed.json cmp1.json cal-sweep.json "$SLOTS" <<'PY'
import glob, json, os, sys
from live_bounds import bound, median, model_spread, speed_offset
v1 = json.load(open(sys.argv[1]))
rep = [json.load(open(sys.argv[2]))]
cmp = json.load(open(sys.argv[3]))
cal = [json.load(open(sys.argv[4]))]

def key(l):
    return (l["mode"], round(l["level"], 4))

# run-to-run reference: closed-loop levels only (see the header)
second = {key(l): l for d in rep for l in d["levels"] if l["mode"] == "concurrency"}
# and the calibration sweep's levels (the same load, c = 1..3 at 128 tokens,
# measured about two minutes earlier): how far the server's speed moved
# between calibration and validation, which the prediction cannot know
earlier = {key(l): l for d in cal for l in d["levels"] if l["mode"] == "concurrency"}
quant = ["ttft", "tpot", "e2e"]
classes = {"central": ["mean", "p50"], "tail": ["p90", "p99"]}
floor = {"central": 5.0, "tail": 10.0}

def run_to_run(other, q, stats):
    rr = []
    for l in v1["levels"]:
        o = other.get(key(l))
        if not o:
            continue
        for s in stats:
            a, b = l[q + "_ms"].get(s), o[q + "_ms"].get(s)
            if a and b and a > 0:
                rr.append(abs(b - a) / a * 100)
    return median(rr)

# Beyond 2 slots there is no calibration sweep at the validation's lengths;
# the same drift is then read from validate's one-client probes
# (live_bounds.speed_offset), as live_slots.sh does.

# The model's own spread for a run of this size: live_bounds.model_spread.
# Beyond 2 slots, the two calibrations' predictions of the same requests
# (validate --second-model): how far one calibration of this server is from
# another minutes later, the pipeline's own run-to-run difference.
rp = cmp.get("repeatability")

def cal_to_cal(q, cls):
    d = rp["summary"][q][cls + "_pct"] if rp is not None else None
    return d if d is not None else float("nan")

fail = []
print("%-5s %-8s %12s %12s %12s %12s %12s %10s" % ("", "", "prediction", "repeat", "calibration", "model sd", "cal to cal", "limit"))
for q in quant:
    for cls, stats in classes.items():
        pred = cmp["summary"]["%s_%s_mdape_pct" % (q, cls)]
        r_rep = run_to_run(second, q, stats)
        r_cal = (run_to_run(earlier, q, stats) if sys.argv[5] == "2"
                 else speed_offset(cmp.get("server_speed"), q))
        r_mod = model_spread(cmp, q, stats)
        r_c2c = cal_to_cal(q, cls)
        r = bound(r_rep, r_cal, r_mod, r_c2c)
        limit = 2 * r + floor[cls]
        ok = pred is not None and pred <= limit
        print("%-5s %-8s %11.1f%% %11.1f%% %11.1f%% %11.1f%% %11.1f%% %9.1f%% %s" % (q.upper(), cls, pred if pred is not None else float("nan"), r_rep, r_cal, r_mod, r_c2c, limit, "ok" if ok else "FAIL"))
        if not ok:
            fail.append("%s %s: prediction error %.1f%% > limit %.1f%%" % (q, cls, pred if pred is not None else float("nan"), limit))
# The speed-adjusted prediction: each level predicted with the model's
# prefill and decode times scaled by what validate's one-client probes
# beside it measured (c = 1 left out). The server's drift since calibration
# is then out of the way, but the scale factors carry the probes' own noise
# (3 requests each): the run-to-run reference is the larger of the repeat's
# difference and validate's probe_change_pct, the median change between
# consecutive probes (TTFT's for TTFT, TPOT's for TPOT, the larger for E2E),
# and the model's own spread, as in the plain bound (the adjusted replay has
# the same replications; one CI run's TPOT central came out 13.2% against a
# limit of 15.7% from a quiet repeat of 3.5%, with the spread at 6.6%).
# What is left beyond that is the model's error about load.
def probe_noise(change, q):
    if q == "e2e":
        return max(probe_noise(change, "ttft"), probe_noise(change, "tpot"))
    return change[q] if change[q] is not None else float("nan")

sp = cmp.get("server_speed")
if not sp:
    fail.append("validate wrote no server_speed (speed probes)")
else:
    st = sp["adjusted"]["summary"]
    print("probes (TTFT/TPOT vs the model): %s" % " ".join("%+.0f/%+.0f%%" % (p["ttft_pct"] or 0, p["tpot_pct"] or 0) for p in sp["probes"]))
    print("speed-adjusted, %d levels:" % st["levels"])
    for q in quant:
        for cls, stats in classes.items():
            e = st[q][cls + "_pct"]
            r_rep = run_to_run(second, q, stats)
            r_probe = probe_noise(sp["probe_change_pct"], q)
            r_mod = model_spread(cmp, q, stats)
            r = bound(r_rep, r_probe, r_mod)
            limit = 2 * r + floor[cls]
            ok = e is not None and e <= limit
            print("  %-5s %-8s %5.1f%% (repeat %.1f%%, probes %.1f%%, model sd %.1f%%, limit %.1f%%) %s" % (q.upper(), cls, e if e is not None else float("nan"), r_rep, r_probe, r_mod, limit, "ok" if ok else "FAIL"))
            if not ok:
                fail.append("%s %s speed-adjusted: %.1f%% > limit %.1f%%" % (q, cls, e if e is not None else float("nan"), limit))
# Repeatability of calibration: a second `calibrate --url` minutes after the
# first predicts the same requests (validate --second-model); the two
# predictions may differ by no more than two measurements of the same load
# do (the same bound as the prediction's: 2 x the repeat + the floor).
if sys.argv[5] != "2" and rp is None:
    fail.append("validate wrote no repeatability (--second-model model2.json)")
# The server's own speed can move between the two calibrations too: each
# calibration's prompt sweep at one client, its concurrency sweep and its
# pinned decode passes (cal/ and cal2/, the same lengths and loads) measured
# it. The median |change| of TTFT and TPOT p50 over each is the drift no
# calibration can remove; the largest of the three counts (the batched steps
# moved by up to 30% while one client's moved by 5%, and the decode table is
# fitted from the pinned passes). E2E: the larger of TTFT's and TPOT's.
def same_load_drift(pattern, q):
    rr = []
    for f in sorted(glob.glob("cal/" + pattern)):
        g = "cal2/" + os.path.basename(f)
        if not os.path.exists(g):
            continue
        la = {key(l): l for l in json.load(open(f))["levels"]}
        for l in json.load(open(g))["levels"]:
            o = la.get(key(l))
            a = o and o[q + "_ms"].get("p50")
            b = l[q + "_ms"].get("p50")
            if a and b:
                rr.append(abs(b - a) / a * 100)
    return median(rr)

def cal_drift(q):
    if q == "e2e":
        return max(cal_drift("ttft"), cal_drift("tpot"))
    return bound(same_load_drift("prompt-*.json", q), same_load_drift("sweep.json", q),
                 same_load_drift("decode-pinned-*.json", q))

if rp is not None:
    print("calibration to calibration, median |B - A| / A over all levels:")
    for q in quant:
        for cls, stats in classes.items():
            d = rp["summary"][q][cls + "_pct"]
            r_rep = run_to_run(second, q, stats)
            r_drift = cal_drift(q)
            r = bound(r_rep, r_drift)
            limit = 2 * r + floor[cls]
            ok = d is not None and d <= limit
            print("  %-5s %-8s %5.1f%% (repeat %.1f%%, drift between the calibrations %.1f%%, limit %.1f%%) %s" % (q.upper(), cls, d if d is not None else float("nan"), r_rep, r_drift, limit, "ok" if ok else "FAIL"))
            if not ok:
                fail.append("%s %s calibration to calibration: %.1f%% > limit %.1f%%" % (q, cls, d if d is not None else float("nan"), limit))
knee = cmp["summary"]["knee_concurrency"]
print("knee (closed loop): measured %s, predicted %s" % (knee["measured"], knee["predicted"]))
if knee["match"] is not True:
    fail.append("knee: measured at %s, predicted at %s" % (knee["measured"], knee["predicted"]))
if fail:
    print("live_validate: FAIL\n  " + "\n  ".join(fail))
    sys.exit(1)
print("live_validate: PASS")
PY
