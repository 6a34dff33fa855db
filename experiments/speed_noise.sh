#!/bin/bash
# speed_noise.sh [BUILD] — how the local llama-server's speed wanders: RUNS
# back-to-back one-client runs of REQUESTS requests (128 prompt / 32 output
# tokens, prompt cache off, each with fresh prompts), 2 slots, 1 thread.
# Prints per run the TTFT p50 (min, max), the p50 of every inter-token gap
# (ITL) and the TPOT p50, each against the median run: the run-to-run
# change the live tests' drift runs see, measured without any model.
set -euo pipefail
build=${1:-build}; runs=${RUNS:-12}; n=${REQUESTS:-10}
cd "$(dirname "$0")/.."
sb=$PWD/$build/app/servebench
tmp=$(mktemp -d)
export SERVEBENCH_RUN_DIR=$tmp/srv
eval "$(llama/llama.sh start --np 2 2>/dev/null)"
trap 'llama/llama.sh stop "$PIDFILE" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$runs"); do
  "$sb" run --url "$URL" --model m --quiet --concurrency 1 --num-requests "$n" --warmup 1 \
    --input-len 128 --output-len 32 --no-cache-prompt --seed $((100 + i)) \
    --out "$tmp/r$i.json" >/dev/null 2>&1 || echo "run $i failed"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$tmp" "$runs" <<'PY'
import json, statistics as st, sys
tmp, runs = sys.argv[1], int(sys.argv[2])
rows = []
for i in range(1, runs + 1):
    try:
        q = json.load(open(f"{tmp}/r{i}.json"))["levels"][0]["requests"]
    except (OSError, ValueError, KeyError, IndexError):
        continue
    tt = [r["ttft_ms"] for r in q]
    gaps = [g for r in q for g in (r.get("itl_ms") or [])[1:] if g is not None]
    tp = [(r["e2e_ms"] - r["ttft_ms"]) / max(1, len(r["itl_ms"])) for r in q if r.get("itl_ms")]
    rows.append((i, st.median(tt), min(tt), max(tt), st.median(gaps), st.median(tp)))
if not rows:
    sys.exit("no run succeeded")
mt, mi, mp = (st.median(r[k] for r in rows) for k in (1, 4, 5))
for i, t, lo, hi, g, p in rows:
    print("run %2d: TTFT p50 %6.1f ms (%5.1f..%5.1f) %+5.1f%%   ITL p50 %5.2f ms %+5.1f%%   TPOT p50 %5.2f ms %+5.1f%%"
          % (i, t, lo, hi, 100 * (t / mt - 1), g, 100 * (g / mi - 1), p, 100 * (p / mp - 1)))
for name, k, m in (("TTFT", 1, mt), ("ITL", 4, mi), ("TPOT", 5, mp)):
    d = sorted(abs(100 * (r[k] / m - 1)) for r in rows)
    print("%s p50 against the median run: |change| median %.1f%%, largest %.1f%%, runs beyond 10%%: %d of %d"
          % (name, st.median(d), d[-1], sum(x > 10 for x in d), len(d)))
PY
