#!/usr/bin/env python3
"""vllm_coverage.py — does calibrate --engine vllm find a known vLLM-class model
again, and do its 90% intervals hold what they promise?

usage: experiments/vllm_coverage.py [--build DIR] [--draws N] [--jobs J]
                                    [--truth FILE] [--markdown] [--json FILE]

Each draw simulates a per-request file from the truth (tests/calibrate/vllm-truth.json:
64 sequences, a 1024-token budget, 1500 KV blocks, lognormal step noise cv 0.05 and
2 ms of overhead scatter) with the load replay_recovery.sh uses: open loop at 3, 8 and
14 req/s, 250 requests each, prompts lognormal(6.2, 0.8) (~680 tokens), outputs
lognormal(5.0, 0.7) (~190), a fresh seed per draw. Then

  servebench calibrate --engine vllm ... --fit-first 0.5 FILE

fits the first half of each level and predicts the rest (its "held_out" figures, each
with a 90% interval), and `sbsim --model-file FIT --replications 40` predicts another
workload with 90% intervals: prompts lognormal(7.2, 0.5) (~1,500 tokens, twice as long
as any calibrated mean) at 1 and 2 req/s, 200 requests, held against one fresh run of
the truth. Printed per figure: how many of the N intervals held the measured value
(with a 95% Wilson interval for the rate), the median |error| and the median interval
width; per coefficient how many of the N 90% intervals held the truth. Offline; about
5 s a draw on 2 cores. Python 3 standard library only.
"""
import argparse
import concurrent.futures as cf
import json
import math
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOAD = ["--rate", "3,8,14", "--requests", "250", "--warmup", "0",
        "--input-len", "lognormal:6.2,0.8", "--output-len", "lognormal:5.0,0.7"]
OTHER = ["--rate", "1,2", "--requests", "200", "--warmup", "0",
         "--input-len", "lognormal:7.2,0.5", "--output-len", "lognormal:5.0,0.7"]
SERVER = ["--engine", "vllm", "--max-num-seqs", "64", "--max-num-batched-tokens", "1024",
          "--block-size", "16", "--gpu-blocks", "1500"]
HELD = ["ttft_mean_ms", "ttft_p90_ms", "e2e_mean_ms", "tpot_mean_ms"]
OTHER_FIGS = ["ttft_ms.p50", "ttft_ms.p90", "tpot_ms.p50", "e2e_ms.p50"]


def run(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def truth_coefficients(path):
    t = json.load(open(path))
    d = t["step_ms"]["decode_ms"]
    per_seq = d["2"] - d["1"]
    return {"base": d["1"] - per_seq, "per_seq": per_seq,
            "per_prefill_token": t["step_ms"]["per_prefill_token"],
            "per_kv_token": t["step_ms"]["per_kv_token"], "overhead_ms": t["overhead_ms"]}


def figure(level, name):
    metric, stat = name.split(".")
    return level[metric][stat]


def one_draw(args, k):
    sb, sim = f"{args.build}/app/servebench", f"{args.build}/app/sbsim"
    with tempfile.TemporaryDirectory() as t:
        run([sim, "--model-file", args.truth, *LOAD, "--seed", str(100 + k), "--no-uncertainty",
             "--json", f"{t}/d.json", "--json-requests"])
        run([sb, "calibrate", *SERVER, "--fit-first", "0.5", "--jobs", "1", f"{t}/d.json",
             "-o", f"{t}/fit.json"])
        run([sim, "--model-file", f"{t}/fit.json", *OTHER, "--seed", str(7000 + k),
             "--replications", "40", "--json", f"{t}/pred.json"])
        run([sim, "--model-file", args.truth, *OTHER, "--seed", str(9000 + k),
             "--no-uncertainty", "--json", f"{t}/truth.json"])
        fit = json.load(open(f"{t}/fit.json"))["fit"]
        pred = json.load(open(f"{t}/pred.json"))["levels"]
        meas = json.load(open(f"{t}/truth.json"))["levels"]
    # each figure: (inside, relative error, relative width, predicted, lo, hi, measured)
    out = {"held": {}, "other": {}, "coef": {}}
    for h in HELD:
        f = fit["held_out"][h]
        lo, hi = f["ci90"]
        out["held"][h] = (f["inside"], f["error"], (hi - lo) / f["predicted"], f["predicted"],
                          lo, hi, f["measured"])
    for lv, (p, m) in enumerate(zip(pred, meas)):
        for name in OTHER_FIGS:
            lo, hi = p["pi90"][name]
            mv, pv = figure(m, name), figure(p, name)
            out["other"][f"rate {p['level']:g} {name}"] = (lo <= mv <= hi, pv / mv - 1,
                                                          (hi - lo) / pv, pv, lo, hi, mv)
    for name, v in truth_coefficients(args.truth).items():
        c = fit["coefficients"][name]
        lo, hi = c.get("ci90") or [None, None]
        inside = lo is not None and hi is not None and lo <= v <= hi
        out["coef"][name] = (inside, c["value"] / v - 1, None, c["value"], lo, hi, v)
    return out


def wilson(k, n, z=1.96):
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (c - h, c + h)


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return (xs[n // 2] + xs[(n - 1) // 2]) / 2 if n else float("nan")


def table(draws, group, markdown):
    rows = []
    for name in draws[0][group]:
        vals = [d[group][name] for d in draws]
        k = sum(1 for v in vals if v[0])
        lo, hi = wilson(k, len(vals))
        err = median([abs(v[1]) for v in vals])
        widths = [v[2] for v in vals if v[2] is not None]
        width = f"{100 * median(widths):.1f}%" if widths else "-"
        rows.append((name, f"{k}/{len(vals)}", f"{100 * lo:.0f}-{100 * hi:.0f}%",
                     f"{100 * err:.1f}%", width))
    head = ("figure", "inside", "95% CI of the rate", "median |error|", "median width")
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        print("  ".join(f"{h:>22s}" for h in head))
        for r in rows:
            print("  ".join(f"{c:>22s}" for c in r))
    print()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=f"{ROOT}/build")
    ap.add_argument("--draws", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--truth", default=f"{ROOT}/tests/calibrate/vllm-truth.json")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--json", dest="json_out",
                    help="write every draw's figures and coefficients here: a list of "
                         "{group: {name: [inside, error, width, predicted, lo, hi, "
                         "measured]}} (tests/calibrate/check_vllm_cover.py reads it)")
    args = ap.parse_args()
    with cf.ThreadPoolExecutor(args.jobs) as ex:
        try:
            draws = list(ex.map(lambda k: one_draw(args, k), range(1, args.draws + 1)))
        except subprocess.CalledProcessError as e:
            sys.exit(f"{' '.join(e.cmd)} failed: {e.stderr.decode(errors='replace')}")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(draws, f)
    for title, group in (("held-out half of the calibrated load", "held"),
                         ("another workload (prompts ~1,500 tokens, 1 and 2 req/s)", "other"),
                         ("coefficients (width: -)", "coef")):
        print(f"{title}, {args.draws} draws:")
        table(draws, group, args.markdown)


if __name__ == "__main__":
    main()
