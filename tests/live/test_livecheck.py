"""test_livecheck.py — the live tests' judge (livecheck.py) on synthetic
validations whose truth is known: a server with fixed true figures per
level, measured twice with a run noise of sd `noise` (lognormal-like, a
seeded generator), and models whose predictions are the truth times a
factor per regime and quantity. An exact model must pass, every wrong one
must fail, and a run too noisy to tell must say inconclusive, not pass.

Usage: python3 test_livecheck.py (exit 0: every check held)."""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import livecheck as lc  # noqa: E402

SLOTS = 2
LEVELS = [("concurrency", c) for c in (1, 2, 3, 4)] + [("rate", r) for r in (0.5, 0.9, 1.3, 1.7)]
STATS = ("mean", "p50", "p90", "p99")


def truth(mode, lv, q, s):
    """The true figure of a level (ms): grows with load, tails above centres."""
    base = {"ttft": 200.0, "tpot": 12.0, "e2e": 600.0}[q]
    load = lv if mode == "concurrency" else 1 + lv
    return base * (1 + 0.3 * (load - 1)) * {"mean": 1.0, "p50": 0.97, "p90": 1.3, "p99": 1.5}[s]


def measure(rng, noise):
    """{(mode, level, q, s): measured}: one run of the true server."""
    return {(m, l, q, s): truth(m, l, q, s) * (1 + rng.gauss(0, noise))
            for m, l in LEVELS for q in lc.QUANTS for s in STATS}


def replay(meas, factor, drift_pct=0.0):
    """A validate JSON document: the measured figures, a prediction of the
    truth x factor(mode, level, q), and the drift runs."""
    levels = []
    for m, l in LEVELS:
        mt = {}
        for q in lc.QUANTS:
            for s in STATS:
                x = meas[(m, l, q, s)]
                p = truth(m, l, q, s) * factor(m, l, q)
                mt["%s_%s" % (q, s)] = {"measured": x, "predicted": p,
                                        "error_pct": (p - x) / x * 100}
        levels.append({"mode": m, "level": l, "metrics": mt})
    runs = [{"when": w, "ttft_pct": d, "itl_pct": d, "e2e_pct": d}
            for w, d in (("before", 0.0), ("after", drift_pct))]
    return {"levels": levels, "reference_drift": {"runs": runs}}


def exact(m, l, q):
    return 1.0


WRONG = {
    "all x1.2": lambda m, l, q: 1.2,
    "all x0.85": lambda m, l, q: 0.85,
    "batched decode x1.25": lambda m, l, q: 1.25 if q in ("tpot", "e2e") and
    (m == "rate" or l >= SLOTS) else 1.0,
    "prefill x1.25": lambda m, l, q: 1.25 if q == "ttft" else 1.0,
    "open loop TPOT x0.8": lambda m, l, q: 0.8 if q == "tpot" and m == "rate" else 1.0,
}


def run(rng, noise, model, controls=(), drift_pct=0.0, second=None):
    """The verdict of one synthetic live test; second: the model of a
    second calibration (recal_term), when there is one."""
    a, b = measure(rng, noise), measure(rng, noise)
    right = [replay(a, model, drift_pct), replay(b, model, drift_pct)]
    ctl = [(n, [replay(a, f, drift_pct), replay(b, f, drift_pct)]) for n, f in controls]
    rep = lc.repeat_diffs(right[0], right[1], SLOTS)
    spread = lc.drift_spread(lc.drift_runs(right))
    recal = [replay(a, second, drift_pct), replay(b, second, drift_pct)] if second else None
    return lc.judge(right, ctl, rep, spread, SLOTS, recal=recal)


failures = []


def check(what, got, want):
    ok = got == want
    print("%-62s %-12s %s" % (what, lc.VERDICT[got], "ok" if ok else "FAIL (want %s)" % lc.VERDICT[want]))
    if not ok:
        failures.append(what)


rng = random.Random(20261203)
controls = [(n, f) for n, f in WRONG.items() if n in ("all x1.2", "batched decode x1.25",
                                                      "prefill x1.25")]
