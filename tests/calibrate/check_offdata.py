#!/usr/bin/env python3
"""check_offdata.py JSON — judge the error bars off the data: the JSON that
experiments/coverage_offdata.py --json writes (truths of forms the calibrator
does not assume, two data sets, predictions inside and beyond the data; each
cell: how many of N intervals held one fresh run of the truth).

A cell fails when
  - a draw failed to calibrate or predict;
  - its coverage is below 80% beyond chance: P(Binomial(N, 0.80) <= k) < 0.001
    (with N = 60, k <= 37; a true 90% cell reaches that with chance 2e-6, so the
    ~140 cells together fail by chance far less than once in a hundred runs);
  - inside the data at the data's own run size (C1, and open loop at 50% of the
    capacity), its median interval is more than WIDTH_MAX times as wide as the
    truth's own 90% run-to-run spread: an interval that holds by being wide
    does not pass (measured 0.2-3.3 on 2026-12-07).
Coverage above 98% cannot be told from 98% with N = 60 (60 of 60 has chance
0.30 at 98%); beyond the data the width is what the data leaves open and is
printed, not bounded.

KNOWN lists the cells not asserted, each with the reason; they are printed
with their figures. A negative control's row ("control": true: a prediction
from the model without one coefficient's spread) must fail the coverage rule
in at least one metric, or the rule could not tell it. Exit 0 when every
asserted cell passes and every control fails, 1 otherwise.
"""
import json
import math
import sys

ALPHA = 0.001
COVERAGE_MIN = 0.80
WIDTH_MAX = 4.0
IN_DATA = ("C1", "C4 50%")

# (truth, data, config prefix, metric) -> why it is not asserted. T1's decode
# step at batch 8 is 14.0 ms against 5.6 at 4 (2.5x for twice the batch) and
# 2.2x the line through the measured batches 1, 2 and 4. Beyond the table the
# decode rule's form error (form_decode, core/model.h) is held from below only
# (never quicker than the last measured batch); its sd where the table cannot
# check its own rule is the prior from real servers, 0.2 per step of the
# table's last spacing, and T1's bend is 2 of those out: a fixed truth in the
# prior's tail is not held 90% of the time by any calibration of that prior.
# From D1 (batches 1 and 2) the same prior reaches 8 slots with sd 21 x 0.2
# and holds T1 and T5 there (asserted since 2026-12-08).
T1_D2 = ("the prior (sd 0.2 per step of the table's spacing, the misses seen on "
         "real servers) puts T1's bend at 8 slots 2 sd out")
KNOWN = {
    ("T1 bend", "D2 url", "C2", "TPOT p50"): T1_D2,
    ("T1 bend", "D2 url", "C2", "E2E p50"): T1_D2,
}


def binom_cdf(k, n, p):
    return sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(k + 1))


def known(row):
    for (t, d, c, m), why in KNOWN.items():
        if (row["truth"], row["data"], row["metric"]) == (t, d, m) and \
                row["config"].startswith(c):
            return why
    return None


def judge(row):
    """[reasons the row fails]"""
    bad = []
    if row["failed"]:
        bad.append("%d draws failed" % row["failed"])
    k, n = row["inside"], row["n"]
    if n and binom_cdf(k, n, COVERAGE_MIN) < ALPHA:
        bad.append("coverage %d/%d: below %d%% (P = %.1g)" %
                   (k, n, 100 * COVERAGE_MIN, binom_cdf(k, n, COVERAGE_MIN)))
    w = row["width_over_truth_spread"]
    if row["config"].startswith(IN_DATA) and not (w <= WIDTH_MAX):
        bad.append("in the data, %.1f x the truth's own spread (at most %.0f)" % (w, WIDTH_MAX))
    return bad


def main():
    if len(sys.argv) != 2:
        print("usage: check_offdata.py JSON", file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    rows = doc["rows"]
    if not rows:
        print("FAIL: no rows")
        return 1
    failed = passed = n_known = 0
    caught = {}
    for r in rows:
        cell = "%s %s %s %s" % (r["truth"], r["data"], r["config"], r["metric"])
        fig = "%d/%d, width %.1f x spread" % (r["inside"], r["n"], r["width_over_truth_spread"])
        if r.get("control"):
            miss = [b for b in judge(r) if b.startswith("coverage")]
            key = " ".join((r["truth"], r["data"], r["config"]))
            caught[key] = caught.get(key, False) or bool(miss)
            print("control %-41s %s: %s" % (cell, fig, miss[0] if miss else "not caught"))
            continue
        why = known(r)
        if why:
            n_known += 1
            print("known  %-42s %s: %s" % (cell, fig, why))
            continue
        bad = judge(r)
        if bad:
            failed += 1
            print("FAIL   %-42s %s: %s" % (cell, fig, "; ".join(bad)))
        else:
            passed += 1
    if not caught:
        failed += 1
        print("FAIL   no negative control in the file")
    for key, ok in caught.items():
        if not ok:
            failed += 1
            print("FAIL   control %s passed the coverage rule: the rule cannot tell it" % key)
    print("off-data coverage: %d cells passed, %d failed, %d known, %d of %d controls caught "
          "(%d draws each)" % (passed, failed, n_known, sum(caught.values()), len(caught),
                               doc["draws"]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
