#!/usr/bin/env bash
# fuzz.sh — runs every libFuzzer target (fuzz/fuzz_*.c) for a set time and
# prints what each did.
#
# Usage: fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]   (default 60, all)
#
# Installs clang and libclang-rt-14-dev (libFuzzer and the sanitizer
# runtimes) from apt when they are missing; configures ./build-fuzz with
# CC=clang -Dfuzzing=true -Db_sanitize=address,undefined, the whole tree
# instrumented for coverage (-fsanitize=fuzzer-no-link) and -Dwerror=false
# (clang warns where gcc does not, e.g. -Wformat-nonliteral on vsnprintf in a
# va_list wrapper; the gcc builds keep -Werror and the summary counts the
# warnings); builds the fuzz-* programs; runs each one on a fresh copy of its
# seed corpus (fuzz/corpus/TARGET, dictionary fuzz/dict/TARGET.dict) with
# -max_total_time, -rss_limit_mb=2048, -detect_leaks=1, -timeout=10 and UBSan
# set to stop at the first report. The working copies, logs and any artefact
# (crash-*, leak-*, timeout-*, oom-*) stay in build-fuzz/fuzz-run/TARGET/.
# FUZZ_UBSAN_SUPPRESSIONS=FILE passes a UBSan suppressions file (lines such
# as "float-cast-overflow:results.c"), to fuzz on past a known, reported bug;
# the table header then names it.
# Prints one table row per target; exits 1 when any target produced an
# artefact or a sanitizer report, 2 on a usage or setup error. Nothing in the
# repository is modified.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD

secs=${1:-60}
shift || true
if ! [[ "$secs" =~ ^[0-9]+$ ]] || ((secs < 1)); then
  echo "fuzz.sh: SECONDS_PER_TARGET must be a whole number >= 1, got '$secs'" >&2
  exit 2
fi

# --- toolchain -------------------------------------------------------------
need=()
command -v clang >/dev/null 2>&1 || need+=(clang)
dpkg-query -W -f='${Status}' libclang-rt-14-dev 2>/dev/null | grep -q "install ok installed" \
  || need+=(libclang-rt-14-dev)
