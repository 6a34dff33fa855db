#!/usr/bin/env python3
"""`servebench run --pin-slots K` against the stub (4 numbered slots).

Closed loop at concurrency c keeps its requests on slots 0, K, ..., (c-1)K:
every record carries "slot", the stub's final timings say it served the
request in that very slot ("id_slot"), and every generation request the
stub received (warm-up ones too) carried "id_slot" (/metrics "pinned").
A stride whose highest slot is past the server's slot count, and pinning
on a server that is not llama.cpp, are refused with exit 2 and a message.
Without --pin-slots nothing of it appears.

Usage: test_pin.py STUB_SERVER SERVEBENCH
"""
import json
import os
import subprocess
import urllib.request

import stubtest as st


def metrics(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        return json.load(r)


def run(servebench, port, out, *args, warmup=0):
    """`servebench run` with warmup warm-up requests (st.run_client's
    command with its --warmup 0 replaced)."""
    cmd = [servebench, "run", "--url", f"http://127.0.0.1:{port}", "--model", "m",
           "--out", out, "--quiet", "--warmup", str(warmup), "--input-len", "8",
           "--output-len", "6", "--seed", "1", *map(str, args)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    return p.returncode, st.load_results(out), st.load_partial(out), p.stderr


def pinned_run(servebench, port, d, name, stride, conc, n=8, warmup=2):
    """Runs closed loop at conc with stride; returns the records' slots."""
    before = metrics(port)
    out = os.path.join(d, name + ".json")
    rc, res, partial, err = run(servebench, port, out, "--pin-slots", stride,
                                "--concurrency", conc, "--num-requests", n,
                                warmup=warmup)
    if rc != 0:
        st.fail(f"{name}: exit {rc}: {err}")
    st.check_schema(res)
    if res["target"].get("pin_stride") != stride:
        st.fail(f"{name}: target.pin_stride is {res['target'].get('pin_stride')!r}")
    reqs = st.all_requests(res)
    if len(reqs) != n:
        st.fail(f"{name}: {len(reqs)} records, expected {n}")
    for r in reqs:
        if not isinstance(r.get("slot"), int):
            st.fail(f"{name}: record {r['id']} has no integer slot: {r!r}")
        used = r["server"]["timings"].get("id_slot")
        if used != r["slot"]:
            st.fail(f"{name}: record {r['id']} pinned to {r['slot']}, served in {used}")
    if sorted(p["slot"] for p in partial) != sorted(r["slot"] for r in reqs):
        st.fail(f"{name}: the partial file's slots differ from the results'")
    after = metrics(port)
    got, pinned = after["requests"] - before["requests"], after["pinned"] - before["pinned"]
    if got != n + warmup or pinned != got:
        st.fail(f"{name}: {pinned} of {got} requests carried id_slot (expected {n + warmup})")
    return {r["slot"] for r in reqs}


def refused(servebench, port, d, name, args, words):
    out = os.path.join(d, name + ".json")
    rc, res, _, err = run(servebench, port, out, *args)
    if rc != 2:
        st.fail(f"{name}: exit {rc}, expected 2: {err}")
    if res is not None:
        st.fail(f"{name}: a results file was written")
    for w in words:
        if w not in err:
            st.fail(f"{name}: message lacks {w!r}: {err!r}")


def test(argv):
    stub, servebench = argv[1], argv[2]
    d = st.tmpdir()
    p, port = st.start_stub(stub, "--port", 0, "--ttft-ms", 5, "--itl-ms", 3,
                            "--slots", 4)

    slots = pinned_run(servebench, port, d, "stride2-c2", 2, 2)
    if slots != {0, 2}:
        st.fail(f"--pin-slots 2 --concurrency 2 used slots {sorted(slots)}, expected [0, 2]")
    slots = pinned_run(servebench, port, d, "stride1-c3", 1, 3, n=12)
    if slots != {0, 1, 2}:
        st.fail(f"--pin-slots 1 --concurrency 3 used slots {sorted(slots)}, expected [0, 1, 2]")

    # concurrency 3 at stride 2 needs slot 4; the stub has 0..3
    refused(servebench, port, d, "past-slots",
            ["--pin-slots", 2, "--concurrency", "1,3", "--num-requests", 2],
            ["slot 4", "4 slots"])

    # without --pin-slots: no id_slot sent, no slot written
    before = metrics(port)
    out = os.path.join(d, "plain.json")
    rc, res, _, err = run(servebench, port, out, "--concurrency", 2, "--num-requests", 4)
    if rc != 0:
        st.fail(f"plain: exit {rc}: {err}")
    if "pin_stride" in res["target"]:
        st.fail("plain: target has pin_stride")
    for r in st.all_requests(res):
        if "slot" in r or "id_slot" in r["server"]["timings"]:
            st.fail(f"plain: record {r['id']} mentions a slot: {r!r}")
    if metrics(port)["pinned"] != before["pinned"]:
        st.fail("plain: requests carried id_slot")
    st.stop(p)

    # a server that is not llama.cpp (no /props: the stub passes for Ollama)
    p, port = st.start_stub(stub, "--port", 0, "--ttft-ms", 5, "--itl-ms", 3, "--no-props")
    refused(servebench, port, d, "not-llama",
            ["--api", "openai-chat", "--pin-slots", 1, "--concurrency", 1,
             "--num-requests", 1], ["llama.cpp", "ollama"])
    m = metrics(port)  # the two prompt-sizing probes, nothing measured
    if m["pinned"] != 0 or m["requests"] > 2:
        st.fail(f"not-llama: requests were measured before the refusal: {m}")
    st.stop(p)
    return 0


if __name__ == "__main__":
    st.main(test)
