"""test_bench.py — one measurement handle, several workloads (test_bench.c)
against a stub with 4 slots: starts the stub, runs the test program with
its URL and PID (the program kills the stub at the end, to see a
measurement fail with -ECONNREFUSED once the server is gone).
usage: test_bench.py STUB_SERVER TEST_BENCH"""
import subprocess

import stubtest as st


def run(argv):
    stub, prog = argv[1], argv[2]
    p, port = st.start_stub(stub, "--slots", 4, "--ttft-ms", 20, "--itl-ms", 5)
    r = subprocess.run([prog, f"http://127.0.0.1:{port}", str(p.pid)],
                       capture_output=True, text=True, timeout=120)
    print(r.stdout, end="")
    print(r.stderr, end="")
    if r.returncode != 0:
        st.fail(f"test_bench exited {r.returncode}")
    st.stop(p)
    return 0


st.main(run)
