"""check_survey.py MODEL.json REPORT — what `calibrate --url` guarantees about
the groups it sends together (calibrate/survey.h): each split chance got the
trials the plan wants, or the plan stopped at its stated budget of server
time and the report says so; and the fit counted (nearly) all of them. The
prefill groups (1..S prompts pinned to slots 0..G-1) stayed within their
budget, every size was measured unless the budget stopped them, the fit
found their steps, and every shape check says what became of it. The
prompt sweep, up and back, reports how far the server's speed moved between
its passes."""
import json
import sys

model = json.load(open(sys.argv[1]))
report = open(sys.argv[2]).read()
plan = model["fit"]["survey"]["together"]
assert [p["chance"] for p in plan] == ["split", "split_crowded"], plan
for p in plan:
    key = p["chance"]
    line = [l for l in report.splitlines() if l.startswith(key + ":")]
    assert len(line) == 1, (key, "no report line")
    if p["stopped_short"]:
        # only once the time budget was spent (or the plan's parts), and said so
        assert p["server_s"] >= p["budget_s"] or p["stopped_short"] == "part limit", p
        assert "stopped short" in line[0], line
    else:
        assert p["trials"] >= p["trials_wanted"], p
    # The fit counts groups in every part (the sweep's level starts too) and
    # drops admitted requests whose first token came later than m TTFTs (they
    # waited for a slot, which an idle server with free slots should not
    # make them do): at least three quarters of the plan's count.
    fit = model["fit"][key]
    assert fit["trials"] >= 0.75 * p["trials"], (key, fit, p)
    assert 0 <= fit["ci95_low"] <= fit["value"] <= fit["ci95_high"] <= 1, (key, fit)
groups = model["fit"]["survey"]["groups"]
if groups["measured"] == "measured":
    # sizes are added while under the budget, so the last may overrun it by
    # one part; re-measurements may use half a budget more
    assert groups["server_s"] <= 2.5 * groups["budget_s"], groups
    assert groups["largest_group"] == model["server"]["slots"], groups  # S comes second
    assert groups["stopped_at_budget"] or groups["sizes_measured"] == model["server"]["slots"], groups
    fg = model["fit"]["groups"]
    assert fg["steps"] >= groups["largest_group"], fg
# the prompt sweep up and back: one entry per length, ascending, each a
# ratio of the back pass's medians over the up pass's, and the report's line
sweep = model["fit"]["survey"]["prompt_sweep"]
lens = [x["prompt_tokens"] for x in sweep]
assert len(lens) >= 2 and lens == sorted(lens), sweep
assert all(x["prefill_back_over_up"] > 0 and x["tpot_back_over_up"] > 0 for x in sweep), sweep
assert "prompt sweep up and back: the server's speed moved by up to" in report, "no sweep line"
for c in model["fit"]["checks"]:
    assert set(c) == {"what", "measured", "expected_shape", "remeasured", "kept", "why"}, c
    assert c["kept"] or c["remeasured"], c  # dropped only after a re-measurement
print("groups: %s, %s s of %s, %s sizes up to %s, rechecked %s; checks: %d" % (
    groups["measured"], groups["server_s"], groups["budget_s"], groups["sizes_measured"],
    groups["largest_group"],
    groups["rechecked_sizes"], len(model["fit"]["checks"])))
print("plan: " + "; ".join("%s %d/%d trials from %d/%d groups in %.1f s%s" % (
    p["chance"], p["trials"], p["trials_wanted"], p["groups_together"], p["groups_sent"],
    p["server_s"], " (stopped short: %s)" % p["stopped_short"] if p["stopped_short"] else "") for p in plan))