# Quiet machine (run noise sd 1%): decided; an exact model passes in every
# one of 20 runs, its controls caught in every one.
for i in range(20):
    v, reasons, rec = run(rng, 0.01, exact, controls)
    check("quiet, exact model with its controls (run %d)" % i, v, lc.PASS)
    if v == lc.PASS:
        missed = [c["name"] for c in rec["controls"] if not c["caught"]]
        if missed:
            failures.append("controls passed: %s" % missed)
# Every wrong model fails the same bound on a quiet machine.
for name, f in WRONG.items():
    for i in range(5):
        v, _, _ = run(rng, 0.01, f)
        check("quiet, %s (run %d)" % (name, i), v, lc.FAIL)
# A noisy machine (sd 15%: repeat differences ~14%) cannot tell:
# inconclusive for the exact model, never pass.
for i in range(5):
    v, _, _ = run(rng, 0.15, exact, controls)
    check("noisy, exact model (run %d)" % i, v, lc.INCONCLUSIVE)
# ... but a model 2x off is wrong whatever the noise: far beyond it, it fails.
for i in range(3):
    v, _, _ = run(rng, 0.15, lambda m, l, q: 2.0, controls)
    check("noisy, a model 2x slow (run %d)" % i, v, lc.FAIL)
# ... while a model 1.3x slow, beyond the limit there but not by GROSS x
# the noise, is never passed.
for i in range(5):
    v, _, _ = run(rng, 0.15, lambda m, l, q: 1.3, controls)
    check("noisy, a model 1.3x slow (run %d): not passed" % i, lc.FAIL if v != lc.PASS else v,
          lc.FAIL)
# Two calibrations of one server (recal_term, reported, not judged): a
# model whose TTFT came out 14% slow fails whether or not a second
# calibration came out right, and its record carries how far apart they
# were; an exact model passes beside a wrong second calibration.
ttft_slow = lambda m, l, q: 1.14 if q == "ttft" else 1.0  # noqa: E731
for i in range(3):
    v, _, rec = run(rng, 0.01, ttft_slow, controls, second=exact)
    check("quiet, TTFT x1.14, the second calibration exact (run %d)" % i, v, lc.FAIL)
    got = {c["cell"]: c["recal"] for c in rec["cells"]}
    if not got["batched/ttft/central"] > 20 or not got["batched/tpot/central"] < 1:
        failures.append("recal not reported: %s" % got)
    check("quiet, exact, the second calibration TTFT x1.14 (run %d)" % i,
          run(rng, 0.01, exact, controls, second=ttft_slow)[0], lc.PASS)
# the term: 1.645 sd of one calibration, read from |e1 - e2| = 14 points
r = [replay(measure(rng, 0.0), ttft_slow)] * 2
t = lc.recal_term(r, [replay(measure(rng, 0.0), exact)] * 2, SLOTS)
assert abs(t[("batched", "ttft", "central")] - 14 * lc.RECAL_Z) < 0.5, t
assert t[("batched", "tpot", "central")] < 0.01, t
# The rule itself: a decided cell misses beyond its limit; an undecided one
# is inconclusive there and fails beyond GOAL + GROSS x its noise.
c = ("batched", "ttft", "central")
lim = {c: (15.0, 25.0, False)}
assert lc.misses({c: 30.0}, {}, lim)[0] == [] and len(lc.misses({c: 30.0}, {}, lim)[1]) == 1
assert len(lc.misses({c: 56.0}, {}, lim)[0]) == 1            # > 10 + 3 x 15
assert len(lc.misses({c: 30.0}, {}, {c: (8.0, 18.0, True)})[0]) == 1
assert lc.misses({c: 17.0}, {}, {c: (8.0, 18.0, True)}) == ([], [])
# A regime's worst level: held to WORST x GOAL + its noise, the noise the
# regime's largest repeat with the drift term; a decided regime fails
# there, an undecided one only beyond WORST x GOAL + GROSS x noise.
o = ("open", "ttft")
lev = {"mode": "rate", "level": 1.0}


def two_levels(a, b):
    return {"levels": [dict(lev, metrics={"ttft_mean": {"measured": a}, "ttft_p50": {"measured": a}})]}


