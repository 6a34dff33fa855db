#!/usr/bin/env python3
"""serve_limits.py — `sbsim serve` at its limits: the queue bound, the
context per slot, a client that goes away, bad and slow clients beside a
running stream, injected faults, replicas, the token accounting, and bad
command lines. Python 3 stdlib only; a raw-socket HTTP/1.1 client, so that
every chunk's arrival time is the client's own.

Usage: serve_limits.py SBSIM

Every emulator is started here (--port 0 --ready-file in a temporary
directory, bound to 127.0.0.1) and stopped by its PID with SIGTERM; it must
exit 0 within a few seconds. One line per check, a summary at the end; exit
status 1 when any check failed.
"""
import json
import math
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

SBSIM = sys.argv[1] if len(sys.argv) > 1 else "build/app/sbsim"
HOST = "127.0.0.1"

# ---- checks -------------------------------------------------------------------

_results = []
_lock = threading.Lock()


def check(name, ok, detail=""):
    """Records and prints one check."""
    with _lock:
        _results.append((name, bool(ok)))
        print(f"{'ok  ' if ok else 'FAIL'} {name}" + (f"  [{detail}]" if detail else ""),
              flush=True)
    return bool(ok)


# ---- the emulator -------------------------------------------------------------

_procs = []
_tmp = tempfile.mkdtemp(prefix="serve_limits.")


class Emu:
    """One `sbsim serve` (all its replicas): urls, ports, stop()."""
    n = 0

    def __init__(self, *flags, replicas=1, timeout=10.0):
        Emu.n += 1
        d = os.path.join(_tmp, f"e{Emu.n}")
        os.mkdir(d)
        self.ready = os.path.join(d, "ready")
        self.out = os.path.join(d, "out")
        self.err = os.path.join(d, "err")
        self.flags = list(map(str, flags))
        argv = [SBSIM, "serve", "--host", HOST, "--port", "0", "--ready-file", self.ready,
                *self.flags]
        with open(self.out, "w") as o, open(self.err, "w") as e:
            self.p = subprocess.Popen(argv, stdout=o, stderr=e, stdin=subprocess.DEVNULL)
        _procs.append(self.p)
        deadline = time.monotonic() + timeout
        self.urls = []
        while time.monotonic() < deadline:
            if self.p.poll() is not None:
                raise AssertionError(f"sbsim serve {' '.join(self.flags)} exited "
                                     f"{self.p.returncode}: {self.stderr()}")
            try:
                with open(self.ready) as f:
                    text = f.read()
            except FileNotFoundError:
                text = ""
            lines = [ln for ln in text.split("\n")[:-1] if ln]  # complete lines only
            if len(lines) >= replicas:
                self.urls = lines
                break
            time.sleep(0.02)
        if len(self.urls) < replicas:
            raise AssertionError(f"sbsim serve {' '.join(self.flags)}: no ready file "
                                 f"in {timeout} s")
        self.ports = [int(u.rsplit(":", 1)[1]) for u in self.urls]
        self.port = self.ports[0]

    def stderr(self):
        with open(self.err) as f:
            return f.read()[-2000:]

    def stop(self, name):
        """SIGTERM by PID; checks it exits 0 within 5 s."""
        t0 = time.monotonic()
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
                return check(f"{name}: exits 0 on SIGTERM", False, "still running after 5 s")
        rc = self.p.returncode
        return check(f"{name}: exits 0 on SIGTERM", rc == 0,
                     f"rc {rc} in {time.monotonic() - t0:.2f} s"
                     + ("" if rc == 0 else f"; stderr: {self.stderr()}"))


# ---- HTTP (raw sockets) ---------------------------------------------------------


class Resp:
    def __init__(self):
        self.status = None
        self.headers = {}
        self.body = b""
        self.pieces = []         # (t, bytes) per chunk (streamed) or read
        self.complete = False    # the body ended as HTTP says (last chunk seen)
        self.error = None        # why it did not (connection closed, reset)
        self.t0 = None           # the request was sent (monotonic)

    def json(self):
        try:
            return json.loads(self.body)
        except ValueError:
            return None


def connect(port, timeout=30):
    return socket.create_connection((HOST, port), timeout=timeout)


def request_bytes(method, path, body=None, close=True):
    if body is not None and not isinstance(body, (bytes, bytearray)):
        body = json.dumps(body).encode()
    head = f"{method} {path} HTTP/1.1\r\nHost: {HOST}\r\n"
    if body is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    if close:
        head += "Connection: close\r\n"
    return head.encode() + b"\r\n" + (body or b"")


class Reader:
    """Reads one HTTP response from a socket, piece by piece."""

    def __init__(self, sock):
        self.s = sock
        self.buf = b""

    def more(self):
        d = self.s.recv(65536)
        if not d:
            raise ConnectionError("connection closed by the server")
        self.buf += d

    def head(self, r):
        while b"\r\n\r\n" not in self.buf:
            self.more()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        r.status = int(lines[0].split()[1])
        r.headers = {k.strip().lower(): v.strip() for k, v in
                     (ln.split(":", 1) for ln in lines[1:] if ":" in ln)}

    def chunks(self, r):
        """Yields the body's pieces as (t, bytes) as they arrive."""
        if r.headers.get("transfer-encoding", "").lower() == "chunked":
            while True:
                while b"\r\n" not in self.buf:
                    self.more()
                size_s, self.buf = self.buf.split(b"\r\n", 1)
                size = int(size_s.split(b";")[0], 16)
                while len(self.buf) < size + 2:
                    self.more()
                data, self.buf = self.buf[:size], self.buf[size + 2:]
                if size == 0:
                    r.complete = True
                    return
                yield time.monotonic(), data
        elif "content-length" in r.headers:
            n = int(r.headers["content-length"])
            while len(self.buf) < n:
                self.more()
            data, self.buf = self.buf[:n], self.buf[n:]
            r.complete = True
            yield time.monotonic(), data
        else:
            while True:
                try:
                    self.more()
                except ConnectionError:
                    r.complete = True
                    return
                data, self.buf = self.buf, b""
                yield time.monotonic(), data


