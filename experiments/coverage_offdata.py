#!/usr/bin/env python3
"""coverage_offdata.py — do sbsim's 90% intervals hold a run of a truth whose form
the calibrator does not assume, inside and beyond the calibration's data?

usage: experiments/coverage_offdata.py [--build DIR] [--draws N] [--replications R]
                                       [--jobs J] [--json OUT] [--markdown] [--keep DIR]

tests/calibrate/test_coverage.c checks the error bars against a truth of the
calibrator's own form. This script does the same against five truths made by
editing tests/calibrate/truth-model.json (written to a temporary directory,
each loaded once with `sbsim --model-file` before use):

  T4 linear  truth-model.json with per_prefill_attn 0 (linear prefill): the control;
             each other truth is T4 with one field changed:
  T1 bend    decode_ms {1: 5.0, 2: 5.2, 4: 5.6, 8: 14.0}: flat to 4, steep to 8, so
             the line through the measured batch sizes misses batch 8;
  T5 between decode_ms {1: 5.0, 2: 5.2, 3: 5.4, 4: 9.5}: flat to 3, steep to 4, so the
             line between the measured batches 2 and 4 misses batch 3 (D2; from D1's
             batches 1 and 2 it is T1's case, beyond the table);
  T2 kv      per_kv_token 0.0015 ms/token (truth-model: 0.0002): ~1-8% of a decode
             step at 16-300-token contexts, +60% at 2,000 and +250% at 8,000;
  T3 attn    per_prefill_attn 3e-5 (truth-model's): prompts 4x longer than measured
             cost more than linear (within noise at 32/256, clear at 1024/2048).

Every truth keeps truth-model.json's other fields (overhead 12 ms, admit_delay_ms 25,
lognormal noise cv 0.05, decode_ms {1: 5.0, 2: 6.8, 4: 9.5} and beyond 4 the line
through them) and its slots are set per data set with sbsim --slots. T4 is of the
calibrator's own form for D2 (batches 1, 2, 4 measured) but not for D1: from batches 1
and 2 alone the line to 8 is steeper than the truth's.

Data sets, simulated from the truth with `sbsim --json F --json-requests --seed K`
(K differs per data draw), then `servebench calibrate FILES --slots S -o model.json`:

  D1 small   S = 2: one client at 32 and 256 prompt tokens (32 out, 16 requests each),
             concurrency 1,2 at 128/64 (16 requests per level);
  D2 url     S = 4, the sizes `calibrate --url` uses: one client at 16/256/1024/2048
             (32 out; 8, 8, 6, 4 requests), concurrency 2, 4, 6 at 256/64 (16 requests).

Configurations, each predicted with `sbsim --model-file model.json --uncertainty
--replications R` and run once on the truth with a fresh seed (same flags, no draws):

  C1     inside the data: concurrency S at the sweep's lengths (32 requests);
  C2     8 slots, concurrency 8 at the sweep's lengths (decode beyond the measured
         batches; 32 requests);
  C6     3 slots, concurrency 3 at the sweep's lengths (D2: decode between the
         measured batches 2 and 4; D1: beyond its 2; 32 requests);
  C3     one client, prompts 4x the longest measured (1024 / 8192), 32 out (8 requests);
  C4@50, C4@80  open loop at 50% and 80% of the truth's capacity at S slots and the
         sweep's lengths (the capacity: the truth's req/s at 2S clients, 1000 requests,
         computed once; the same rates for every draw; 64 requests);
  C5     C1 with 400 requests: a run long enough that its own noise no longer hides
         what the calibration left open (sbsim's default is 2000 a level).

A negative control (CONTROLS) predicts a configuration from the model without one
coefficient's spread (T5 from D2 at 3 slots without form_interp, T1 from D1 at 8 slots
without form_decode) or with a coefficient's
covariances left out (T3 from D1 in 400-request runs with the dropped attention term as a
block of its own, as before 2026-12-07), against the same runs of the truth; its rows are
marked "control": true in --json.

For each (truth, data, configuration, metric: TTFT / TPOT / E2E p50) over N draws:
coverage k/N with a 95% Wilson interval, the median of (hi - lo) / prediction, the
truth's run-to-run sd (over its N fresh runs; relative in --json) and the ratio
median (hi - lo) / (2 * 1.645 * that sd): about 1 when the interval is as wide as the
truth's own 90% spread, far above 1 when it is wide enough to hold anything (or the
prediction's spread is not the truth's); and the bias, median prediction / mean of the
truth's runs - 1.
A draw whose calibration or prediction fails is counted in the "fail" column and
left out of k/N.

8 slots are simulated with sbsim's --slots 8 (sbsim has no --sim-slots; that is
validate's). Run time on the project's shared 2-core machine (two sbsim/calibrate
processes at a time, nice 5, --jobs 1 each): 203 s at N = 20, R = 40 (2026-12-04), so
nothing was cut to fit ten minutes. The figures: docs/accuracy.md, "Error bars off the
data (truths of other forms)".

Python 3 standard library only; it prints a table and exits 0 (a measurement, not a
test; exit 2 on bad arguments or when a truth file does not load).
"""
import argparse
import concurrent.futures as cf
import copy
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
METRICS = [("TTFT p50", "ttft_ms.p50", "ttft_ms"), ("TPOT p50", "tpot_ms.p50", "tpot_ms"),
           ("E2E p50", "e2e_ms.p50", "e2e_ms")]


