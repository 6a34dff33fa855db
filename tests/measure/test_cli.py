#!/usr/bin/env python3
"""`servebench run` command-line contract: bad usage exits 2 with one message
naming the bad value; an unreachable server exits 3 with one clear line.

Usage: test_cli.py SERVEBENCH
"""
import socket
import subprocess
import sys

failures = []


def run(sb, *args, timeout=30):
    p = subprocess.run([sb, "run", *args], capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def free_port():
    """A loopback port nobody listens on (bound, then released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def expect(sb, want_rc, needle, *args):
    rc, out, err = run(sb, *args)
    what = " ".join(args)
    if rc != want_rc:
        failures.append(f"{what}: exit {rc}, want {want_rc}; stderr {err!r}")
    elif needle is not None and needle not in err:
        failures.append(f"{what}: stderr {err!r} does not name {needle!r}")
    elif want_rc != 0 and len(err.strip().splitlines()) != 1:
        failures.append(f"{what}: want one line on stderr, got {err!r}")


def main():
    sb = sys.argv[1]
    url = f"http://127.0.0.1:{free_port()}"
    base = ["--url", url, "--model", "m"]
    # bad usage: exit 2, naming the value
    expect(sb, 2, "--url", "--model", "m", "--concurrency", "1")
    expect(sb, 2, "--model", "--url", url, "--concurrency", "1")
    expect(sb, 2, "--concurrency", *base)
    expect(sb, 2, "--bogus", *base, "--concurrency", "1", "--bogus")
    expect(sb, 2, "abc", *base, "--concurrency", "abc")
    expect(sb, 2, "'x'", *base, "--concurrency", "1,x")
    expect(sb, 2, "0", *base, "--concurrency", "0")
    expect(sb, 2, "1.5", *base, "--concurrency", "1,1.5")
    expect(sb, 2, "--levels", *base, "--mode", "rate")
    expect(sb, 2, "fast", *base, "--mode", "fast", "--levels", "1")
    expect(sb, 2, "-1", *base, "--mode", "rate", "--levels", "1,-1")
    expect(sb, 2, "not both", *base, "--concurrency", "1", "--mode", "rate",
           "--levels", "1")
    expect(sb, 2, "ten", *base, "--concurrency", "1", "--num-requests", "ten")
    expect(sb, 2, "0", *base, "--concurrency", "1", "--input-len", "0")
    expect(sb, 2, "7.5", *base, "--concurrency", "1", "--output-len", "7.5")
    expect(sb, 2, "-3", *base, "--concurrency", "1", "--timeout", "-3")
    expect(sb, 2, "grpc", *base, "--concurrency", "1", "--api", "grpc")
    expect(sb, 2, "weibull", *base, "--mode", "rate", "--levels", "1",
           "--arrival", "weibull")
    expect(sb, 2, "x", *base, "--concurrency", "1", "--seed", "x")
    expect(sb, 2, "--warmup", *base, "--concurrency", "1", "--warmup")
    expect(sb, 2, "SB_TEST_SURELY_UNSET_KEY", *base, "--concurrency", "1",
           "--api-key-env", "SB_TEST_SURELY_UNSET_KEY")
    expect(sb, 2, "ftp://x", "--url", "ftp://x", "--model", "m",
           "--concurrency", "1")
    expect(sb, 2, "not both", *base, "--concurrency", "1",
           "--num-requests", "3", "--duration", "2")
    # nothing listens: exit 3 with one line naming the URL
    expect(sb, 3, url, *base, "--concurrency", "1", "--num-requests", "1")
    expect(sb, 3, url, "--url", url + "/v1", "--model", "m", "--mode", "rate",
           "--levels", "2")
    # --help is not an error
    rc, out, _ = run(sb, "--help")
    if rc != 0 or "--concurrency" not in out:
        failures.append(f"--help: exit {rc}")
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    print(f"test_cli: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
