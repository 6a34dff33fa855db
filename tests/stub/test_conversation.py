#!/usr/bin/env python3
"""`servebench run --conversations C --turns T` against the stub.

The stub counts a prompt's tokens as the words of every message (or of the
prompt text) and answers " tok" per output token, so a turn's prompt size
is known exactly: turn k of --input-len 20 --output-len 5 holds the k user
messages and the k-1 answers before it, 20k + 5(k-1) tokens, of which
25(k-1) are history. For every API (messages for the chat ones, one text
for the others), each record's prompt_tokens and prefix_tokens are those,
its prefix_group names its conversation and turn counts 1..T in the order
sent, each turn sent after the one before it was answered (by --think
later: 0.1 s), C conversations at a time, every conversation of T turns
but at most C cut short by the cap on sends; results' workload says the
turns. Open loop (--mode rate --levels 4 --turns 3 --think 0.05): the
sends, conversations begun and their turns, are the 12 asked for, each
next turn scheduled 0.05 s after the last answer (the think time is fixed
here), with its history. A turn that
fails (the stub's HTTP 500 on every 4th request) ends its conversation: no
later turn of it is sent. Refused with exit 2 naming what is wrong:
--turns without --conversations, --conversations beside --mode rate,
beside --reuse-prompt, and --turns 0.

Usage: test_conversation.py STUB_SERVER SERVEBENCH
"""
import os
import subprocess

import stubtest as st

IN, OUT, TURNS, C, REQS = 20, 5, 3, 2, 12


def measured(stub, servebench, d, name, stub_args=(), args=()):
    p, port = st.start_stub(stub, "--port", 0, "--ttft-ms", 2, "--itl-ms", 1, *stub_args)
    out = os.path.join(d, name + ".json")
    rc, res, _, err = st.run_client(servebench, port, out, "--conversations", C,
                                    "--turns", TURNS, "--num-requests", REQS,
                                    "--input-len", IN, "--output-len", OUT, "--seed", 3, *args)
    st.stop(p)
    if res is None:
        st.fail(f"{name}: exit {rc}: {err}")
    st.check_schema(res)
    return rc, res


def by_conversation(reqs):
    conv = {}
    for r in sorted(reqs, key=lambda r: r["t_sent_s"]):
        conv.setdefault(r.get("prefix_group"), []).append(r)
    return conv


def check_turns(name, res, think_s=0.0):
    reqs = st.all_requests(res)
    if res["workload"].get("turns") != TURNS:
        st.fail(f"{name}: workload turns {res['workload'].get('turns')!r}")
    conv = by_conversation(reqs)
    if None in conv:
        st.fail(f"{name}: a record without a conversation")
    for k, rs in conv.items():
        if [r["turn"] for r in rs] != list(range(1, len(rs) + 1)):
            st.fail(f"{name}: conversation {k} turns {[r['turn'] for r in rs]}")
        for a, b in zip(rs, rs[1:]):
            if b["t_sent_s"] < a["t_done_s"] + think_s - 0.002:
                st.fail(f"{name}: conversation {k} turn {b['turn']} sent at {b['t_sent_s']:.3f}, "
                        f"the turn before answered at {a['t_done_s']:.3f} (think {think_s})")
    for r in reqs:
        k = r["turn"]
        if r["prompt_tokens"] != IN * k + OUT * (k - 1) or r["prefix_tokens"] != (IN + OUT) * (k - 1):
            st.fail(f"{name}: turn {k}: prompt {r['prompt_tokens']}, history "
                    f"{r['prefix_tokens']}; want {IN * k + OUT * (k - 1)}, {(IN + OUT) * (k - 1)}")
    # every conversation runs its TURNS turns, but for those the cap of
    # REQS sends cut short: at most one per client (which of the C clients
    # finishes first is the server's timing)
    lens = sorted(len(rs) for rs in conv.values())
    if sum(lens) != REQS or sum(n != TURNS for n in lens) > C:
        st.fail(f"{name}: conversations of {lens} turns; want {REQS} sends, each conversation "
                f"{TURNS} turns but at most {C} cut short by the cap")


def refused(servebench, args, words):
    cmd = [servebench, "run", "--url", "http://127.0.0.1:9", "--model", "m", *map(str, args)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if p.returncode != 2 or not all(w in p.stderr for w in words):
        st.fail(f"{args}: expected exit 2 naming {words}, got {p.returncode}: {p.stderr}")


def test(argv):
    stub, servebench = argv[1], argv[2]
    d = st.tmpdir()
    for api in ("openai-chat", "ollama-chat", "llama-completion", "openai-completions"):
        rc, res = measured(stub, servebench, d, api, args=("--api", api))
        if rc != 0:
            st.fail(f"{api}: exit {rc}")
        check_turns(api, res)
    rc, res = measured(stub, servebench, d, "think", args=("--think", 0.1))
    check_turns("think", res, think_s=0.1)
    rc, res = measured(stub, servebench, d, "faults", stub_args=("--fault", "http500",
                                                                    "--fault-every", 4))
    reqs = st.all_requests(res)
    failed = [r for r in reqs if st.err_class(r)]
    if not failed or rc != 1:
        st.fail(f"faults: exit {rc}, {len(failed)} failed requests")
    for k, rs in by_conversation(reqs).items():
        bad = [i for i, r in enumerate(rs) if st.err_class(r)]
        if bad and bad[0] != len(rs) - 1:
            st.fail(f"faults: conversation {k} went on after its failed turn")
    # open loop: conversations begun at 4/s, each next turn 0.05 s after
    # the last answer; the 12 sends in all capped, records scheduled so
    p, port = st.start_stub(stub, "--port", 0, "--ttft-ms", 2, "--itl-ms", 1)
    out = os.path.join(d, "open.json")
    rc, res, _, err = st.run_client(servebench, port, out, "--mode", "rate", "--levels", 4,
                                    "--turns", TURNS, "--think", 0.05, "--num-requests", REQS,
                                    "--input-len", IN, "--output-len", OUT, "--seed", 3)
    st.stop(p)
    if rc != 0 or res is None:
        st.fail(f"open loop: exit {rc}: {err}")
    reqs = st.all_requests(res)
    if len(reqs) != REQS:
        st.fail(f"open loop: {len(reqs)} requests, want {REQS}")
    for k, rs in by_conversation(reqs).items():
        if [r["turn"] for r in rs] != list(range(1, len(rs) + 1)):
            st.fail(f"open loop: conversation {k} turns {[r['turn'] for r in rs]}")
        for a, b in zip(rs, rs[1:]):
            if abs(b["t_scheduled_s"] - a["t_done_s"] - 0.05) > 0.01 or \
               b["prompt_tokens"] != IN * b["turn"] + OUT * (b["turn"] - 1):
                st.fail(f"open loop: conversation {k} turn {b['turn']} scheduled "
                        f"{b['t_scheduled_s'] - a['t_done_s']:.3f} s after the last answer, "
                        f"prompt {b['prompt_tokens']}")
    refused(servebench, ["--concurrency", 1, "--turns", 3], ["--turns", "--conversations"])
    refused(servebench, ["--conversations", 2, "--mode", "rate", "--levels", 1],
            ["--conversations", "--levels"])
    refused(servebench, ["--conversations", 2, "--turns", 0], ["--turns", "at least 1"])
    return 0


if __name__ == "__main__":
    st.main(test)