def truths():
    """name -> (description, model dict) edited from truth-model.json."""
    with open(os.path.join(ROOT, "tests", "calibrate", "truth-model.json")) as f:
        base = json.load(f)
    base.pop("fit", None)
    base["step_ms"]["per_prefill_attn"] = 0.0  # T4; the others differ from it in one field
    out = {}

    t = copy.deepcopy(base)
    t["step_ms"]["decode_ms"] = {"1": 5.0, "2": 5.2, "4": 5.6, "8": 14.0}
    out["T1 bend"] = t

    t = copy.deepcopy(base)
    t["step_ms"]["decode_ms"] = {"1": 5.0, "2": 5.2, "3": 5.4, "4": 9.5}
    out["T5 between"] = t

    t = copy.deepcopy(base)
    t["step_ms"]["per_kv_token"] = 0.0015
    out["T2 kv"] = t

    t = copy.deepcopy(base)
    t["step_ms"]["per_prefill_attn"] = 3e-5
    out["T3 attn"] = t

    t = copy.deepcopy(base)
    t["step_ms"]["per_prefill_attn"] = 0.0
    out["T4 linear"] = t
    for name, m in out.items():
        m["name"] = "coverage_offdata truth " + name
    return out


# Data sets: slots, the runs (flags each), the sweep's lengths, the longest prompt.
DATASETS = {
    "D1 small": {
        "slots": 2,
        "runs": [
            ["--concurrency", "1", "--input-len", "32", "--output-len", "32", "--requests", "16"],
            ["--concurrency", "1", "--input-len", "256", "--output-len", "32", "--requests", "16"],
            ["--concurrency", "1,2", "--input-len", "128", "--output-len", "64", "--requests", "16"],
        ],
        "sweep": ("128", "64"),
        "longest": 256,
    },
    "D2 url": {
        "slots": 4,
        "runs": [
            ["--concurrency", "1", "--input-len", "16", "--output-len", "32", "--requests", "8"],
            ["--concurrency", "1", "--input-len", "256", "--output-len", "32", "--requests", "8"],
            ["--concurrency", "1", "--input-len", "1024", "--output-len", "32", "--requests", "6"],
            ["--concurrency", "1", "--input-len", "2048", "--output-len", "32", "--requests", "4"],
            ["--concurrency", "2,4,6", "--input-len", "256", "--output-len", "64", "--requests", "16"],
        ],
        "sweep": ("256", "64"),
        "longest": 2048,
    },
}


def configs(ds, rates):
    """[(name, sbsim flags)] for data set ds; rates: (50%, 80%) of the capacity."""
    s = ds["slots"]
    inp, out = ds["sweep"]
    return [
        ("C1 c=%d" % s, ["--slots", str(s), "--concurrency", str(s), "--input-len", inp,
                         "--output-len", out, "--requests", "32"]),
        ("C2 8 slots", ["--slots", "8", "--concurrency", "8", "--input-len", inp,
                        "--output-len", out, "--requests", "32"]),
        ("C3 P=%d" % (4 * ds["longest"]), ["--slots", str(s), "--concurrency", "1",
                                          "--input-len", str(4 * ds["longest"]),
                                          "--output-len", "32", "--requests", "8"]),
        ("C4 50%", ["--slots", str(s), "--rate", "%.4f" % rates[0], "--input-len", inp,
                    "--output-len", out, "--requests", "64"]),
        ("C4 80%", ["--slots", str(s), "--rate", "%.4f" % rates[1], "--input-len", inp,
                    "--output-len", out, "--requests", "64"]),
        ("C5 c=%d x400" % s, ["--slots", str(s), "--concurrency", str(s), "--input-len", inp,
                              "--output-len", out, "--requests", "400"]),
        ("C6 3 slots", ["--slots", "3", "--concurrency", "3", "--input-len", inp,
                        "--output-len", out, "--requests", "32"]),
    ]


