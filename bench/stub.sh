# bench/stub.sh — sourced by the bench scripts that drive the stub server:
#   bench_tools NAME FILE...       exits 2 unless every FILE is executable
#   bench_start_stub NAME ARGS...  starts $STUB with ARGS in the background,
#                                  waits for its port; sets STUB_PID, PORT and
#                                  TMP (a scratch folder). On exit the stub is
#                                  stopped by PID and TMP removed.
# Both processes hold one socket per stream: the open-file limit is raised.

bench_tools() {
	_name=$1
	shift
	for _f in "$@"; do
		if [ ! -x "$_f" ]; then
			echo "$_name: $_f not found; build first (meson compile -C $BUILD)" >&2
			exit 2
		fi
	done
}

bench_cleanup() {
	if [ -n "${STUB_PID:-}" ]; then
		kill "$STUB_PID" 2>/dev/null || true
		wait "$STUB_PID" 2>/dev/null || true
		STUB_PID=
	fi
	rm -rf "$TMP"
}

bench_start_stub() {
	_name=$1
	shift
	TMP=$(mktemp -d)
	STUB_PID=
	trap bench_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
	"$STUB" "$@" >"$TMP/stub.out" 2>"$TMP/stub.err" &
	STUB_PID=$!
	_i=0
	until grep -q '^PORT=' "$TMP/stub.out" 2>/dev/null; do
		_i=$((_i + 1))
		if [ $_i -gt 100 ]; then
			echo "$_name: the stub did not start" >&2
			cat "$TMP/stub.err" >&2
			exit 1
		fi
		sleep 0.05
	done
	PORT=$(sed -n 's/^PORT=//p' "$TMP/stub.out")
}