def http(port, method, path, body=None, timeout=30, on_piece=None):
    """One exchange on a new connection. Never raises for the server's doing:
    a closed or reset connection is r.error."""
    r = Resp()
    try:
        s = connect(port, timeout)
    except OSError as e:
        r.error = f"connect: {e}"
        return r
    try:
        r.t0 = time.monotonic()
        s.sendall(request_bytes(method, path, body))
        rd = Reader(s)
        rd.head(r)
        for t, data in rd.chunks(r):
            r.pieces.append((t, data))
            r.body += data
            if on_piece and on_piece(r, t, data) is False:
                break
    except (OSError, ConnectionError, ValueError) as e:
        r.error = f"{type(e).__name__}: {e}"
    finally:
        s.close()
    return r


def get_json(port, path):
    return http(port, "GET", path).json()


def metrics(port):
    """GET /metrics as {name: value} (the samples without buckets)."""
    out = {}
    for ln in http(port, "GET", "/metrics").body.decode().splitlines():
        if not ln or ln.startswith("#"):
            continue
        name, _, val = ln.rpartition(" ")
        key = name.split("{")[0]
        if "_bucket" in key:
            continue
        out[key] = float(val)
    return out


# ---- streamed bodies -------------------------------------------------------------


def events(r, api):
    """The streamed body of r as a list of (t, obj) events: SSE "data:" JSON
    (the [DONE] marker as the string "[DONE]") or NDJSON lines (Ollama).
    Each event takes the arrival time of the piece that completed it."""
    out, pend = [], b""
    for t, data in r.pieces:
        pend += data
        while True:
            if api == "ollama":
                i = pend.find(b"\n")
                if i < 0:
                    break
                ln, pend = pend[:i], pend[i + 1:]
                if ln.strip():
                    out.append((t, json.loads(ln)))
            else:
                i = pend.find(b"\n\n")
                if i < 0:
                    break
                ev, pend = pend[:i], pend[i + 2:]
                for ln in ev.split(b"\n"):
                    if ln.startswith(b"data: "):
                        d = ln[6:].strip()
                        out.append((t, "[DONE]" if d == b"[DONE]" else json.loads(d)))
    return out


def is_token(api, ev):
    """Whether a streamed event carries one output token."""
    if api == "ollama":
        return not ev.get("done")
    if api == "llama":
        return not ev.get("stop")
    if ev == "[DONE]":
        return False
    ch = ev.get("choices") or []
    if not ch or ch[0].get("finish_reason") is not None:
        return False
    c = ch[0]
    return "text" in c or "content" in c.get("delta", {})


def token_times(r, api):
    return [t for t, ev in events(r, api) if is_token(api, ev)]


class Background(threading.Thread):
    """A request run on its own thread; .r once joined. first: an Event set
    at the first body piece (for a streamed reply: its first token)."""

    def __init__(self, port, method, path, body=None, on_piece=None):
        super().__init__(daemon=True)
        self.args = (port, method, path, body)
        self.first = threading.Event()
        self.user_piece = on_piece
        self.r = None
        self.start()

    def run(self):
        def piece(r, t, d):
            self.first.set()
            return self.user_piece(r, t, d) if self.user_piece else None
        try:
            self.r = http(*self.args, on_piece=piece, timeout=60)
        finally:
            self.first.set()


def words(n, w="word"):
    return " ".join(f"{w}{i}" for i in range(n))


def ttft(port, path="/completion", n=4, api="llama"):
    """Client-side time to first token of a small streamed request (s)."""
    body = ({"prompt": "how fast is the first token", "n_predict": n, "stream": True}
            if api == "llama" else
            {"model": "m", "prompt": "how fast is the first token", "options": {"num_predict": n}})
    r = http(port, "POST", path, body)
    ts = token_times(r, api) if r.status == 200 else []
    return (ts[0] - r.t0) if ts else float("inf"), r


# ---- 1. queue full --------------------------------------------------------------


def test_queue_full():
    name = "queue"
    em = Emu("--kind", "ollama", "--slots", 1, "--max-queue", 1, "--no-noise")
    port = em.port
    body = {"model": "m", "prompt": "tell me a long story", "options": {"num_predict": 400}}
    a = Background(port, "POST", "/api/generate", body)
    a.first.wait(10)
    b = Background(port, "POST", "/api/generate", body)
    time.sleep(0.15)  # b is in the queue now (submitted in FIFO order)
    m_mid = metrics(port)
    c = http(port, "POST", "/api/generate", body, timeout=10)
    t_c = time.monotonic() - c.t0
    for t in (a, b):
        t.join(30)
    ra, rb = a.r, b.r
    ea, eb = events(ra, "ollama"), events(rb, "ollama")
    ta = [t for t, e in ea if not e.get("done")]
    tb = [t for t, e in eb if not e.get("done")]
    check(f"{name}: first request streams 400 tokens",
          ra.status == 200 and ra.complete and len(ta) == 400 and ea[-1][1].get("done"),
          f"status {ra.status}, {len(ta)} tokens")
    check(f"{name}: second waits in the queue (deferred 1, processing 1 meanwhile)",
          m_mid.get("llamacpp:requests_deferred") == 1
          and m_mid.get("llamacpp:requests_processing") == 1,
          f"deferred {m_mid.get('llamacpp:requests_deferred')}, "
          f"processing {m_mid.get('llamacpp:requests_processing')}")
    check(f"{name}: second completes, its first token after the first request's last",
          rb.status == 200 and rb.complete and len(tb) == 400 and bool(ta) and bool(tb)
          and tb[0] >= ta[-1],
          f"status {rb.status}, {len(tb)} tokens, first token "
          f"{(tb[0] - ta[-1]) * 1e3 if ta and tb else float('nan'):+.0f} ms after a's last")
    want = {"error": "server busy, please try again.  maximum pending requests exceeded"}
    check(f"{name}: third gets 503 with Ollama's body at once",
          c.status == 503 and c.json() == want and t_c < 1.0,
          f"status {c.status}, body {c.body[:120]!r}, {t_c * 1e3:.0f} ms")
    m = metrics(port)
    check(f"{name}: sbsim_requests_rejected_total 1",
          m.get("sbsim_requests_rejected_total") == 1,
          f"{m.get('sbsim_requests_rejected_total')}")
    em.stop(name)


