#!/bin/sh
# leave_one_out.sh [SERVEBENCH SBSIM [GUIDE-DIR]] — leave-one-out on the
# guide's data (data/guide: the embedded default model's sources): for each
# slot count S of ollama-np{1,4,8}.json, calibrate from the prompt-length
# runs and the other two slot counts (servebench calibrate FILES --slots S),
# predict the left-out run (its levels, lengths and request count) with
# sbsim's parameter draws (90% intervals, 40 replications), and print
# measured against predicted: the error of the prediction and whether the
# measurement fell inside the interval. Coverage is reported, not judged.
set -eu
SB=${1:-build/app/servebench}
SIM=${2:-build/app/sbsim}
G=${3:-data/guide}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT INT TERM
printf '%-5s %-5s %-9s %9s %9s %21s %7s %s\n' slots conc metric measured predicted \
	'90% interval' error inside
for S in 1 4 8; do
	others=""
	for o in 1 4 8; do [ "$o" = "$S" ] || others="$others $G/ollama-np$o.json"; done
	# shellcheck disable=SC2086 # the file list splits on purpose
	if ! "$SB" calibrate $others "$G"/prompt-*.json --slots "$S" -o "$T/m$S.json" \
		>"$T/cal$S.txt" 2>&1; then
		echo "slots $S: calibration failed: $(tail -1 "$T/cal$S.txt")"
		continue
	fi
	levels=$(python3 -c 'import json,sys; w=json.load(open(sys.argv[1]))["workload"]; print(",".join(str(int(x)) for x in w["levels"]), w["input_len"], w["output_len"], w["requests"])' "$G/ollama-np$S.json")
	set -- $levels
	"$SIM" --model-file "$T/m$S.json" --concurrency "$1" --input-len "$2" --output-len "$3" \
		--requests "$4" --seed 1 --json "$T/p$S.json" >/dev/null
	python3 - "$S" "$G/ollama-np$S.json" "$T/p$S.json" <<'EOP'
import json, sys
S, meas, pred = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
for lm, lp in zip(meas["levels"], pred["levels"]):
    for q in ("ttft_ms", "tpot_ms"):
        m, p = lm[q]["p50"], lp[q]["p50"]
        lo, hi = lp["pi90"][q + ".p50"]
        d = 2 if q == "tpot_ms" else 1
        print("%-5s %-5g %-9s %9.*f %9.*f %21s %+6.1f%% %s" % (
            S, lm["level"], q[:4].upper() + " p50", d, m, d, p, "[%.*f, %.*f]" % (d, lo, d, hi),
            100 * (p - m) / m, "yes" if lo <= m <= hi else "no"))
EOP
done
