#!/usr/bin/env python3
"""Secrets and TLS options of `servebench run`, against the stub.

The API key (from --api-key-env, --api-key-file or $SERVEBENCH_API_KEY)
must reach the server as a bearer token (the stub started with --require-key
answers 401 otherwise) and must appear nowhere else: not in stdout/stderr
(--verbose shows it redacted), not in the results file or the partial JSONL,
and never on the command line. A CA file that cannot be read is refused.

Usage: test_secrets.py STUB_SERVER SERVEBENCH
"""
import os
import subprocess

import stubtest as st

KEY = "sk-test-0123456789abcdef-SECRET"


def leaks(paths, texts):
    for t in texts:
        if KEY in t:
            return "output"
    for p in paths:
        if os.path.exists(p) and KEY in open(p, errors="replace").read():
            return p
    return None


def run(servebench, port, out, extra, env):
    cmd = [servebench, "run", "--url", f"http://127.0.0.1:{port}", "--model", "m",
           "--concurrency", "2", "--num-requests", "4", "--warmup", "0",
           "--input-len", "8", "--output-len", "4", "--seed", "1", "--verbose",
           "--out", out, *extra]
    if KEY in " ".join(cmd):
        st.fail("the test itself put the key on the command line")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                          env=env)


def test(argv):
    stub, servebench = argv[1], argv[2]
    d = st.tmpdir()
    p, port = st.start_stub(stub, "--port", 0, "--ttft-ms", 2, "--itl-ms", 1,
                            "--require-key", KEY)
    keyfile = os.path.join(d, "key")
    with open(keyfile, "w") as f:
        f.write(KEY + "\n")
    env = dict(os.environ)
    env.pop("SERVEBENCH_API_KEY", None)
    cases = [
        ("env", ["--api-key-env", "SB_TEST_KEY"], {"SB_TEST_KEY": KEY}),
        ("file", ["--api-key-file", keyfile], {}),
        ("default-env", [], {"SERVEBENCH_API_KEY": KEY}),
    ]
    for name, extra, add in cases:
        out = os.path.join(d, f"{name}.json")
        r = run(servebench, port, out, extra, {**env, **add})
        if r.returncode != 0:
            st.fail(f"{name}: exit {r.returncode} (the stub refuses a missing or "
                    f"wrong key with 401): {r.stderr[-1500:]}")
        where = leaks([out, out + ".partial.jsonl"], [r.stdout, r.stderr])
        if where:
            st.fail(f"{name}: the API key leaked into {where}")
        if "[redacted" not in r.stderr:
            st.fail(f"{name}: --verbose did not show the redacted header: {r.stderr}")
        res = st.load_results(out)
        st.check_schema(res)
    # without a key the stub answers 401: the run completes with failures
    out = os.path.join(d, "nokey.json")
    r = run(servebench, port, out, [], env)
    if r.returncode != 1:
        st.fail(f"no key: expected exit 1 (requests refused), got {r.returncode}")
    # an unreadable key file or CA bundle is a usage error naming the file
    for extra, needle in ((["--api-key-file", os.path.join(d, "nope")], "nope"),
                          (["--cacert", os.path.join(d, "no-ca.pem")], "no-ca.pem")):
        r = run(servebench, port, os.path.join(d, "x.json"), extra, env)
        if r.returncode != 2 or needle not in r.stderr:
            st.fail(f"{extra}: expected exit 2 naming {needle}, got {r.returncode}: "
                    f"{r.stderr}")
    st.stop(p)
    return 0


if __name__ == "__main__":
    st.main(test)
