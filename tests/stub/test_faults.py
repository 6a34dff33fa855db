#!/usr/bin/env python3
"""Fault cases: servebench run against a stub that breaks requests the ways
real servers do. One case per invocation, so each is its own meson test.

Usage: test_faults.py STUB_SERVER SERVEBENCH CASE   (CASE from CASES below,
or "list")

For a partial fault (--fault-after A: the first A requests succeed) at
concurrency 1, the test checks: exit status 1; every request is recorded;
the A successful ones are the A sent first, with the full output; every
failed one carries the expected error class; FILE.partial.jsonl holds one
valid record per request, and the same successes as the final file.
"""
import os
import signal
import sys
import time

import stubtest as st

OUT, INP = 8, 8
SCHED = ["--ttft-ms", 5, "--itl-ms", 3]

# name: (stub flags, expected error classes, client flags, concurrency,
#        requests, successes expected)
PARTIAL = {
    "refuse-after": (["--fault", "refuse", "--fault-after", 2],
                     {"connect"}, [], 1, 5, 2),
    "reset": (["--fault", "reset", "--fault-after", 2], {"truncated"}, [],
              1, 5, 2),
    "reset-every-2-c3": (["--fault", "reset", "--fault-every", 2],
                         {"truncated"}, [], 3, 12, 6),
    "http429": (["--fault", "http429", "--fault-after", 2], {"http_429"},
                [], 1, 5, 2),
    "http429-nobody": (["--fault", "http429", "--fault-after", 2,
                        "--fault-body", "none"], {"http_429"}, [], 1, 5, 2),
    "http500": (["--fault", "http500", "--fault-after", 2], {"http_5xx"},
                [], 1, 5, 2),
    "http500-nobody": (["--fault", "http500", "--fault-after", 2,
                        "--fault-body", "none"], {"http_5xx"}, [], 1, 5, 2),
    "http503": (["--fault", "http503", "--fault-after", 2], {"http_503"},
                [], 1, 5, 2),
    "http503-nobody": (["--fault", "http503", "--fault-after", 2,
                        "--fault-body", "none"], {"http_503"}, [], 1, 5, 2),
    "stream-error": (["--fault", "stream-error", "--fault-after", 2],
                     {"stream_error"}, [], 1, 5, 2),
    "stream-error-llama": (["--fault", "stream-error", "--fault-after", 2,
                            "--error-style", "llama"], {"stream_error"}, [],
                           1, 5, 2),
    "stream-error-ollama": (["--fault", "stream-error", "--fault-after", 2],
                            {"stream_error"}, ["--api", "ollama-generate"],
                            1, 5, 2),
    "stream-error-native": (["--fault", "stream-error", "--fault-after", 2],
                            {"stream_error"}, ["--api", "llama-completion"],
                            1, 5, 2),
    "malformed": (["--fault", "malformed", "--fault-after", 2],
                  {"malformed"}, [], 1, 5, 2),
    "malformed-ollama": (["--fault", "malformed", "--fault-after", 2],
                         {"malformed"}, ["--api", "ollama-chat"], 1, 5, 2),
    "bad-utf8": (["--fault", "bad-utf8", "--fault-after", 2], {"malformed"},
                 [], 1, 5, 2),
    "huge-line": (["--fault", "huge-line", "--fault-after", 2],
                  {"too_large"}, [], 1, 5, 2),
    "no-done": (["--fault", "no-done", "--fault-after", 2], {"truncated"},
                [], 1, 5, 2),
    "no-done-ollama": (["--fault", "no-done", "--fault-after", 2],
                       {"truncated"}, ["--api", "ollama-generate"], 1, 5, 2),
    "no-done-native": (["--fault", "no-done", "--fault-after", 2],
                       {"truncated"}, ["--api", "llama-completion"], 1, 5, 2),
    "no-done-close-mode": (["--fault", "no-done", "--fault-after", 2,
                            "--close-mode"], {"truncated"}, [], 1, 5, 2),
    "stall": (["--fault", "stall", "--fault-after", 2], {"timeout"},
              ["--timeout", 2], 1, 4, 2),
}


def check_partial(stub, sb, name):
    flags, classes, cflags, conc, n, n_ok = PARTIAL[name]
    p, port = st.start_stub(stub, *SCHED, *flags)
    out = os.path.join(st.tmpdir(), "r.json")
    api = [] if "--api" in cflags else ["--api", "openai-chat"]
    rc, res, part, err = st.run_client(
        sb, port, out, *api, *cflags, "--concurrency", conc,
        "--num-requests", n, "--input-len", INP, "--output-len", OUT,
        timeout=120)
    st.stop(p)
    if rc != 1:
        st.fail(f"{name}: exit {rc}, want 1 (run completed, some failed); "
                f"stderr: {err.strip()[-800:]}")
    st.check_schema(res)
    reqs = st.all_requests(res)
    check_records(name, reqs, part, n, n_ok, classes,
                  ordered=(conc == 1))
    print(f"{name}: ok ({n_ok} ok, {n - n_ok} x {sorted(classes)})")