# ---- 2. context --------------------------------------------------------------------


def test_context():
    name = "context"
    prompt = words(100)  # 100 words: 101 tokens with BOS
    body = {"prompt": prompt, "n_predict": 8}
    em = Emu("--kind", "llama.cpp", "--ctx-per-slot", 64, "--context-overflow", "reject",
             "--no-noise")
    r = http(em.port, "POST", "/completion", body)
    e = (r.json() or {}).get("error", {})
    check(f"{name}: reject: 400 exceed_context_size_error",
          r.status == 400 and e.get("type") == "exceed_context_size_error"
          and e.get("code") == 400,
          f"status {r.status}, {r.body[:200]!r}")
    check(f"{name}: reject: n_prompt_tokens 101, n_ctx 64",
          e.get("n_prompt_tokens") == 101 and e.get("n_ctx") == 64,
          f"n_prompt_tokens {e.get('n_prompt_tokens')}, n_ctx {e.get('n_ctx')}")
    slots = get_json(em.port, "/slots") or []
    check(f"{name}: reject: no slot is left processing",
          slots and not any(s.get("is_processing") for s in slots), f"{slots}")
    em.stop(name + " reject")

    em = Emu("--kind", "llama.cpp", "--ctx-per-slot", 64, "--context-overflow", "truncate",
             "--no-noise")
    r = http(em.port, "POST", "/completion", body)
    j = r.json() or {}
    pn = (j.get("timings") or {}).get("prompt_n")
    te = j.get("tokens_evaluated")
    check(f"{name}: truncate: 200 with 8 tokens",
          r.status == 200 and j.get("tokens_predicted") == 8, f"status {r.status}")
    check(f"{name}: truncate: fewer prompt tokens than sent (101), within the context",
          isinstance(pn, int) and pn == te and 0 < pn < 101 and pn + 8 <= 64,
          f"timings.prompt_n {pn}, tokens_evaluated {te}")
    em.stop(name + " truncate")


# ---- 3. a client that goes away ------------------------------------------------------


def test_disconnect():
    name = "disconnect"
    em = Emu("--kind", "llama.cpp", "--slots", 1, "--no-noise")
    port = em.port
    base = sorted(ttft(port)[0] for _ in range(3))[1]
    check(f"{name}: unloaded TTFT measured", base < 1.0, f"{base * 1e3:.1f} ms")

    s = connect(port)
    s.sendall(request_bytes("POST", "/completion",
                            {"prompt": "a very long answer please", "n_predict": 2000,
                             "stream": True}))
    rd, r = Reader(s), Resp()
    rd.head(r)
    got = 0
    for _, data in rd.chunks(r):
        got += data.count(b"data: ")
        if got >= 5:
            break
    busy = get_json(port, "/slots")
    s.close()
    t_close = time.monotonic()
    check(f"{name}: the stream ran (slot 0 processing before the close)",
          r.status == 200 and got >= 5 and busy and busy[0].get("is_processing"),
          f"status {r.status}, {got} events")
    freed = None
    while time.monotonic() - t_close < 2.0:
        sl = get_json(port, "/slots")
        if sl and not sl[0].get("is_processing"):
            freed = time.monotonic() - t_close
            break
        time.sleep(0.01)
    check(f"{name}: /slots shows the slot free within 0.5 s of the close",
          freed is not None and freed <= 0.5,
          "not freed in 2 s" if freed is None else f"{freed * 1e3:.0f} ms")
    m = metrics(port)
    check(f"{name}: llamacpp:requests_processing 0, requests_deferred 0",
          m.get("llamacpp:requests_processing") == 0
          and m.get("llamacpp:requests_deferred") == 0,
          f"{m.get('llamacpp:requests_processing')}, {m.get('llamacpp:requests_deferred')}")
    # the 2000-token request would run ~2000 decode steps more: a new
    # request's TTFT must be the unloaded one (3x, or +100 ms, of slack for
    # the machine's noise), not seconds.
    t, r2 = ttft(port)
    bound = max(3 * base, base + 0.1)
    check(f"{name}: a new request's TTFT near the unloaded one",
          t <= bound, f"{t * 1e3:.1f} ms, unloaded {base * 1e3:.1f} ms, bound {bound * 1e3:.0f} ms")
    ev = events(r2, "llama")
    check(f"{name}: the new request completes (4 tokens)",
          r2.complete and len([e for _, e in ev if is_token("llama", e)]) == 4
          and ev and ev[-1][1].get("tokens_predicted") == 4, f"{r2.error or ''}")
    em.stop(name)


def test_disconnect_prefill():
    """A client gone while its long prompt is prefilled: the engine stops
    the request after the step in progress (sim/live.h), so the slot is
    free within a step (a 2048-token chunk, ~0.2 s here), not after the
    whole prompt."""
    name = "disconnect in prefill"
    em = Emu("--kind", "llama.cpp", "--slots", 1, "--no-noise")
    port = em.port
    s = connect(port)
    s.sendall(request_bytes("POST", "/completion", {"prompt": words(10000), "n_predict": 4}))
    t_sent = time.monotonic()
    busy = None
    while time.monotonic() - t_sent < 1.0:
        sl = get_json(port, "/slots")
        if sl and sl[0].get("is_processing"):
            busy = sl
            break
        time.sleep(0.01)
    time.sleep(0.1)
    s.close()
    t_close = time.monotonic()
    freed = None
    while time.monotonic() - t_close < 3.0:
        sl = get_json(port, "/slots")
        if sl and not sl[0].get("is_processing"):
            freed = time.monotonic() - t_close
            break
        time.sleep(0.01)
    check(f"{name}: the 10001-token prompt was in the slot", busy is not None, f"{busy}")
    check(f"{name}: /slots shows the slot free within 0.5 s of the close",
          freed is not None and freed <= 0.5,
          "not freed in 3 s" if freed is None else f"{freed * 1e3:.0f} ms")
    em.stop(name)


