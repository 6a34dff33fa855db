#!/usr/bin/env bash
# Build llama.cpp's llama-server from the source bundle shipped in the npm
# package node-llama-cpp, and cache it (plus the vocab GGUF and gguf-py) outside
# the repository. Idempotent: a cached build is reused; concurrent callers are
# serialised with flock. The last line on stdout is the llama-server path;
# progress goes to stderr and the full build output to <cache>/build.log.
set -euo pipefail

PKG_VERSION="3.21.1"
PKG="node-llama-cpp@${PKG_VERSION}"
CACHE_ROOT="${SERVEBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/servebench}"
DIR="${CACHE_ROOT}/llama-${PKG_VERSION}"
SRC="${DIR}/src"
BIN="${SRC}/build/bin/llama-server"
STAMP="${DIR}/.built"
JOBS="${SERVEBENCH_BUILD_JOBS:-2}"

log() { printf 'build-llama: %s\n' "$*" >&2; }
die() { printf 'build-llama: error: %s\n' "$*" >&2; exit 1; }

is_complete() {
    [[ -f "$STAMP" && -x "$BIN" && -f "${DIR}/ggml-vocab-llama-spm.gguf" \
       && -f "${DIR}/gguf-py/gguf/__init__.py" ]]
}

# Fast path: nothing to do, no lock needed.
if is_complete; then
    printf '%s\n' "$BIN"
    exit 0
fi

missing=()
for tool in npm git cmake tar flock make c++; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if ((${#missing[@]})); then
    die "missing required tool(s): ${missing[*]} (run llama/ensure-deps.sh as root to install them)"
fi

mkdir -p "$DIR"
exec 9>"${DIR}/.lock"
if ! flock -n 9; then
    log "another build is running in ${DIR}; waiting for its lock"
    flock 9
fi

# Someone else may have finished while we waited.
if is_complete; then
    printf '%s\n' "$BIN"
    exit 0
fi

BUILD_LOG="${DIR}/build.log"
: >"$BUILD_LOG"

# 1. Source: clone the git bundle from the npm tarball (only if not cloned yet).
if [[ ! -f "${SRC}/CMakeLists.txt" ]]; then
    tmp="$(mktemp -d "${DIR}/.fetch.XXXXXX")"
    trap 'rm -rf "$tmp"' EXIT
    log "fetching ${PKG} with npm pack"
    (cd "$tmp" && npm pack "$PKG" --silent >>"$BUILD_LOG" 2>&1) \
        || die "npm pack ${PKG} failed (see ${BUILD_LOG})"
    tarball="$tmp/node-llama-cpp-${PKG_VERSION}.tgz"
    [[ -f "$tarball" ]] || die "npm pack produced no ${tarball##*/} (see ${BUILD_LOG})"
    tar -xzf "$tarball" -C "$tmp" package/llama/gitRelease.bundle \
        || die "tarball has no package/llama/gitRelease.bundle"
    log "cloning the llama.cpp bundle"
    git clone --quiet "$tmp/package/llama/gitRelease.bundle" "$tmp/src" >>"$BUILD_LOG" 2>&1 \
        || die "git clone of the bundle failed (see ${BUILD_LOG})"
    rm -rf "$SRC"
    mv "$tmp/src" "$SRC"
    rm -rf "$tmp"
    trap - EXIT
fi

# 2. Keep the vocab file and the gguf-py writer at stable paths in the cache.
if [[ ! -f "${DIR}/ggml-vocab-llama-spm.gguf" ]]; then
    cp "${SRC}/models/ggml-vocab-llama-spm.gguf" "${DIR}/.vocab.tmp"
    mv -f "${DIR}/.vocab.tmp" "${DIR}/ggml-vocab-llama-spm.gguf"
fi
if [[ ! -f "${DIR}/gguf-py/gguf/__init__.py" ]]; then
    rm -rf "${DIR}/gguf-py" "${DIR}/.gguf-py.tmp"
    cp -r "${SRC}/gguf-py" "${DIR}/.gguf-py.tmp"
    mv "${DIR}/.gguf-py.tmp" "${DIR}/gguf-py"
fi

# 3. Build only llama-server. The prebuilt web UI must stay off, or the build
#    tries to download assets.
log "configuring (cmake); output in ${BUILD_LOG}"
cmake -S "$SRC" -B "${SRC}/build" \
    -DGGML_NATIVE=ON \
    -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_OPENSSL=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_BUILD_UI=OFF \
    -DCMAKE_BUILD_TYPE=Release >>"$BUILD_LOG" 2>&1 \
    || { tail -n 30 "$BUILD_LOG" >&2; die "cmake configure failed (see ${BUILD_LOG})"; }

log "building llama-server with -j${JOBS} (several minutes on 2 cores)"
start=$SECONDS
cmake --build "${SRC}/build" -j"$JOBS" --target llama-server >>"$BUILD_LOG" 2>&1 \
    || { tail -n 30 "$BUILD_LOG" >&2; die "build failed (see ${BUILD_LOG})"; }
[[ -x "$BIN" ]] || die "build finished but ${BIN} is missing"
log "built in $((SECONDS - start)) s"

printf '%s %s\n' "$PKG" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$STAMP"
printf '%s\n' "$BIN"
