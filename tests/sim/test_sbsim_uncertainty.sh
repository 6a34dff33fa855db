#!/bin/sh
# test_sbsim_uncertainty.sh SBSIM — parameter draws on the command line:
# --no-uncertainty on a model with fit.covariance prints exactly what the
# same model without the covariance prints (today's point prediction, same
# seed), and writes the same levels; the default with a covariance shows
# 90% intervals (table and JSON "pi90", "simulation.uncertainty"), 40
# replications; --plan states its confidence; a fleet's second model
# (--model-file twice) is drawn from its own covariance (a wide one widens
# the interval; one without a covariance is "not drawn", and an error with
# --uncertainty); bad covariances and --uncertainty without one exit 2
# naming the file.
set -u
SBSIM=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT INT TERM
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }

model() { # model FILE FIT-JSON
	cat >"$1" <<EOM
{ "schema": "servebench.model/1", "name": "uncertainty test",
  "server": { "slots": 4, "max_queue": -1, "batch_tokens": 2048 },
  "overhead_ms": 12.0, "overhead_sd_ms": 0.8,
  "step_ms": { "decode_ms": { "1": 5.0, "2": 6.8, "4": 9.5 }, "per_kv_token": 0.0002,
               "per_prefill_token": 0.1, "per_prefill_attn": 0.00003, "prefill_base": 5.0 },
  "noise": { "kind": "lognormal", "cv": 0.05, "prefill_cv": 0.02 }$2 }
EOM
}
COV='"covariance": { "params": ["decode_ms[4]", "overhead_ms"], "matrix": [[0.04, 0.01], [0.01, 1.0]] }'
model "$T/plain.json" ""
model "$T/cov.json" ", \"fit\": { $COV }"
model "$T/notpd.json" ', "fit": { "covariance": { "params": ["decode_ms[4]", "overhead_ms"], "matrix": [[1, 2], [2, 1]] } }'
model "$T/badname.json" ', "fit": { "covariance": { "params": ["decode_ms[3]"], "matrix": [[1]] } }'
ARGS="--concurrency 1,4 --requests 100 --seed 5"

"$SBSIM" --model-file "$T/plain.json" $ARGS --json "$T/plain-out.json" >"$T/plain.txt" 2>&1 || fail "plain model"
"$SBSIM" --model-file "$T/cov.json" $ARGS --no-uncertainty --json "$T/nou-out.json" >"$T/nou.txt" 2>&1 ||
	fail "--no-uncertainty"
cmp -s "$T/plain.txt" "$T/nou.txt" || { fail "--no-uncertainty differs from the point prediction"; diff "$T/plain.txt" "$T/nou.txt"; }
python3 - "$T/plain-out.json" "$T/nou-out.json" <<'EOP' || fail "--no-uncertainty JSON levels differ"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
sys.exit(0 if a["levels"] == b["levels"] and "uncertainty" not in b["simulation"] else 1)
EOP

"$SBSIM" --model-file "$T/cov.json" $ARGS --json "$T/u-out.json" >"$T/u.txt" 2>&1 || fail "default with a covariance"
grep -q "40 replications, each with its own draw of the model's 2 uncertain coefficients" "$T/u.txt" ||
	{ fail "no draws announced"; cat "$T/u.txt"; }
grep -Eq "^ +4 +[0-9.]+ \[[0-9.]+,[0-9.]+\]" "$T/u.txt" || { fail "no intervals in the table"; cat "$T/u.txt"; }
python3 - "$T/u-out.json" <<'EOP' || fail "JSON lacks pi90 or simulation.uncertainty"
import json, sys
d = json.load(open(sys.argv[1]))
u = d["simulation"]["uncertainty"]
ok = u["draws"] == 40 and u["params"] == ["decode_ms[4]", "overhead_ms"]
for lv in d["levels"]:
    lo, hi = lv["pi90"]["ttft_ms.p50"]
    ok = ok and lo <= hi and len(lv["seeds"]) == 40
sys.exit(0 if ok else 1)
EOP
"$SBSIM" --model-file "$T/cov.json" --rate 2 --requests 200 --seed 5 --replications 10 \
	--slo-ttft-ms 500 --plan --max-slots 8 >"$T/plan.txt" 2>&1 || fail "--plan with draws"
