#!/usr/bin/env bash
# live_fleet.sh — a fleet of two real llama-servers without a proxy,
# predicted from one replica's calibration (suite live).
#
#   live_fleet.sh SERVEBENCH SBSIM LLAMA_SH
#
# 1. Start two llama-servers, 1 slot and 1 thread each (target/llama.sh;
#    stopped on exit).
# 2. Calibrate ONE of them alone: `servebench calibrate --url A --slots 1`
#    (its own plan).
# 3. Predict the fleet before measuring it: `sbsim --replicas 2 --route R`
#    at open-loop rates of 35% and 70% of the fleet's predicted capacity,
#    for R = round-robin and least-outstanding.
# 4. Measure the same: `servebench run --url A --url B --route R` at those
#    rates (128 prompt / 32 output tokens), twice per route with the same
#    seed, so the same arrivals and lengths, and --no-cache-prompt, so the
#    server prefills every prompt afresh both times (the repeat: how far two
#    runs of the same requests differ by the servers' own noise).
# 5. Probe both replicas at once just before a route's runs and just after
#    them (one client each, 3 requests): their speed as a share of the
#    model's, TTFT for the prompt-side times and TPOT for the decode steps,
#    the mean of the four. That is the servers' drift since calibrating,
#    which no model can know (on this VM one client's speed moves 10-20%
#    within minutes), and the two servers' sharing of two cores with the
#    client, which the fleet model leaves out (its replicas are independent
#    machines).
# 6. Replay each measured run through the model server by server (`servebench
#    validate --measured`: each replica's requests at their measured send
#    times on a server of the model's), once as calibrated and once with the
#    model's times scaled by the probes (`--speed-factors`), and assert, per
#    quantity (TTFT, E2E) and class (mean/p50, p90/p99), the two bounds
#    validate-live uses:
#        median |replay error|         <= 2 x max(repeat, speed, model sd) + floor
#        the same at the probes' speed <= 2 x max(repeat, probes apart, model sd) + floor
#    where repeat is the median difference of the two runs; speed the
#    median |plain / scaled - 1| of the two replays' predictions, the error
#    an exact model makes when the servers ran at the probes' speed, carried
#    through the run's own queueing (near saturation a few percent of speed
#    become tens of percent of TTFT: a fresh-clone run had probes 5-14% slow
#    and least-outstanding's replay 17-23% below the measurement; in another
#    run it was 16-26% below, and 2-10% off when scaled); probes apart the
#    four probes' (largest - smallest) / mean, the noise of the scale
#    factors (the replicas' difference and the drift over the runs: one run
#    had both replicas' probes 18% fast, 3% apart, before runs that went at
#    the model's speed); and model sd the replay's own spread for a run of
#    this size (its replications' sd / mean, live_bounds.model_spread), what
#    an exact model errs by.
#    With floors of 5% (mean/p50) and 10% (p90/p99): the repeat has the
#    same arrivals and routes (round-robin) as the run, so what differs is
#    what a replay cannot know, and an exact model's error would be of the
#    size of one run's noise (the difference of two runs has 1.4x its sd).
#    The same bound holds the routed comparison (the measured arrivals,
#    not their measured servers, through the SIMULATED router of the run's
#    route, `validate`'s "routed" block): it also tests the router model —
#    least-outstanding's choices depend on the servers' state.
#    Also asserted: round-robin's records alternate 0, 1, 0, 1 in send order
#    and every request of a level went to one of the two servers.
# 7. Report (not asserted) the forward prediction of step 3 against the
#    measurement: that comparison also carries the luck of 24 arrivals.
# Exit 0 pass, 1 fail. About 4-5 minutes on a 2-core machine.
set -euo pipefail

usage="usage: live_fleet.sh SERVEBENCH SBSIM LLAMA_SH"
SB=${1:?$usage}
SIM=${2:?$usage}
LLAMA=${3:?$usage}
SB=$(cd "$(dirname "$SB")" && pwd)/$(basename "$SB")
SIM=$(cd "$(dirname "$SIM")" && pwd)/$(basename "$SIM")
LLAMA=$(cd "$(dirname "$LLAMA")" && pwd)/$(basename "$LLAMA")
PY=${SERVEBENCH_PYTHON:-python3}
# the bounds' shared terms (live_bounds.py beside this script)
export PYTHONPATH="$(cd "$(dirname "$0")" && pwd)${PYTHONPATH:+:$PYTHONPATH}"
N=${SERVEBENCH_FLEET_N:-24}

