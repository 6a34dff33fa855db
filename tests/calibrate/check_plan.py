"""check_plan.py MODEL.json REPORT — what `calibrate --url` guarantees about
the groups it sends together (calibrate/plan.h): each split chance got the
trials the plan wants, or the plan stopped at its stated budget of server
time and the report says so; and the fit counted (nearly) all of them."""
import json
import sys

model = json.load(open(sys.argv[1]))
report = open(sys.argv[2]).read()
plan = model["fit"]["plan"]["together"]
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
print("plan: " + "; ".join("%s %d/%d trials from %d/%d groups in %.1f s%s" % (
    p["chance"], p["trials"], p["trials_wanted"], p["groups_together"], p["groups_sent"],
    p["server_s"], " (stopped short: %s)" % p["stopped_short"] if p["stopped_short"] else "") for p in plan))
