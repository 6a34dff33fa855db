#!/bin/sh
# bad-data.sh — `servebench calibrate` refuses bad or insufficient data with
# exit status 2 and a message naming what is missing or wrong.
# usage: bad-data.sh SERVEBENCH DIR   (DIR holds the bad/ files)
set -u
sb=$1
d=$2
out=$(mktemp "${TMPDIR:-/tmp}/sb-bad.XXXXXX")
trap 'rm -f "$out" "$out.model"' EXIT INT TERM HUP
fails=0
# expect EXPECTED-TEXT ARGS...: exit 2 and EXPECTED-TEXT in stderr
expect() {
	want=$1
	shift
	"$sb" calibrate "$@" -o "$out.model" >/dev/null 2>"$out"
	rc=$?
	if [ "$rc" -ne 2 ] || ! grep -qF -- "$want" "$out"; then
		echo "FAIL: calibrate $* -> exit $rc, wanted 2 and \"$want\"; stderr:" >&2
		cat "$out" >&2
		fails=$((fails + 1))
	fi
	if [ -e "$out.model" ]; then
		echo "FAIL: calibrate $* wrote a model despite bad data" >&2
		fails=$((fails + 1))
	fi
}
expect "one prompt length only (256 tokens)" "$d/one-point.json"
expect "all 8 requests failed" "$d/all-failed.json"
expect "HTTP 503" "$d/all-failed.json"
expect "the inputs mix models: 'qwen2.5:0.5b'" "$d/model-a.json" "$d/model-b.json"
expect "ttft_ms.p50 is missing" "$d/null-ttft.json"
expect "nan-literal.json:22" "$d/nan-literal.json"
expect "write null for a value that was not measured" "$d/nan-literal.json"
expect "ttft_ms.p50: expected a number" "$d/nan-string.json"
expect "no level at concurrency 1" "$d/no-c1.json"
expect "no results files given"
expect "--slots: 0 is outside" --slots 0 "$d/one-point.json"
expect "No such file" "$d/does-not-exist.json"
[ "$fails" -eq 0 ] || { echo "$fails failure(s)" >&2; exit 1; }
exit 0
