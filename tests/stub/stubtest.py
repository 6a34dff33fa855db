"""stubtest.py — shared helpers for the stub-server tests (python3 stdlib only).

Each test script gets the stub server's and servebench's paths as argv[1:3].
Every process a test starts is killed by PID when the test ends (also on an
exception), so no stub outlives its test.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

SKIP = 77  # meson's "skipped" exit status

_procs = []
_dirs = []


def fail(msg):
    """Prints msg and exits 1 (after the cleanup in main())."""
    raise AssertionError(msg)


def start_stub(stub, *args, timeout=10.0):
    """Starts stub_server with args; returns (Popen, port). Waits for PORT=."""
    p = subprocess.Popen([stub, *map(str, args)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    _procs.append(p)
    deadline = time.monotonic() + timeout
    line = p.stdout.readline()  # the stub prints PORT=N and flushes at once
    if not line.startswith("PORT="):
        p.kill()
        err = p.stderr.read()
        fail(f"stub {' '.join(map(str, args))} did not print PORT= "
             f"(got {line!r}, stderr {err!r})")
    if time.monotonic() > deadline:
        fail("stub took too long to start")
    return p, int(line.strip()[5:])


def stop(p, sig=signal.SIGTERM, check=True):
    """Stops a process this test started (by PID) and reaps it. With check,
    a stub that did not exit 0 fails the test (the stub exits 0 on SIGTERM;
    anything else is a crash or a sanitizer report, shown from its stderr)."""
    if p.poll() is None:
        try:
            p.send_signal(sig)
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            fail("the stub did not exit within 10 s of SIGTERM")
    if check and p.returncode != 0:
        err = p.stderr.read() if p.stderr else ""
        fail(f"the stub exited {p.returncode}: {err[-3000:]}")


def cleanup():
    for p in _procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    for d in _dirs:
        shutil.rmtree(d, ignore_errors=True)


def tmpdir():
    """A temporary directory, removed by cleanup() (SERVEBENCH_KEEP_TMP=1
    keeps it, to look at the files of a failed test)."""
    d = tempfile.mkdtemp(prefix="sbstub-")
    if os.environ.get("SERVEBENCH_KEEP_TMP") != "1":
        _dirs.append(d)
    return d


def run_client(servebench, port, out, *args, timeout=120, model="stub-model"):
    """Runs `servebench run` to completion; returns (rc, results or None,
    partial records, stderr)."""
    cmd = [servebench, "run", "--url", f"http://127.0.0.1:{port}",
           "--model", model, "--out", out, "--quiet", "--warmup", "0",
           *map(str, args)]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    _procs.append(p)
    try:
        so, se = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        so, se = p.communicate()
        fail(f"servebench run did not finish within {timeout} s: "
             f"{' '.join(cmd)}\nstderr: {se[-2000:]}")
    return p.returncode, load_results(out), load_partial(out), se


def load_results(out):
    if not os.path.exists(out):
        return None
    with open(out) as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as e:
            fail(f"{out} is not valid JSON: {e}")


def partial_record(rec):
    """The request record inside one FILE.partial.jsonl line."""
    if isinstance(rec, dict) and "id" in rec:
        return rec
    if isinstance(rec, dict) and isinstance(rec.get("request"), dict):
        return rec["request"]
    fail(f"partial record without an id: {rec!r}")


def load_partial(out):
    path = out + ".partial.jsonl"
    if not os.path.exists(path):
        return None
    recs = []
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                recs.append(partial_record(json.loads(line)))
            except json.JSONDecodeError as e:
                fail(f"{path}:{i} is not valid JSON: {e}: {line[:200]!r}")
    return recs


def all_requests(res):
    reqs = []
    for lv in res.get("levels", []):
        reqs.extend(lv.get("requests", []))
    return reqs


def err_class(req):
    e = req.get("error")
    return None if e is None else e.get("class")


def check_schema(res):
    if res is None:
        fail("no results file was written")
    if res.get("schema") != "servebench.results/1":
        fail(f"schema is {res.get('schema')!r}, not servebench.results/1")
    if not isinstance(res.get("levels"), list) or not res["levels"]:
        fail("results have no levels[]")


def quantile(xs, q):
    """Nearest-rank quantile of a non-empty list."""
    s = sorted(xs)
    k = min(len(s) - 1, max(0, int(q * len(s) + 0.999999) - 1))
    return s[k]


def main(fn):
    """Runs fn(argv) with cleanup; exit 0 pass, 1 fail, 77 skip."""
    try:
        rc = fn(sys.argv)
    except AssertionError as e:
        tb = traceback.extract_tb(sys.exc_info()[2])
        where = ", ".join(f"{os.path.basename(f.filename)}:{f.lineno}"
                          for f in tb[1:])
        print(f"FAIL: {e}\n  at {where}", file=sys.stderr)
        rc = 1
    finally:
        cleanup()
    sys.exit(rc or 0)
