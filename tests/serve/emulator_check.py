#!/usr/bin/env python3
"""emulator_check.py DIR — the verdict of emulator.sh (read its header).

DIR holds closed-{a,b,c}.json and open-{a,b,c}.json (three measurements of
one workload), {closed,open}-pred.json (sbsim's replay of run a through the
model), {closed,open}-wrong.json (the same through a model 10% slower),
closed-compare.txt (for the knee) and rtt.txt (GET /health round trips, s).
Exit 0 pass, 1 fail, 77 inconclusive.
"""
import json
import math
import os
import statistics
import sys

METRICS = [("TTFT", lambda l: l["ttft_ms"]["mean"]),
           ("TPOT", lambda l: l["tpot_ms"]["mean"]),
           ("E2E", lambda l: l["e2e_ms"]["mean"]),
           ("req/s", lambda l: l["req_s"])]
SIGMAS = 4  # about 20 comparisons: a false alarm needs a 4-sigma miss


def levels(path):
    return json.load(open(path))["levels"]


def pooled_noise(d, name, get):
    """Relative run-to-run sd of a figure, pooled over every level."""
    rel_var = []
    for kind in ("closed", "open"):
        runs = [levels(os.path.join(d, f"{kind}-{r}.json")) for r in "abc"]
        for lv in zip(*runs):
            xs = [get(x) for x in lv]
            rel_var.append((statistics.stdev(xs) / statistics.mean(xs)) ** 2)
    return math.sqrt(sum(rel_var) / len(rel_var))


def send_lateness_ms(meas):
    """How late the client sent the level's requests after their scheduled
    times (open loop counts latency from the schedule), mean, ms."""
    recs = meas.get("requests") or []
    lates = [r["t_sent_s"] - r["t_scheduled_s"] for r in recs
             if r.get("t_sent_s") is not None and r.get("t_scheduled_s") is not None]
    return 1000 * statistics.mean(lates) if lates else 0.0


def turnaround_ms(meas):
    """Closed loop: how long the client took from a completion to the send
    it triggered (the k-th send after the first c follows the k-th
    completion), mean, ms; sbsim's clients send at once. 0 open loop."""
    recs = meas.get("requests") or []
    if meas.get("mode") != "concurrency" or len(recs) <= meas["level"]:
        return 0.0
    c = int(meas["level"])
    sends = sorted(r["t_sent_s"] for r in recs)
    done = sorted(r["t_done_s"] for r in recs)
    return 1000 * statistics.mean(sends[c + i] - done[i] for i in range(len(sends) - c))


def floor_rel(name, meas, pred, rtt_ms):
    """Time the model does not know of, relative to the figure: the
    emulator's HTTP path and the client's lateness in sending, and for the
    request rate the client's turnaround (0 for TPOT: a gap between two
    tokens crosses none of them)."""
    if name == "TPOT":
        return 0.0
    extra = rtt_ms + send_lateness_ms(meas)
    if name == "req/s":
        return (extra + turnaround_ms(meas)) / pred["e2e_ms"]["mean"]
    return extra / (pred["ttft_ms"]["mean"] if name == "TTFT" else pred["e2e_ms"]["mean"])


def server_view_fails(d, rtt_ms):
    """The server's own count (servebench run's "server_view", sampled from
    the emulator's /metrics) against the client's L obs, closed loop: they
    differ by the time in flight outside the server (the HTTP path, a share
    rtt/E2E of it) and the sampling error: 4 standard errors of the
    samples' mean, but at least 3/n (n samples that all read the same count
    miss a change lasting up to 3/n of the time with 95% confidence: the
    rule of three)."""
    fails = []
    for lv in levels(os.path.join(d, "closed-a.json")):
        v = lv.get("server_view")
        if not v:
            fails.append(f"c={lv['level']:g}: no server_view in servebench run's results")
            continue
        xs = [r + w for _, r, w in v["series"]]
        se = statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else float("inf")
        lo = lv["littles_law"]["l_observed"]
        bound = max(SIGMAS * se, 3 / len(xs)) + lo * rtt_ms / lv["e2e_ms"]["mean"]
        ok = abs(v["l_server"] - lo) <= bound
        print(f"server's own L at c={lv['level']:g}: {v['l_server']:.3f} ({v['samples']} samples) "
              f"beside L obs {lo:.3f}: |diff| {abs(v['l_server'] - lo):.3f} "
              f"{'<=' if ok else '>'} {bound:.3f}")
        if not ok:
            fails.append(f"server's own L at c={lv['level']:g}")
    return fails


def main(d):
    rtt_ms = statistics.median(float(x) for x in open(os.path.join(d, "rtt.txt"))) * 1000
    print(f"emulator HTTP path (median GET /health round trip): {rtt_ms:.2f} ms")
    fails, wrong_caught = [], {m: 0 for m, _ in METRICS}
    print(f"{'figure':6} {'level':>12} {'measured':>10} {'predicted':>10} {'error':>7} "
          f"{'bound':>7} {'10% slow':>8}")
    for name, get in METRICS:
        noise = pooled_noise(d, name, get)
        print(f"{name}: run-to-run sd {100 * noise:.2f}% (3 runs, pooled over 5 levels)")
        for kind in ("closed", "open"):
            meas = levels(os.path.join(d, f"{kind}-a.json"))
            pred = levels(os.path.join(d, f"{kind}-pred.json"))
            wrong = levels(os.path.join(d, f"{kind}-wrong.json"))
            for m, p, w in zip(meas, pred, wrong):
                bound = SIGMAS * noise + floor_rel(name, m, p, rtt_ms)
                err = abs(get(m) - get(p)) / get(p)
                werr = abs(get(m) - get(w)) / get(w)
                wrong_caught[name] += werr > bound
                where = f"{kind} {m['level']:g}"
                print(f"{name:6} {where:>12} {get(m):10.3f} {get(p):10.3f} {100 * err:6.2f}% "
                      f"{100 * bound:6.2f}% {100 * werr:7.2f}%")
                if not err <= bound:
                    fails.append(f"{name} at {where}: {100 * err:.2f}% > {100 * bound:.2f}%")
    fails += server_view_fails(d, rtt_ms)
    knee = open(os.path.join(d, "closed-compare.txt")).read()
    if "(match)" not in knee:
        fails.append("the knee of TTFT p99 is not at the predicted level")
    if fails:
        print("FAIL: the emulator does not reproduce the simulator's prediction:")
        for f in fails:
            print("  " + f)
        return 1
    blind = [m for m, n in wrong_caught.items() if n == 0]
    if blind:
        print("INCONCLUSIVE: a model 10% slow passes the bound for " + ", ".join(blind))
        return 77
    print("ok: every figure within its bound, the knee at the predicted level; "
          "a model 10% slow fails the bound for every figure")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
