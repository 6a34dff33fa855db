#!/usr/bin/env python3
"""calibrate_loop_check.py TRUTH FITTED RTT — does a calibration recover
the model the emulator served? (read calibrate_loop.sh's header)

Judged: the coefficients the truth has and calibrate fits with an
interval: decode_ms at each fitted batch size (the truth's table
interpolated linearly between its entries, as the simulator does),
per_kv_token, per_prefill_token, prefill_base, overhead_ms. Every one must
hold the truth; the terms that set TTFT and TPOT (decode_ms, the prefill
terms, overhead_ms) must also exclude it 10% off, else inconclusive;
per_kv_token (contexts up to 2k tokens move a step by ~5%) is judged for
inclusion only. Exit 0 pass, 1 fail, 77 inconclusive.
"""
import json
import statistics
import sys
from statistics import NormalDist

FAMILY = 0.05  # family-wise error rate over the coefficients judged


def truth_decode(table, b):
    """decode_ms(b) of a table {batch: ms}, linear between entries."""
    pts = sorted((int(k), v) for k, v in table.items())
    if b <= pts[0][0]:
        return pts[0][1]
    for (b0, v0), (b1, v1) in zip(pts, pts[1:]):
        if b <= b1:
            return v0 + (v1 - v0) * (b - b0) / (b1 - b0)
    return pts[-1][1]


def truths(m, fitted):
    """(name, true value, extra allowance in its unit) per judged term."""
    st = m["step_ms"]
    rtt_ms = statistics.median(float(x) for x in open(sys.argv[3])) * 1000
    out = []
    for name in fitted:
        if name.startswith("decode_ms["):
            out.append((name, truth_decode(st["decode_ms"], int(name[10:-1])), 0.0))
    for name in ("per_kv_token", "per_prefill_token", "prefill_base"):
        out.append((name, st.get(name, 0.0), 0.0))
    out.append(("overhead_ms", m["overhead_ms"], rtt_ms))
    return out


def main():
    m = json.load(open(sys.argv[1]))
    coef = json.load(open(sys.argv[2]))["fit"]["coefficients"]
    judged = [(n, t, a) for n, t, a in truths(m, coef)
              if n in coef and None not in coef[n].get("ci95", [None])]
    k = len(judged)
    widen = NormalDist().inv_cdf(1 - FAMILY / (2 * k)) / NormalDist().inv_cdf(0.975)
    print(f"{k} coefficients; 95% intervals widened x{widen:.2f} (family-wise 95%)")
    fails, blind = [], []
    for name, true, allow in judged:
        c = coef[name]
        lo, hi = c["ci95"]
        mid = c["value"]
        lo, hi = mid - widen * (mid - lo) - allow, mid + widen * (hi - mid) + allow
        inside = lo <= true <= hi
        off_caught = not (lo <= 1.1 * true <= hi) and not (lo <= 0.9 * true <= hi)
        print(f"  {name:20} truth {true:<12.6g} fitted {mid:<12.6g} [{lo:.6g}, {hi:.6g}] "
              f"{'ok' if inside else 'MISS'}{'' if off_caught else ' (10% off also inside)'}")
        if not inside:
            fails.append(name)
        if not off_caught and true != 0 and name != "per_kv_token":
            blind.append(name)
    if fails:
        print("FAIL: the calibration misses the served model's " + ", ".join(fails))
        return 1
    if blind:
        print("INCONCLUSIVE: intervals too wide to tell 10% off for " + ", ".join(blind))
        return 77
    print("ok: every coefficient recovered; 10% off is outside every interval")
    return 0


if __name__ == "__main__":
    sys.exit(main())
