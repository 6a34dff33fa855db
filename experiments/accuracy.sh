#!/usr/bin/env bash
# experiments/accuracy.sh — the headline accuracy figure: how well a calibrated
# model predicts runs of the real local target it was not calibrated on.
#
# Starts llama-server (llama/llama.sh: SLOTS slots, 1 thread), then REPEAT times:
#   servebench calibrate --url ... --slots SLOTS  (its own measurement survey;
#       with SECOND=1 twice, minutes apart)
#   servebench validate --model-file ... --url ... (closed loop c = 1..2S, open
#       loop at 30/50/70/90% of the predicted capacity, N requests per level,
#       fresh prompts, each level's measured arrivals and lengths replayed;
#       with SECOND=1 also through the second model: --second-model)
#   servebench run of the closed-loop levels once more (the repeat: how far
#       two measurements of the same load differ)
# and prints each run's median |error| table beside the repeat's difference
# and the calibration-to-calibration difference, over the runs the median of
# each cell, how far the server's own speed moved during each validation
# (validate's one-client probes before each level and after the last), and
# the same table for the speed-adjusted prediction. Figures depend on the
# machine and its load: run it on an idle machine (the load average is
# printed).
#
# usage: experiments/accuracy.sh [BUILD_DIR]     (default: build)
# knobs (environment): N=30 REPEAT=3 INPUT_LEN=128 OUTPUT_LEN=32 SLOTS=2
#                      CONC=LIST RATES=LIST (validate's levels; default its own)
#                      API=A (default: openai-completions at 2 slots,
#                        llama-completion otherwise: records carry the slot)
#                      SECOND=0|1 (default 1 beyond 2 slots)
#                      KEEP=DIR (keep the models, reports and comparisons)
# The guide's 4-slot experiments (4: the knee, 6: Poisson arrivals), re-predicted
# from calibrate --url:
#   SLOTS=4 N=32 INPUT_LEN=256 OUTPUT_LEN=128 CONC=1,2,4,5,6,8 REPEAT=1 experiments/accuracy.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
N=${N:-30}
REPEAT=${REPEAT:-3}
INPUT_LEN=${INPUT_LEN:-128}
OUTPUT_LEN=${OUTPUT_LEN:-32}
SLOTS=${SLOTS:-2}
if [[ $SLOTS == 2 ]]; then API=${API:-openai-completions}; SECOND=${SECOND:-0}
else API=${API:-llama-completion}; SECOND=${SECOND:-1}; fi
levels=()
[[ -n "${CONC:-}" ]] && levels+=(--concurrency "$CONC")
[[ -n "${RATES:-}" ]] && levels+=(--rates "$RATES")
repeat_conc=${CONC:-$(seq -s, 1 $((2 * SLOTS)))}
SB=$BUILD/app/servebench
if [[ ! -x "$SB" ]]; then
  echo "accuracy.sh: $SB not found; build first (meson compile -C $BUILD)" >&2
  exit 2
fi
SB=$(cd "$(dirname "$SB")" && pwd)/$(basename "$SB")