def check_records(name, reqs, part, n, n_ok, classes, ordered):
    if len(reqs) != n:
        st.fail(f"{name}: {len(reqs)} requests recorded, want {n}")
    ok = [r for r in reqs if r.get("error") is None]
    failed = [r for r in reqs if r.get("error") is not None]
    got = sorted({st.err_class(r) for r in failed})
    if len(ok) != n_ok:
        st.fail(f"{name}: {len(ok)} requests succeeded, want {n_ok}; "
                f"failure classes {got}")
    if not set(got) <= classes:
        st.fail(f"{name}: error classes {got}, want only {sorted(classes)}; "
                f"first message: {failed[0]['error'].get('message')!r}")
    for r in ok:
        if r.get("output_tokens") != OUT:
            st.fail(f"{name}: ok request {r.get('id')} has output_tokens "
                    f"{r.get('output_tokens')}, want {OUT}")
    if ordered:
        first = sorted(reqs, key=lambda r: r["t_sent_s"])[:n_ok]
        if any(r.get("error") is not None for r in first):
            st.fail(f"{name}: the first {n_ok} requests sent did not all "
                    "succeed (the stub faults only later ones)")
    if part is None:
        st.fail(f"{name}: no FILE.partial.jsonl written")
    if len(part) != n:
        st.fail(f"{name}: partial.jsonl has {len(part)} records, want {n}")
    ok_final = sorted(str(r["id"]) for r in ok)
    ok_part = sorted(str(r["id"]) for r in part if r.get("error") is None)
    if ok_final != ok_part:
        st.fail(f"{name}: successes differ: final {ok_final}, "
                f"partial {ok_part}")


def check_refuse_start(stub, sb):
    p, port = st.start_stub(stub, "--fault", "refuse")
    out = os.path.join(st.tmpdir(), "r.json")
    rc, _, _, err = st.run_client(sb, port, out, "--api", "openai-chat",
                                  "--concurrency", 1, "--num-requests", 3,
                                  "--input-len", INP, "--output-len", OUT,
                                  timeout=60)
    st.stop(p)
    if rc != 3:
        st.fail(f"refuse-start: exit {rc}, want 3 (unreachable); stderr: "
                f"{err.strip()[-500:]}")
    if not err.strip():
        st.fail("refuse-start: exit 3 without a message on stderr")
    print("refuse-start: ok")


def check_die_after(stub, sb):
    """The server exits after 3 complete requests in a 10-request run at
    concurrency 2: the 3 stay measured, the rest fail as connect (no server)
    or truncated (the one in flight when it died)."""
    p, port = st.start_stub(stub, *SCHED, "--die-after", 3)
    out = os.path.join(st.tmpdir(), "r.json")
    rc, res, part, err = st.run_client(
        sb, port, out, "--api", "openai-chat", "--concurrency", 2,
        "--num-requests", 10, "--input-len", INP, "--output-len", OUT,
        timeout=120)
    st.stop(p)
    if rc != 1:
        st.fail(f"die-after: exit {rc}, want 1; stderr {err.strip()[-800:]}")
    st.check_schema(res)
    reqs = st.all_requests(res)
    check_records("die-after", reqs, part, 10, 3, {"connect", "truncated"},
                  ordered=False)
    if not any(st.err_class(r) == "connect" for r in reqs):
        st.fail("die-after: no request failed with connect after the "
                "server was gone")
    print("die-after: ok")


def check_signal(stub, sb, sig, want_rc):
    """SIGINT/SIGTERM while two streams hang (the stub stalls every request
    after the first two): the client must write what it measured and exit
    promptly, without waiting for the hung streams."""
    p, port = st.start_stub(stub, *SCHED, "--fault", "stall",
                            "--fault-after", 2)
    out = os.path.join(st.tmpdir(), "r.json")
    cmd = [sb, "run", "--url", f"http://127.0.0.1:{port}", "--model",
           "stub-model", "--api", "openai-chat", "--concurrency", "2",
           "--num-requests", "10", "--input-len", str(INP), "--output-len",
           str(OUT), "--warmup", "0", "--timeout", "600", "--out", out,
           "--quiet"]
    import subprocess
    c = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    st._procs.append(c)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        part = st.load_partial(out) or []
        if len(part) >= 2 or c.poll() is not None:
            break
        time.sleep(0.05)
    if c.poll() is not None:
        st.fail(f"signal: client exited ({c.returncode}) before the signal: "
                f"{c.stderr.read()[-500:]}")
    if len(part) < 2:
        st.fail("signal: the two first requests never reached partial.jsonl")
    time.sleep(0.3)  # the next two are now stalled mid-stream
    t = time.monotonic()
    c.send_signal(sig)
    try:
        _, se = c.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        st.fail(f"signal {sig.name}: client still running 15 s later")
    took = time.monotonic() - t
    st.stop(p)
    if c.returncode != want_rc:
        st.fail(f"signal {sig.name}: exit {c.returncode}, want {want_rc}; "
                f"stderr {se[-500:]}")
    res = st.load_results(out)
    st.check_schema(res)
    reqs = st.all_requests(res)
    ok = sorted(str(r["id"]) for r in reqs if r.get("error") is None)
    part_ok = sorted(str(r["id"]) for r in st.load_partial(out)
                     if r.get("error") is None)
    if len(ok) != 2 or ok != part_ok:
        st.fail(f"signal {sig.name}: successes in final {ok}, in partial "
                f"{part_ok}, want the same 2")
    print(f"signal {sig.name}: ok (exit {c.returncode} after {took:.2f} s)")


def main(argv):
    stub, sb, case = argv[1], argv[2], argv[3]
    if case == "list":
        print(" ".join(["refuse-start", "die-after", "sigint", "sigterm",
                        *PARTIAL]))
        return 0
    if case in PARTIAL:
        check_partial(stub, sb, case)
    elif case == "refuse-start":
        check_refuse_start(stub, sb)
    elif case == "die-after":
        check_die_after(stub, sb)
    elif case == "sigint":
        check_signal(stub, sb, signal.SIGINT, 130)
    elif case == "sigterm":
        check_signal(stub, sb, signal.SIGTERM, 143)
    else:
        print(f"unknown case {case!r}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    st.main(main)