assert lc.worst_repeats(two_levels(100, 100), two_levels(144, 120), SLOTS) == {o: 44.0}
quiet_w = lc.worst_bounds({o: 2.0}, {"ttft": 1.0}, {o + ("central",): (3.0, 13.0, True)})
assert abs(quiet_w[o][1] - (20 + 5 ** 0.5)) < 1e-9 and quiet_w[o][1] == quiet_w[o][2]
worst = {o: (30.0, ("rate", 1.0))}
assert len(lc.misses({}, worst, {}, quiet_w)[0]) == 1          # 30% > 22.2%
noisy_w = lc.worst_bounds({o: 20.0}, {"ttft": 1.0}, {o + ("central",): (3.0, 13.0, True)})
assert lc.misses({}, worst, {}, noisy_w) == ([], [])            # the level repeated 20% apart
loose = lc.worst_bounds({o: 20.0}, {"ttft": 1.0}, {o + ("central",): (12.0, 22.0, False)})
assert lc.misses({}, {o: (50.0, ("rate", 1.0))}, {}, loose)[1] != []    # 40 < 50 < 80: unsure
assert lc.misses({}, {o: (90.0, ("rate", 1.0))}, {}, loose)[0] != []    # > 20 + 3 x 20
# On a moderately noisy one (sd 6%) an exact model never fails.
for i in range(10):
    v, _, _ = run(rng, 0.06, exact, controls)
    check("moderate noise, exact model (run %d): not failed" % i, lc.PASS if v != lc.FAIL else v,
          lc.PASS)
# Drift runs 50% apart (the 90% interval of one more: +-61%) are noise too.
v, _, _ = run(rng, 0.01, exact, controls, drift_pct=50.0)
check("quiet, drift runs 50% apart", v, lc.INCONCLUSIVE)
# A control that changes nothing the test measures cannot be caught: on a
# quiet machine the test must then fail, not pass; on a noisier one (noise
# above QUIET) it cannot tell, so inconclusive.
v, reasons, _ = run(rng, 0.01, exact, [("a copy of the model", exact)])
check("quiet, a 'control' identical to the model", v, lc.FAIL)
if v == lc.FAIL and "cannot tell" not in reasons[0]:
    failures.append("the blind control's reason: %s" % reasons)
# Beside controls that differ, a copy is uninformative, reported, not counted.
v, _, rec = run(rng, 0.01, exact, controls + [("a copy of the model", exact)])
check("quiet, exact model, its controls and a copy of it", v, lc.PASS)
cp = [c for c in rec["controls"] if c["name"] == "a copy of the model"]
if v == lc.PASS and (cp[0]["informative"] or cp[0]["apart"] != 0):
    failures.append("a copy of the model counted as informative: %s" % cp)
if v == lc.PASS and not all(c["informative"] for c in rec["controls"] if c is not cp[0]):
    failures.append("a wrong model called uninformative: %s" % rec["controls"])
# ... and one only 12% apart from the model (< goal + QUIET: a quiet bound
# may or may not catch it) is uninformative too.
v, _, rec = run(rng, 0.01, exact, controls + [("x1.12", lambda m, l, q: 1.12)])
check("quiet, exact model, its controls and one 12% off", v, lc.PASS)
v, _, _ = run(rng, 0.01, exact, [("a copy of the model", exact)], drift_pct=30.0)
check("drift runs 30% apart (90% interval +-40%), a 'control' identical to the model", v, lc.INCONCLUSIVE)
# A known gap: the open-loop TPOT x0.8 model passes when open/tpot is
# declared a known gap, fails when not.
a_, b_ = measure(rng, 0.01), measure(rng, 0.01)
gapped = [replay(a_, WRONG["open loop TPOT x0.8"]), replay(b_, WRONG["open loop TPOT x0.8"])]
rep_ = lc.repeat_diffs(gapped[0], gapped[1], SLOTS)
sp_ = lc.drift_spread(lc.drift_runs(gapped))
ctl_ = [(n, [replay(a_, f), replay(b_, f)]) for n, f in controls]
v, _, rec = lc.judge(gapped, ctl_, rep_, sp_, SLOTS, known=["open/tpot/*"])
check("quiet, open-loop TPOT x0.8 with open/tpot a known gap", v, lc.PASS)
v, _, _ = lc.judge(gapped, ctl_, rep_, sp_, SLOTS)
check("quiet, open-loop TPOT x0.8, no known gap", v, lc.FAIL)
# A band: at batched levels (c >= SLOTS, the decode passes a model extrapolates
# beyond its table) the model replayed with its decode rule at either end of
# its form interval (x0.67, x1.33 there; inside the table the ends are the
# model). A model 15% high there, as an extrapolation misses, passes within
# the band and fails without it; one 2x high there fails with the band too;
# the controls are shifted by the same band and still caught.
def batched(m, l):
    return m == "concurrency" and l >= SLOTS


