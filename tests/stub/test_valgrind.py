#!/usr/bin/env python3
"""A full `servebench run` under valgrind against the stub: two closed-loop
levels and one open-loop level, with every second request reset mid-stream,
so the error paths run too. valgrind must report no errors and no definite
or indirect leaks (its exit status 99 says it did); servebench itself must
exit 1 (some requests failed) and write valid results.

Usage: test_valgrind.py STUB_SERVER SERVEBENCH
"""
import os
import shutil
import subprocess

import stubtest as st


def test(argv):
    stub, servebench = argv[1], argv[2]
    vg = shutil.which("valgrind")
    if not vg:
        return st.SKIP
    d = st.tmpdir()
    p, port = st.start_stub(stub, "--port", 0, "--ttft-ms", 5, "--itl-ms", 2,
                            "--fault", "reset", "--fault-every", 2)
    for name, load in (("closed", ["--concurrency", "1,3"]),
                       ("open", ["--mode", "rate", "--levels", "20"])):
        out = os.path.join(d, f"{name}.json")
        cmd = [vg, "--error-exitcode=99", "--leak-check=full",
               "--errors-for-leak-kinds=definite,indirect", "--quiet",
               servebench, "run", "--url", f"http://127.0.0.1:{port}",
               "--model", "m", *load, "--num-requests", "12", "--warmup", "1",
               "--input-len", "16", "--output-len", "8", "--seed", "3",
               "--quiet", "--out", out]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if r.returncode == 99:
            st.fail(f"{name}: valgrind reported errors or leaks:\n{r.stderr[-4000:]}")
        if r.returncode != 1:
            st.fail(f"{name}: servebench exited {r.returncode}, want 1 (half the "
                    f"requests reset):\n{r.stderr[-2000:]}")
        res = st.load_results(out)
        st.check_schema(res)
        reqs = st.all_requests(res)
        ok = [q for q in reqs if st.err_class(q) is None]
        bad = [q for q in reqs if st.err_class(q) == "truncated"]
        if not ok or not bad:
            st.fail(f"{name}: expected both successes and truncated requests, got "
                    f"{len(ok)} ok / {len(bad)} truncated")
    st.stop(p)
    return 0


if __name__ == "__main__":
    st.main(test)
