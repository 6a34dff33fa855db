#!/usr/bin/env python3
"""`servebench run --trace FILE` against the stub: a hand-written Mooncake
trace of 8 requests over 1 s (data/mooncake-8.jsonl) sent open loop.

Every request reaches the stub (/metrics), once; request k of the level is
the trace's k-th: scheduled at its time (relative to the first, divided by
--trace-speedup), sent within a few ms of it, asking for its prompt and
output lengths (the stub sizes prompts exactly and gives exactly max_tokens,
so prompt_tokens and output_tokens are the trace's too). The level is the
trace's mean rate ((n - 1) / span, as sbsim --trace), the results say
"trace" and leave the workload's lengths out. --trace-window and --num-requests keep the right
requests; load flags beside --trace, --trace-* without it, a malformed or
missing trace and an empty window exit 2 naming the problem, before any
request. Prompts whose first hash id is the same begin with the same words
(block 0's, in requests 0, 2 and 4), others with other words, and the
records carry their hash_ids.

Usage: test_trace.py STUB_SERVER SERVEBENCH TRACE
"""
import json
import os
import subprocess
import urllib.request

import stubtest as st

# how late a send may be (s): the driver's schedule lag is well under a ms
# here; the sanitizer build and a busy 2-core machine get slack
SEND_SLACK_S = 0.05