def banded(f, end):
    return lambda m, l, q: f(m, l, q) * (end if batched(m, l) else 1.0)


for name, f, want in (("15% high beyond the table", 1.15, lc.PASS),
                      ("2x high beyond the table", 2.0, lc.FAIL)):
    model = (lambda k: lambda m, l, q: k if batched(m, l) else 1.0)(f)
    a_, b_ = measure(rng, 0.01), measure(rng, 0.01)
    right = [replay(a_, model), replay(b_, model)]
    band = tuple([replay(a_, banded(model, end)), replay(b_, banded(model, end))]
                 for end in (0.67, 1.33))
    rep_ = lc.repeat_diffs(right[0], right[1], SLOTS)
    sp_ = lc.drift_spread(lc.drift_runs(right))
    ctl_ = [(n, [replay(a_, g), replay(b_, g)]) for n, g in controls]
    v, _, rec = lc.judge(right, ctl_, rep_, sp_, SLOTS, band=band)
    check("quiet, a model %s, judged outside its band" % name, v, want)
    if want == lc.PASS and not all(c["caught"] for c in rec["controls"]):
        failures.append("a band let a control pass: %s" % rec["controls"])
    v, _, _ = lc.judge(right, ctl_, rep_, sp_, SLOTS)
    check("quiet, a model %s, judged on its point prediction" % name, v, lc.FAIL)
# outside_band itself: inside 0, else the nearer end, signed
_, b0 = lc.outside_band({"k": (None, {("ttft", "p50"): 10.0, ("tpot", "p50"): -30.0,
                                       ("e2e", "p50"): 40.0})},
                        {"k": {("ttft", "p50"): (-20.0, 15.0), ("tpot", "p50"): (-5.0, 20.0),
                               ("e2e", "p50"): (-25.0, 30.0)}})["k"]
assert b0 == {("ttft", "p50"): 0.0, ("tpot", "p50"): -10.0, ("e2e", "p50"): 15.0}, b0
# form_bound: 1.645 sd of form_decode from fit.covariance; 0 without it
cov = {"fit": {"covariance": {"params": ["decode_ms[1]", "form_decode"],
                              "matrix": [[1.0, 0.0], [0.0, 0.04]]}}}
assert abs(lc.form_bound(cov) - 0.329) < 1e-12 and lc.form_bound({"fit": {}}) == 0.0
# The record is valid JSON without NaN.
import json  # noqa: E402
v, reasons, rec = run(rng, 0.01, exact, controls)
json.loads(json.dumps(lc.clean(rec), allow_nan=False))
# The small helpers.
assert lc.median([3, float("nan"), 1, 2]) == 2
assert lc.median([]) != lc.median([])
fp, fd = lc.speed_factors([{"ttft": 1.1, "itl": 0.9}, {"ttft": 1.3, "itl": 1.1}])
assert abs(fp - 1.2) < 1e-12 and abs(fd - 1.0) < 1e-12, (fp, fd)
sp = lc.drift_spread([{"ttft": 1.0, "itl": 1.0}, {"ttft": 1.2, "itl": 1.05}])
# two ratios 1.0 and 1.2: sd 0.1414, x sqrt(1/2 + 1), mean 1.1, t(0.95, 1 dof)
want = 6.314 * 0.02 ** 0.5 * 1.5 ** 0.5 / 1.1 * 100
assert abs(sp["ttft"] - want) < 1e-9 and abs(sp["e2e"] - sp["ttft"]) < 1e-9, sp

