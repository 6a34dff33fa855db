#!/bin/sh
# bench/measure.sh — how accurately and cheaply `servebench run` measures many
# concurrent streams. Starts the stub server with a fixed schedule, runs the
# client closed-loop with STREAMS concurrent streams, and prints:
#   streams, requests, tokens,
#   timestamp error vs the stub's schedule (ms): |TTFT - ttft| and
#     |gap - itl| at p50 / p99,
#   the stub's own lateness (how late it wrote tokens against the schedule,
#     counted from the request's arrival; part of the error above) and its
#     CPU per token,
#   the client's own error: its TTFT against the stub's actual prompt_ms
#     (first token written - request arrived, both kernel-stamped) and its
#     first-to-last token span against the stub's predicted_ms, so the
#     stub's lateness drops out,
#   client CPU per token (µs, (user+sys)/tokens of the client process),
#   client peak RSS (MiB),
#   the load average before and after (figures from a busy machine mislead).
#
# usage: bench/measure.sh [BUILD_DIR]      (default: build)
# knobs (environment): STREAMS=1000 REQUESTS=2000 OUTPUT_LEN=64 INPUT_LEN=32
#                      TTFT_MS=50 ITL_MS=20
# Figures depend on the machine and its load; run it on an idle machine.
set -eu

BUILD=${1:-build}
STREAMS=${STREAMS:-1000}
REQUESTS=${REQUESTS:-2000}
OUTPUT_LEN=${OUTPUT_LEN:-64}
INPUT_LEN=${INPUT_LEN:-32}
TTFT_MS=${TTFT_MS:-50}
ITL_MS=${ITL_MS:-20}

STUB=$BUILD/tests/stub/stub_server
SB=$BUILD/app/servebench
. "$(dirname "$0")/stub.sh"
bench_tools measure.sh "$STUB" "$SB"
bench_start_stub measure.sh --ttft-ms "$TTFT_MS" --itl-ms "$ITL_MS"
LOAD_BEFORE=$(cut -d' ' -f1 /proc/loadavg)

set +e
/usr/bin/time -f '%U %S %M' -o "$TMP/time" \
	"$SB" run --url "http://127.0.0.1:$PORT" --model stub-model --api openai-chat \
	--concurrency "$STREAMS" --num-requests "$REQUESTS" \
	--input-len "$INPUT_LEN" --output-len "$OUTPUT_LEN" --warmup 0 --seed 1 \
	--timeout 600 --out "$TMP/results.json" --quiet 2>"$TMP/client.err"
RC=$?
set -e
LOAD_AFTER=$(cut -d' ' -f1 /proc/loadavg)
kill -TERM "$STUB_PID"
wait "$STUB_PID" 2>/dev/null || true
STUB_PID=
if [ $RC -ne 0 ] && [ $RC -ne 1 ]; then
	echo "measure.sh: servebench run exited $RC:" >&2
	tail -20 "$TMP/client.err" >&2
	exit 1
fi

python3 - "$TMP/results.json" "$TMP/time" "$TMP/stub.err" "$TTFT_MS" "$ITL_MS" \
	"$LOAD_BEFORE" "$LOAD_AFTER" "$(nproc)" <<'EOF'
import json, sys

res_path, time_path, stub_err, ttft, itl, load0, load1, ncpu = sys.argv[1:9]
ttft, itl = float(ttft), float(itl)
res = json.load(open(res_path))
user, sys_s, rss_kb = open(time_path).read().split()[-3:]
reqs = [r for lv in res["levels"] for r in lv["requests"]]
ok = [r for r in reqs if r.get("error") is None]
tokens = sum(r.get("output_tokens") or 0 for r in reqs)
te = sorted(abs(r["ttft_ms"] - ttft) for r in ok)
ge = sorted(abs(g - itl) for r in ok for g in (r.get("itl_ms") or []))
both = sorted(te + ge)
own_t, own_s = [], []
for r in ok:
    t = (r.get("server") or {}).get("timings") or {}
    if "prompt_ms" in t and "predicted_ms" in t:
        own_t.append(abs(r["ttft_ms"] - t["prompt_ms"]))
        own_s.append(abs(sum(r.get("itl_ms") or []) - t["predicted_ms"]))
own_t.sort()
own_s.sort()

def q(xs, p):
    if not xs:
        return float("nan")
    return xs[min(len(xs) - 1, max(0, int(p * len(xs) + 0.999999) - 1))]

stub = ""
for line in open(stub_err):
    if line.startswith("stub_server: requests="):
        f = dict(kv.split("=") for kv in line.split()[1:])
        stub = (f"stub lateness (ms):        p50 {float(f['late_ms_p50']):.3f}  "
                f"p99 {float(f['late_ms_p99']):.3f}  max {float(f['late_ms_max']):.3f}")
        stub += f"\nstub connections accepted: {f.get('connections', '?')}"
        if int(f["tokens"]):
            stub += (f"\nstub CPU per token (us):   "
                     f"{(float(f['cpu_user_s']) + float(f['cpu_sys_s'])) * 1e6 / int(f['tokens']):.2f}")
cpu_s = float(user) + float(sys_s)
print(f"streams:                   {res['levels'][0]['level']:g}")
print(f"requests:                  {len(reqs)} ({len(reqs) - len(ok)} failed)")
print(f"tokens:                    {tokens}")
print(f"schedule: ttft {ttft:g} ms, itl {itl:g} ms")
print(f"TTFT error (ms):           p50 {q(te, .5):.3f}  p99 {q(te, .99):.3f}")
print(f"inter-token error (ms):    p50 {q(ge, .5):.3f}  p99 {q(ge, .99):.3f}")
print(f"timestamp error, all (ms): p50 {q(both, .5):.3f}  p99 {q(both, .99):.3f}")
if stub:
    print(stub)
print(f"client's own TTFT error:   p50 {q(own_t, .5):.3f}  p99 {q(own_t, .99):.3f}  "
      f"(vs the stub's actual prompt_ms, {len(own_t)} requests)")
print(f"client's own span error:   p50 {q(own_s, .5):.3f}  p99 {q(own_s, .99):.3f}  "
      f"(first-to-last token vs the stub's predicted_ms)")
print(f"client CPU per token (us): {cpu_s * 1e6 / tokens:.2f}  "
      f"(user {float(user):.2f} s + sys {float(sys_s):.2f} s)" if tokens else
      "client CPU per token: no tokens")
print(f"client peak RSS (MiB):     {int(rss_kb) / 1024:.1f}")
print(f"load average:              {load0} before, {load1} after ({ncpu} CPUs)")
EOF
