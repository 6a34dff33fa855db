#!/usr/bin/env bash
# run.sh SBSIM — the official client libraries (the `openai` and `ollama`
# npm packages, pinned in package-lock.json) against `SBSIM serve`:
# installs them (install.sh: a cache outside the repository), starts four
# emulators on free ports (--kind ollama, --kind vllm, --kind llama.cpp,
# and one with --fail-rate 1 --fail-kind rate_limit), runs check.mjs from
# a temporary directory beside a link to the cached node_modules (ESM
# imports do not read NODE_PATH), stops the emulators, and exits with the
# check's status.
#
# Exit status: check.mjs's (0: every check passed); 77 (skipped) when npm
# or node is missing; 1 when the install fails or an emulator does not
# start.
set -uo pipefail

me=run.sh
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
sbsim=${1:?usage: run.sh SBSIM}
[[ -x $sbsim ]] || { echo "$me: $sbsim is not an executable" >&2; exit 1; }
sbsim=$(cd "$(dirname "$sbsim")" && pwd)/$(basename "$sbsim")

for tool in npm node; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "$me: SKIP: $tool not found on PATH (needed to install and run the openai and ollama client libraries)"
		exit 77
	fi
done

modules=$(bash "$here/install.sh")
rc=$?
if ((rc == 77)); then
	echo "$me: SKIP: install.sh found no npm"
	exit 77
elif ((rc != 0)) || [[ ! -d $modules ]]; then
	echo "$me: FAIL: installing the client libraries failed (install.sh exit $rc)" >&2
	exit 1
fi
echo "$me: client libraries in $modules"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sb-clients.XXXXXX")
pids=()
# shellcheck disable=SC2317 # (run by the EXIT trap)
cleanup() {
	local pid
	for pid in "${pids[@]}"; do
		kill -TERM "$pid" 2>/dev/null
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start NAME ARGS...: an emulator on a free port; its URL in url[NAME].
declare -A url
start() {
	local name=$1
	shift
	"$sbsim" serve --port 0 --no-noise --seed 1 --ready-file "$tmp/$name.url" "$@" \
		>"$tmp/$name.log" 2>&1 &
	pids+=($!)
	local pid=$! i
	for ((i = 0; i < 200; i++)); do # 20 s
		if [[ -s $tmp/$name.url ]]; then
			url[$name]=$(head -n1 "$tmp/$name.url")
			[[ ${url[$name]} == http://* ]] && return 0
		fi
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "$me: FAIL: the $name emulator ($*) exited; its output:" >&2
			cat "$tmp/$name.log" >&2
			return 1
		fi
		sleep 0.1
	done
	echo "$me: FAIL: the $name emulator ($*) wrote no URL to its ready file in 20 s" >&2
	cat "$tmp/$name.log" >&2
	return 1
}

start ollama --kind ollama || exit 1
start vllm --kind vllm || exit 1
start llama --kind llama.cpp || exit 1
start fail --kind vllm --fail-rate 1 --fail-kind rate_limit || exit 1
echo "$me: emulators: ollama ${url[ollama]}, vllm ${url[vllm]}, llama.cpp ${url[llama]}," \
	"failing ${url[fail]}"

cp "$here/check.mjs" "$tmp/check.mjs"
ln -s "$modules" "$tmp/node_modules"
(cd "$tmp" && node check.mjs \
	--openai "vllm=${url[vllm]}" --openai "llama.cpp=${url[llama]}" \
	--openai "ollama=${url[ollama]}" --ollama "ollama=${url[ollama]}" \
	--fail "fail=${url[fail]}")
rc=$?
if ((rc != 0)); then
	echo "$me: FAIL: check.mjs exit $rc; the emulators' output:" >&2
	for f in "$tmp"/*.log; do
		echo "--- ${f##*/}" >&2
		cat "$f" >&2
	done
fi
exit "$rc"