# The pooled drift factors and their term (validate --drift-each-level
# runs, every request pooled), on synthetic requests of known speed.
def reqs(rng, ttft, gap, n, cv):
    return [{"ttft_ms": ttft * rng.gauss(1, cv), "itl_ms": [gap * rng.gauss(1, cv) for _ in range(16)]}
            for _ in range(n)]


def ref_doc(rs):
    return {"levels": [{"mode": "concurrency", "level": 1, "requests": rs}]}


def meas_doc(runs):
    return {"reference_drift": {"runs": [{"level": {"requests": r}} for r in runs]}}


prng = random.Random(5)
ref = [ref_doc(reqs(prng, 300, 10, 8, 0.02))]
slow = meas_doc([reqs(prng, 360, 11, 8, 0.02) for _ in range(6)])
fp, fd = lc.pooled_factors(ref, slow)
assert abs(fp - 1.2) < 0.03 and abs(fd - 1.1) < 0.03, (fp, fd)
steady = lc.pooled_drift_term(ref, [slow, meas_doc([reqs(prng, 360, 11, 8, 0.02) for _ in range(6)])])
assert steady["ttft"] < 4 and steady["tpot"] < 4 and steady["e2e"] == max(steady["ttft"], steady["tpot"]), steady
# two validations 30% apart in speed: about 1.645 x ln(1.3) / sqrt(2) = 30.5%
apart = lc.pooled_drift_term(ref, [slow, meas_doc([reqs(prng, 468, 11, 8, 0.02) for _ in range(6)])])
assert apart["ttft"] > 25 and apart["tpot"] < 4, apart
# a reference of 8 widely scattered requests: its own noise is in the term
wide = lc.pooled_drift_term([ref_doc(reqs(prng, 300, 10, 8, 0.3))], [slow, slow])
assert wide["ttft"] > 10 and wide["tpot"] > steady["tpot"], wide
# two references (the calibration's sweep up and back) pooled: the factor
# is against their pooled p50s, and their disagreement (ITL 10 and 12.1:
# ln 1.21 / 2 = 9.5% sd, x 1.645 = 15.7%) is in the term; TTFT agreed
two = [ref[0], ref_doc(reqs(prng, 300, 12.1, 8, 0.02))]
fp2, fd2 = lc.pooled_factors(two, slow)
assert abs(fp2 - 1.2) < 0.03 and 0.9 < fd2 < 1.05, (fp2, fd2)
moved = lc.pooled_drift_term(two, [slow, slow])
assert 15 < moved["tpot"] < 17 and moved["ttft"] < 4, moved
assert lc.t95(3) == 2.353 and lc.t95(11) == 1.812 and lc.t95(100) == 1.645

# ---- the prompt cache's saving (judge_saving) ---------------------------------
# True TTFT means at c = 1, 2: uncached 400 and 750 ms, cached 170 and 330
# (savings 57.5% and 56%); measured twice with a run noise of sd `noise`.
SAVE_TRUE = {1: (170.0, 400.0), 2: (330.0, 750.0)}


def saving_docs(rng, noise, cached_factor=1.0, kind=0):
    """One measured pair (cached, uncached) as two validate documents whose
    predictions are the truth (cached ones x cached_factor)."""
    docs = []
    for k in (0, 1):
        lv = []
        for c, t in SAVE_TRUE.items():
            truth_v = t[k]
            f = cached_factor if k == 0 else 1.0
            lv.append({"mode": "concurrency", "level": c, "metrics": {"ttft_mean": {
                "measured": truth_v * (1 + rng.gauss(0, noise)), "predicted": truth_v * f}}})
        docs.append({"levels": lv})
    return docs


