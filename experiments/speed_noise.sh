#!/bin/bash
# speed_noise.sh [BUILD] — how the local llama-server's speed wanders: RUNS
# back-to-back one-client runs of REQUESTS requests (128 prompt / 32 output
# tokens, prompt cache off, each with fresh prompts), 2 slots, 1 thread, on
# one server per load mode of LOAD_MODES (llama.sh --load-mode; the servers
# idle side by side and the runs alternate between them, so every mode sees
# the same minutes of the machine). Prints per run the TTFT p50 (min, max),
# the p50 of every inter-token gap (ITL), the TPOT p50, each against that
# mode's median run, and the stall share (the decode time in gaps longer
# than twice the run's ITL p50, beyond that p50); then per mode and
# quantity the median and largest change: the run-to-run change the live
# tests' drift runs see, measured without any model.
set -euo pipefail
build=${1:-build}; runs=${RUNS:-12}; n=${REQUESTS:-10}; modes=(${LOAD_MODES:-none mmap})
cd "$(dirname "$0")/.."
sb=$PWD/$build/app/servebench
tmp=$(mktemp -d)
pidfiles=()
trap 'for p in "${pidfiles[@]}"; do llama/llama.sh stop "$p" >/dev/null 2>&1; done; rm -rf "$tmp"' EXIT
urls=()
for m in "${modes[@]}"; do
  eval "$(SERVEBENCH_RUN_DIR=$tmp/srv-$m llama/llama.sh start --np 2 --load-mode "$m" 2>/dev/null)"
  urls+=("$URL"); pidfiles+=("$PIDFILE")
done
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$runs"); do
  for k in "${!modes[@]}"; do
    "$sb" run --url "${urls[$k]}" --model m --quiet --concurrency 1 --num-requests "$n" --warmup 1 \
      --input-len 128 --output-len 32 --no-cache-prompt --seed $((100 + i)) \
      --out "$tmp/${modes[$k]}-$i.json" >/dev/null 2>&1 || echo "run $i (${modes[$k]}) failed"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$tmp" "$runs" "${modes[@]}" <<'PY'
import json, statistics as st, sys
tmp, runs, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
for mode in modes:
    rows = []
    for i in range(1, runs + 1):
        try:
            q = json.load(open(f"{tmp}/{mode}-{i}.json"))["levels"][0]["requests"]
        except (OSError, ValueError, KeyError, IndexError):
            continue
        tt = [r["ttft_ms"] for r in q]
        gaps = [g for r in q for g in (r.get("itl_ms") or [])[1:] if g is not None]
        tp = [(r["e2e_ms"] - r["ttft_ms"]) / max(1, len(r["itl_ms"])) for r in q if r.get("itl_ms")]
        g50 = st.median(gaps)
        stall = sum(g - g50 for g in gaps if g > 2 * g50) / sum(gaps)
        rows.append((i, st.median(tt), min(tt), max(tt), g50, st.median(tp), stall))
    if not rows:
        print(f"load mode {mode}: no run succeeded")
        continue
    mt, mi, mp = (st.median(r[k] for r in rows) for k in (1, 4, 5))
    print(f"load mode {mode}:")
    for i, t, lo, hi, g, p, s in rows:
        print("run %2d: TTFT p50 %6.1f ms (%5.1f..%5.1f) %+5.1f%%   ITL p50 %5.2f ms %+5.1f%%   "
              "TPOT p50 %5.2f ms %+5.1f%%   stalls %4.1f%%"
              % (i, t, lo, hi, 100 * (t / mt - 1), g, 100 * (g / mi - 1), p, 100 * (p / mp - 1), 100 * s))
    for name, k, m in (("TTFT", 1, mt), ("ITL", 4, mi), ("TPOT", 5, mp)):
        d = sorted(abs(100 * (r[k] / m - 1)) for r in rows)
        print("%s p50 against the median run: |change| median %.1f%%, largest %.1f%%, runs beyond 10%%: %d of %d"
              % (name, st.median(d), d[-1], sum(x > 10 for x in d), len(d)))
    s = sorted(100 * r[6] for r in rows)
    print("stall share: median %.1f%%, largest %.1f%%" % (st.median(s), s[-1]))
PY