def test_shutdown():
    """SIGTERM with requests in flight: one decoding (streamed), one in
    prefill whose client went away, one waiting in the queue (not
    streamed): the emulator exits 0 and the clients see the connection
    close."""
    name = "shutdown"
    em = Emu("--kind", "llama.cpp", "--slots", 2, "--no-noise")
    port = em.port
    a = Background(port, "POST", "/completion",
                   {"prompt": "decoding at the signal", "n_predict": 2000, "stream": True})
    a.first.wait(10)
    g = connect(port)
    g.sendall(request_bytes("POST", "/completion", {"prompt": words(10000), "n_predict": 4}))
    time.sleep(0.15)
    q = Background(port, "POST", "/completion", {"prompt": "queued at the signal",
                                                   "n_predict": 50})
    time.sleep(0.1)
    m = metrics(port)
    check(f"{name}: requests in flight before the signal (processing 2, deferred 1)",
          m.get("llamacpp:requests_processing") == 2 and m.get("llamacpp:requests_deferred") == 1,
          f"{m.get('llamacpp:requests_processing')}, {m.get('llamacpp:requests_deferred')}")
    g.close()  # gone while its prompt is prefilled: the engine still has it
    time.sleep(0.02)
    em.stop(name)
    a.join(5)
    q.join(5)
    check(f"{name}: the clients saw their connections close",
          a.r is not None and not a.r.complete and q.r is not None and q.r.status is None,
          f"stream: complete {a.r and a.r.complete}; queued: status {q.r and q.r.status}")


# ---- 4. bad requests beside a running stream -----------------------------------------


