#!/usr/bin/env python3
"""`servebench run --prefix-len N --prefix-groups G` against the stub.

Every prompt starts with one of G shared prefixes of about N tokens, then
its own --input-len tokens: the stub's log shows each body's head, and the
heads of the records of one prefix_group are one text, different groups'
different; every record carries its prefix_group (0..G-1, every group
drawn), the results' workload says prefix_len and prefix_groups, and the
prompt token count the stub reports is about N + --input-len (the prompt
size model's own accuracy: 10%). The same seed sends the same prompts.
Refused with a message (exit 2): --prefix-groups without --prefix-len,
--prefix-len beside --reuse-prompt or --trace. Without the flags no record
has a prefix_group. Two stubs behind --route prefix-affinity: every
group's requests went to one replica. `servebench validate --prefix-len`
measures the same kind of load: its measured file's workload and records
say the prefix and the groups.

Usage: test_prefix.py STUB_SERVER SERVEBENCH
"""
import os
import re
import subprocess

import stubtest as st

N, G, IN, REQS = 96, 3, 16, 12


def heads(stub_proc):
    """The prompt heads of the measured requests the stub logged (the last
    REQS generation requests: before them, the prompt-sizing probes)."""
    st.stop(stub_proc)
    out = []
    for line in stub_proc.stderr.read().splitlines():
        m = re.search(r'POST \S+ .*"(?:content|prompt)":"([^"]*)', line)
        if m:
            out.append(m.group(1)[:60])
    return out[-REQS:]


def measured(stub, servebench, d, name, *args):
    p, port = st.start_stub(stub, "--port", 0, "--ttft-ms", 2, "--itl-ms", 1, "--log")
    out = os.path.join(d, name + ".json")
    rc, res, _, err = st.run_client(servebench, port, out, "--concurrency", 2,
                                    "--num-requests", REQS, "--input-len", IN,
                                    "--output-len", 4, "--seed", 9, *args)
    if rc != 0:
        st.fail(f"{name}: exit {rc}: {err}")
    st.check_schema(res)
    return res, heads(p)


def refused(servebench, d, args, words):
    cmd = [servebench, "run", "--url", "http://127.0.0.1:9", "--model", "m",
           "--concurrency", "1", *map(str, args)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if p.returncode != 2 or not all(w in p.stderr for w in words):
        st.fail(f"{args}: expected exit 2 naming {words}, got {p.returncode}: {p.stderr}")


def sticky(stub, servebench, d):
    """--route prefix-affinity over two stubs: a group stays on one replica."""
    ports = [st.start_stub(stub, "--port", 0, "--ttft-ms", 2, "--itl-ms", 1)[1] for _ in (0, 1)]
    out = os.path.join(d, "fleet.json")
    cmd = [servebench, "run", "--model", "m", "--out", out, "--quiet", "--warmup", "0",
           "--route", "prefix-affinity", "--concurrency", "2", "--num-requests", str(REQS),
           "--input-len", str(IN), "--output-len", "4", "--seed", "9", "--prefix-len", str(N),
           "--prefix-groups", str(G)]
    for p in ports:
        cmd[2:2] = ["--url", f"http://127.0.0.1:{p}"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        st.fail(f"prefix-affinity fleet: exit {p.returncode}: {p.stderr}")
    where = {}
    for r in st.all_requests(st.load_results(out)):
        where.setdefault(r["prefix_group"], set()).add(r["replica"])
    if len(where) != G or any(len(v) != 1 for v in where.values()):
        st.fail(f"prefix-affinity: groups' replicas {where}, want one each")


def validated(stub, servebench, d):
    """servebench validate --prefix-len against the stub."""
    p, port = st.start_stub(stub, "--port", 0, "--ttft-ms", 2, "--itl-ms", 1)
    model = os.path.join(d, "model.json")
    with open(model, "w") as f:
        f.write('{"schema": "servebench.model/1", "name": "stub", "server": {"slots": 4, '
                '"max_queue": -1, "batch_tokens": 2048}, "overhead_ms": 2.0, '
                '"step_ms": {"decode_ms": {"1": 1.0}, "per_prefill_token": 0.0}}')
    meas = os.path.join(d, "validated.json")
    cmd = [servebench, "validate", "--model-file", model, "--url", f"http://127.0.0.1:{port}",
           "--model", "m", "--concurrency", "1,2", "--rates", "none", "--num-requests", "6",
           "--input-len", str(IN), "--output-len", "4", "--prefix-len", str(N),
           "--prefix-groups", str(G), "--seed", "9", "--probe", "0", "--quiet",
           "--out-measured", meas]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if r.returncode not in (0, 1):
        st.fail(f"validate --prefix-len: exit {r.returncode}: {r.stderr}")
    res = st.load_results(meas)
    if res["workload"].get("prefix_len") != N or res["workload"].get("prefix_groups") != G:
        st.fail(f"validate --prefix-len: measured workload {res['workload']!r}")
    if any(not 0 <= r.get("prefix_group", -1) < G for r in st.all_requests(res)):
        st.fail("validate --prefix-len: a record without its prefix group")
    st.stop(p)


def test(argv):
    stub, servebench = argv[1], argv[2]
    d = st.tmpdir()
    res, hs = measured(stub, servebench, d, "prefix", "--prefix-len", N, "--prefix-groups", G)
    reqs = st.all_requests(res)
    if res["workload"].get("prefix_len") != N or res["workload"].get("prefix_groups") != G:
        st.fail(f"workload: {res['workload']!r}")
    groups = [r.get("prefix_group") for r in reqs]
    if sorted(set(groups)) != list(range(G)):
        st.fail(f"prefix groups {groups}: expected each of 0..{G - 1}")
    for r in reqs:
        if abs(r["prompt_tokens"] - (N + IN)) > 0.1 * (N + IN):
            st.fail(f"record {r['id']}: {r['prompt_tokens']} prompt tokens, asked {N} + {IN}")
    # the heads, in the order sent: concurrency 2 sends ids in order, and
    # the stub logs each body when it arrives; match them as sets per group
    if len(set(hs)) != G:
        st.fail(f"{len(set(hs))} different prompt heads, expected {G}: {sorted(set(hs))}")
    again, hs2 = measured(stub, servebench, d, "again", "--prefix-len", N, "--prefix-groups", G)
    def by_id(rs):   # records are listed as they ended: two clients end in either order
        return sorted((r["id"], r.get("prefix_group")) for r in rs)
    if by_id(st.all_requests(again)) != by_id(reqs) or set(hs2) != set(hs):
        st.fail("the same seed sent other prefixes or groups")
    plain, hs3 = measured(stub, servebench, d, "plain")
    if any("prefix_group" in r for r in st.all_requests(plain)) or "prefix_len" in plain["workload"]:
        st.fail("plain: a prefix without --prefix-len")
    if len(set(hs3)) < REQS - 1:
        st.fail(f"plain: prompts share their heads: {len(set(hs3))} different")
    sticky(stub, servebench, d)
    validated(stub, servebench, d)
    refused(servebench, d, ["--prefix-groups", 2, "--num-requests", 1], ["prefix_groups"])
    refused(servebench, d, ["--prefix-len", 8, "--reuse-prompt", "--num-requests", 1],
            ["--prefix-len", "--reuse-prompt"])
    return 0


if __name__ == "__main__":
    st.main(test)
