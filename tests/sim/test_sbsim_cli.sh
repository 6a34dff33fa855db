#!/bin/sh
# test_sbsim_cli.sh SBSIM — every flag and input file is validated: a clear
# message naming the bad value, exit status 2, no crash; plus the happy
# paths (table, divergence notice, JSON results, determinism).
set -u
SBSIM=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT INT TERM
fails=0

# bad, ok, has
. "$(dirname "$0")/sbsim_checks.sh"

bad "'x'" --rate 1,x
bad "--rate: -3" --rate -3
bad "--concurrency: 0" --concurrency 0
bad "'2.5'" --concurrency 2.5
bad "not both" --rate 1 --concurrency 1
bad "--rate" --slots 4
bad "--slots: 0" --rate 1 --slots 0
bad "'many'" --rate 1 --slots many
bad "--max-queue: -5" --rate 1 --max-queue -5
bad "'0'" --rate 1 --input-len 0
bad "'12.5'" --rate 1 --output-len 12.5
bad "bogus" --rate 1 --input-len bogus:3
bad "--requests: 0" --rate 1 --requests 0
bad "the limit is" --rate 1 --requests 1000000000000
bad "the limit is" --concurrency 1,2 --duration-s 1e9
bad "'abc'" --rate 1 --seed abc
bad "--replications: 0" --rate 1 --replications 0
bad "exp:-1" --rate 1 --service exp:-1
bad "weird" --rate 1 --service weird:1
bad "'banana'" --rate 1 --arrival banana
bad "--bursty: 0" --rate 1 --bursty 0
bad "--slo-ttft-ms: -1" --rate 1 --slo-ttft-ms -1
bad "--slo-percentile: 100" --rate 1 --slo-percentile 100
bad "needs an SLO" --rate 1 --plan
bad "open-loop" --concurrency 2 --slo-ttft-ms 500 --plan
bad "'--frob'" --rate 1 --frob
bad "needs a value" --rate 1 --seed
bad "twice" --rate 1 --rate 2
bad "'stray'" stray
bad "takes no value" --rate 1 --plan=yes
bad "/nonexistent/model.json" --rate 1 --model-file /nonexistent/model.json
bad "--scenario" --rate 1 --check

# malformed files: JSON errors carry line and column
printf '{\n  "name": "x",\n  "workload": { "levels": [1, }\n}\n' >"$T/syntax.json"
bad "syntax.json:3:" --scenario "$T/syntax.json"
printf '{ "name": "x", "wokload": {} }\n' >"$T/key.json"
bad "wokload" --scenario "$T/key.json"
printf '{ "server": { "slots": 0 } }\n' >"$T/slots.json"
bad "slots" --scenario "$T/slots.json"
printf '{ "workload": { "mode": "rate", "levels": [1] }, "expect": [ { "metric": "nope", "level": 1, "min": 0 } ] }\n' >"$T/met.json"
bad "nope" --scenario "$T/met.json"
printf '{ "schema": "servebench.model/1", "server": { "slots": 2 },\n  "step_ms": { "decode_ms": { "1": -4 } } }\n' >"$T/model.json"
bad "model.json" --rate 1 --model-file "$T/model.json"
printf '{ "schema": "servebench.model/1",\n  "server": { "slots": 2 } \n' >"$T/trunc.json"
bad "trunc.json:" --rate 1 --model-file "$T/trunc.json"

# happy path: the issue's example prints the table
if ! "$SBSIM" --slots 8 --rate 3 --requests 500 >"$T/out" 2>"$T/err"; then
	echo "FAIL: sbsim --slots 8 --rate 3"; cat "$T/err"; fails=$((fails+1))
fi
for col in "TTFT p50" "TTFT p99" "TPOT p50" "E2E p99" "wait" "out tok/s" "req/s" "util" "L obs" "capacity"; do
	grep -qF "$col" "$T/out" || { echo "FAIL: table lacks '$col'"; fails=$((fails+1)); }
done

# beyond capacity: bounded, and says so plainly
if ! "$SBSIM" --slots 2 --rate 20 --requests 100000 --queue-cap 2000 >"$T/out" 2>"$T/err"; then
	echo "FAIL: overload run failed"; cat "$T/err"; fails=$((fails+1))
fi
grep -q "queue grows without bound: λ=20.000 ≥ capacity μ≈" "$T/out" ||
	{ echo "FAIL: no divergence notice"; cat "$T/out"; fails=$((fails+1)); }

# JSON results, simulated, and byte-identical for the same seed
for i in 1 2; do
	SOURCE_DATE_EPOCH=0 "$SBSIM" --concurrency 1,4 --requests 200 --replications 2 \
		--seed 5 --json "$T/r$i.json" --json-requests >/dev/null 2>"$T/err" ||
		{ echo "FAIL: --json run"; cat "$T/err"; fails=$((fails+1)); }
