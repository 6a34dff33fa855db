#!/usr/bin/env python3
"""SSE/NDJSON framing variants give the same token counts: for each API the
client speaks, against the stub plain, with events split across TCP writes
at odd byte positions (--split), CRLF line ends (--crlf), ': keep-alive'
comments between tokens (--keepalive-ms), a connection-close body instead of
chunked encoding (--close-mode), and split+CRLF+close together.

Usage: test_framing.py STUB_SERVER SERVEBENCH
"""
import os

import stubtest as st

OUT, INP, N = 12, 8, 4
VARIANTS = ([], ["--split"], ["--crlf"], ["--keepalive-ms", "3"],
            ["--close-mode"], ["--split", "--crlf", "--close-mode"])
APIS = ("openai-chat", "openai-completions", "ollama-generate", "ollama-chat",
        "llama-completion")


def main(argv):
    stub, sb = argv[1], argv[2]
    d = st.tmpdir()
    problems = []
    for flags in VARIANTS:
        p, port = st.start_stub(stub, "--ttft-ms", 6, "--itl-ms", 4, *flags)
        for api in APIS:
            label = f"{api} {' '.join(flags) or '(plain)'}"
            out = os.path.join(d, f"{api}{''.join(flags)}.json")
            rc, res, _, err = st.run_client(
                sb, port, out, "--api", api, "--concurrency", 2,
                "--num-requests", N, "--input-len", INP, "--output-len", OUT,
                timeout=60)
            if rc != 0 or res is None:
                problems.append(f"{label}: exit {rc}: {err.strip()[-300:]}")
                continue
            st.check_schema(res)
            reqs = st.all_requests(res)
            counts = sorted({(r.get("output_tokens"), len(r.get("itl_ms") or []),
                              st.err_class(r)) for r in reqs})
            if len(reqs) != N or counts != [(OUT, OUT - 1, None)]:
                problems.append(f"{label}: (output_tokens, gaps, error) = "
                                f"{counts} over {len(reqs)} requests, want "
                                f"[({OUT}, {OUT - 1}, None)] x {N}")
            else:
                print(f"{label}: ok")
        st.stop(p)
    # --api auto: the stub answers /props like llama.cpp
    p, port = st.start_stub(stub, "--ttft-ms", 6, "--itl-ms", 4)
    out = os.path.join(d, "auto.json")
    rc, res, _, err = st.run_client(sb, port, out, "--api", "auto",
                                    "--concurrency", 2, "--num-requests", N,
                                    "--input-len", INP, "--output-len", OUT,
                                    timeout=60)
    st.stop(p)
    if rc != 0 or res is None or any(
            r.get("output_tokens") != OUT for r in st.all_requests(res)):
        problems.append(f"--api auto: exit {rc}: {err.strip()[-300:]}")
    else:
        print(f"--api auto: ok ({res['target'].get('api')})")
    if problems:
        st.fail("framing variants:\n  " + "\n  ".join(problems))
    return 0


if __name__ == "__main__":
    st.main(main)
