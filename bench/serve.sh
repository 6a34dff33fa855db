#!/usr/bin/env bash
# serve.sh [BUILD] — `sbsim serve` under many concurrent streams: prints
#  - the emulator's memory: RSS idle, with IDLE open idle connections, and
#    with STREAMS streams running (per connection, per stream);
#  - the tokens' lateness: how long after the engine's step end each token
#    was written (the emulator's own histogram, GET /metrics
#    sbsim_token_lateness_seconds), p50/p99 from its buckets;
#  - the client's view: `servebench run` (kernel arrival stamps) against
#    sbsim's replay of the same requests (median |error| per request, and
#    the level's TTFT/TPOT/E2E), so lateness the client saw is counted too;
#  - the load average before and after.
# The server: the embedded model with STREAMS slots, its decode passes
# scaled by DECODE_SCALE (a pass of 1000 sequences from the default's line
# would take 1.6 s) and its release time 0 (the emulator ends a reply
# release_ms after the last token, which the client counts and sbsim does
# not: 304 ms beyond 8 slots), no noise.
# Knobs: STREAMS=1000 IDLE=1000 REQUESTS=2000 OUTPUT_LEN=64 INPUT_LEN=32
#        DECODE_SCALE=0.01
set -euo pipefail
build=${1:-build}
streams=${STREAMS:-1000}
idle=${IDLE:-1000}
requests=${REQUESTS:-2000}
out_len=${OUTPUT_LEN:-64}
in_len=${INPUT_LEN:-32}
scale=${DECODE_SCALE:-0.01}
sbsim=$build/app/sbsim
sb=$build/app/servebench
[[ -x $sbsim && -x $sb ]] || { echo "serve.sh: build $build first (ninja -C $build)" >&2; exit 2; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/sb-bench-serve.XXXXXX")
pid=""
trap '[[ -n $pid ]] && kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
ulimit -n "$(ulimit -Hn)" || true

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$pid/status"; }
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
here=$(cd "$(dirname "$0")" && pwd)
python3 -c 'import json, sys
m = json.load(open(sys.argv[1])); m["scheduler"]["release_ms"] = 0
json.dump(m, open(sys.argv[2], "w"))' "$here/../data/default-model.json" "$dir/model.json"
"$sbsim" serve --model-file "$dir/model.json" --port 0 --ready-file "$dir/ready" \
	--slots "$streams" --scale "decode=$scale" --no-noise > "$dir/serve.log" 2>&1 &
pid=$!
for _ in $(seq 100); do [[ -s $dir/ready ]] && break; sleep 0.05; done
url=$(head -1 "$dir/ready")
port=${url##*:}
base=$(rss_kb)

# Idle connections: held open by a child process while RSS is read.
python3 - "$port" "$idle" "$dir/idle-ready" <<'EOF' &
import socket, sys, time
port, n, flag = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
conns = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
open(flag, "w").close()
time.sleep(3)
EOF
idler=$!
for _ in $(seq 200); do [[ -e $dir/idle-ready ]] && break; sleep 0.05; done
sleep 0.5
with_idle=$(rss_kb)
wait $idler 2>/dev/null || true

# Streams: RSS read while the level runs.
"$sb" run --url "$url" --model sbsim --concurrency "$streams" --num-requests "$requests" \
	--input-len "$in_len" --output-len "$out_len" --seed 1 --quiet --out "$dir/run.json" &
runner=$!
peak=$base
while kill -0 $runner 2>/dev/null; do
	r=$(rss_kb); ((r > peak)) && peak=$r
	sleep 0.2
done
wait $runner || echo "servebench run exited $? (see the errors above)"
curl -s "$url/metrics" > "$dir/metrics.txt"
"$sbsim" --compare "$dir/run.json" --model-file "$dir/model.json" --slots "$streams" \
	--scale "decode=$scale" --no-noise \
	> "$dir/compare.txt"

echo "sbsim serve: $streams slots, decode x$scale, release 0, no noise; $requests requests of $in_len/$out_len tokens at concurrency $streams"
awk -v b="$base" -v i="$with_idle" -v p="$peak" -v n="$idle" -v s="$streams" 'BEGIN {
	printf "memory: RSS idle %.1f MiB; with %d idle connections %.1f MiB (%.1f KiB each); peak with %d streams %.1f MiB (%.1f KiB per stream)\n",
	       b / 1024, n, i / 1024, (i - b) / n, s, p / 1024, (p - b) / s }'
python3 - "$dir/metrics.txt" <<'EOF'
import re, sys
b = []
for line in open(sys.argv[1]):
    m = re.match(r'sbsim_token_lateness_seconds_bucket\{le="([^"]+)".*\} (\d+)', line)
    if m:
        b.append((float("inf") if m.group(1) == "+Inf" else float(m.group(1)), int(m.group(2))))
n = b[-1][1] if b else 0
def q(p):
    for le, c in b:
        if c >= p * n:
            return le
print(f"token lateness (emulator's writes after the step's end, {n} writes): "
      f"p50 <= {1000 * q(0.5):g} ms, p99 <= {1000 * q(0.99):g} ms, "
      f"share within 1 ms {sum(c for le, c in b if le == 0.001) / n:.4f}" if n else "no lateness recorded")
EOF
grep -E "per request|^TTFT ms|^TPOT ms|^E2E ms" "$dir/compare.txt" | sed 's/^/client vs replay: /'
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
