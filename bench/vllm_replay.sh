#!/bin/sh
# bench/vllm_replay.sh [BUILD] — what replaying and calibrating a large
# vLLM-class run costs: a 16,800-request open-loop run of the model the
# replay-fit test uses (tests/calibrate/vllm-truth.json) with 128 sequences
# and 6000 KV blocks, at a rate that keeps about a hundred in flight, is
# simulated with per-request records, then timed: one replay of it (sbsim
# --compare, loading the file included), and calibrate --engine vllm of its
# first N requests (default all; above 3,000 fitted requests the search
# and the bootstrap run on the file's head, the rest on all of it). Prints
# the figures; run it on an idle machine.
set -eu
B=${1:-build}
N=${2:-16800}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
python3 - "$ROOT/tests/calibrate/vllm-truth.json" "$T/m.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["server"].update(slots=128, gpu_blocks=6000)
json.dump(m, open(sys.argv[2], "w"))
PY
"$B/app/sbsim" --model-file "$T/m.json" --rate 11 --requests 16800 \
  --warmup 0 --input-len lognormal:6.2,0.8 --output-len lognormal:5.0,0.7 --seed 3 \
  --no-uncertainty --json "$T/run.json" --json-requests > "$T/sim.txt"
grep -E "^ +11 " "$T/sim.txt" | head -1
python3 - "$T/run.json" "$N" "$T/part.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
lv = d["levels"][0]
t = sorted(r["t_sent_s"] for r in lv["requests"])
span = t[-1] - t[0]
# mean in flight: the sum of E2E over the span (Little)
print(f"requests in flight on average: {sum(r['e2e_ms'] for r in lv['requests']) / 1000 / span:.0f}")
lv["requests"] = sorted(lv["requests"], key=lambda r: r["t_sent_s"])[: int(sys.argv[2])]
json.dump(d, open(sys.argv[3], "w"))
PY
secs() { python3 -c 'import sys,time; t=time.time(); import subprocess; subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); print(f"{time.time()-t:.2f}")' "$@"; }
echo "replay of 16800 requests (sbsim --compare, one replay): $(secs "$B/app/sbsim" --model-file "$T/m.json" --compare "$T/run.json" --no-noise) s"
echo "calibrate --engine vllm of the first $N: $(secs "$B/app/servebench" calibrate --engine vllm --max-num-seqs 128 --max-num-batched-tokens 1024 --gpu-blocks 6000 "$T/part.json" -o "$T/fit.json") s"
python3 -c "import json,sys; f=json.load(open(sys.argv[1]))['fit']; print('replays in the fit:', f['replays'])" "$T/fit.json"
