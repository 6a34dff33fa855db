#!/bin/sh
# at_bound.sh SERVEBENCH SBSIM GUIDE-DIR — a term the data tested and
# dropped keeps its spread. Calibrated from the guide's four prompt lengths
# (16-2048 tokens), the P(P-1)/2 prefill term is dropped (F-test p = 0.45) and
# per_prefill_attn stays 0, but fit.covariance must carry it with the
# three-term fit's variance and its covariance with per_prefill_token
# (negative: a draw with attention has a smaller per-token cost, as that
# fit would give it), so that `sbsim --uncertainty` at prompts 4x
# the longest measured gives a wider TTFT interval than the same model
# without it (the term's spread reaches only prompts long enough to show
# it: at 8192 tokens the upper end must rise by more than 1%).
set -u
SB=$1 SBSIM=$2 G=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT INT TERM
"$SB" calibrate "$G/prompt-16.json" "$G/prompt-256.json" "$G/prompt-1024.json" \
	"$G/prompt-2048.json" "$G/ollama-np1.json" "$G/ollama-np4.json" --slots 4 \
	-o "$T/m.json" >"$T/report" 2>&1 || { echo "FAIL: calibrate"; cat "$T/report"; exit 1; }
python3 - "$T/m.json" "$T/without.json" <<'PY' || exit 1
import json, sys
m = json.load(open(sys.argv[1]))
f = m["fit"]
assert "dropped" in f["prefill"]["terms_decision"], f["prefill"]["terms_decision"]
c = f["covariance"]
i = c["params"].index("per_prefill_attn")  # ValueError: not carried
assert c["matrix"][i][i] > 0
assert c["matrix"][i][c["params"].index("per_prefill_token")] < 0, c["matrix"][i]
# the same model without the term's row and column
keep = [j for j in range(len(c["params"])) if j != i]
c["params"] = [c["params"][j] for j in keep]
c["matrix"] = [[c["matrix"][a][b] for b in keep] for a in keep]
json.dump(m, open(sys.argv[2], "w"))
PY
for v in m without; do
	"$SBSIM" --model-file "$T/$v.json" --uncertainty --replications 40 --concurrency 1 \
		--input-len 8192 --output-len 16 --requests 20 --seed 3 --json "$T/$v-u.json" \
		>/dev/null 2>"$T/err" || { echo "FAIL: sbsim $v"; cat "$T/err"; exit 1; }
done
python3 - "$T/m-u.json" "$T/without-u.json" <<'PY'
import json, sys
hi = [json.load(open(p))["levels"][0]["pi90"]["ttft_ms.p50"][1] for p in sys.argv[1:]]
print(f"TTFT p50 at 8192 tokens, 90% interval's upper end: {hi[0]:.1f} ms with the dropped "
      f"term's spread, {hi[1]:.1f} ms without")
sys.exit(0 if hi[0] > 1.01 * hi[1] else 1)
PY
