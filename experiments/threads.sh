#!/bin/bash
# threads.sh SERVEBENCH [ROUNDS] — step noise and batching gain of the local
# llama-server with 1 and 2 threads, beside the client (docs/model-notes.md,
# "Server threads on this machine"). Alternates the two settings ROUNDS times
# (default 3); prints per run the TPOT, the median within-request ITL cv and
# the output rate at 1 and 4 clients on 4 slots.
set -euo pipefail
sb=$1; rounds=${2:-3}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq "$rounds"); do
  for t in 1 2; do
    eval "$(llama/llama.sh start --np 4 --ctx 10240 --threads "$t" 2>/dev/null)"
    "$sb" run --url "$URL" --model m --concurrency 1,4 --num-requests 8 --warmup 1 \
      --input-len 64 --output-len 64 --out "$tmp/thr.json" >/dev/null 2>&1 || true
    llama/llama.sh stop "$PIDFILE" >/dev/null 2>&1
    python3 - "$tmp/thr.json" "$t" <<'PY'
import json, sys, statistics as st
d = json.load(open(sys.argv[1]))
out = []
for L in d["levels"]:
    cvs = []
    for q in L["requests"]:
        g = [x for x in (q.get("itl_ms") or [])[1:] if x is not None]
        if len(g) > 5:
            cvs.append(st.pstdev(g) / st.mean(g))
    out.append("c=%g TPOT %.2f ms, within-request ITL cv %.2f, out %.1f tok/s" % (
        L["level"], L["tpot_ms"]["mean"], st.median(cvs), L["output_tok_s"]))
print("threads %s: %s" % (sys.argv[2], "; ".join(out)))
PY
  done
done
