#!/usr/bin/env python3
"""check_calibration.py MODEL AGAIN REPORT SLOTS — what `servebench calibrate
--url` (its default plan) must give on a real llama-server of SLOTS slots,
checked on structure and physics, never on speed:

- the report has its "server time:" line; the model has SLOTS slots, was
  fitted from per-request records with the server's own timings, a
  positive cost per prompt token and a decode pass for every batch size
  1..SLOTS (passes of 2+ pinned to slots), a full batch costing more per
  step than one sequence;
- llama-server reuses prompt prefixes by default (cache_prompt): the
  survey's shared-prefix part found reuse, a cache kind, and a fitted
  cost per reused token with an interval above zero (calibrate clamps a
  negative one to 0, so ">= 0" alone could not fail), below a prefilled
  token's (else reusing would not pay; 0.12 against 1.99 ms on 2026-12-07
  at 3 slots: 13 of 16 reuses from a slot, 3 restored from the RAM cache
  at about 50 ms more each, one cost for both);
- AGAIN, the saved measurements calibrated offline (`calibrate FILES`),
  is the same model: files keep 10 significant digits, so to ~1e-8.

The survey's own promises are checked by tests/calibrate/check_survey.py."""
import json
import sys


def close(x, y):
    if isinstance(x, dict):
        return x.keys() == y.keys() and all(close(x[k], y[k]) for k in x)
    return abs(x - y) <= 1e-6 * max(abs(x), abs(y), 1e-12)


def main(model_p, again_p, report_p, slots):
    m, a = json.load(open(model_p)), json.load(open(again_p))
    assert any(l.startswith("server time: ") for l in open(report_p)), "no 'server time:' line"
    s = m["step_ms"]
    assert m["server"]["slots"] == slots, m["server"]
    assert m["fit"]["data"] == "per-request records", m["fit"]["data"]
    assert m["fit"]["overhead_split"].startswith("server timings"), m["fit"]["overhead_split"]
    assert s["per_prefill_token"] > 0 and m["overhead_ms"] >= 0
    d = {int(k): v for k, v in s["decode_ms"].items()}
    assert sorted(d) == list(range(1, slots + 1)), d
    assert d[1] > 0 and d[slots] > d[1], d
    c = m["fit"]["cache"]
    assert c["requests"] > 0 and c["reused"] > 0, c
    assert m["server"].get("prompt_cache") in ("slot", "ram"), (m["server"], c)
    k = m["fit"]["coefficients"].get("per_cached_token")
    assert k and k["ci95"][1] > 0, (k, c)
    assert 0 <= s["per_cached_token"] < s["per_prefill_token"], s
    assert close(s, a["step_ms"]), (s, a["step_ms"])
    print("live calibrate --url: OK", json.dumps(s))


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit("usage: check_calibration.py MODEL AGAIN REPORT SLOTS")
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