work=$(mktemp -d "${TMPDIR:-/tmp}/sb-accuracy.XXXXXX")
pidfile=""
cleanup() {
  [[ -n "$pidfile" ]] && llama/llama.sh stop "$pidfile" >/dev/null 2>&1 || true
  if [[ -n "${KEEP:-}" ]]; then
    mkdir -p "$KEEP" && cp "$work"/*.json "$work"/*.txt "$KEEP"/ 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

export SERVEBENCH_RUN_DIR="$work/srv"
start_out=$(llama/llama.sh start --np "$SLOTS" 2>"$work/start.log") || {
  echo "accuracy.sh: llama-server did not start:" >&2; tail -20 "$work/start.log" >&2; exit 1; }
eval "$start_out"
pidfile=$PIDFILE
echo "llama-server at $URL; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

for i in $(seq 1 "$REPEAT"); do
  seed=$((1000 * i))  # validate derives its other parts' seeds by hashing
  t0=$(date +%s)
  calibrate() {  # OUT
    "$SB" calibrate --url "$URL" --model live --api "$API" --slots "$SLOTS" -o "$1" --quiet \
      >"$work/cal-$i.txt" 2>&1 || { echo "calibrate failed:"; cat "$work/cal-$i.txt"; exit 1; }
  }
  calibrate "$work/model-$i.json"
  second=()
  if [[ $SECOND == 1 ]]; then
    calibrate "$work/model-$i-b.json"
    second=(--second-model "$work/model-$i-b.json")
  fi
  t1=$(date +%s)
  rc=0
  "$SB" validate --model-file "$work/model-$i.json" "${second[@]}" --url "$URL" --model live \
    --api "$API" --slots "$SLOTS" "${levels[@]}" \
    --input-len "$INPUT_LEN" --output-len "$OUTPUT_LEN" --num-requests "$N" --warmup 1 \
    --seed "$seed" --json "$work/cmp-$i.json" --out-measured "$work/meas-$i.json" \
    --quiet >"$work/val-$i.txt" 2>&1 || rc=$?
  if [[ $rc -ge 2 ]]; then
    echo "validate failed (status $rc):"; cat "$work/val-$i.txt"; exit 1
  fi
  t2=$(date +%s)
  rc=0
  "$SB" run --url "$URL" --model live --api "$API" --concurrency "$repeat_conc" \
    --input-len "$INPUT_LEN" --output-len "$OUTPUT_LEN" --num-requests "$N" --warmup 1 \
    --seed $((seed + 500)) --out "$work/rep-$i.json" >"$work/rep-$i.txt" 2>&1 || rc=$?
  if [[ $rc -ge 2 ]]; then
    echo "repeat run failed (status $rc):"; cat "$work/rep-$i.txt"; exit 1
  fi
  echo "run $i: calibrate $((t1 - t0)) s, validate $((t2 - t1)) s, repeat $(($(date +%s) - t2)) s"
done

python3 - "$work" "$REPEAT" <<'PY'
import json, sys, statistics
work, reps = sys.argv[1], int(sys.argv[2])
rows = [("TTFT", "ttft"), ("TPOT", "tpot"), ("E2E", "e2e")]
docs = [json.load(open(f"{work}/cmp-{i}.json")) for i in range(1, reps + 1)]
runs = [d["summary"] for d in docs]
def cell(s, q, c):
    return s[f"{q}_{c}_mdape_pct"]
print("median |error| over levels, per run (mean/p50 | p90/p99):")
for name, q in rows:
    print(f"  {name:5s} " + "   ".join(f"{cell(s, q, 'central'):5.1f}% | {cell(s, q, 'tail'):5.1f}%"
                                   for s in runs))
print("  throughput " + "   ".join(f"{s['mdape_throughput_pct']:5.1f}%" for s in runs))
print(f"median over {reps} runs:")
print("| median |error| over levels | mean / p50 | p90 / p99 |")
print("|---|---|---|")
for name, q in rows:
    c = statistics.median(cell(s, q, "central") for s in runs)
    t = statistics.median(cell(s, q, "tail") for s in runs)
    print(f"| {name} | {c:.1f}% | {t:.1f}% |")
print(f"| throughput | {statistics.median(s['mdape_throughput_pct'] for s in runs):.1f}% | |")
# beside the errors: how far two measurements of the same closed-loop load
# differ (the repeat run), and how far two calibrations' predictions of the
# same requests differ (--second-model)
def key(l):
    return (l["mode"], round(l["level"], 4))
def repeat_diff(i, q, stats):
    meas = {key(l): l for l in json.load(open(f"{work}/meas-{i}.json"))["levels"]}
    diffs = []
    for l in json.load(open(f"{work}/rep-{i}.json"))["levels"]:
        m = meas.get(key(l))
        for st in stats if m else ():
            a, b = m[q + "_ms"].get(st), l[q + "_ms"].get(st)
            if a and b:
                diffs.append(abs(b - a) / a * 100)
    return statistics.median(diffs) if diffs else float("nan")
classes = (("central", ("mean", "p50")), ("tail", ("p90", "p99")))
print("beside them, per run: repeat measurement's difference; calibration to calibration")
for name, q in rows:
    cells = []
    for i, d in enumerate(docs, 1):
        rep = " | ".join(f"{repeat_diff(i, q, st):5.1f}%" for _, st in classes)
        rp = d.get("repeatability")
        cal = (" | ".join(f"{rp['summary'][q][c + '_pct']:5.1f}%" for c, _ in classes)
               if rp else "  -")
        cells.append(f"{rep} ; {cal}")
    print(f"  {name:5s} " + "   ".join(cells))
for i, s in enumerate(runs, 1):
    kn = "; ".join(f"{m}: measured {s[k].get('measured')}, predicted {s[k].get('predicted')}"
                   for m, k in (("closed", "knee_concurrency"), ("open", "knee_rate")))
    print(f"run {i} knees: {kn}; forecast {s['forecast_inside']} of {s['forecast_cells']} "
          "measured values inside the 95% interval")
for i, d in enumerate(docs, 1):
    sp = d.get("server_speed")
    if not sp:
        continue
    pr = sp["probes"]
    lo = lambda k: min(p[k] for p in pr if p[k] is not None)
    hi = lambda k: max(p[k] for p in pr if p[k] is not None)
    print(f"run {i} one-client probes vs the model over {pr[-1]['t_s']:.0f} s: "
          f"TTFT {lo('ttft_pct'):+.1f}%..{hi('ttft_pct'):+.1f}%, "
          f"TPOT {lo('tpot_pct'):+.1f}%..{hi('tpot_pct'):+.1f}%")
adj = [d["server_speed"]["adjusted"]["summary"] for d in docs if d.get("server_speed")]
if adj:
    print(f"speed-adjusted prediction (step times scaled by the probes beside each level, "
          f"c = 1 left out), median |error| per run and the median over {len(adj)} runs:")
    print("| speed-adjusted | mean / p50 | p90 / p99 |")
    print("|---|---|---|")
    for name, q in rows:
        cs = [a[q]["central_pct"] for a in adj]
        ts = [a[q]["tail_pct"] for a in adj]
        print(f"| {name} | {statistics.median(cs):.1f}% ({', '.join(f'{x:.1f}' for x in cs)}) "
              f"| {statistics.median(ts):.1f}% ({', '.join(f'{x:.1f}' for x in ts)}) |")
PY
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
