#!/usr/bin/env python3
"""check_vllm_cover.py JSON — judge the vLLM-class replay fit's 90% intervals:
the JSON that experiments/vllm_coverage.py --json writes (N files simulated
from a known vLLM-class model, each calibrated on its levels' first halves;
per draw the held-out figures, another workload's figures predicted by sbsim,
and the coefficients, each with its interval and the measured or true value).

A figure or coefficient fails when its intervals held the measured value (the
truth's, for a coefficient) in fewer than 80% of the draws beyond chance:
P(Binomial(N, 0.80) <= k) < 0.001 (with N = 20, k <= 9; a true 90% figure gets
there with chance 7e-7, so the 17 figures together fail by chance far less
than once in a thousand runs). Pure binomial arithmetic: no term of the model
under test is in the bound.

Negative controls, judged by the same rule on the same draws: per_seq's and
per_kv_token's intervals narrowed to a tenth of their width about the fitted
value (about the width they had before the ridge's scan of 2026-12-08, when
they held the truth 10 and 13 times in 40: on the first draw per_seq
0.138-0.163, now 0.026-0.276). Each must fail
it, or the rule with N draws could not tell such intervals. Exit 0 when every
figure passes and every control fails, 1 otherwise.
"""
import json
import sys

from check_offdata import ALPHA, COVERAGE_MIN, binom_cdf
NARROW = 1 / 10
CONTROLS = (("coef", "per_seq"), ("coef", "per_kv_token"))


def fails(k, n):
    return binom_cdf(k, n, COVERAGE_MIN) < ALPHA


def narrowed(v):
    _, _, _, pred, lo, hi, meas = v
    return pred - NARROW * (pred - lo) <= meas <= pred + NARROW * (hi - pred)


def main():
    draws = json.load(open(sys.argv[1]))
    n = len(draws)
    bad = 0
    for group in ("held", "other", "coef"):
        for name in draws[0][group]:
            k = sum(1 for d in draws if d[group][name][0])
            ok = not fails(k, n)
            bad += not ok
            print("%-5s %-6s %-24s %2d/%d%s" % ("ok" if ok else "FAIL", group, name, k, n,
                  "" if ok else ": below 80%% (P = %.2g)" % binom_cdf(k, n, COVERAGE_MIN)))
    for group, name in CONTROLS:
        k = sum(1 for d in draws if narrowed(d[group][name]))
        print("control %-5s %-24s %2d/%d with a tenth of the width: %s" %
              (group, name, k, n, "caught" if fails(k, n) else "NOT caught"))
        bad += not fails(k, n)
    print("vllm coverage: %d draws, %s" % (n, "passed" if not bad else "%d failures" % bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