if ((${#need[@]})); then
  echo "fuzz.sh: installing ${need[*]}" >&2
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  { "${sudo_cmd[@]}" apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
      "${need[@]}" >/dev/null; } || { echo "fuzz.sh: installing ${need[*]} failed" >&2; exit 2; }
fi

# --- build -----------------------------------------------------------------
bdir=build-fuzz
# -fsanitize=fuzzer-no-link instruments the libraries under test too (not
# only the target files), so libFuzzer is guided by their coverage.
opts=(-Dfuzzing=true -Db_sanitize=address,undefined -Db_lundef=false -Dlive_tests=false
      -Dwerror=false -Dc_args=-fsanitize=fuzzer-no-link)
if [[ ! -f "$bdir/build.ninja" ]]; then
  CC=clang meson setup "$bdir" "${opts[@]}" >"$root/$bdir.setup.log" 2>&1 \
    || { cat "$root/$bdir.setup.log" >&2; echo "fuzz.sh: meson setup failed" >&2; exit 2; }
  rm -f "$root/$bdir.setup.log"
else
  grep -q 'C compiler for the host machine: clang' "$bdir/meson-logs/meson-log.txt" \
    || { echo "fuzz.sh: $bdir is not a clang build; remove it and rerun" >&2; exit 2; }
  meson configure "$bdir" "${opts[@]}" >/dev/null \
    || { echo "fuzz.sh: meson configure $bdir failed" >&2; exit 2; }
fi

# The libFuzzer programs the build defines (fuzz-NAME, not fuzz-replay-NAME).
mapfile -t all < <(meson introspect "$bdir" --targets | python3 -c '
import json, sys
for t in json.load(sys.stdin):
    n = t["name"]
    if n.startswith("fuzz-") and not n.startswith("fuzz-replay-"):
        print(n[len("fuzz-"):])' | sort)
if ((${#all[@]} == 0)); then
  echo "fuzz.sh: $bdir defines no libFuzzer targets (is CC clang and -Dfuzzing=true?)" >&2
  exit 2
fi
targets=("$@")
((${#targets[@]})) || targets=("${all[@]}")
build=()
for t in "${targets[@]}"; do
  [[ " ${all[*]} " == *" $t "* ]] || { echo "fuzz.sh: unknown target '$t' (known: ${all[*]})" >&2; exit 2; }
  build+=("fuzz/fuzz-$t")
done
meson compile -C "$bdir" -j 2 "${build[@]}" >"$bdir/fuzz-build.log" 2>&1 \
  || { tail -40 "$bdir/fuzz-build.log" >&2; echo "fuzz.sh: build failed" >&2; exit 2; }
warnings=$(grep -c 'warning:' "$bdir/fuzz-build.log")

# --- run -------------------------------------------------------------------
# UBSan reports stop the run (libFuzzer then saves the input as crash-*).
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:symbolize=1
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
supp=${FUZZ_UBSAN_SUPPRESSIONS:-}
if [[ -n "$supp" ]]; then
  [[ -r "$supp" ]] || { echo "fuzz.sh: FUZZ_UBSAN_SUPPRESSIONS: cannot read '$supp'" >&2; exit 2; }
  supp=$(realpath "$supp")
  UBSAN_OPTIONS+=:suppressions=$supp
fi

rows=()
bad=0
for t in "${targets[@]}"; do
  work=$bdir/fuzz-run/$t
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts"
  cp fuzz/corpus/"$t"/* "$work/corpus/"
  seeds=$(find "$work/corpus" -type f | wc -l)
  echo "== fuzz-$t: ${secs}s on $seeds seeds" >&2
  dict=()
  [[ -f fuzz/dict/$t.dict ]] && dict=(-dict="fuzz/dict/$t.dict")
  start=$(date +%s.%N)
  "$bdir/fuzz/fuzz-$t" -max_total_time="$secs" -rss_limit_mb=2048 -detect_leaks=1 \
    -timeout=10 -print_final_stats=1 -artifact_prefix="$work/artifacts/" "${dict[@]}" \
    "$work/corpus" >"$work/log.txt" 2>&1
  rc=$?
  end=$(date +%s.%N)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log.txt" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/log.txt" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$work/log.txt" | tail -1 | awk '{print $2}')
  final=$(find "$work/corpus" -type f | wc -l)
  arts=$(find "$work/artifacts" -type f | wc -l)
  reports=$(grep -cE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|invariant broken' \
    "$work/log.txt")
  wall=$(python3 -c "print(f'{$end - $start:.1f}')")
  found=$arts
  ((found == 0 && reports > 0)) && found="$reports?"
  if ((rc != 0 || found > 0)); then
    bad=1
    [[ "$found" == 0 ]] && found="rc=$rc"
    grep -m 5 -E 'ERROR:|runtime error:|invariant broken|SUMMARY' "$work/log.txt" >&2
    echo "   artefacts and log kept in $work/" >&2
  fi
  rows+=("$(printf '%-10s %12s %9s %8s %6s %11s %8s' "$t" "${execs:-?}" "${rate:-?}" "$wall" \
    "${cov:-?}" "$seeds->$final" "$found")")
done

echo
echo "libFuzzer (clang $(clang -dumpversion), ASan+UBSan+LeakSanitizer), ${secs}s per target, $(nproc) CPU(s);" \
  "compiler warnings in this build: $warnings (a full rebuild shows them all)"
[[ -n "$supp" ]] && echo "UBSan suppressions in force: $supp ($(grep -cv '^#' "$supp") line(s))"
printf '%-10s %12s %9s %8s %6s %11s %8s\n' target executions exec/s seconds cov corpus crashes
for r in "${rows[@]}"; do echo "$r"; done
if ((bad)); then
  echo "fuzz.sh: findings (see build-fuzz/fuzz-run/TARGET/artifacts and log.txt)"
  exit 1
fi
echo "fuzz.sh: no crashes, leaks or sanitizer reports"
