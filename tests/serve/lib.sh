# lib.sh — sourced by the emulator's shell tests: a temp dir with cleanup,
# the embedded default model with edits, an emulator started and measured.
# Needs $sbsim set; sets $dir (removed on exit), $pid and $url.

dir=$(mktemp -d "${TMPDIR:-/tmp}/sb-serve-test.XXXXXX")
pid=""
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT

# model_without SRC OUT KEY[=VALUE]...: the model SRC with each KEY (a
# dotted path) set to VALUE (default 0; the "fit" block dropped), into OUT.
model_without() {
	python3 - "$@" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
for edit in sys.argv[3:]:
    key, _, value = edit.partition("=")
    *path, last = key.split(".")
    o = m
    for p in path:
        o = o[p]
    o[last] = float(value) if value else 0
m.pop("fit", None)
json.dump(m, open(sys.argv[2], "w"))
PY
}

# start_emulator MODEL SEED: sbsim serve on a free port; $url once it listens.
start_emulator() {
	"$sbsim" serve --model-file "$1" --port 0 --ready-file "$dir/ready" --seed "$2" \
		> "$dir/serve.log" 2>&1 &
	pid=$!
	i=0
	while [ ! -s "$dir/ready" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	[ -s "$dir/ready" ] || { echo "FAIL: sbsim serve did not start"; cat "$dir/serve.log"; exit 1; }
	url=$(head -1 "$dir/ready")
	echo "emulator at $url"
}

# stop_emulator: the emulator started last, stopped (its ready file removed).
stop_emulator() {
	kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	pid=""
	rm -f "$dir/ready"
}

# The emulator's own HTTP path: 20 round trips of GET /health (s) into FILE.
measure_rtt() {
	for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
		curl -s -o /dev/null -w '%{time_total}\n' "$url/health"
	done > "$1"
}
