#!/usr/bin/env python3
"""`servebench run --api llama-completion` (llama.cpp's native POST
/completion) against the stub, which answers in llama.cpp's format: every
chunk carries "id_slot" (-1 but in the last one), the last one ("stop":
true) the token counts and the timings, and no [DONE] follows.

With 2 numbered slots at concurrency 2, unpinned: every record carries the
slot the stub reported (0 or 1, both used, two requests in flight at once
never in the same one), the server's timings normalised (prompt_n,
prompt_ms, predicted_n, predicted_ms, cache_n), the token counts from the
server, and the partial file the same slots; no request carried "id_slot".
Pinned (--pin-slots 1): every request carried "id_slot" and its record says
the slot it was pinned to. A server that reports no slot (-1: the stub with
unnumbered slots) gives records without one.

Usage: test_native.py STUB_SERVER SERVEBENCH
"""
import json
import os
import urllib.request

import stubtest as st

INP, OUT = 8, 6
TIMINGS = ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "cache_n")


def metrics(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        return json.load(r)


def native_run(sb, port, d, name, n, *args):
    """Runs closed loop at concurrency 2 over llama-completion; returns the
    records, checked for what every successful one must carry."""
    before = metrics(port)
    out = os.path.join(d, name + ".json")
    rc, res, part, err = st.run_client(
        sb, port, out, "--api", "llama-completion", "--concurrency", 2,
        "--num-requests", n, "--input-len", INP, "--output-len", OUT,
        "--seed", 1, *args)
    if rc != 0:
        st.fail(f"{name}: exit {rc}: {err.strip()[-800:]}")
    st.check_schema(res)
    t = res["target"]
    if t.get("api") != "llama-completion" or not t.get("endpoint", "").endswith("/completion"):
        st.fail(f"{name}: target api/endpoint {t.get('api')!r} {t.get('endpoint')!r}")
    if t["prompt_sizing"]["method"] != "tokenize" or t["prompt_sizing"]["overhead_tokens"] != 0:
        st.fail(f"{name}: prompt sizing {t['prompt_sizing']!r} (the stub adds no template)")
    reqs = st.all_requests(res)
    if len(reqs) != n:
        st.fail(f"{name}: {len(reqs)} records, expected {n}")
    for r in reqs:
        if st.err_class(r) is not None:
            st.fail(f"{name}: record {r['id']} failed: {r['error']!r}")
        if (r.get("prompt_tokens"), r.get("output_tokens"), r.get("output_tokens_source")) \
                != (INP, OUT, "server"):
            st.fail(f"{name}: record {r['id']} counts {r.get('prompt_tokens')}, "
                    f"{r.get('output_tokens')} ({r.get('output_tokens_source')}), "
                    f"expected {INP}, {OUT} (server)")
        srv = r.get("server") or {}
        missing = [k for k in TIMINGS if not isinstance(srv.get(k), (int, float))]
        if missing or srv["prompt_n"] != INP or srv["predicted_n"] != OUT:
            st.fail(f"{name}: record {r['id']} server timings {srv!r} (missing {missing})")
        if not isinstance(r.get("wait_ms"), (int, float)):
            st.fail(f"{name}: record {r['id']} has no wait_ms (needs the server's prompt_ms)")
    if part is None or sorted((p["id"], p.get("slot")) for p in part) != \
            sorted((r["id"], r.get("slot")) for r in reqs):
        st.fail(f"{name}: the partial file's slots differ from the results'")
    after = metrics(port)
    return reqs, after["pinned"] - before["pinned"], after["requests"] - before["requests"]


def check_overlap(name, reqs):
    """Two requests in flight at once were served in different slots."""
    for a in reqs:
        for b in reqs:
            if a["id"] < b["id"] and a["t_sent_s"] < b["t_done_s"] and \
                    b["t_sent_s"] < a["t_done_s"] and a["slot"] == b["slot"]:
                st.fail(f"{name}: records {a['id']} and {b['id']} overlap in slot {a['slot']}")


def test(argv):
    stub, sb = argv[1], argv[2]
    d = st.tmpdir()
    p, port = st.start_stub(stub, "--port", 0, "--ttft-ms", 5, "--itl-ms", 3,
                            "--slots", 2)

    # unpinned: the slots the server reports
    reqs, pinned, got = native_run(sb, port, d, "unpinned", 8)
    for r in reqs:
        if not isinstance(r.get("slot"), int) or r["slot"] not in (0, 1):
            st.fail(f"unpinned: record {r['id']} slot {r.get('slot')!r}, expected 0 or 1")
    if {r["slot"] for r in reqs} != {0, 1}:
        st.fail(f"unpinned: slots {sorted({r['slot'] for r in reqs})}, expected both of 0, 1")
    check_overlap("unpinned", reqs)
    if pinned != 0 or got != 8:
        st.fail(f"unpinned: {got} requests, {pinned} with id_slot (expected 8, none)")
    print("unpinned: ok", sorted(r["slot"] for r in reqs))

    # pinned: the body carries id_slot, the record the slot (pinned = served)
    reqs, pinned, got = native_run(sb, port, d, "pinned", 6, "--pin-slots", 1)
    if {r.get("slot") for r in reqs} != {0, 1}:
        st.fail(f"pinned: slots {sorted({r.get('slot') for r in reqs})}, expected 0, 1")
    check_overlap("pinned", reqs)
    if pinned != got or got != 6:
        st.fail(f"pinned: {pinned} of {got} requests carried id_slot (expected 6)")
    print("pinned: ok")
    st.stop(p)

    # a server that names no slot (-1 in the last chunk too): no "slot"
    p, port = st.start_stub(stub, "--port", 0, "--ttft-ms", 5, "--itl-ms", 3)
    reqs, _, _ = native_run(sb, port, d, "no-slot", 4)
    if any("slot" in r for r in reqs):
        st.fail(f"no-slot: records carry a slot: {[r.get('slot') for r in reqs]}")
    print("no-slot: ok")
    st.stop(p)
    return 0


if __name__ == "__main__":
    st.main(test)