done
cmp -s "$T/r1.json" "$T/r2.json" || { echo "FAIL: same seed, different JSON"; fails=$((fails+1)); }
grep -q '"source": "simulated"' "$T/r1.json" || { echo "FAIL: source not simulated"; fails=$((fails+1)); }
grep -q '"schema": "servebench.results/1"' "$T/r1.json" || { echo "FAIL: schema"; fails=$((fails+1)); }
grep -q '"littles_law"' "$T/r1.json" || { echo "FAIL: no littles_law"; fails=$((fails+1)); }
grep -q '"requests": \[' "$T/r1.json" || { echo "FAIL: no request records"; fails=$((fails+1)); }
SOURCE_DATE_EPOCH=0 "$SBSIM" --concurrency 1,4 --requests 200 --replications 2 \
	--seed 6 --json "$T/r3.json" >/dev/null 2>&1
cmp -s "$T/r1.json" "$T/r3.json" && { echo "FAIL: another seed, same JSON"; fails=$((fails+1)); }

# planning answers both questions
"$SBSIM" --rate 2 --slots 4 --requests 400 --slo-ttft-ms 2000 --plan >"$T/out" 2>"$T/err" ||
	{ echo "FAIL: --plan"; cat "$T/err"; fails=$((fails+1)); }
grep -q "(a) fewest slots" "$T/out" && grep -q "(b) highest rate" "$T/out" ||
	{ echo "FAIL: plan output"; cat "$T/out"; fails=$((fails+1)); }

# --compare: the simulated run replayed through the model that made it stays
# close (the replay is the same mechanism; only noise seeds differ); through a
# model with a 2x slower decode step it does not. Flags that would change the
# workload are refused.
"$SBSIM" --compare "$T/r1.json" --replications 5 >"$T/out" 2>"$T/err" ||
	{ echo "FAIL: --compare"; cat "$T/err"; fails=$((fails+1)); }
grep -q "summary: median |error|" "$T/out" || { echo "FAIL: no compare summary"; cat "$T/out"; fails=$((fails+1)); }
grep -q "goals met" "$T/out" || { echo "FAIL: same model should meet the goals"; cat "$T/out"; fails=$((fails+1)); }
cat >"$T/slow.json" <<'JSON'
{"schema": "servebench.model/1", "server": {"slots": 4},
 "overhead_ms": 15, "step_ms": {"decode_ms": {"1": 9.8, "4": 18.2, "8": 31.4},
 "per_prefill_token": 0.095, "prefill_base": 4.9}}
JSON
"$SBSIM" --compare "$T/r1.json" --model-file "$T/slow.json" >"$T/out" 2>"$T/err" ||
	{ echo "FAIL: --compare slow model"; cat "$T/err"; fails=$((fails+1)); }
grep -q "goals missed" "$T/out" || { echo "FAIL: a 2x slower decode passed the goals"; cat "$T/out"; fails=$((fails+1)); }
# --second-model: the slow model's prediction beside the default's, TPOT far
# apart; the same model twice replays with the same seeds: no difference
"$SBSIM" --compare "$T/r1.json" --replications 5 --second-model "$T/slow.json" >"$T/out" 2>"$T/err" ||
	{ echo "FAIL: --compare --second-model"; cat "$T/err"; fails=$((fails+1)); }
grep -q "repeatability: second model $T/slow.json" "$T/out" ||
	{ echo "FAIL: no repeatability table"; cat "$T/out"; fails=$((fails+1)); }
"$SBSIM" --compare "$T/r1.json" --replications 5 --model-file "$T/slow.json" \
	--second-model "$T/slow.json" >"$T/out" 2>"$T/err" ||
	{ echo "FAIL: --compare --second-model (same)"; cat "$T/err"; fails=$((fails+1)); }
grep -Eq "^all +0\.0% +0\.0%" "$T/out" ||
	{ echo "FAIL: one model twice should not differ"; cat "$T/out"; fails=$((fails+1)); }
bad "not --rate" --compare "$T/r1.json" --rate 3
bad "goes with --compare" --rate 3 --second-model "$T/slow.json"
bad "--second-model" --compare "$T/r1.json" --second-model /nonexistent.json
bad "/nonexistent.json" --compare /nonexistent.json

# what-ifs: bad --scale and --kv-cache values are named; a model scaled x1.3
# misses the goals its unscaled self meets, and the report and the JSON say
# what changed; plain runs take them too (one client, no noise: TTFT, TPOT
# and E2E exactly x1.2; decode_batched leaves one client alone)
bad "unknown key 'bogus'" --rate 1 --scale bogus=2
bad "--scale all: 0 is not a positive factor" --rate 1 --scale all=0
bad "'all' is not KEY=F" --rate 1 --scale all
bad "key 'all' given twice" --rate 1 --scale all=1,all=2
bad "--kv-cache: unknown value 'paged'" --rate 1 --kv-cache paged
bad "--set: 'form_decode' is not NAME=V" --rate 1 --set form_decode
bad '--set: parameter "decode_ms[3]" is not a coefficient' --rate 1 --set 'decode_ms[3]=2'
bad "--set per_kv_token=-1: below its least valid value 0" --rate 1 --set per_kv_token=-1
"$SBSIM" --compare "$T/r1.json" --replications 5 --scale all=1.3 --kv-cache per-slot \
	--json "$T/wi.json" >"$T/out" 2>"$T/err" ||
	{ echo "FAIL: --compare --scale"; cat "$T/err"; fails=$((fails+1)); }