def raise_nofile(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < n:
        new = n if hard == resource.RLIM_INFINITY else min(n, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def test_bad_requests():
    name = "bad"
    n_out = 800  # ~4 s of decode: longer than the slow client's 2 s
    em = Emu("--kind", "llama.cpp", "--slots", 2, "--max-body-mb", 1, "--no-noise")
    port = em.port
    run = Background(port, "POST", "/completion",
                     {"prompt": "the stream that must not stall", "n_predict": n_out,
                      "stream": True})
    run.first.wait(10)
    t_start = time.monotonic()

    # 300 idle connections, open until the end of the stream
    raise_nofile(1024)
    idle, idle_err = [], None
    try:
        for _ in range(300):
            idle.append(connect(port, timeout=10))
    except OSError as e:
        idle_err = str(e)
    check(f"{name}: 300 idle connections open", len(idle) == 300 and not idle_err,
          f"{len(idle)} open{', ' + idle_err if idle_err else ''}")

    # the slow client: a header byte every 0.2 s for 2 s, then the rest
    slow = {}

    def slow_client():
        try:
            s = connect(port, timeout=10)
            req = request_bytes("GET", "/health")
            for i in range(10):
                s.sendall(req[i:i + 1])
                time.sleep(0.2)
            s.sendall(req[10:])
            rd, r = Reader(s), Resp()
            rd.head(r)
            for _, d in rd.chunks(r):
                r.body += d
            slow["r"] = r
            s.close()
        except (OSError, ConnectionError, ValueError) as e:
            slow["err"] = str(e)
    st = threading.Thread(target=slow_client, daemon=True)
    st.start()

    r = http(port, "POST", "/completion", b'{"prompt": "unterminated', timeout=10)
    e = (r.json() or {}).get("error", {})
    check(f"{name}: invalid JSON: 400 in llama.cpp's form",
          r.status == 400 and e.get("code") == 400 and e.get("type") == "invalid_request_error"
          and isinstance(e.get("message"), str), f"status {r.status}, {r.body[:160]!r}")
    r = http(port, "POST", "/completion", {"n_predict": 5}, timeout=10)
    e = (r.json() or {}).get("error", {})
    check(f"{name}: missing prompt: 400 in llama.cpp's form, naming the field",
          r.status == 400 and e.get("type") == "invalid_request_error"
          and "prompt" in str(e.get("message")), f"status {r.status}, {r.body[:160]!r}")
    # a body past --max-body-mb 1: sent whole (a client that keeps writing)
    big = json.dumps({"prompt": "x" * (1 << 20), "n_predict": 1}).encode()
    r = http(port, "POST", "/completion", big, timeout=10)
    how = (f"HTTP {r.status}" if r.status else f"connection closed ({r.error})")
    check(f"{name}: body over --max-body-mb 1: 413 or closed connection",
          r.status == 413 or (r.status is None and r.error), how)
    print(f"     note: the oversized body got: {how}; body {r.body[:120]!r}", flush=True)

    st.join(10)
    sr = slow.get("r")
    check(f"{name}: the slow client (headers at 5 bytes/s for 2 s) is answered",
          sr is not None and sr.status == 200 and (sr.json() or {}).get("status") == "ok",
          slow.get("err") or (f"status {sr.status}" if sr else "no answer"))
    busy_for = time.monotonic() - t_start

    run.join(30)
    for s in idle:
        s.close()
    rr = run.r
    ev = events(rr, "llama")
    ts = [t for t, e in ev if is_token("llama", e)]
    check(f"{name}: the stream finished with {n_out} tokens",
          rr.status == 200 and rr.complete and len(ts) == n_out and ev
          and ev[-1][1].get("tokens_predicted") == n_out,
          f"{len(ts)} tokens, complete {rr.complete}, {rr.error or ''}")
    check(f"{name}: the stream outlived the bad clients", ts and ts[-1] > t_start + busy_for,
          f"bad clients {busy_for:.2f} s, stream {ts[-1] - ts[0] if ts else 0:.2f} s")
    # The bound: a decode step is ~5 ms here, so the median gap between
    # tokens is the step; a stream that a bad client blocked (the server
    # stuck reading a slow header or a big body, one loop for all) would
    # show a gap of the blocked time (hundreds of ms for the slow client).
    # 3x the median allows for steps that come out in pairs when a tick is
    # late; 50 ms is the floor for the scheduler of a busy 2-core machine
    # (a gap under it is no stall a client would see).
    gaps = [b - a for a, b in zip(ts, ts[1:])]
    if gaps:
        med, mx = statistics.median(gaps), max(gaps)
        bound = max(0.050, 3 * med)
        check(f"{name}: largest chunk gap below max(50 ms, 3 x median)", mx < bound,
              f"max {mx * 1e3:.1f} ms, median {med * 1e3:.2f} ms, bound {bound * 1e3:.0f} ms")
    else:
        check(f"{name}: largest chunk gap below max(50 ms, 3 x median)", False, "no tokens")
    m = metrics(port)
    check(f"{name}: nothing left processing", m.get("llamacpp:requests_processing") == 0,
          f"{m.get('llamacpp:requests_processing')}")
    em.stop(name)


# ---- 5. faults -------------------------------------------------------------------------


def binom_interval(n, p, conf):
    """The central interval [lo, hi] of Binomial(n, p) holding at least
    conf of its mass: lo the largest k with P(X < k) <= (1-conf)/2, hi the
    smallest k with P(X > k) <= (1-conf)/2 (exact sums, math.comb)."""
    a = (1 - conf) / 2
    pmf = [math.comb(n, k) * p ** k * (1 - p) ** (n - k) for k in range(n + 1)]
    lo, cum = 0, 0.0
    while cum + pmf[lo] <= a:
        cum += pmf[lo]
        lo += 1
    hi, cum = n, 0.0
    while cum + pmf[hi] <= a:
        cum += pmf[hi]
        hi -= 1
    return lo, hi


def test_faults():
    name = "fault"
    prompt = {"prompt": "a request that fails", "n_predict": 8}
    ollama_body = {"model": "m", "prompt": "a request that fails", "options": {"num_predict": 8}}
    openai_body = {"model": "m", "prompt": "a request that fails", "max_tokens": 8}
    cases = [  # kind, fail-kind, path, body, status, the body's check
        ("llama.cpp", "rate_limit", "/completion", prompt, 429,
         lambda j: j["error"]["code"] == 429 and j["error"]["type"] == "unavailable_error"),
        ("ollama", "rate_limit", "/api/generate", ollama_body, 429,
         lambda j: set(j) == {"error"} and isinstance(j["error"], str)),
        ("vllm", "rate_limit", "/v1/completions", openai_body, 429,
         lambda j: j["error"]["type"] == "RateLimitError" and j["error"]["code"] == 429),
        ("llama.cpp", "server_error", "/completion", prompt, 500,
         lambda j: j["error"]["code"] == 500 and j["error"]["type"] == "server_error"),
        ("vllm", "server_error", "/v1/completions", openai_body, 500,
         lambda j: j["error"]["type"] == "InternalServerError" and j["error"]["code"] == 500),
        ("llama.cpp", "unavailable", "/completion", prompt, 503,
         lambda j: j["error"]["code"] == 503 and j["error"]["type"] == "unavailable_error"),
        ("ollama", "unavailable", "/api/generate", ollama_body, 503,
         lambda j: set(j) == {"error"} and isinstance(j["error"], str)),
        ("llama.cpp", "context_length", "/completion", prompt, 400,
         lambda j: j["error"]["code"] == 400
         and j["error"]["type"] == "exceed_context_size_error"
         and j["error"]["n_prompt_tokens"] == 5),
        ("vllm", "context_length", "/v1/completions", openai_body, 400,
         lambda j: j["error"]["code"] == "context_length_exceeded"),
    ]
    for kind, fk, path, body, status, ok in cases:
        em = Emu("--kind", kind, "--fail-rate", 1, "--fail-kind", fk, "--no-noise")
        r = http(em.port, "POST", path, body)
        j = r.json()
        try:
            good = r.status == status and j is not None and ok(j)
        except (KeyError, TypeError):
            good = False
        check(f"{name}: {fk} ({kind}, {path}) -> {status} in the kind's form", good,
              f"status {r.status}, {r.body[:200]!r}")
        m = metrics(em.port)
        check(f"{name}: {fk} ({kind}): nothing counted as a success, nothing processing",
              m.get("vllm:request_success_total") == 0
              and m.get("llamacpp:requests_processing") == 0, "")
        em.stop(f"{name} {fk} {kind}")

    # disconnect: the stream ends after its first token, the slot is freed
    em = Emu("--kind", "llama.cpp", "--slots", 1, "--fail-rate", 1, "--fail-kind",
             "disconnect", "--no-noise")
    r = http(em.port, "POST", "/completion",
             {"prompt": "this one will drop", "n_predict": 200, "stream": True}, timeout=10)
    ev = events(r, "llama") if r.pieces else []
    toks = [e for _, e in ev if is_token("llama", e)]
    check(f"{name}: disconnect: 200, then the stream is cut (no last chunk)",
          r.status == 200 and not r.complete and not any(e.get("stop") for _, e in ev),
          f"status {r.status}, complete {r.complete}, {r.error}")
    check(f"{name}: disconnect: the client got the first token before the close",
          1 <= len(toks) < 200, f"{len(toks)} tokens")
    t0 = time.monotonic()
    freed = None
    while time.monotonic() - t0 < 2:
        sl = get_json(em.port, "/slots")
        if sl and not sl[0].get("is_processing"):
            freed = time.monotonic() - t0
            break
        time.sleep(0.01)
    m = metrics(em.port)
    check(f"{name}: disconnect: the slot is freed (/slots, requests_processing 0)",
          freed is not None and freed < 0.5 and m.get("llamacpp:requests_processing") == 0,
          f"freed after {freed if freed is None else round(freed * 1e3)} ms, processing "
          f"{m.get('llamacpp:requests_processing')}")
    r = http(em.port, "POST", "/completion", {"prompt": "not streamed, dropped", "n_predict": 50},
             timeout=10)
    check(f"{name}: disconnect, not streamed: the connection closes without an answer",
          r.status is None and r.error, f"status {r.status}, {r.error}")
    m = metrics(em.port)
    check(f"{name}: disconnect: nothing counted as a success",
          m.get("vllm:request_success_total") == 0, f"{m.get('vllm:request_success_total')}")
    em.stop(f"{name} disconnect")

    # stall: a pause of >= 300 ms after the first token, then the rest
    em = Emu("--kind", "llama.cpp", "--fail-rate", 1, "--fail-kind", "stall", "--stall-ms",
             300, "--no-noise")
    r = http(em.port, "POST", "/completion",
             {"prompt": "this one will stall", "n_predict": 40, "stream": True})
    ev = events(r, "llama")
    ts = [t for t, e in ev if is_token("llama", e)]
    gaps = [b - a for a, b in zip(ts, ts[1:])]
    k = max(range(len(gaps)), key=gaps.__getitem__) if gaps else None
    check(f"{name}: stall: all 40 tokens and the last chunk",
          r.status == 200 and r.complete and len(ts) == 40
          and ev[-1][1].get("tokens_predicted") == 40, f"{len(ts)} tokens")
    # the stall follows the first chunk written (token 0, with any token
    # that came out in the same piece). The server holds the rest for 300
    # ms by its clock; the client sees each write a delivery delay later
    # (under a ms on loopback), and the first one's delay may be the longer:
    # 2 ms of slack for that.
    check(f"{name}: stall: a gap of >= 300 ms right after the first token",
          k is not None and gaps[k] >= 0.298 and ts[k] == ts[0],
          f"largest gap {gaps[k] * 1e3:.0f} ms after token {k}" if gaps else "no gaps")
    later = [g for i, g in enumerate(gaps) if i != k]
    check(f"{name}: stall: then the rest without another stall (gaps < 100 ms)",
          not later or max(later) < 0.1, f"max other gap {max(later or [0]) * 1e3:.0f} ms")
    t, r = ttft(em.port)  # a streamed request, for the time without a stall
    rn = http(em.port, "POST", "/completion", {"prompt": "this one will stall", "n_predict": 4})
    took = rn.pieces[-1][0] - rn.t0 if rn.pieces else 0
    check(f"{name}: stall, not streamed: the answer comes >= 300 ms late, whole",
          rn.status == 200 and (rn.json() or {}).get("tokens_predicted") == 4 and took >= 0.300,
          f"status {rn.status}, {took * 1e3:.0f} ms")
    em.stop(f"{name} stall")

    # --fail-rate 0.5: the share of failures is binomial
    n = 200
    em = Emu("--kind", "llama.cpp", "--slots", 8, "--fail-rate", 0.5, "--fail-kind",
             "server_error", "--no-noise", "--seed", 7)
    statuses, lk = [], threading.Lock()

    def worker(k):
        for _ in range(k):
            r = http(em.port, "POST", "/completion", {"prompt": "short", "n_predict": 1})
            with lk:
                statuses.append(r.status)
    ths = [threading.Thread(target=worker, args=(n // 8,), daemon=True) for _ in range(8)]
    for t in ths:
        t.start()
    for t in ths:
        t.join(60)
    failed = statuses.count(500)
    # The failures of n independent coins of chance 0.5 are Binomial(n, 0.5);
    # the exact central interval with 99.9% of its mass (computed here, not
    # a normal approximation: [77, 123] for n = 200) bounds a correct
    # emulator's count, failing it once in a thousand runs of a random seed
    # (the seed is fixed, so this run is reproducible).
    lo, hi = binom_interval(n, 0.5, 0.999)
    check(f"{name}: --fail-rate 0.5: all {n} answered, 200 or 500 only",
          len(statuses) == n and set(statuses) <= {200, 500},
          f"{len(statuses)} answers, statuses {sorted(set(map(str, statuses)))}")
    check(f"{name}: --fail-rate 0.5: {failed}/{n} failed, within the 99.9% binomial "
          f"interval [{lo}, {hi}]", lo <= failed <= hi, "")
    em.stop(f"{name} rate 0.5")


# ---- 6. replicas ------------------------------------------------------------------------


def test_replicas():
    name = "replicas"
    em = Emu("--replicas", 3, "--slots", 1, "--no-noise", replicas=3)
    p = em.ports
    check(f"{name}: 3 URLs on consecutive ports", len(p) == 3 and p[1] == p[0] + 1
          and p[2] == p[0] + 2, f"{em.urls}")
    for i, port in enumerate(p):
        r = http(port, "GET", "/health")
        check(f"{name}: replica {i} answers /health", r.status == 200
              and (r.json() or {}).get("status") == "ok", f"{r.status}")
    base = sorted(ttft(p[1])[0] for _ in range(3))[1]
    long = Background(p[0], "POST", "/completion",
                      {"prompt": "a long request on replica 0", "n_predict": 300,
                       "stream": True})
    long.first.wait(10)
    s0, s1 = get_json(p[0], "/slots"), get_json(p[1], "/slots")
    t1, r1 = ttft(p[1])
    bound = max(3 * base, base + 0.1)
    check(f"{name}: replica 0 busy, replica 1 idle (own engines)",
          s0 and s0[0]["is_processing"] and s1 and not s1[0]["is_processing"], "")
    check(f"{name}: replica 1 is not delayed by replica 0's long request",
          r1.status == 200 and t1 <= bound,
          f"TTFT {t1 * 1e3:.1f} ms, unloaded {base * 1e3:.1f} ms, bound {bound * 1e3:.0f} ms")
    long.join(30)
    m = [metrics(x) for x in p]
    check(f"{name}: each replica counts its own requests",
          [x.get("vllm:request_success_total") for x in m] == [1, 4, 0],
          f"{[x.get('vllm:request_success_total') for x in m]}")
    em.stop(name)


def test_id_slot():
    """llama.cpp's id_slot: a request for a held slot waits for that slot
    (llama.cpp defers its task), while one that names no slot takes the
    other, free one at once."""
    name = "id_slot"
    em = Emu("--slots", 2, "--no-noise")
    port = em.ports[0]
    base = sorted(ttft(port)[0] for _ in range(3))[1]
    long = Background(port, "POST", "/completion",
                      {"prompt": "hold slot zero", "n_predict": 300, "id_slot": 0})
    time.sleep(0.1)
    t0 = time.monotonic()
    pinned = Background(port, "POST", "/completion",
                        {"prompt": "wants slot zero", "n_predict": 4, "id_slot": 0})
    time.sleep(0.05)
    t_any, r_any = ttft(port)
    pinned.join(60)
    long.join(60)
    t_pinned = time.monotonic() - t0
    held = (long.r.json() or {}) if long.r else {}
    got = (pinned.r.json() or {}) if pinned.r else {}
    check(f"{name}: a request naming no slot is not held up by one waiting for slot 0",
          r_any.status == 200 and t_any <= max(3 * base, base + 0.1),
          f"TTFT {t_any * 1e3:.1f} ms, unloaded {base * 1e3:.1f} ms")
    check(f"{name}: the request for held slot 0 waits for it and is served there",
          got.get("id_slot") == 0 and held.get("id_slot") == 0
          and t_pinned >= held.get("timings", {}).get("predicted_ms", 0) / 1e3 * 0.5,
          f"slot {got.get('id_slot')}, answered after {t_pinned * 1e3:.0f} ms; the holder "
          f"decoded {held.get('timings', {}).get('predicted_ms', 0):.0f} ms")
    em.stop(name)


# ---- 7. accounting ---------------------------------------------------------------------------


def tokenize_count(port, text):
    j = http(port, "POST", "/tokenize", {"content": text, "add_special": True}).json() or {}
    return len(j.get("tokens", [])) if "tokens" in j else None


def test_accounting():
    name = "accounting"
    em = Emu("--kind", "vllm", "--no-noise")
    port = em.port
    msgs = [{"role": "system", "content": "you are terse"},
            {"role": "user", "content": "count the words in this question please"}]
    tmpl = (http(port, "POST", "/apply-template", {"messages": msgs}).json() or {}).get("prompt")
    chat_pt = tokenize_count(port, tmpl) if tmpl else None
    sent_prompt, got_out, n = 0, 0, 0

    def account(pt, out):
        nonlocal sent_prompt, got_out, n
        sent_prompt += pt
        got_out += out
        n += 1

    # /v1/completions, not streamed
    pr = "one two three four five"
    r = http(port, "POST", "/v1/completions", {"model": "m", "prompt": pr, "max_tokens": 7})
    u = (r.json() or {}).get("usage", {})
    check(f"{name}: /v1/completions usage: prompt = /tokenize, completion = max_tokens",
          r.status == 200 and u.get("prompt_tokens") == tokenize_count(port, pr) == 6
          and u.get("completion_tokens") == 7, f"{u}")
    account(tokenize_count(port, pr), 7)

    # /v1/chat/completions, not streamed and streamed with usage
    r = http(port, "POST", "/v1/chat/completions", {"model": "m", "messages": msgs,
                                                     "max_tokens": 5})
    u = (r.json() or {}).get("usage", {})
    check(f"{name}: chat usage.prompt_tokens = /tokenize of /apply-template's prompt",
          r.status == 200 and chat_pt is not None and u.get("prompt_tokens") == chat_pt
          and u.get("completion_tokens") == 5, f"usage {u}, template tokens {chat_pt}")
    account(chat_pt or 0, 5)
    r = http(port, "POST", "/v1/chat/completions",
             {"model": "m", "messages": msgs, "max_tokens": 4, "stream": True,
              "stream_options": {"include_usage": True}})
    ev = [e for _, e in events(r, "openai")]
    toks = [e for e in ev if is_token("openai", e)]
    us = [e["usage"] for e in ev if isinstance(e, dict) and e.get("usage")]
    check(f"{name}: streamed chat: 4 token chunks, usage chunk, [DONE]",
          r.status == 200 and len(toks) == 4 and us and us[0].get("prompt_tokens") == chat_pt
          and us[0].get("completion_tokens") == 4 and ev[-1] == "[DONE]", f"{us}")
    account(chat_pt or 0, len(toks))

    # /completion streamed
    pr2 = words(30)
    r = http(port, "POST", "/completion", {"prompt": pr2, "n_predict": 9, "stream": True})
    ev = [e for _, e in events(r, "llama")]
    toks = [e for e in ev if is_token("llama", e)]
    check(f"{name}: /completion streamed: 9 tokens, tokens_evaluated = /tokenize",
          len(toks) == 9 and ev[-1].get("tokens_evaluated") == tokenize_count(port, pr2) == 31,
          f"{len(toks)} tokens, evaluated {ev[-1].get('tokens_evaluated') if ev else None}")
    account(31, len(toks))

    # Ollama /api/generate and /api/chat (streamed by default)
    pr3 = "why is the sky blue"
    r = http(port, "POST", "/api/generate", {"model": "m", "prompt": pr3,
                                             "options": {"num_predict": 6}})
    ev = [e for _, e in events(r, "ollama")]
    toks = [e for e in ev if not e.get("done")]
    d = ev[-1] if ev else {}
    pt3 = tokenize_count(port, pr3)
    check(f"{name}: /api/generate done line: prompt_eval_count = /tokenize "
          f"(add_special) = {pt3}, eval_count 6",
          d.get("done") and d.get("prompt_eval_count") == pt3 == 6 and d.get("eval_count") == 6
          and len(toks) == 6, f"{ {k: d.get(k) for k in ('prompt_eval_count', 'eval_count')} }")
    check(f"{name}: /api/generate: total_duration >= prompt_eval_duration + eval_duration",
          d.get("total_duration", -1) >= d.get("prompt_eval_duration", 0)
          + d.get("eval_duration", 0) > 0,
          f"{d.get('total_duration')} vs {d.get('prompt_eval_duration')} + "
          f"{d.get('eval_duration')}")
    account(pt3 or 0, len(toks))
    r = http(port, "POST", "/api/chat", {"model": "m", "messages": msgs,
                                         "options": {"num_predict": 3}, "stream": False})
    d = r.json() or {}
    check(f"{name}: /api/chat (not streamed): prompt_eval_count = template tokens, "
          f"eval_count 3",
          r.status == 200 and d.get("prompt_eval_count") == chat_pt and d.get("eval_count") == 3
          and d.get("total_duration", -1) >= d.get("prompt_eval_duration", 0)
          + d.get("eval_duration", 0), f"{d.get('prompt_eval_count')}, {d.get('eval_count')}")
    account(chat_pt or 0, 3)

    # a request that sets no maximum: --default-output (128) tokens
    r = http(port, "POST", "/v1/completions", {"model": "m", "prompt": pr})
    u = (r.json() or {}).get("usage", {})
    check(f"{name}: no max_tokens: 128 tokens (--default-output), finish_reason stop",
          u.get("completion_tokens") == 128
          and (r.json() or {}).get("choices", [{}])[0].get("finish_reason") == "stop", f"{u}")
    account(6, u.get("completion_tokens") or 0)

    m = metrics(port)
    for key, want in (("vllm:prompt_tokens_total", sent_prompt),
                      ("llamacpp:prompt_tokens_total", sent_prompt),
                      ("vllm:generation_tokens_total", got_out),
                      ("llamacpp:tokens_predicted_total", got_out),
                      ("vllm:e2e_request_latency_seconds_count", n),
                      ("vllm:time_to_first_token_seconds_count", n),
                      ("vllm:request_success_total", n)):
        check(f"{name}: /metrics {key} = {want}", m.get(key) == want, f"{m.get(key)}")
    check(f"{name}: vllm:inter_token_latency_seconds_count = tokens - requests",
          m.get("vllm:inter_token_latency_seconds_count") == got_out - n,
          f"{m.get('vllm:inter_token_latency_seconds_count')} vs {got_out - n}")
    em.stop(name)


# ---- 8. bad command lines -----------------------------------------------------------------


def test_cli():
    name = "cli"
    cases = [
        (["--kind", "foo"], "--kind"),
        (["--fail-kind", "foo"], "--fail-kind"),
        (["--fail-rate", "0.5"], "--fail-rate"),
        (["--port", "70000"], "--port"),
        (["--model-file", "/nonexistent"], "--model-file"),
    ]
    ready = os.path.join(_tmp, "cli-ready")
    for args, flag in cases:
        p = subprocess.run([SBSIM, "serve", "--ready-file", ready, *args], capture_output=True,
                           text=True, timeout=10)
        err = p.stderr.strip()
        check(f"{name}: {' '.join(args)} -> exit 2 naming {flag}",
              p.returncode == 2 and flag in err and not os.path.exists(ready),
              f"rc {p.returncode}: {err[:160]!r}")
    # a port in use (a listening socket of this test's own)
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.bind((HOST, 0))
    ls.listen(1)
    busy = ls.getsockname()[1]
    p = subprocess.run([SBSIM, "serve", "--host", HOST, "--port", str(busy), "--ready-file",
                        ready], capture_output=True, text=True, timeout=10)
    err = p.stderr.strip()
    check(f"{name}: --port {busy} (in use) -> exit 2, cannot listen",
          p.returncode == 2 and "cannot listen" in err and not os.path.exists(ready),
          f"rc {p.returncode}: {err[:160]!r}")
    # the second replica's port in use: the whole server refuses to start
    p = subprocess.run([SBSIM, "serve", "--host", HOST, "--port", str(busy - 1), "--replicas", "2",
                        "--ready-file", ready], capture_output=True, text=True, timeout=10)
    ls.close()
    err = p.stderr.strip()
    check(f"{name}: --port {busy - 1} --replicas 2 ({busy} in use) -> exit 2, cannot listen",
          p.returncode == 2 and "cannot listen" in err and not os.path.exists(ready),
          f"rc {p.returncode}: {err[:160]!r}")


# ---- main -------------------------------------------------------------------------------------


def main():
    if not os.access(SBSIM, os.X_OK):
        print(f"usage: {sys.argv[0]} SBSIM (not executable: {SBSIM})")
        return 2
    t0 = time.monotonic()
    tests = [test_cli, test_queue_full, test_context, test_disconnect,
             test_disconnect_prefill, test_shutdown, test_bad_requests,
             test_faults, test_replicas, test_id_slot, test_accounting]
    only = os.environ.get("SERVE_LIMITS_ONLY")
    for t in tests:
        if only and t.__name__ not in only.split(","):
            continue
        try:
            t()
        except Exception as e:  # a crash of the test is a failure, not an abort
            import traceback
            traceback.print_exc()
            check(f"{t.__name__}: ran to the end", False, f"{type(e).__name__}: {e}")
    for p in _procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    shutil.rmtree(_tmp, ignore_errors=True)
    bad = [n for n, ok in _results if not ok]
    print(f"serve-limits: {len(_results) - len(bad)}/{len(_results)} checks passed, "
          f"{len(bad)} failed, {time.monotonic() - t0:.1f} s", flush=True)
    for n in bad:
        print(f"  failed: {n}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