grep -Eq "slots meet p99 TTFT <= 500 ms at 2 req/s in [0-9]+% of 10 parameter draws" "$T/plan.txt" ||
	{ fail "--plan states no confidence"; cat "$T/plan.txt"; }

# a fleet of two calibrations: the second's overhead sd 20 ms widens the
# TTFT interval far beyond the first model's own (overhead sd 1 ms)
model "$T/wide.json" ', "fit": { "covariance": { "params": ["overhead_ms"], "matrix": [[400.0]] } }'
FLEET="--concurrency 2 --requests 100 --seed 5"
"$SBSIM" --model-file "$T/cov.json" --model-file "$T/wide.json" $FLEET --json "$T/fw.json" \
	>"$T/fw.txt" 2>&1 || fail "fleet of two calibrations"
grep -q '1 x "uncertainty test" (4 slots; its own draws)' "$T/fw.txt" || { fail "fleet draws not said"; cat "$T/fw.txt"; }
"$SBSIM" --model-file "$T/cov.json" --model-file "$T/plain.json" $FLEET --json "$T/fp.json" \
	>"$T/fp.txt" 2>&1 || fail "fleet with an undrawn model"
grep -q "(4 slots; not drawn)" "$T/fp.txt" || { fail "undrawn group not said"; cat "$T/fp.txt"; }
python3 - "$T/fw.json" "$T/fp.json" <<'EOP' || fail "the fleet's second model is not drawn"
import json, sys
w, p = (json.load(open(f))["levels"][0]["pi90"]["ttft_ms.p50"] for f in sys.argv[1:3])
print("fleet TTFT p50 interval: second model drawn %s, not drawn %s" % (w, p))
# the drawn overhead moves half the requests' TTFT by +-1.645 x 20 ms
sys.exit(0 if w[1] - w[0] > 2 * (p[1] - p[0]) and w[1] - w[0] > 10 else 1)
EOP
# a scenario's groups: the model itself and a copy with other slots share
# its draw, a model file of its own has its own
cat >"$T/fleet-sc.json" <<EOS
{ "name": "fleet draws", "model_file": "cov.json",
  "workload": { "mode": "concurrency", "levels": [2], "requests": 50 },
  "fleet": [ { "count": 1 }, { "count": 1, "slots": 2 }, { "count": 1, "model_file": "wide.json" } ] }
EOS
"$SBSIM" --scenario "$T/fleet-sc.json" >"$T/fs.txt" 2>&1 || fail "scenario fleet with draws"
grep -qF '1 x "uncertainty test" (4 slots; the model'"'"'s draws), 1 x "uncertainty test" (2 slots; the model'"'"'s draws), 1 x "uncertainty test" (4 slots; its own draws)' "$T/fs.txt" ||
	{ fail "scenario fleet draws not said"; cat "$T/fs.txt"; }

bad() { # bad WANT ARGS...: exit 2, stderr has WANT
	want=$1; shift
	"$SBSIM" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	[ $rc -eq 2 ] || { fail "sbsim $* exited $rc, want 2"; return; }
	grep -qF -- "$want" "$T/err" || { fail "sbsim $*: stderr lacks '$want'"; cat "$T/err"; }
}
bad "$T/notpd.json" --model-file "$T/notpd.json" --concurrency 1
bad "positive definite" --model-file "$T/notpd.json" --concurrency 1
bad "decode_ms[3]" --model-file "$T/badname.json" --concurrency 1
bad "has no fit.covariance" --model-file "$T/plain.json" --concurrency 1 --uncertainty
bad "has no fit.covariance" --concurrency 1 --uncertainty
bad "fleet group 2's model \"uncertainty test\" has no fit.covariance" --model-file "$T/cov.json" \
	--model-file "$T/plain.json" --concurrency 1 --uncertainty
bad "not both" --model-file "$T/cov.json" --concurrency 1 --uncertainty --no-uncertainty

if [ $fails -ne 0 ]; then
	echo "$fails failure(s)"; exit 1
fi
echo "all uncertainty CLI checks passed"