def saving_verdict(noise, cached_factor, control_factor, seed=3):
    rng = random.Random(seed)
    pairs = [saving_docs(rng, noise) for _ in range(2)]
    cached = [dict(p[0]) for p in pairs]
    uncached = [p[1] for p in pairs]

    def with_pred(docs, f):
        out = []
        for d in docs:
            lv = [{"mode": l["mode"], "level": l["level"], "metrics": {"ttft_mean": {
                "measured": l["metrics"]["ttft_mean"]["measured"],
                "predicted": SAVE_TRUE[l["level"]][0] * f}}} for l in d["levels"]]
            out.append({"levels": lv})
        return out
    right = with_pred(cached, cached_factor)
    ctl = [("no cache", with_pred(cached, control_factor))]
    return lc.judge_saving(right, uncached, ctl)[0]


# the cache-less model predicts cached = uncached TTFT: x400/170 at c=1
NOCACHE = 400.0 / 170.0
check("saving: exact model, quiet runs", saving_verdict(0.03, 1.0, NOCACHE), lc.PASS)
check("saving: cached TTFT predicted x1.6 (saving 35 pp short)",
      saving_verdict(0.03, 1.6, NOCACHE), lc.FAIL)
# over 200 seeded runs (printing silenced): an exact model never fails on
# runs of 10% noise, and runs of 40% are mostly too noisy to decide; two
# measurements that agree by chance while both are off make the rest fail
# (measured: 17 of 300, 5.7%; a bound read off two runs cannot see that)
def saving_rates(noise):
    import contextlib
    import io
    n = {lc.PASS: 0, lc.FAIL: 0, lc.INCONCLUSIVE: 0}
    for seed in range(200):
        with contextlib.redirect_stdout(io.StringIO()):
            n[saving_verdict(noise, 1.0, NOCACHE, seed=seed)] += 1
    return n


quiet, loud = saving_rates(0.1), saving_rates(0.4)
print("saving: exact model over 200 runs: noise 10%% %s, 40%% %s" % (quiet, loud))
check("saving: exact model never fails on 10% runs", lc.FAIL if quiet[lc.FAIL] else lc.PASS,
      lc.PASS)
check("saving: 40% runs mostly inconclusive, rarely failed",
      lc.INCONCLUSIVE if loud[lc.INCONCLUSIVE] >= 150 and loud[lc.FAIL] <= 20 else lc.FAIL,
      lc.INCONCLUSIVE)
check("saving: a control as good as the model cannot have failed",
      saving_verdict(0.03, 1.0, 1.0), lc.INCONCLUSIVE)


# The two pairs measured at different speeds (pair 1: the cached runs 1.2x
# slower than the calibration, the uncached 0.9x; pair 2 at its speed),
# each replay at its measurement's factor: the raw savings differ by 14
# points (43% and 57.5% at c=1), the savings at one speed by none.
def saving_speed_verdict(cached_factor):
    rng = random.Random(5)
    speeds = [(1.2, 0.9), (1.0, 1.0)]
    cached, uncached, ctl = [], [], []
    for sc, su in speeds:
        docs = []
        for k, sp in ((0, sc), (1, su)):
            f = cached_factor if k == 0 else 1.0
            lv = [{"mode": "concurrency", "level": c, "metrics": {"ttft_mean": {
                "measured": t[k] * sp * (1 + rng.gauss(0, 0.02)), "predicted": t[k] * sp * f}}}
                for c, t in SAVE_TRUE.items()]
            docs.append({"levels": lv, "speed_factors": {"prefill": sp, "decode": sp}})
        cached.append(docs[0])
        uncached.append(docs[1])
        # the cache-less model: cached TTFT predicted as the uncached one
        nocache = [dict(l, metrics={"ttft_mean": dict(
            l["metrics"]["ttft_mean"], predicted=SAVE_TRUE[l["level"]][1] * sc)})
            for l in docs[0]["levels"]]
        ctl.append({"levels": nocache, "speed_factors": docs[0]["speed_factors"]})
    return lc.judge_saving(cached, uncached, [("no cache", ctl)])[0]


check("saving: pairs at different speeds, exact model decided", saving_speed_verdict(1.0),
      lc.PASS)
check("saving: pairs at different speeds, cached TTFT x1.6 fails",
      saving_speed_verdict(1.6), lc.FAIL)
print("livecheck: %d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
