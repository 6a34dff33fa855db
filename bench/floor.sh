#!/bin/sh
# bench/floor.sh — what one streamed token costs the client's CPU, and how
# much of it is the kernel's. Against the stub with the same load, prints µs
# of client CPU per token for:
#   floor         a bare epoll + recv() reader (bench/floor.c): the kernel's
#                 loopback TCP, per-token ACKs and epoll, and nothing else;
#   floor+stamp   the same with recvmsg() carrying the kernel's arrival stamp;
#   servebench    `servebench run` (libcurl, SSE parsing, stamps, statistics,
#                 the per-request log).
#
# usage: bench/floor.sh [BUILD_DIR]      (default: build)
# knobs: STREAMS=1000 REQUESTS=2000 OUTPUT_LEN=64 TTFT_MS=50 ITL_MS=20
set -eu

BUILD=${1:-build}
STREAMS=${STREAMS:-1000}
REQUESTS=${REQUESTS:-2000}
OUTPUT_LEN=${OUTPUT_LEN:-64}
TTFT_MS=${TTFT_MS:-50}
ITL_MS=${ITL_MS:-20}

STUB=$BUILD/tests/stub/stub_server
SB=$BUILD/app/servebench
FLOOR=$BUILD/bench/floor_client
. "$(dirname "$0")/stub.sh"
bench_tools floor.sh "$STUB" "$SB" "$FLOOR"
bench_start_stub floor.sh --ttft-ms "$TTFT_MS" --itl-ms "$ITL_MS"

echo "load: $STREAMS streams, $REQUESTS requests x $OUTPUT_LEN tokens, ttft $TTFT_MS ms, itl $ITL_MS ms"
for mode in "" --stamp; do
	line=$("$FLOOR" "$PORT" "$STREAMS" "$REQUESTS" "$OUTPUT_LEN" $mode)
	printf 'floor%-8s %s\n' "${mode:++stamp}" "$line"
done
/usr/bin/time -f '%U %S' -o "$TMP/time" \
	"$SB" run --url "http://127.0.0.1:$PORT" --model stub-model --api openai-chat \
	--concurrency "$STREAMS" --num-requests "$REQUESTS" --input-len 4 \
	--output-len "$OUTPUT_LEN" --warmup 0 --seed 1 --timeout 600 \
	--out "$TMP/results.json" --quiet 2>"$TMP/client.err" || {
	echo "floor.sh: servebench run failed:" >&2
	tail -5 "$TMP/client.err" >&2
	exit 1
}
read -r u s <"$TMP/time"
python3 - "$TMP/results.json" "$u" "$s" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))
tokens = sum(r.get("output_tokens") or 0 for lv in res["levels"] for r in lv["requests"])
u, s = float(sys.argv[2]), float(sys.argv[3])
print(f"servebench    tokens={tokens} cpu_user_s={u:.3f} cpu_sys_s={s:.3f} "
      f"us_per_token={(u + s) * 1e6 / tokens:.2f}")
PY