work=$(mktemp -d "${TMPDIR:-/tmp}/sb-live-fleet.XXXXXX")
pidfiles=()
cleanup() {
  for p in "${pidfiles[@]}"; do "$LLAMA" stop "$p" >/dev/null 2>&1 || true; done
  if [[ -n "${SERVEBENCH_LIVE_KEEP:-}" ]]; then
    mkdir -p "$SERVEBENCH_LIVE_KEEP" && cp "$work"/*.json "$SERVEBENCH_LIVE_KEEP"/ 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

urls=()
for k in a b; do
  export SERVEBENCH_RUN_DIR="$work/srv-$k"
  if ! start_out=$("$LLAMA" start --np 1 2>"$work/start-$k.log"); then
    echo "live_fleet: llama-server $k did not start:"; tail -20 "$work/start-$k.log"
    exit 1
  fi
  eval "$start_out"   # URL PID PIDFILE LOG ...
  pidfiles+=("$PIDFILE")
  urls+=("$URL")
  echo "llama-server $k at $URL (pid $PID)"
done
cd "$work"

echo "== calibrate --url (replica a alone, 1 slot)"
"$SB" calibrate --url "${urls[0]}" --model live --slots 1 -o model.json \
  | grep -E '^(server time|slots|  decode_ms)' || true

lens=(--input-len 128 --output-len 32)
"$SIM" --model-file model.json --no-uncertainty --replicas 2 --rate 1 "${lens[@]}" \
  --requests 50 --seed 7 --json cap.json >/dev/null
rates=$("$PY" -c 'import json,sys; c=json.load(open(sys.argv[1]))["simulation"]["capacity_req_s"]; print("%.2f,%.2f" % (0.35*c, 0.7*c))' cap.json)
echo "fleet capacity predicted: $("$PY" -c 'import json; print("%.2f" % json.load(open("cap.json"))["simulation"]["capacity_req_s"])') req/s; rates $rates"

# one client's prediction, against which each replica's speed is probed
"$SIM" --model-file model.json --no-uncertainty --concurrency 1 "${lens[@]}" \
  --requests 200 --warmup 0 --seed 9 --json one.json >/dev/null

# probe_both ROUTE WHEN: one client on each replica at once, 3 requests
# (probe-ROUTE-I-WHEN.json): each one's speed while the other also serves,
# since on this machine the two servers share two cores with the client
# (the model, calibrated on one replica alone, assumes they do not)
probe_both() {
  for i in 0 1; do
    "$SB" run --url "${urls[$i]}" --model live --quiet --concurrency 1 --num-requests 3 \
      "${lens[@]}" --warmup 0 --no-cache-prompt --seed $((seed + 50 + i)) \
      --out "probe-$1-$i-$2.json" &
  done
  wait || { echo "live_fleet: a probe failed"; exit 1; }
  for i in 0 1; do
    [[ -s "probe-$1-$i-$2.json" ]] || { echo "live_fleet: probe of replica $i wrote nothing"; exit 1; }
  done
}

routes=(round-robin least-outstanding)
seed=31
for r in "${routes[@]}"; do
  seed=$((seed + 1))
  echo "== $r: predict, then measure twice"
  "$SIM" --model-file model.json --no-uncertainty --replicas 2 --route "$r" --rate "$rates" \
    "${lens[@]}" --requests 2000 --warmup 0 --seed 5 --json "pred-$r.json" >/dev/null
  probe_both "$r" before
  for k in 1 2; do
    rc=0
    "$SB" run --url "${urls[0]}" --url "${urls[1]}" --route "$r" --model live --quiet \
      --mode rate --levels "$rates" "${lens[@]}" --num-requests "$N" --warmup 1 \
      --no-cache-prompt --seed "$seed" --out "run-$r-$k.json" || rc=$?
    if [[ $rc -ne 0 && $rc -ne 1 ]]; then
      echo "live_fleet: servebench run ($r) failed with status $rc"; exit 1
    fi
  done
  probe_both "$r" after
  # the replicas' speed as a share of the model's: prompts from TTFT,
  # decode from TPOT, the mean of the four probes
  factors=$("$PY" - "$r" <<'PY'
import json, sys
one = json.load(open("one.json"))["levels"][0]
def ratio(f, q):
    return json.load(open(f))["levels"][0][q + "_ms"]["p50"] / one[q + "_ms"]["p50"]
files = [f"probe-{sys.argv[1]}-{i}-{w}.json" for i in (0, 1) for w in ("before", "after")]
print("%.4f,%.4f" % tuple(sum(ratio(f, q) for f in files) / 4 for q in ("ttft", "tpot")))
PY
) || { echo "live_fleet: the probes of $r give no speed"; exit 1; }
  echo "$r: replicas at x$factors of the model's speed (prompts, decode; probes)"
  # each run replayed at the model's speed (cmp-) and at the probes' (adj-)
  for k in 1 2; do
    for v in cmp adj; do
      speed=()
      [[ $v == adj ]] && speed=(--speed-factors "$factors")
      rc=0
      "$SB" validate --model-file model.json --measured "run-$r-$k.json" --seed 3 "${speed[@]}" \
        --json "$v-$r-$k.json" --quiet >"$v-$r-$k.txt" 2>&1 || rc=$?
      if [[ $rc -ge 2 ]]; then
        echo "live_fleet: validate --measured ($r) failed with status $rc"; cat "$v-$r-$k.txt"; exit 1
      fi
    done
  done
done

"$PY" - "${routes[@]}" <<'PY'
import json, sys
from live_bounds import bound, median, model_spread
routes = sys.argv[1:]
quant = ["ttft", "e2e"]
classes = {"central": ["mean", "p50"], "tail": ["p90", "p99"]}
floor = {"central": 5.0, "tail": 10.0}

def diff(a, b, q, stats):
    out = []
    for la, lb in zip(a["levels"], b["levels"]):
        for s in stats:
            x, y = la[q + "_ms"].get(s), lb[q + "_ms"].get(s)
            if x and y:
                out.append(abs(y - x) / x * 100)
    return out

# How far the replicas' speed, probed just before a route's runs, is from
# the model's, carried through the run's own load: the replay with the
# model's times scaled by the probes (adj-) against the plain replay (cmp-),
# the median over levels of |plain / scaled - 1|. An exact model errs by
# this much when the servers ran at the probes' speed; near saturation the
# queue turns a few percent of speed into tens of percent of TTFT (a
# fresh-clone run: probes 5-14% slow, least-outstanding's burst measured
# 17-23% above the plain replay; a local run's 16-26% became 2-10% scaled).
def speed_effect(plain, adj, q, stats):
    out = []
    for lp, la in zip(plain["levels"], adj["levels"]):
        for s in stats:
            p = lp["metrics"].get(f"{q}_{s}", {}).get("predicted")
            a = la["metrics"].get(f"{q}_{s}", {}).get("predicted")
            if p and a:
                out.append(abs(p / a - 1) * 100)
    return median(out)

# How far the four probes (two replicas, before and after the runs) are
# apart: (largest - smallest) / mean, in %: the replicas' difference and the
# drift over the runs, the noise of the scale factors (validate-live's
# change between consecutive probes). E2E: the larger of TTFT's and TPOT's.
def probe_spread(r, q):
    if q == "e2e":
        return max(probe_spread(r, "ttft"), probe_spread(r, "tpot"))
    xs = [json.load(open(f"probe-{r}-{i}-{w}.json"))["levels"][0][q + "_ms"]["p50"]
          for i in (0, 1) for w in ("before", "after")]
    return (max(xs) - min(xs)) / (sum(xs) / len(xs)) * 100

def mdape(block, q, cls):
    e = block["summary"].get(f"{q}_{cls}_mdape_pct")
    return e if e is not None else float("nan")

fail = []
for r in routes:
    runs = [json.load(open(f"run-{r}-{k}.json")) for k in (1, 2)]
    cmps = [json.load(open(f"cmp-{r}-{k}.json")) for k in (1, 2)]
    adjs = [json.load(open(f"adj-{r}-{k}.json")) for k in (1, 2)]
    pred = json.load(open(f"pred-{r}.json"))
    for k, run in enumerate(runs, 1):
        reps = run["target"].get("replicas") or []
        if len(reps) != 2:
            fail.append(f"{r} run {k}: target.replicas has {len(reps)} servers, want 2")
        for lv in run["levels"]:
            recs = sorted((x for x in lv.get("requests", []) if not x.get("warmup")),
                          key=lambda x: x["t_sent_s"])
            seq = [x.get("replica") for x in recs]
            if not recs or any(i not in (0, 1) for i in seq):
                fail.append(f"{r} run {k} rate {lv['level']:.2f}: records' replicas {seq}")
            if r == "round-robin" and any(a == b for a, b in zip(seq, seq[1:])):
                fail.append(f"round-robin run {k} rate {lv['level']:.2f}: replicas {seq} "
                            "do not alternate")
            shares = [p["share"] for p in lv.get("replicas", [])]
            print(f"{r} run {k} rate {lv['level']:.2f}: shares "
                  + ", ".join("%.2f" % x for x in shares))
    for what, block in (("per-replica replay", lambda c: c),
                        ("routed replay", lambda c: c.get("routed"))):
        print(f"== {r}: {what} error (median |error| over levels) against the repeat; "
              "| the same at the probes' speed")
        for q in quant:
            for cls, stats in classes.items():
                rep = median(diff(runs[0], runs[1], q, stats))
                pd = probe_spread(r, q)
                for k in (1, 2):
                    b, ba = block(cmps[k - 1]), block(adjs[k - 1])
                    if not b or not ba:
                        fail.append(f"{r} run {k}: no {what}")
                        continue
                    msd, amsd = model_spread(b, q, stats), model_spread(ba, q, stats)
                    spd = speed_effect(b, ba, q, stats)
                    limit = 2 * bound(rep, spd, msd) + floor[cls]
                    alimit = 2 * bound(rep, pd, amsd) + floor[cls]
                    e, ea = mdape(b, q, cls), mdape(ba, q, cls)
                    ok, aok = e <= limit, ea <= alimit
                    print(f"  {q.upper():4s} {cls:7s} run {k}: {e:5.1f}% (repeat {rep:.1f}%, "
                          f"speed {spd:.1f}%, model sd {msd:.1f}%, limit {limit:.1f}%) "
                          f"{'ok' if ok else 'FAIL'} | {ea:5.1f}% (probes {pd:.1f}% apart, "
                          f"model sd {amsd:.1f}%, limit {alimit:.1f}%) {'ok' if aok else 'FAIL'}")
                    if not ok:
                        fail.append(f"{r} run {k} {q} {cls}: {what} error {e:.1f}% > {limit:.1f}%")
                    if not aok:
                        fail.append(f"{r} run {k} {q} {cls}: {what} at the probes' speed: "
                                    f"error {ea:.1f}% > {alimit:.1f}%")
    print(f"== {r}: forward prediction (sbsim --replicas 2 --route {r}) against both runs (reported)")
    for pl, l1, l2 in zip(pred["levels"], runs[0]["levels"], runs[1]["levels"]):
        for q in quant:
            for s in ("p50", "p90"):
                p = pl[q + "_ms"][s]
                m = [l[q + "_ms"].get(s) for l in (l1, l2)]
                print(f"  rate {pl['level']:.2f} {q.upper()} {s}: predicted {p:.0f} ms, measured "
                      + ", ".join("%.0f" % x for x in m if x)
                      + "  (" + ", ".join("%+.0f%%" % ((p - x) / x * 100) for x in m if x) + ")")
if fail:
    print("live_fleet: FAIL\n  " + "\n  ".join(fail))
    sys.exit(1)
print("live_fleet: PASS")
PY
