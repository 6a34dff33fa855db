#!/bin/sh
# trace.sh — a request trace measured and simulated alike: `servebench run
# --trace` sends a Mooncake trace (60 requests over 12 s, written here with a
# fixed seed: bursts and quiet spells, prompts of 64-768 tokens) to `sbsim
# serve` three times, and `sbsim --trace` replays the same trace through the
# emulator's own model. Each of mean TTFT, TPOT and E2E of the simulation may
# miss measurement a by 4 x the run-to-run standard deviation of the three
# measurements plus the emulator's HTTP path (the median GET /health round
# trip) and the client's mean lateness in sending; `sbsim --compare` of
# measurement a must agree with `sbsim --trace` the same way (the two replay
# the same trace). A model 20% slower (--scale all=1.2) must fail that bound
# for every figure, or the run is too noisy to decide (exit 77).
# usage: trace.sh SBSIM SERVEBENCH SRCROOT
set -eu
sbsim=$1
sb=$2
src=$3
here=$(dirname "$0")
. "$here/lib.sh"
model_without "$src/data/default-model.json" "$dir/model.json" scheduler.release_ms
python3 - "$dir/trace.jsonl" <<'PY'
import json, random, sys
rng = random.Random(11)
t, out = 0.0, open(sys.argv[1], "w")
for i in range(60):
    t += rng.expovariate(8.0 if (i // 10) % 2 == 0 else 2.0)
    n_in = rng.randint(64, 768)
    out.write(json.dumps({"timestamp": round(t * 1000, 3), "input_length": n_in,
                          "output_length": rng.randint(8, 40),
                          "hash_ids": list(range(i * 2, i * 2 + n_in // 512 + 1))}) + "\n")
PY
start_emulator "$dir/model.json" 13
measure_rtt "$dir/rtt.txt"
for rep in a b c; do
	"$sb" run --url "$url" --model sbsim --trace "$dir/trace.jsonl" --seed 5 --quiet \
		--out "$dir/meas-$rep.json"
done
"$sbsim" --model-file "$dir/model.json" --trace "$dir/trace.jsonl" --json "$dir/sim.json" \
	> "$dir/sim.txt"
"$sbsim" --model-file "$dir/model.json" --trace "$dir/trace.jsonl" --scale all=1.2 \
	--json "$dir/wrong.json" > /dev/null
"$sbsim" --model-file "$dir/model.json" --compare "$dir/meas-a.json" --json "$dir/pred.json" \
	> /dev/null
cat "$dir/sim.txt"
python3 - "$dir" <<'PY'
import json, os, statistics, sys
d = sys.argv[1]
lv = lambda f: json.load(open(os.path.join(d, f)))["levels"][0]
meas = [lv(f"meas-{r}.json") for r in "abc"]
sim, wrong, pred = lv("sim.json"), lv("wrong.json"), lv("pred.json")
rtt = 1000 * statistics.median(float(x) for x in open(os.path.join(d, "rtt.txt")))
recs = meas[0]["requests"]
late = 1000 * statistics.mean(r["t_sent_s"] - r["t_scheduled_s"] for r in recs)
bad, decided = [], True
for k in ("ttft_ms", "tpot_ms", "e2e_ms"):
    xs = [m[k]["mean"] for m in meas]
    bound = 4 * statistics.stdev(xs) + rtt + late
    m, s, w, p = xs[0], sim[k]["mean"], wrong[k]["mean"], pred[k]["mean"]
    print(f"{k}: measured {m:.1f} (runs {xs[1]:.1f}, {xs[2]:.1f}), sbsim --trace {s:.1f}, "
          f"--compare {p:.1f}, wrong {w:.1f}; bound {bound:.1f} ms")
    if abs(s - m) > bound:
        bad.append(f"{k}: sbsim --trace {s:.1f} vs measured {m:.1f}: beyond {bound:.1f}")
    if abs(p - s) > bound:
        bad.append(f"{k}: --compare {p:.1f} vs --trace {s:.1f}: beyond {bound:.1f}")
    if abs(w - m) <= bound:
        decided = False
        print(f"  the wrong model is within the bound for {k}")
for b in bad:
    print("FAIL:", b)
if bad:
    sys.exit(1)
if not decided:
    print("INCONCLUSIVE: the run is too noisy to tell a model 20% slower")
    sys.exit(77)
print("pass")
PY
