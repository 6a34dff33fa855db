#!/bin/sh
# test_sbsim_fleet.sh SBSIM — sbsim's fleet flags: every bad --replicas,
# --route, --jobs, repeated --model-file and scenario "fleet" is refused
# with a message naming it and exit 2; the happy paths: --replicas 1 is the
# single server (same table and JSON), --jobs 1 and --jobs 2 write the same
# JSON, a fleet's JSON has per-replica figures whose shares add up to 1,
# a mixed fleet from two --model-file and from a scenario, fleet --plan.
set -u
SBSIM=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT INT TERM
fails=0
export SOURCE_DATE_EPOCH=1700000000 # a fixed "created" so JSON files compare

# bad, ok, has
. "$(dirname "$0")/sbsim_checks.sh"

bad "--replicas: 0" --rate 1 --replicas 0
bad "--replicas: -2" --rate 1 --replicas -2
bad "'many'" --rate 1 --replicas many
bad "--replicas: 100001" --rate 1 --replicas 100001
bad "\"fastest\"" --rate 1 --replicas 2 --route fastest
bad "round-robin, random" --rate 1 --replicas 2 --route ""
bad "one server has no router" --rate 1 --route p2c
bad "one server has no router" --rate 1 --replicas 1 --route random
bad "--jobs: 0" --rate 1 --jobs 0
bad "--jobs: 257" --rate 1 --jobs 257
bad "twice" --rate 1 --replicas 2 --replicas 3
# a model file to build fleets from: the embedded model as sbsim writes it
"$SBSIM" --rate 1 --requests 10 --json "$T/m.json" >/dev/null
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); json.dump(d['target']['model'], open(sys.argv[2],'w'))" "$T/m.json" "$T/model.json"
bad "/nonexistent/m2.json" --rate 1 --model-file "$T/model.json" --model-file /nonexistent/m2.json
bad "give --model-file once" --compare /nonexistent.json --model-file a --model-file b

printf '{ "name": "f", "fleet": [ { "count": 0 } ] }\n' >"$T/f0.json"
bad "fleet[0]" --scenario "$T/f0.json" --rate 1
printf '{ "name": "f", "fleet": [ { "slots": 2 } ] }\n' >"$T/f1.json"
bad "count: missing" --scenario "$T/f1.json" --rate 1
printf '{ "name": "f", "fleet": [ { "count": 2, "colour": 1 } ] }\n' >"$T/f2.json"
bad "colour" --scenario "$T/f2.json" --rate 1
printf '{ "name": "f", "fleet": {} }\n' >"$T/f3.json"
bad "fleet: must be an array" --scenario "$T/f3.json" --rate 1
printf '{ "name": "f", "fleet": [ { "count": 1, "model_file": "nope.json" } ] }\n' >"$T/f4.json"
bad "nope.json" --scenario "$T/f4.json" --rate 1
printf '{ "name": "f", "fleet": [ { "count": 2 }, { "count": 1, "slots": 8 } ] }\n' >"$T/f5.json"
bad "the scenario's \"fleet\" sets the counts" --scenario "$T/f5.json" --rate 1 --replicas 3

# --replicas 1 is the single server, byte for byte
ok --rate 1,2 --requests 300 --seed 5 --json "$T/a.json"
cp "$T/out" "$T/a.txt"
ok --rate 1,2 --requests 300 --seed 5 --replicas 1 --json "$T/b.json"
cmp -s "$T/a.txt" "$T/out" || { echo "FAIL: --replicas 1 changed the table"; fails=$((fails+1)); }
cmp -s "$T/a.json" "$T/b.json" || { echo "FAIL: --replicas 1 changed the JSON"; fails=$((fails+1)); }
grep -q '"replicas"' "$T/a.json" && { echo "FAIL: single-server JSON has replicas"; fails=$((fails+1)); }

# --jobs 1 and --jobs 2: the same JSON
for j in 1 2; do
	ok --rate 5,8 --replicas 3 --route p2c --requests 500 --replications 3 --jobs $j --json "$T/j$j.json"
done
cmp -s "$T/j1.json" "$T/j2.json" || { echo "FAIL: --jobs 1 and --jobs 2 differ"; fails=$((fails+1)); }
python3 - "$T/j1.json" <<'PY' || fails=$((fails+1))
import json, sys
d = json.load(open(sys.argv[1]))
assert d["target"]["fleet"]["replicas"] == 3 and d["target"]["fleet"]["route"] == "p2c"
for lv in d["levels"]:
    reps = lv["replicas"]
    assert len(reps) == 3, "3 replicas"
    assert abs(sum(r["share"] for r in reps) - 1) < 1e-9, "shares add up to 1"
    for r in reps:
        assert abs(r["l_law"] - r["l_observed"]) <= 1e-9 * r["l_law"], "Little per replica"
    assert lv["fleet"]["share_max_min"] >= 1
PY

# a mixed fleet: two model files, and a scenario's groups
ok --rate 6 --requests 600 --model-file "$T/model.json" --model-file "$T/model.json" --slots 2 --replicas 2
grep -q "fleet: 4 replicas behind a round-robin router" "$T/out" || { echo "FAIL: two --model-file x --replicas 2 is not 4 replicas"; cat "$T/out"; fails=$((fails+1)); }
ok --scenario "$T/f5.json" --rate 6 --requests 600 --route least-queued
grep -q "fleet: 3 replicas behind a least-queued router" "$T/out" || { echo "FAIL: scenario fleet"; cat "$T/out"; fails=$((fails+1)); }

# fleet --plan: replicas and the fleet's rate
ok --rate 12 --replicas 2 --route least-outstanding --slo-ttft-ms 3000 --plan --requests 300
grep -q "fewest replicas meeting the SLO at 12 req/s (least-outstanding):" "$T/out" || { echo "FAIL: fleet plan"; cat "$T/out"; fails=$((fails+1)); }

# --plan-slots: the fewest replicas for each slot count per replica; more
# slots per replica never need more replicas (the model's steps cost more
# with more sequences, but each replica serves more at once); bad input
bad "--plan-slots needs --plan" --rate 6 --replicas 2 --plan-slots 2,4 --slo-ttft-ms 1000
bad "2.5 is not a whole slot count" --rate 6 --replicas 2 --plan --plan-slots 2.5 --slo-ttft-ms 1000
bad "--plan-slots: 0" --rate 6 --replicas 2 --plan --plan-slots 0 --slo-ttft-ms 1000
ok --rate 6 --replicas 2 --route least-outstanding --plan --plan-slots 1,2,4,8 \
	--slo-ttft-ms 1000 --requests 500 --json "$T/choices.json"
grep -q "by slots per replica" "$T/out" || { echo "FAIL: plan-slots table"; cat "$T/out"; fails=$((fails+1)); }
python3 - "$T/choices.json" <<'PY' || fails=$((fails+1))
import json, sys
ch = json.load(open(sys.argv[1]))["simulation"]["plan"]["slot_choices"]
reps = [c["min_replicas"] for c in ch]
assert [c["slots"] for c in ch] == [1, 2, 4, 8], ch
assert all(r is not None and r >= 1 for r in reps), ch
assert all(a >= b for a, b in zip(reps, reps[1:])), ("more slots needed more replicas", ch)
PY

if [ $fails -ne 0 ]; then
	echo "$fails failures"; exit 1
fi
echo "all fleet CLI checks passed"
