#!/usr/bin/env python3
"""calibrate_loop_check.py TRUTH FITTED PATH_MS BEFORE... -- AFTER... — does
a calibration recover the model the emulator served? (read
calibrate_loop.sh's header)

Judged: the coefficients the truth has and calibrate fits with an
interval: decode_ms at each fitted batch size (the truth's table
interpolated linearly between its entries, as the simulator does),
per_kv_token, per_prefill_token, prefill_base, overhead_ms. Every one must
hold the truth; the terms that set TTFT and TPOT (decode_ms, the prefill
terms, overhead_ms) must also exclude it 10% off, else inconclusive;
per_kv_token (contexts up to 2k tokens move a step by ~5%) is judged for
inclusion only. overhead_ms is judged less the emulator's path: BEFORE and
AFTER are `servebench run` results (one client, several prompt lengths) of
an emulator whose model's overhead is PATH_MS; each request's TTFT - server
prompt_ms - PATH_MS is its path. The path is estimated as calibrate
estimated the overhead (the intercept of a line in the prompt tokens when
the fitted model has a per-token overhead, else the mean), with a 95%
interval, before and after the calibration; the allowance spans both
intervals. Exit 0 pass, 1 fail, 77 inconclusive.
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


def path_points(files, path_ms):
    """(prompt tokens, TTFT - server prompt_ms - path_ms) per request."""
    out = []
    for f in files:
        for lv in json.load(open(f))["levels"]:
            for r in lv["requests"]:
                if r.get("error") is None and r.get("server"):
                    out.append((r["prompt_tokens"],
                                r["ttft_ms"] - r["server"]["prompt_ms"] - path_ms))
    return out


def path_interval(pts, line):
    """95% interval of the path at 0 prompt tokens (line) or of its mean."""
    n = len(pts)
    ys = [y for _, y in pts]
    if not line:
        m, se = statistics.mean(ys), statistics.stdev(ys) / n ** 0.5
        t = t95(n - 1)
        return m - t * se, m + t * se
    xs = [x for x, _ in pts]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in pts) / sxx
    a = my - b * mx
    s2 = sum((y - a - b * x) ** 2 for x, y in pts) / (n - 2)
    se = (s2 * (1 / n + mx * mx / sxx)) ** 0.5
    t = t95(n - 2)
    return a - t * se, a + t * se


def t95(dof):
    """Student's t, two-sided 95%."""
    table = {6: 2.447, 8: 2.306, 10: 2.228, 15: 2.131, 20: 2.086, 30: 2.042}
    return next((v for d, v in sorted(table.items()) if dof <= d), 1.96)


def path_allowance(m, files):
    """(lo, hi): the emulator's path in ms, before and after together."""
    i = files.index("--")
    line = m.get("overhead_per_prompt_token_ms", 0) > 0
    ivs = [path_interval(path_points(part, float(sys.argv[3])), line)
           for part in (files[:i], files[i + 1:])]
    lo, hi = min(v[0] for v in ivs), max(v[1] for v in ivs)
    print(f"emulator path ({'intercept' if line else 'mean'}): before "
          f"[{ivs[0][0]:.3f}, {ivs[0][1]:.3f}] ms, after [{ivs[1][0]:.3f}, {ivs[1][1]:.3f}] ms")
    return lo, hi


def truths(m, fitted):
    """(name, true value, (lo, hi) of time M does not know of) per judged
    term."""
    st = m["step_ms"]
    out = []
    for name in fitted:
        if name.startswith("decode_ms["):
            out.append((name, truth_decode(st["decode_ms"], int(name[10:-1])), (0, 0)))
    for name in ("per_kv_token", "per_prefill_token", "prefill_base"):
        out.append((name, st.get(name, 0.0), (0, 0)))
    return out


def main():
    m = json.load(open(sys.argv[1]))
    coef = json.load(open(sys.argv[2]))["fit"]["coefficients"]
    fitted_model = json.load(open(sys.argv[2]))
    judged = truths(m, coef) + [("overhead_ms", m["overhead_ms"],
                                 path_allowance(fitted_model, sys.argv[4:]))]
    judged = [(n, t, a) for n, t, a in judged
              if n in coef and None not in coef[n].get("ci95", [None])]
    k = len(judged)
    widen = NormalDist().inv_cdf(1 - FAMILY / (2 * k)) / NormalDist().inv_cdf(0.975)
    print(f"{k} coefficients; 95% intervals widened x{widen:.2f} (family-wise 95%)")
    fails, blind = [], []
    for name, true, allow in judged:
        c = coef[name]
        lo, hi = c["ci95"]
        mid = c["value"]
        # the fitted value is M's plus the path: M's lies within it less
        # the path's interval
        lo, hi = mid - widen * (mid - lo) - allow[1], mid + widen * (hi - mid) - allow[0]
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
