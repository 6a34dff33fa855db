"""live_bounds.py — the terms the live validation tests build their bounds
from (live_validate.sh, live_slots.sh, live_fleet.sh import it).

A measured figure and its prediction can differ for reasons no model can
know: the server's own speed moved between calibrating and validating, or
within the validation. These read how far, from validate's JSON.
"""


def median(xs):
    """The median of the numbers in xs (NaNs left out); NaN when none."""
    xs = sorted(x for x in xs if x == x)
    n = len(xs)
    if n == 0:
        return float("nan")
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def probe_offsets(server_speed, q):
    """Each of validate's one-client probes (JSON "server_speed"): how far
    its q (ttft or tpot) p50 is from the model's, as a fraction
    (measured / model - 1)."""
    probes = (server_speed or {}).get("probes", [])
    return [p[q + "_pct"] / 100 for p in probes if p.get(q + "_pct") is not None]


def probe_ratio(server_speed, q):
    """The server's one-client speed as a share of the model's: the median
    over the probes of measured / model for q (ttft or tpot). NaN without
    probes."""
    return median([1 + x for x in probe_offsets(server_speed, q)])


def speed_offset(server_speed, q):
    """How far the server's one-client speed is from the model's, in the
    units of a prediction error: a probe p% off the model makes an exact
    model's prediction err by -p / (1 + p); the median over the probes, in
    %. E2E: the larger of TTFT's and TPOT's. NaN without probes."""
    if q == "e2e":
        return max(speed_offset(server_speed, "ttft"), speed_offset(server_speed, "tpot"))
    return median([abs(x / (1 + x)) * 100 for x in probe_offsets(server_speed, q) if x > -1])


def probe_change(server_speed, q):
    """The median |change| between consecutive probes (%): the noise of the
    speed-adjusted scale factors. E2E: the larger of TTFT's and TPOT's."""
    if q == "e2e":
        return max(probe_change(server_speed, "ttft"), probe_change(server_speed, "tpot"))
    c = (server_speed or {}).get("probe_change_pct") or {}
    return c[q] if c.get(q) is not None else float("nan")


def model_spread(cmp, q, stats):
    """The model's own spread for a run of this size (%): the median over
    validate's levels (JSON "levels[].metrics") of the replay's predicted_sd
    / predicted for q at the given statistics. The replications differ by
    step noise and the split draws, so an exact model's error is of this
    size whatever the server did (a c = 2 level lands in lockstep or split,
    +-15% TTFT). NaN without replications."""
    rr = []
    for l in cmp["levels"]:
        for s in stats:
            m = l["metrics"].get("%s_%s" % (q, s)) or {}
            if m.get("predicted") and m.get("predicted_sd") is not None:
                rr.append(m["predicted_sd"] / m["predicted"] * 100)
    return median(rr)


def bound(*terms):
    """The largest of the terms that are numbers (0 when none)."""
    return max([t for t in terms if t == t] + [0.0])
