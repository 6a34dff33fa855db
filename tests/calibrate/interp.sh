#!/bin/sh
# interp.sh SERVEBENCH SBSIM TRUTH-MODEL — the line between two measured
# batch sizes is a rule too (calibrate/covariance.h, "interp"). The truth's
# decode step is nearly flat from 1 to 3 sequences and steep to 4 (decode_ms
# 5.0, 5.2, 6.0, 9.5); calibrated from one client at two prompt lengths and
# 2, 4 and 6 clients on 4 slots, the model's table has batches 1, 2 and 4,
# and the line from 2 to 4 puts batch 3 at 7.35 ms, 22% above the truth
# (a fifth of the way from 5.2 to 9.5, where the line says half). The
# inner point 2 against the line from 1 to 4 misses by as much of a form
# error (fit.form.interp), so form_interp enters fit.covariance, fit.missing
# says to measure batch 3, and sbsim
# --uncertainty at 3 slots and clients must give a TPOT p50 interval that
# holds the truth's (mean of 5 runs), which the same model without
# form_interp must not (200 draws: from 40 the interval's 5% end, the
# second lowest, came out at 6.06 ms, from 200 at 5.43). A table without an
# inner point gets the prior.
set -u
SB=$1 SBSIM=$2 TRUTH=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT INT TERM
python3 - "$TRUTH" "$T/truth.json" <<'PY' || exit 1
import json, sys
m = json.load(open(sys.argv[1]))
m["step_ms"]["decode_ms"] = {"1": 5.0, "2": 5.2, "3": 6.0, "4": 9.5}
m["step_ms"]["per_prefill_attn"] = 0
json.dump(m, open(sys.argv[2], "w"))
PY
sim() { "$SBSIM" --model-file "$T/truth.json" "$@" >/dev/null 2>"$T/err" || { echo "FAIL: sbsim $*"; cat "$T/err"; exit 1; }; }
sim --slots 4 --concurrency 1 --input-len 32 --output-len 32 --requests 12 --seed 1 --json "$T/p32.json" --json-requests
sim --slots 4 --concurrency 1 --input-len 512 --output-len 32 --requests 12 --seed 2 --json "$T/p512.json" --json-requests
sim --slots 4 --concurrency 2,4,6 --input-len 128 --output-len 64 --requests 24 --seed 3 --json "$T/c.json" --json-requests
"$SB" calibrate "$T/p32.json" "$T/p512.json" "$T/c.json" --slots 4 -o "$T/m.json" >"$T/report" 2>&1 ||
	{ echo "FAIL: calibrate"; cat "$T/report"; exit 1; }
python3 - "$T/m.json" "$T/m.without.json" <<'PY' || exit 1
import json, sys
m = json.load(open(sys.argv[1]))
f = m["fit"]
print("decode_ms:", m["step_ms"]["decode_ms"], "fit.form.interp:", json.dumps(f["form"]["interp"]))
assert sorted(m["step_ms"]["decode_ms"]) == ["1", "2", "4"], m["step_ms"]["decode_ms"]
assert f["form"]["interp"]["left_out_batches"] == [2], f["form"]
assert any(s.startswith("decode_ms between batches 2 and 4") and "measure 3 sequences" in s
           for s in f["missing"]), f["missing"]
c = f["covariance"]
i = c["params"].index("form_interp")
print("form_interp sd: %.3f" % c["matrix"][i][i] ** 0.5)
keep = [j for j in range(len(c["params"])) if j != i]
c["params"] = [c["params"][j] for j in keep]
c["matrix"] = [[c["matrix"][a][b] for b in keep] for a in keep]
json.dump(m, open(sys.argv[2], "w"))
PY
for m in m m.without truth; do
	case $m in
	truth) flags="--replications 5 --seed 11" ;;
	*) flags="--uncertainty --replications 200 --seed 7" ;;
	esac
	# shellcheck disable=SC2086
	"$SBSIM" --model-file "$T/$m.json" --slots 3 --concurrency 3 --input-len 128 \
		--output-len 64 --requests 40 --json "$T/$m.at3" $flags >/dev/null 2>"$T/err" ||
		{ echo "FAIL: sbsim 3 slots $m"; cat "$T/err"; exit 1; }
done
python3 - "$T/m.at3" "$T/m.without.at3" "$T/truth.at3" <<'PY' || exit 1
import json, sys
pi = [json.load(open(p))["levels"][0]["pi90"]["tpot_ms.p50"] for p in sys.argv[1:3]]
truth = json.load(open(sys.argv[3]))["levels"][0]["tpot_ms"]["p50"]
print("TPOT p50 at 3 slots: truth %.2f ms; 90%% interval with form_interp [%.2f, %.2f], "
      "without [%.2f, %.2f]" % (truth, *pi[0], *pi[1]))
sys.exit(0 if pi[0][0] <= truth <= pi[0][1] and not (pi[1][0] <= truth <= pi[1][1]) else 1)
PY
# Batches 1 and 4 alone (one client, then 4 clients on 4 slots): no inner
# point, the prior (CAL_INTERP_PRIOR_SD 0.3, variance 0.09).
sim --slots 4 --concurrency 4 --input-len 128 --output-len 64 --requests 24 --seed 4 --json "$T/c4.json" --json-requests
"$SB" calibrate "$T/p32.json" "$T/p512.json" "$T/c4.json" --slots 4 -o "$T/m4.json" >"$T/report" 2>&1 ||
	{ echo "FAIL: calibrate (1 and 4)"; cat "$T/report"; exit 1; }
python3 - "$T/m4.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
f = m["fit"]
print("decode_ms:", m["step_ms"]["decode_ms"], "fit.form.interp:", json.dumps(f["form"].get("interp")))
assert sorted(m["step_ms"]["decode_ms"]) == ["1", "4"], m["step_ms"]["decode_ms"]
assert f["form"]["interp"]["prior_sd"] == 0.3, f["form"]
c = f["covariance"]
i = c["params"].index("form_interp")
assert abs(c["matrix"][i][i] - 0.09) < 1e-12, c["matrix"][i][i]
PY
