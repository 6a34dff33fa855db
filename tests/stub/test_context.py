#!/usr/bin/env python3
"""What `servebench run` reads about a server's slot context and KV cache
(measure/slotprobe.h) lands in the results' target, and `servebench
calibrate` copies it into the model (flags override it).

llama.cpp-style stub (--n-ctx 1024, 4 slots; its /slots says 1023 for slot
0): target.ctx_per_slot 1023 (the smallest slot), context_overflow
"reject", no kv_bytes_per_token (llama.cpp exposes none). Ollama-style stub
(--no-props --n-ctx 2048): ctx_per_slot 2048 from /api/ps, kv_bytes_per_token
12288 from /api/show (2 x 12 layers x 4 KV heads x 64 x 2 bytes),
context_overflow "truncate". A stub that reports no context: none of the
three keys. Calibrating the llama.cpp-style run gives a model with
server.ctx_per_slot 1023; --ctx-per-slot 512 --kv-bytes-per-token 4096
override both.

Usage: test_context.py STUB_SERVER SERVEBENCH
"""
import json
import os
import subprocess

import stubtest as st


def target_of(sb, port, d, name, *args, model="stub-model", levels=(16,)):
    """Runs one short level per prompt length; returns the last file's target
    and the files."""
    outs = []
    for n in levels:
        out = os.path.join(d, f"{name}-{n}.json")
        rc, res, _, err = st.run_client(sb, port, out, "--concurrency", 1,
                                        "--num-requests", 4, "--input-len", n,
                                        "--output-len", 8, *args, model=model)
        if rc != 0:
            st.fail(f"{name}: exit {rc}: {err.strip()[-800:]}")
        st.check_schema(res)
        outs.append(out)
    return res["target"], outs


def want(name, t, ctx, kvb, ov):
    got = (t.get("ctx_per_slot"), t.get("kv_bytes_per_token"), t.get("context_overflow"))
    if got != (ctx, kvb, ov):
        st.fail(f"{name}: target (ctx_per_slot, kv_bytes_per_token, context_overflow) "
                f"= {got}, expected {(ctx, kvb, ov)}")
    print(f"{name}: {got}: ok")


def with_prefill(files, d):
    """Copies of the measured files whose TTFT, E2E and the server's
    prompt_ms grow by 0.01 ms per prompt token: the stub's are flat (5 ms
    whatever the prompt), so the fit's prefill slope would take the sign of
    the jitter, and calibrate rightly refuses a clearly negative one (it did,
    on a loaded machine). This test is about the target's context fields,
    which the copies keep as measured."""
    out = []
    for i, f in enumerate(files):
        with open(f) as fh:
            res = json.load(fh)
        for lv in res["levels"]:
            for r in lv.get("requests") or []:
                add = 0.01 * (r.get("prompt_tokens") or 0)
                for k in ("ttft_ms", "e2e_ms"):
                    if r.get(k) is not None:
                        r[k] += add
                srv = r.get("server") or {}
                for o in (srv, srv.get("timings") or {}):
                    if o.get("prompt_ms") is not None:
                        o["prompt_ms"] += add
        path = os.path.join(d, f"prefill-{i}.json")
        with open(path, "w") as fh:
            json.dump(res, fh)
        out.append(path)
    return out


def calibrate(sb, files, out, *args):
    files = with_prefill(files, os.path.dirname(out))
    p = subprocess.run([sb, "calibrate", *files, "--slots", "1", "-o", out, "-q",
                        *map(str, args)],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        st.fail(f"calibrate {' '.join(args)}: exit {p.returncode}: {p.stderr[-800:]}")
    with open(out) as f:
        return json.load(f)["server"]


def test(argv):
    stub, sb = argv[1], argv[2]
    d = st.tmpdir()
    common = ("--port", 0, "--ttft-ms", 5, "--itl-ms", 2)

    p, port = st.start_stub(stub, *common, "--slots", 4, "--n-ctx", 1024)
    t, files = target_of(sb, port, d, "llama", levels=(16, 128, 512))
    want("llama.cpp", t, 1023, None, "reject")
    st.stop(p)

    srv = calibrate(sb, files, os.path.join(d, "m1.json"))
    if (srv.get("ctx_per_slot"), srv.get("context_overflow")) != (1023, "reject") or \
            "kv_bytes_per_token" in srv:
        st.fail(f"calibrate: model server {srv}, expected ctx_per_slot 1023, reject")
    srv = calibrate(sb, files, os.path.join(d, "m2.json"), "--ctx-per-slot", 512,
                    "--kv-bytes-per-token", 4096)
    if (srv.get("ctx_per_slot"), srv.get("kv_bytes_per_token")) != (512, 4096):
        st.fail(f"calibrate with flags: model server {srv}, expected 512 and 4096")
    print("calibrate: ok")

    p, port = st.start_stub(stub, *common, "--no-props", "--n-ctx", 2048)
    t, _ = target_of(sb, port, d, "ollama", "--api", "ollama-generate")
    want("ollama", t, 2048, 12288, "truncate")
    st.stop(p)

    p, port = st.start_stub(stub, *common, "--slots", 2)
    t, _ = target_of(sb, port, d, "none")
    want("no context", t, None, None, "reject")
    st.stop(p)
    return 0


if __name__ == "__main__":
    st.main(test)
