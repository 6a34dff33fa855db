#!/usr/bin/env python3
"""Fault cases of a fleet run (`servebench run --url A --url B`), one per
invocation:

  fleet-refuse-one  the second of two servers refuses connections at start:
                    exit 3 before anything is measured (no results file),
                    the message names that URL
  fleet-die-one     the second server exits after 3 complete requests of a
                    12-request round-robin run: its later requests are
                    errors (connect, or truncated for one in flight), every
                    request of the first succeeds, the results file is
                    written with all 12 records, exit 1

Usage: test_fleet_faults.py STUB_SERVER SERVEBENCH CASE
"""
import os
import subprocess
import sys

import stubtest as st

SCHED = ["--ttft-ms", 5, "--itl-ms", 3]


def run(sb, ports, out, n):
    cmd = [sb, "run"]
    for p in ports:
        cmd += ["--url", f"http://127.0.0.1:{p}"]
    cmd += ["--model", "m", "--out", out, "--quiet", "--warmup", "0", "--api",
            "openai-chat", "--concurrency", "2", "--num-requests", str(n),
            "--input-len", "8", "--output-len", "8", "--seed", "1"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return p.returncode, st.load_results(out), p.stderr


def check_refuse_one(stub, sb):
    _, good = st.start_stub(stub, *SCHED)
    _, bad = st.start_stub(stub, "--fault", "refuse")
    out = os.path.join(st.tmpdir(), "r.json")
    rc, res, err = run(sb, [good, bad], out, 4)
    if rc != 3:
        st.fail(f"fleet-refuse-one: exit {rc}, want 3; stderr {err[-500:]}")
    if f"--url http://127.0.0.1:{bad}" not in err or "replica 1" not in err:
        st.fail(f"fleet-refuse-one: the message does not name the dead URL: {err!r}")
    if res is not None:
        st.fail("fleet-refuse-one: a results file was written")
    print("fleet-refuse-one: ok")


def check_die_one(stub, sb):
    _, good = st.start_stub(stub, *SCHED)
    _, dying = st.start_stub(stub, *SCHED, "--die-after", 3)
    out = os.path.join(st.tmpdir(), "r.json")
    rc, res, err = run(sb, [good, dying], out, 12)
    if rc != 1:
        st.fail(f"fleet-die-one: exit {rc}, want 1; stderr {err[-800:]}")
    st.check_schema(res)
    reqs = st.all_requests(res)
    if len(reqs) != 12:
        st.fail(f"fleet-die-one: {len(reqs)} records, want 12")
    first = [r for r in reqs if r["replica"] == 0]
    second = [r for r in reqs if r["replica"] == 1]
    if any(r.get("error") is not None for r in first):
        st.fail(f"fleet-die-one: the live server's requests failed: {first!r}")
    ok2 = [r for r in second if r.get("error") is None]
    bad2 = {st.err_class(r) for r in second if r.get("error") is not None}
    if len(ok2) != 3 or not bad2 or not bad2 <= {"connect", "truncated"}:
        st.fail(f"fleet-die-one: dead server's records: {len(ok2)} ok, classes {bad2}")
    shares = res["levels"][0]["replicas"]
    if shares[1]["failed"] != len(second) - 3 or shares[0]["failed"] != 0:
        st.fail(f"fleet-die-one: level replicas {shares!r}")
    print("fleet-die-one: ok")


def main(argv):
    stub, sb, case = argv[1], argv[2], argv[3]
    if case == "fleet-refuse-one":
        check_refuse_one(stub, sb)
    elif case == "fleet-die-one":
        check_die_one(stub, sb)
    else:
        print(f"unknown case {case!r}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    st.main(main)