def metrics(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        return json.load(r)


def read_trace(path):
    with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    rows.sort(key=lambda r: r["timestamp"])
    t0 = rows[0]["timestamp"]
    return [{"t": (r["timestamp"] - t0) / 1e3, "in": r["input_length"],
             "out": r["output_length"], "hash_ids": r.get("hash_ids", [])} for r in rows]


def expect(rows, speedup=1.0, first=0, count=None):
    """The requests a run should send: rows[first:first+count], their times
    from the first of them, divided by speedup."""
    keep = rows[first:] if count is None else rows[first:first + count]
    t0 = keep[0]["t"]
    return [dict(r, t=(r["t"] - t0) / speedup) for r in keep]


def run(servebench, port, d, name, trace, warmup, *args):
    """`servebench run --trace` (st.run_client's command with warmup
    warm-up requests)."""
    out = os.path.join(d, name + ".json")
    cmd = [servebench, "run", "--url", f"http://127.0.0.1:{port}", "--model", "m",
           "--out", out, "--quiet", "--warmup", str(warmup), "--seed", "3",
           "--trace", trace, *map(str, args)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    return p.returncode, st.load_results(out), st.load_partial(out), p.stderr


def check_run(servebench, port, d, name, trace, want, note, *args, warmup=0):
    """Runs the trace with args; checks the records against want and the
    results' "trace" against note (its keys)."""
    before = metrics(port)["requests"]
    rc, res, partial, err = run(servebench, port, d, name, trace, warmup, *args)
    if rc != 0:
        st.fail(f"{name}: exit {rc}: {err}")
    st.check_schema(res)
    sent = metrics(port)["requests"] - before
    if sent != len(want) + warmup:
        st.fail(f"{name}: the stub got {sent} requests, expected {len(want)} "
                f"and {warmup} warm-up")
    if len(res["levels"]) != 1:
        st.fail(f"{name}: {len(res['levels'])} levels, expected one")
    lv = res["levels"][0]
    span = want[-1]["t"]
    rate = (len(want) - 1) / span  # arrivals over the span, as sbsim --trace
    if lv["mode"] != "rate" or abs(lv["level"] - rate) > 1e-6 * rate:
        st.fail(f"{name}: level {lv['mode']} {lv['level']}, expected rate {rate}")
    reqs = sorted(lv["requests"], key=lambda r: r["id"])
    if [r["id"] for r in reqs] != list(range(len(want))):
        st.fail(f"{name}: record ids {[r['id'] for r in reqs]}, expected 0..{len(want) - 1}")
    if len(partial or []) != len(want):
        st.fail(f"{name}: {len(partial or [])} partial records, expected {len(want)}")
    for r, w in zip(reqs, want):
        check_record(name, r, w)
    tr = res.get("trace")
    if not isinstance(tr, dict):
        st.fail(f"{name}: the results have no \"trace\": {sorted(res)}")
    for k, v in note.items():
        if tr.get(k) != v:
            st.fail(f"{name}: trace.{k} is {tr.get(k)!r}, expected {v!r} ({tr})")
    if tr.get("format") != "mooncake" or tr.get("file") != trace:
        st.fail(f"{name}: trace format/file {tr.get('format')!r}/{tr.get('file')!r}")
    for k in ("input_len", "output_len", "arrival"):
        if k in res["workload"]:
            st.fail(f"{name}: workload.{k} is there, but the trace set each request's")
    if res["workload"].get("requests") != len(want) or res["workload"].get("mode") != "rate":
        st.fail(f"{name}: workload {res['workload']}")


def check_record(name, r, w):
    i = r["id"]
    if r.get("error") is not None:
        st.fail(f"{name}: request {i} failed: {r['error']}")
    if abs(r["t_scheduled_s"] - w["t"]) > 1e-6:
        st.fail(f"{name}: request {i} scheduled at {r['t_scheduled_s']} s, trace says {w['t']}")
    late = r["t_sent_s"] - r["t_scheduled_s"]
    if not -1e-6 <= late <= SEND_SLACK_S:
        st.fail(f"{name}: request {i} sent {late * 1e3:.1f} ms after its trace time")
    if r.get("input_len") != w["in"] or r.get("output_len") != w["out"]:
        st.fail(f"{name}: request {i} asked for {r.get('input_len')}/{r.get('output_len')} "
                f"tokens, the trace says {w['in']}/{w['out']}")
    if r.get("output_tokens") != w["out"]:
        st.fail(f"{name}: request {i} got {r.get('output_tokens')} tokens, not {w['out']}")
    if abs((r.get("prompt_tokens") or 0) - w["in"]) > 2:
        st.fail(f"{name}: request {i} prompt of {r.get('prompt_tokens')} tokens, "
                f"the trace says {w['in']}")


def refused(servebench, port, d, name, trace, args, words):
    """A run that must exit 2 with words in its message, sending nothing."""
    before = metrics(port)
    out = os.path.join(d, name + ".json")
    rc, res, _, err = st.run_client(servebench, port, out, "--trace", trace, *args,
                                    timeout=60)
    if rc != 2:
        st.fail(f"{name}: exit {rc}, expected 2: {err}")
    if res is not None:
        st.fail(f"{name}: a results file was written")
    for w in words:
        if w not in err:
            st.fail(f"{name}: message lacks {w!r}: {err!r}")
    if metrics(port)["connections"] != before["connections"] + 1:  # our /metrics
        st.fail(f"{name}: servebench contacted the server before refusing")


def refusals(servebench, port, d, trace):
    for flags, flag in ((["--concurrency", 2], "--concurrency"),
                        (["--mode", "rate", "--levels", 2], "--mode"),
                        (["--levels", 2], "--levels"),
                        (["--input-len", 8], "--input-len"),
                        (["--output-len", 8], "--output-len"),
                        (["--duration", 1], "--duration"),
                        (["--arrival", "constant"], "--arrival")):
        refused(servebench, port, d, "with" + flag, trace, flags, ["--trace", flag])
    bad = os.path.join(d, "bad.jsonl")
    with open(bad, "w") as f:
        f.write('{"timestamp": 0, "input_length": 4, "output_length": 2}\n'
                '{"timestamp": 10, "input_length": 4, "output_length": 2}\n'
                '{"timestamp": "soon", "input_length": 4, "output_length": 2}\n')
    refused(servebench, port, d, "malformed", bad, [], [bad + ":3", "timestamp"])
    missing = os.path.join(d, "missing.jsonl")
    refused(servebench, port, d, "missing", missing, [], [missing])
    refused(servebench, port, d, "bad-window", trace, ["--trace-window", "2,1"],
            ["--trace-window", "2,1"])
    refused(servebench, port, d, "empty-window", trace, ["--trace-window", "5,6"],
            ["window"])
    # --trace-* without --trace
    before = metrics(port)["connections"]
    rc, res, _, err = st.run_client(servebench, port, os.path.join(d, "nt.json"),
                                    "--concurrency", 1, "--trace-speedup", 2)
    if rc != 2 or "--trace-speedup" not in err or "--trace FILE" not in err:
        st.fail(f"--trace-speedup without --trace: exit {rc}: {err!r}")
    if metrics(port)["connections"] != before + 1:
        st.fail("--trace-speedup without --trace: the server was contacted")


def test(argv):
    stub, servebench, trace = argv[1], argv[2], argv[3]
    d = st.tmpdir()
    rows = read_trace(trace)
    p, port = st.start_stub(stub, "--port", 0, "--ttft-ms", 5, "--itl-ms", 3)

    check_run(servebench, port, d, "plain", trace, expect(rows),
              {"requests": 8, "speedup": 1.0, "window": None, "left_out": 0, "span_s": 1.0})
    # warm-up requests (their own phase, ids from 0 too) leave the level's
    # request k the trace's k-th
    check_run(servebench, port, d, "warmup", trace, expect(rows), {"requests": 8},
              warmup=2)
    check_run(servebench, port, d, "speedup2", trace, expect(rows, speedup=2),
              {"requests": 8, "speedup": 2.0, "span_s": 0.5}, "--trace-speedup", 2)
    # [0.25, 0.9) s of the trace's clock: its requests at 0.25 ... 0.85 s
    check_run(servebench, port, d, "window", trace, expect(rows, first=2, count=5),
              {"requests": 5, "window": [0.25, 0.9], "left_out": 3},
              "--trace-window", "0.25,0.9")
    check_run(servebench, port, d, "first3", trace, expect(rows, count=3),
              {"requests": 3, "limit": 3, "left_out": 5}, "--num-requests", 3)
    refusals(servebench, port, d, trace)
    st.stop(p)
    shared_blocks(stub, servebench, d, trace, rows)
    return 0


def shared_blocks(stub, servebench, d, trace, rows):
    """Prompts naming the same leading hash id begin with the same words
    (the stub's log of each body's head), prompts of other ids with others;
    the records carry the trace's hash_ids."""
    import re
    p, port = st.start_stub(stub, "--port", 0, "--ttft-ms", 5, "--itl-ms", 3, "--log")
    rc, res, _, err = run(servebench, port, d, "blocks", trace, 0)
    st.stop(p)
    if rc != 0:
        st.fail(f"blocks: exit {rc}: {err}")
    heads = [m.group(1).split()[:6] for m in
             (re.search(r'POST \S+ .*"(?:content|prompt)":"([^"]*)', x)
              for x in p.stderr.read().splitlines()) if m][-len(rows):]
    first = {}
    for i, (row, h) in enumerate(zip(rows, heads)):
        first.setdefault(row["hash_ids"][0], []).append((i, h))
    for bid, hs in first.items():
        if any(h != hs[0][1] for _, h in hs):
            st.fail(f"blocks: the prompts of requests {[i for i, _ in hs]} (block {bid}) "
                    f"begin differently: {hs}")
    if len({tuple(hs[0][1]) for hs in first.values()}) != len(first):
        st.fail(f"blocks: prompts of different blocks begin alike: {first}")
    recs = sorted(res["levels"][0]["requests"], key=lambda r: r["id"])
    if [r.get("hash_ids") for r in recs] != [row["hash_ids"] for row in rows]:
        st.fail(f"blocks: records' hash_ids {[r.get('hash_ids') for r in recs]}")


if __name__ == "__main__":
    st.main(test)