has "$T/out" "what-if: the model changed on purpose (times scaled all=1.3; KV cache per-slot)"
grep -q "goals missed" "$T/out" || { echo "FAIL: a model x1.3 passed the goals"; cat "$T/out"; fails=$((fails+1)); }
python3 - "$T/wi.json" <<'PY' || { echo "FAIL: --compare what_if JSON"; fails=$((fails+1)); }
import json, sys
w = json.load(open(sys.argv[1]))["what_if"]
assert w == {"scale": {"all": 1.3}, "set": {}, "sim_slots": None, "kv_cache": "per-slot"}, w
PY
for sc in "" all=1.2 decode_batched=2; do
	"$SBSIM" --concurrency 1 --requests 50 --no-noise --no-uncertainty --seed 3 \
		${sc:+--scale "$sc"} --json "$T/s-${sc:-none}.json" >/dev/null 2>"$T/err" ||
		{ echo "FAIL: --scale '$sc'"; cat "$T/err"; fails=$((fails+1)); }
done
python3 - "$T/s-none.json" "$T/s-all=1.2.json" "$T/s-decode_batched=2.json" <<'PY' ||
import json, sys
base, sc, db = (json.load(open(p)) for p in sys.argv[1:])
assert "what_if" not in base
assert sc["what_if"]["scale"] == {"all": 1.2}, sc["what_if"]
for q in ("ttft_ms", "tpot_ms", "e2e_ms"):
    r = sc["levels"][0][q]["p50"] / base["levels"][0][q]["p50"]
    assert abs(r - 1.2) < 1e-6, (q, r)
    assert db["levels"][0][q]["p50"] == base["levels"][0][q]["p50"], q
PY
	{ echo "FAIL: --scale in plain runs"; fails=$((fails+1)); }

# --set form_decode: passes beyond the table (the default's reaches 8, last
# spacing 4: 12 is one step) x (1 + form_decode); inside it nothing moves
for v in 0 0.5; do
	"$SBSIM" --slots 12 --concurrency 4,12 --requests 60 --no-noise --no-uncertainty --seed 3 \
		--set "form_decode=$v" --json "$T/f$v.json" >/dev/null 2>"$T/err" ||
		{ echo "FAIL: --set form_decode=$v"; cat "$T/err"; fails=$((fails+1)); }
done
python3 - "$T/f0.json" "$T/f0.5.json" <<'PY' || { echo "FAIL: --set form_decode moved the wrong levels"; fails=$((fails+1)); }
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert b["what_if"]["set"] == {"form_decode": 0.5}, b["what_if"]
assert a["levels"][0]["tpot_ms"]["p50"] == b["levels"][0]["tpot_ms"]["p50"]
r = b["levels"][1]["tpot_ms"]["p50"] / a["levels"][1]["tpot_ms"]["p50"]
assert 1.3 < r <= 1.5 + 1e-9, r   # the context cost per token is not the rule's
PY

# the extrapolation label: in the table and the JSON exactly when a level's
# passes went beyond the model's decode table (the default's reaches 8)
"$SBSIM" --slots 12 --concurrency 2,12 --requests 100 --json "$T/x.json" >"$T/out" 2>"$T/err" ||
	{ echo "FAIL: --slots 12"; cat "$T/err"; fails=$((fails+1)); }
grep -Eq "^level 12: extrapolated: passes of ([0-9]+-)?12 beyond the measured 1-8" "$T/out" ||
	{ echo "FAIL: no extrapolation note for 12 clients"; cat "$T/out"; fails=$((fails+1)); }
grep -q "^level 2: extrapolated" "$T/out" &&
	{ echo "FAIL: 2 clients marked extrapolated"; cat "$T/out"; fails=$((fails+1)); }
[ "$(grep -c '(extrapolated)$' "$T/out")" = 1 ] ||
	{ echo "FAIL: table rows marked"; cat "$T/out"; fails=$((fails+1)); }
python3 - "$T/x.json" <<'PY' || { echo "FAIL: JSON extrapolated field"; fails=$((fails+1)); }
import json, sys
lv = json.load(open(sys.argv[1]))["levels"]
assert "extrapolated" not in lv[0], lv[0].get("extrapolated")
x = lv[1]["extrapolated"]
assert x["measured"] == [1, 8] and 9 <= x["passes"][0] <= x["passes"][1] == 12, x
PY
"$SBSIM" --slots 8 --concurrency 8 --requests 100 >"$T/out" 2>"$T/err"
grep -q "extrapolated" "$T/out" &&
	{ echo "FAIL: 8 slots (within the table) marked extrapolated"; cat "$T/out"; fails=$((fails+1)); }

if [ $fails -ne 0 ]; then
	echo "$fails failure(s)"; exit 1
fi
echo "all CLI checks passed"
