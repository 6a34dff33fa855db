#!/bin/sh
# form.sh SERVEBENCH SBSIM TRUTH-MODEL — the decode rule's own error beyond
# the measured batch sizes (calibrate/covariance.h, "form"). The truth's
# decode step grows faster than a line (decode_ms 5, 6.8, 9.0, 11.6 at 1-4
# sequences, 30 at 8): a model calibrated from closed-loop runs at 1-4
# clients on 4 slots extrapolates a line to 8 and comes out short. The
# decode table left out of its last point misses it too, by what the
# curvature makes, so fit.form.decode is written and form_decode enters
# fit.covariance; sbsim --uncertainty at 8 slots must then give a TPOT p50
# interval whose upper end holds the truth's (mean of 5 runs), which the
# same model without form_decode must not: its interval holds only the
# coefficients' noise. Then the same from a table of 3 points (the prior).
set -u
SB=$1 SBSIM=$2 TRUTH=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT INT TERM
python3 - "$TRUTH" "$T/truth.json" <<'PY' || exit 1
import json, sys
m = json.load(open(sys.argv[1]))
m["step_ms"]["decode_ms"] = {"1": 5.0, "2": 6.8, "3": 9.0, "4": 11.6, "8": 30.0}
m["step_ms"]["per_prefill_attn"] = 0
m["server"]["slots"] = 8
json.dump(m, open(sys.argv[2], "w"))
PY
sim() { "$SBSIM" --model-file "$T/truth.json" "$@" >/dev/null 2>"$T/err" || { echo "FAIL: sbsim $*"; cat "$T/err"; exit 1; }; }
sim --slots 4 --concurrency 1 --input-len 32 --output-len 32 --requests 12 --seed 1 --json "$T/p32.json" --json-requests
sim --slots 4 --concurrency 1 --input-len 512 --output-len 32 --requests 12 --seed 2 --json "$T/p512.json" --json-requests
# calibrated SLOTS DATA MODEL: calibrates MODEL from the two one-client
# files and DATA (closed loop 1..SLOTS on SLOTS slots, simulated here), then
# writes MODEL.without (form_decode left out of fit.covariance) and prints
# fit.form and form_decode's sd per step.
calibrated() {
	n=$1 data=$2 model=$3
	sim --slots "$n" --concurrency "$(seq -s, 1 "$n")" --input-len 128 --output-len 64 \
		--requests 24 --seed "$n" --json "$data" --json-requests
	"$SB" calibrate "$T/p32.json" "$T/p512.json" "$data" --slots "$n" -o "$model" >"$T/report" 2>&1 ||
		{ echo "FAIL: calibrate ($n slots)"; cat "$T/report"; exit 1; }
	python3 - "$model" "$model.without" <<'PY' || exit 1
import json, sys
m = json.load(open(sys.argv[1]))
f = m["fit"]
print("fit.form:", json.dumps(f["form"]))
c = f["covariance"]
i = c["params"].index("form_decode")
print("form_decode sd per step: %.3f" % c["matrix"][i][i] ** 0.5)
keep = [j for j in range(len(c["params"])) if j != i]
c["params"] = [c["params"][j] for j in keep]
c["matrix"] = [[c["matrix"][a][b] for b in keep] for a in keep]
json.dump(m, open(sys.argv[2], "w"))
PY
}

# beyond SLOTS MODEL: at SLOTS slots and clients, sbsim --uncertainty's TPOT
# p50 interval from MODEL must hold the truth's (mean of 5 runs), the one
# from MODEL.without must not (it holds only the coefficients' noise).
beyond() {
	n=$1 model=$2
	for m in "$model" "$model.without" "$T/truth.json"; do
		case $m in
		*truth.json) flags="--replications 5 --seed 11" ;;
		*) flags="--uncertainty --replications 40 --seed 7" ;;
		esac
		# shellcheck disable=SC2086
		"$SBSIM" --model-file "$m" --slots "$n" --concurrency "$n" --input-len 128 \
			--output-len 64 --requests 40 --json "$m.at$n" $flags >/dev/null 2>"$T/err" ||
			{ echo "FAIL: sbsim $n slots $m"; cat "$T/err"; exit 1; }
	done
	python3 - "$model.at$n" "$model.without.at$n" "$T/truth.json.at$n" "$n" <<'PY'
import json, sys
pi = [json.load(open(p))["levels"][0]["pi90"]["tpot_ms.p50"] for p in sys.argv[1:3]]
truth = json.load(open(sys.argv[3]))["levels"][0]["tpot_ms"]["p50"]
print("TPOT p50 at %s slots: truth %.2f ms; 90%% interval with form_decode [%.2f, %.2f], "
      "without [%.2f, %.2f]" % (sys.argv[4], truth, *pi[0], *pi[1]))
ok = pi[0][0] <= truth <= pi[0][1] and not (pi[1][0] <= truth <= pi[1][1])
sys.exit(0 if ok else 1)
PY
	[ $? -eq 0 ] || exit 1
}

# 4 points: the last left out checks the rule; 8 slots is beyond it.
calibrated 4 "$T/c4.json" "$T/m4.json"
python3 -c 'import json,sys; f = json.load(open(sys.argv[1]))["fit"]["form"]; assert f["decode"]["left_out_batch"] == 4, f' "$T/m4.json" || exit 1
beyond 8 "$T/m4.json"
# A table of 3 points (1-3 clients on 3 slots) cannot check its rule: the
# prior (calibrate/covariance.h, CAL_FORM_PRIOR_SD, variance 0.04) stands
# in; at 5 slots (two steps beyond, where the line from 2-3 reaches 13.4 ms
# and the truth's pass of 5 costs 16.2) its interval must hold the truth.
calibrated 3 "$T/c3.json" "$T/m3.json"
python3 -c 'import json,sys; f = json.load(open(sys.argv[1]))["fit"]; assert f["form"]["decode"]["prior_sd"] == 0.2, f["form"]; c = f["covariance"]; i = c["params"].index("form_decode"); assert abs(c["matrix"][i][i] - 0.04) < 1e-12' "$T/m3.json" || exit 1
beyond 5 "$T/m3.json"
