#!/usr/bin/env bash
# Smoke test of the real target: start llama-server with 4 slots, stream one
# chat completion of exactly 16 tokens, check usage and timings, check
# POST /tokenize, stop the server. Exit 0 on success, 1 on failure.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PYTHON="${SERVEBENCH_PYTHON:-/usr/bin/python3}"

fail() { printf 'smoke: FAIL: %s\n' "$*" >&2; exit 1; }

own_run_dir=0
if [[ -z "${SERVEBENCH_RUN_DIR:-}" ]]; then
    SERVEBENCH_RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/servebench-smoke.XXXXXX")"
    own_run_dir=1
fi
export SERVEBENCH_RUN_DIR

PIDFILE=""
ok=0
cleanup() {
    if [[ -n "$PIDFILE" ]]; then
        "$HERE/llama.sh" stop "$PIDFILE" || true
    fi
    if ((ok && own_run_dir)); then
        rm -rf "$SERVEBENCH_RUN_DIR"
    elif ((!ok)); then
        printf 'smoke: server files kept in %s\n' "$SERVEBENCH_RUN_DIR" >&2
    fi
}
trap cleanup EXIT

start_out="$("$HERE/llama.sh" start --np 4)" || fail "llama.sh start failed"
eval "$start_out"
printf 'smoke: server %s (pid %s)\n' "$URL" "$PID" >&2

# 1. One streaming chat completion of exactly 16 tokens.
sse="$SERVEBENCH_RUN_DIR/smoke-stream.txt"
curl -sS -N --max-time 120 -o "$sse" -w '%{http_code}\n' \
    -H 'Content-Type: application/json' \
    -d '{"messages":[{"role":"user","content":"Say something."}],
         "stream":true,"max_tokens":16,"ignore_eos":true,
         "stream_options":{"include_usage":true}}' \
    "$URL/v1/chat/completions" >"$SERVEBENCH_RUN_DIR/smoke-status.txt" \
    || fail "streaming request failed"
status="$(cat "$SERVEBENCH_RUN_DIR/smoke-status.txt")"
[[ "$status" == 200 ]] || fail "streaming request: HTTP $status: $(head -c 500 "$sse")"

"$PYTHON" - "$sse" <<'PY' || fail "stream check failed (stream in $sse)"
import json, sys
usage = timings = None
chunks = done = 0
for line in open(sys.argv[1], encoding="utf-8"):
    line = line.strip()
    if not line.startswith("data:"):
        continue
    data = line[5:].strip()
    if data == "[DONE]":
        done += 1
        continue
    obj = json.loads(data)
    if "error" in obj:
        sys.exit(f"error event in stream: {obj['error']}")
    chunks += 1
    if obj.get("usage"):
        usage = obj["usage"]
    if obj.get("timings"):
        timings = obj["timings"]
if not done:
    sys.exit("no [DONE] at end of stream")
if usage is None:
    sys.exit("no usage chunk")
if usage.get("completion_tokens") != 16:
    sys.exit(f"usage.completion_tokens = {usage.get('completion_tokens')}, want 16")
if timings is None:
    sys.exit("no timings in stream")
missing = [k for k in ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms") if k not in timings]
if missing:
    sys.exit(f"timings lack {missing}")
print(f"smoke: stream ok: {chunks} chunks, completion_tokens=16, prompt_tokens="
      f"{usage.get('prompt_tokens')}, prompt {timings['prompt_ms']:.1f} ms, "
      f"decode {timings['predicted_ms']:.1f} ms for {timings['predicted_n']} tokens",
      file=sys.stderr)
PY

# 2. POST /tokenize.
tok="$(curl -sS --fail --max-time 30 -H 'Content-Type: application/json' \
    -d '{"content":"Hello world, this is a smoke test."}' "$URL/tokenize")" \
    || fail "POST /tokenize failed"
n_tok="$(printf '%s' "$tok" | "$PYTHON" -c 'import json,sys; t=json.load(sys.stdin)["tokens"]; assert all(isinstance(x,int) for x in t); print(len(t))')" \
    || fail "POST /tokenize gave no token list: $tok"
((n_tok > 0)) || fail "POST /tokenize gave 0 tokens"
printf 'smoke: tokenize ok: %s tokens\n' "$n_tok" >&2

# 3. Stop the server.
"$HERE/llama.sh" stop "$PIDFILE" || fail "llama.sh stop failed"
PIDFILE=""
if kill -0 "$PID" 2>/dev/null && [[ "$(sed -E 's/^.*\) ([A-Za-z]).*$/\1/' "/proc/$PID/stat" 2>/dev/null)" != Z ]]; then
    fail "server pid $PID still running after stop"
fi
ok=1
printf 'smoke: PASS\n' >&2