class Runner:
    def __init__(self, build):
        self.sbsim = os.path.join(build, "app", "sbsim")
        self.servebench = os.path.join(build, "app", "servebench")

    def run(self, argv):
        p = subprocess.run(["nice", "-n", "5"] + argv, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        return p.returncode, p.stderr

    def sim(self, model, flags, seed, json_path, extra=()):
        argv = [self.sbsim, "--model-file", model, "--jobs", "1", "--seed", str(seed),
                "--json", json_path] + list(flags) + list(extra)
        rc, err = self.run(argv)
        if rc != 0:
            raise RuntimeError("sbsim %s: status %d: %s" % (" ".join(argv[1:]), rc,
                                                            err.strip()[-300:]))
        with open(json_path) as f:
            return json.load(f)["levels"][0]


def wilson(k, n, z=1.96):
    if n == 0:
        return (float("nan"), float("nan"))
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


# Negative controls, (truth, data, name) -> (base configuration, coefficient):
# the base's prediction from the model without that coefficient in
# fit.covariance, judged against the same runs of the truth. The test
# (tests/calibrate/check_offdata.py) requires each to fail the coverage rule:
# a bound that passes them cannot tell an interval without the term.
# "~name": the coefficient kept with its variance but apart from the others,
# whose covariance is what it is given that coefficient (per_prefill_attn as a
# block of its own beside the fit without it, as before 2026-12-07).
CONTROLS = {
    ("T5 between", "D2 url", "C6 without form_interp"): ("C6 3 slots", "form_interp"),
    ("T3 attn", "D1 small", "C5 attn alone"): ("C5 c=2 x400", "~per_prefill_attn"),
    ("T1 bend", "D1 small", "C2 without form_decode"): ("C2 8 slots", "form_decode"),
}


def without(model, name, path):
    """path: a copy of model without coefficient name in fit.covariance (or,
    for "~name", without its covariances with the others)."""
    with open(model) as f:
        m = json.load(f)
    c = m["fit"]["covariance"]
    alone = name.startswith("~")
    name = name.lstrip("~")
    if name in c["params"]:
        i = c["params"].index(name)
        n = len(c["params"])
        if alone:  # the others conditional on it (Schur complement), then apart
            M = c["matrix"]
            for j in range(n):
                for k in range(n):
                    if j != i and k != i:
                        M[j][k] -= M[j][i] * M[i][k] / M[i][i]
            for j in range(n):
                if j != i:
                    M[i][j] = M[j][i] = 0.0
        else:
            keep = [j for j in range(n) if j != i]
            c["params"] = [c["params"][j] for j in keep]
            c["matrix"] = [[c["matrix"][a][b] for b in keep] for a in keep]
    with open(path, "w") as f:
        json.dump(m, f)
    return path


def one_draw(r, work, tname, tpath, dname, ds, cfgs, draw, reps):
    """One data draw: simulate, calibrate, predict every configuration, run the
    truth once per configuration. Returns {config: {metric: (pred, lo, hi, truth)}}
    or a string (why it failed)."""
    d = os.path.join(work, "%s-%s-%d" % (tname.split()[0], dname.split()[0], draw))
    os.makedirs(d, exist_ok=True)
    files = []
    for i, flags in enumerate(ds["runs"]):
        f = os.path.join(d, "data%d.json" % i)
        seed = 100000 * (draw + 1) + 101 * i + 7
        try:
            r.sim(tpath, ["--slots", str(ds["slots"])] + flags, seed, f, ["--json-requests"])
        except RuntimeError as e:
            return "data: %s" % e
        files.append(f)
    model = os.path.join(d, "model.json")
    rc, err = r.run([r.servebench, "calibrate"] + files +
                    ["--slots", str(ds["slots"]), "-q", "-o", model])
    if rc != 0:
        return "calibrate status %d: %s" % (rc, err.strip()[-300:])
    out = {}
    names = [c[0] for c in cfgs]
    for ci, (cname, flags) in enumerate(cfgs):
        # a control predicts its base configuration from the model without
        # one coefficient's spread, against the same run of the truth
        base, strip = CONTROLS.get((tname, dname, cname), (cname, None))
        bi = names.index(base)
        pm = model if not strip else without(model, strip, os.path.join(d, "ctl%d.json" % ci))
        try:
            p = r.sim(pm, flags, 7000 + draw, os.path.join(d, "pred%d.json" % ci),
                      ["--uncertainty", "--replications", str(reps)])
            t = r.sim(tpath, flags, 900000 + 1000 * draw + bi,
                      os.path.join(d, "truth%d.json" % ci), ["--no-uncertainty"])
        except RuntimeError as e:
            out[cname] = "predict: %s" % e
            continue
        row = {}
        for mname, key, field in METRICS:
            lo, hi = p["pi90"][key]
            row[mname] = (p[field]["p50"], lo, hi, t[field]["p50"])
        out[cname] = row
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--draws", type=int, default=20)
    ap.add_argument("--replications", type=int, default=40)
    ap.add_argument("--jobs", type=int, default=2, help="processes at once (default 2)")
    ap.add_argument("--json", dest="json_out")
    ap.add_argument("--markdown", action="store_true",
                    help="also print a compact markdown table (one row per configuration)")
    ap.add_argument("--keep", help="keep the generated files in this directory")
    a = ap.parse_args()
    if a.draws < 2 or a.replications < 2 or a.jobs < 1:
        ap.error("--draws and --replications must be at least 2, --jobs at least 1")
    r = Runner(a.build)
    for b in (r.sbsim, r.servebench):
        if not os.access(b, os.X_OK):
            print("coverage_offdata: %s not built (scripts/build.sh build)" % b,
                  file=sys.stderr)
            return 2
    t0 = time.time()
    tmp = None
    if a.keep:
        work = a.keep
        os.makedirs(work, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="sb-coverage-offdata.")
        work = tmp.name

    # The truths, each checked to load, and each (truth, data set)'s capacity.
    tpaths = {}
    for tname, m in truths().items():
        p = os.path.join(work, tname.split()[0] + ".json")
        with open(p, "w") as f:
            json.dump(m, f, indent=1)
        rc, err = r.run([r.sbsim, "--model-file", p, "--jobs", "1", "--concurrency", "1",
                         "--requests", "10"])
        if rc != 0:
            print("coverage_offdata: truth %s does not load: %s" % (tname, err.strip()),
                  file=sys.stderr)
            return 2
        tpaths[tname] = p

    plan = []  # (tname, dname, configs)
    for tname, tpath in tpaths.items():
        for dname, ds in DATASETS.items():
            s = ds["slots"]
            inp, out = ds["sweep"]
            lv = r.sim(tpath, ["--slots", str(s), "--concurrency", str(2 * s), "--input-len",
                               inp, "--output-len", out, "--requests", "1000"], 1,
                       os.path.join(work, "cap-%s-%s.json" % (tname.split()[0],
                                                              dname.split()[0])))
            cap = lv["req_s"]
            cfgs = configs(ds, (0.5 * cap, 0.8 * cap))
            flags = dict(cfgs)
            cfgs += [(name, flags[base]) for (t, dn, name), (base, _) in CONTROLS.items()
                     if (t, dn) == (tname, dname)]
            plan.append((tname, dname, cfgs, cap))

    results = {}
    with cf.ThreadPoolExecutor(max_workers=a.jobs) as ex:
        futs = {}
        for tname, dname, cfgs, _ in plan:
            for k in range(a.draws):
                f = ex.submit(one_draw, r, work, tname, tpaths[tname], dname,
                              DATASETS[dname], cfgs, k, a.replications)
                futs[f] = (tname, dname, k)
        for f in cf.as_completed(futs):
            results[futs[f]] = f.result()

    rows = []
    failures = []
    for tname, dname, cfgs, cap in plan:
        for cname, flags in cfgs:
            for mname, _, _ in METRICS:
                hits, widths, awidths, truthv, preds, fail = 0, [], [], [], [], 0
                for k in range(a.draws):
                    res = results[(tname, dname, k)]
                    if isinstance(res, str):
                        fail += 1
                        if cname == cfgs[0][0] and mname == METRICS[0][0]:
                            failures.append("%s %s draw %d: %s" % (tname, dname, k, res))
                        continue
                    c = res[cname]
                    if isinstance(c, str):
                        fail += 1
                        if mname == METRICS[0][0]:
                            failures.append("%s %s %s draw %d: %s" % (tname, dname, cname,
                                                                      k, c))
                        continue
                    pred, lo, hi, tv = c[mname]
                    if None in (pred, lo, hi, tv):
                        fail += 1
                        continue
                    hits += lo <= tv <= hi
                    widths.append((hi - lo) / pred if pred else float("inf"))
                    awidths.append(hi - lo)
                    truthv.append(tv)
                    preds.append(pred)
                n = len(truthv)
                ci = wilson(hits, n)
                tmean = statistics.fmean(truthv) if n else float("nan")
                sd = statistics.stdev(truthv) if n >= 2 else float("nan")
                tsd = sd / tmean if tmean else float("nan")
                mw = statistics.median(widths) if widths else float("nan")
                ratio = (statistics.median(awidths) / (2 * 1.645 * sd)
                         if n >= 2 and sd > 0 else float("nan"))
                bias = (statistics.median(preds) / tmean - 1) if n and tmean else float("nan")
                rows.append({
                    "truth": tname, "data": dname, "config": cname, "metric": mname,
                    "control": (tname, dname, cname) in CONTROLS,
                    "flags": " ".join(flags), "capacity_req_s": cap,
                    "inside": hits, "n": n, "failed": fail,
                    "coverage": hits / n if n else None,
                    "coverage_ci95": list(ci) if n else None,
                    "median_rel_width": mw, "truth_mean": tmean, "truth_rel_sd": tsd,
                    "width_over_truth_spread": ratio,
                    "median_pred_bias": bias,
                })
    elapsed = time.time() - t0

    def f(x, fmt):
        return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else fmt % x

    hdr = ("truth", "data", "config", "metric", "coverage", "95% CI", "rel width",
           "width/spread", "bias", "fail")
    print("%-10s %-9s %-11s %-9s %-8s %-12s %-10s %-12s %-8s %s" % hdr)
    for w in rows:
        cov = "%d/%d" % (w["inside"], w["n"])
        ci = ("%.2f-%.2f" % tuple(w["coverage_ci95"])) if w["coverage_ci95"] else "-"
        print("%-10s %-9s %-11s %-9s %-8s %-12s %-10s %-12s %-8s %d" % (
            w["truth"], w["data"], w["config"], w["metric"], cov, ci,
            f(100 * w["median_rel_width"], "%.1f%%"),
            f(w["width_over_truth_spread"], "%.2f"),
            f(100 * w["median_pred_bias"], "%+.1f%%"), w["failed"]))
    print("draws %d, replications %d, %.0f s" % (a.draws, a.replications, elapsed))
    print("rel width: median (hi - lo) / prediction; width/spread: median (hi - lo) over "
          "2 x 1.645 x the sd of the truth's N fresh runs; bias: median prediction / "
          "mean of the truth's runs - 1")
    for msg in failures:
        print("failed: " + msg)
    if a.markdown:
        print()
        print("| truth | data | config | TTFT p50 | TPOT p50 | E2E p50 |")
        print("|---|---|---|---|---|---|")
        by = {}
        for w in rows:
            by.setdefault((w["truth"], w["data"], w["config"]), []).append(w)
        for (t, d, c), ws in by.items():
            cells = []
            for w in ws:
                cells.append("%d/%d (%s, %s)" % (
                    w["inside"], w["n"], f(w["width_over_truth_spread"], "%.1f"),
                    f(100 * w["median_pred_bias"], "%+.0f%%")))
            print("| %s | %s | %s | %s |" % (t, d, c, " | ".join(cells)))
    if a.json_out:
        with open(a.json_out, "w") as fo:
            json.dump({"draws": a.draws, "replications": a.replications,
                       "elapsed_s": elapsed, "rows": rows, "failures": failures}, fo,
                      indent=1)
    if tmp:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
