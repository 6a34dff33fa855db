#!/usr/bin/env bash
# install.sh — installs the client libraries pinned in package-lock.json
# (the `openai` and `ollama` npm packages) into a cache outside the
# repository, keyed by the lock file's hash:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/servebench/npm-clients-<sha256 prefix>
# with `npm ci`, only when that directory is not there yet; prints the
# path of its node_modules on stdout (npm's own output goes to stderr).
# Idempotent, and safe to run twice at once (each installs into its own
# temporary directory, renamed into place when complete).
#
# Exit status: 0 with the path printed; 77 when npm (or node) is missing;
# 1 when the install fails.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
lock=$here/package-lock.json
me=install.sh

for tool in npm node; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "$me: $tool not found on PATH: cannot install the openai and ollama client libraries" >&2
		exit 77
	fi
done
[[ -f $lock && -f $here/package.json ]] || {
	echo "$me: $here has no package.json / package-lock.json" >&2
	exit 1
}

if command -v sha256sum >/dev/null 2>&1; then
	hash=$(sha256sum "$lock" | cut -c1-16)
else
	hash=$(node -e 'const c=require("crypto"),f=require("fs");
		process.stdout.write(c.createHash("sha256").update(f.readFileSync(process.argv[1])).digest("hex").slice(0,16))' "$lock")
fi
cache=${XDG_CACHE_HOME:-${HOME:?}/.cache}/servebench
dir=$cache/npm-clients-$hash

# Complete: renamed into place only after a successful npm ci.
complete() { [[ -f $1/node_modules/openai/package.json && -f $1/node_modules/ollama/package.json ]]; }

if complete "$dir"; then
	echo "$dir/node_modules"
	exit 0
fi

mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.npm-clients-$hash.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cp "$here/package.json" "$lock" "$tmp/"
echo "$me: installing the pinned clients into $dir (npm ci)" >&2
if ! (cd "$tmp" && npm ci --no-audit --no-fund --loglevel=error) >&2; then
	echo "$me: npm ci failed in $tmp (is the npm registry reachable? npm's messages are above)" >&2
	exit 1
fi
if ! complete "$tmp"; then
	echo "$me: npm ci succeeded but $tmp/node_modules lacks openai or ollama" >&2
	exit 1
fi

# A broken leftover (not complete) is replaced; a complete one that a
# concurrent run put there first is kept.
if [[ -e $dir ]] && ! complete "$dir"; then
	rm -rf "$dir"
fi
if ! mv -T "$tmp" "$dir" 2>/dev/null && ! complete "$dir"; then
	echo "$me: could not move $tmp to $dir" >&2
	exit 1
fi
echo "$dir/node_modules"
