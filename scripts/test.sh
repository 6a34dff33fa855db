#!/usr/bin/env bash
# test.sh — installs what the tests need, builds, and runs every test:
#   1. the normal build: all suites (unit, analytic, coverage, stub, fault,
#      memcheck; then emulator and live, one test at a time)
#   2. an ASan+UBSan build: the unit, analytic, stub and fault suites
#   3. valgrind over the unit suite of the normal build
# Ends with one line "tests: N passed, N failed" counting all three.
# The real llama.cpp target is built once and cached outside the repo
# (llama/build-llama.sh); SERVEBENCH_LIVE=0 skips the live suite.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD

scripts/install-deps.sh --tests || { echo "test.sh: installing dependencies failed"; echo "tests: 0 passed, 1 failed"; exit 1; }
[[ -x llama/ensure-deps.sh ]] && { llama/ensure-deps.sh || true; }

fail_setup() {
  echo "test.sh: $1"
  echo "tests: 0 passed, 1 failed"
  exit 1
}

scripts/build.sh build || fail_setup "build failed"
scripts/build.sh build-asan -Db_sanitize=address,undefined -Db_lundef=false \
  || fail_setup "sanitizer build failed"

live=${SERVEBENCH_LIVE:-1}
if [[ "$live" == 1 && -x llama/build-llama.sh ]]; then
  echo "== building (or reusing the cached) llama-server for the live tests"
  llama/build-llama.sh >/tmp/servebench-llama-build.log 2>&1 \
    || { tail -30 /tmp/servebench-llama-build.log; echo "test.sh: llama-server build failed (live tests will fail)"; }
fi

suites=(--suite unit --suite analytic --suite coverage --suite stub --suite fault --suite memcheck)
rm -f build/meson-logs/*.json build-asan/meson-logs/*.json

rc=0
echo "== normal build: ${suites[*]}"
meson test -C build --print-errorlogs --num-processes 2 "${suites[@]}" || rc=1
# Alone: the emulator's timing against the simulator's (tests/serve/emulator.sh).
echo "== normal build: emulator suite (sbsim serve against sbsim)"
meson test -C build --print-errorlogs --num-processes 1 --suite emulator --logbase emulator || rc=1
if [[ "$live" == 1 ]]; then
  # One at a time: live tests time a real server on this machine's 2 cores.
  echo "== normal build: live suite (real llama-server)"
  # Each live test runs once and its one result counts: a test too noisy to
  # decide says so (exit 77, counted as skipped), it is not run again.
  meson test -C build --print-errorlogs --num-processes 1 --suite live --logbase live || rc=1
fi
echo "== ASan/UBSan build"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  meson test -C build-asan --print-errorlogs --num-processes 2 \
  --suite unit --suite analytic --suite stub --suite fault || rc=1
echo "== valgrind (unit suite)"
if command -v valgrind >/dev/null; then
  meson test -C build --setup valgrind --print-errorlogs --num-processes 2 --suite unit \
    --logbase valgrind || rc=1
fi

# Count every test result of the three runs.
python3 - "$root" "$rc" <<'PY'
import json, sys, os
root, rc = sys.argv[1], int(sys.argv[2])
logs = ["build/meson-logs/testlog.json", "build/meson-logs/emulator.json",
        "build/meson-logs/live.json",
        "build-asan/meson-logs/testlog.json", "build/meson-logs/valgrind-valgrind.json"]

def results(log):
    p = os.path.join(root, log)
    return [json.loads(x) for x in open(p) if x.strip()] if os.path.exists(p) else []

def verdict_lines(t):
    out = ((t.get("stdout") or "") + (t.get("stderr") or "")).splitlines()
    keep = [x for x in out if "FAIL" in x][-20:] + ["  ..."] + out[-12:]
    return ["  " + x[:160] for x in keep]

def skip_reason(t):
    out = ((t.get("stdout") or "") + (t.get("stderr") or "")).splitlines()
    why = [x for x in out if "INCONCLUSIVE" in x]
    return why[-1][:300] if why else "(no reason printed)"

passed = failed = skipped = 0
skips = []
digest = []  # each failure's verdict lines, repeated at the end of the output
for l in logs:
    for t in results(l):
        r = t.get("result")
        if r in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif r == "SKIP":
            skipped += 1
            skips.append(f"  skipped: {t['name']}: {skip_reason(t)}")
        else:
            failed += 1
            digest.append(f"== failed: {t['name']} ({l}, {r})")
            digest += verdict_lines(t)
if digest:
    print("\n".join(digest))
if rc and not failed:
    failed = 1  # a meson run failed without a result in its log (it could not start)
if skips:
    print("\n".join(skips))
print(f"skipped (inconclusive or not applicable, not counted as passed): {skipped}")
print(f"tests: {passed} passed, {failed} failed")
sys.exit(1 if failed or passed == 0 else 0)
PY
count_rc=$?
[[ $rc -ne 0 || $count_rc -ne 0 ]] && exit 1
exit 0
