#!/bin/sh
# stub-url.sh — `servebench calibrate --url` end to end against the stub
# server (4 FIFO slots, 20 ms to the first token, then a token every 5 ms,
# whatever the prompt or the batch). The fitted model must say so: 4 slots
# (read from /props), decode_ms about 5 ms at every batch size, prefill cost
# zero within its interval, and a server time printed.
# Tolerances are loose on purpose (20% on 5 ms steps): the stub writes
# tokens on a timer, and a loaded 2-core machine delays some writes by a
# few ms; TPOT averages 31-63 gaps, so 1 ms of lateness per gap is needed to
# move it by 20%.
# Then `servebench validate --url` with that model against the same stub:
# the product's accuracy goals (median |error| over the levels <= 5%
# mean/p50, <= 10% p90/p99) must be met — not the knee: with 6 requests
# per open-loop level the p99 of the top two rates is a coin toss (the
# live test checks the closed-loop knee) — and the first and last
# one-client speed probes must find the stub's speed unchanged (TPOT within
# 10%, TTFT within 25%: 20 ms, where a few ms of timer lateness weigh more).
# The stub is not quite the model's kind of server: its first token always
# takes 20 ms, while the model charges an arrival that joins running
# decodes one decode step (5 ms), so the open-loop levels miss TTFT by
# 30-60%; the eight closed-loop levels are within 1%.
# Last, validate against a second stub that turns 30% slower after its 60th
# request, in the middle of the sixth level (a server whose speed moves
# mid-run): the one-client probes must read the model's speed (TPOT within
# 5%, TTFT within 10% plus the stub's measured p90 lateness) up to the change
# and +30% (20-40%) after it, the speed-adjusted prediction must scale the
# levels after the change by about 1.3 (within 0.05 plus what the stub's
# own measured lateness adds) and meet the goals, and the plain prediction
# must miss them (validate exits 1).
# When the stub's own lateness makes that TTFT tolerance reach 20% (the
# probes could not tell its speed from the change) those checks are left
# out and the test ends inconclusive (exit 77) unless another check fails.
# The probes are saved with the measured results: validate --measured on
# that file must give the same speed figures offline.
# And a stub that dies after 30 requests: validate must say so, exit 3 (the
# server unreachable), and still write and compare the levels it measured.
# usage: stub-url.sh SERVEBENCH STUB_SERVER
set -eu
sb=$1
stub=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/sb-cal-stub.XXXXXX")
spids=""
cleanup() {
	for p in $spids; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	rm -rf "$dir"
}
trap cleanup EXIT INT TERM HUP
# start_stub NAME ARGS...: a stub (4 slots, 20 ms to the first token, a token
# every 5 ms, and ARGS); its port in $port
start_stub() {
	name=$1
	shift
	"$stub" --slots 4 --ttft-ms 20 --itl-ms 5 "$@" >"$dir/$name.port" 2>"$dir/$name.log" &
	spid=$!
	spids="$spids $spid"
	i=0
	while ! grep -q '^PORT=' "$dir/$name.port" 2>/dev/null; do
		i=$((i + 1))
		[ "$i" -lt 100 ] || { echo "stub $name did not start" >&2; cat "$dir/$name.log" >&2; exit 1; }
		sleep 0.1
	done
	port=$(sed -n 's/^PORT=//p' "$dir/$name.port")
}
start_stub steady
"$sb" calibrate --url "http://127.0.0.1:$port" --model stub --save "$dir/res" \
	-o "$dir/model.json" >"$dir/report"
cat "$dir/report"
grep -q '^server time: ' "$dir/report"
# the steady stub's speed does not move between the sweep's two passes (by
# under 10%: its TPOT is timed by the client, beside other tests)
grep -q '^prompt sweep up and back: the server.s speed moved by up to [-+][0-9]\.[0-9]%' "$dir/report" \
	|| { echo "stub-url: the sweep's two passes differ on a steady stub"; exit 1; }
ls "$dir/res/prompt-16.json" "$dir/res/prompt-2048.json" "$dir/res/sweep.json" \
	"$dir/res/prompt-2048-back.json" "$dir/res/prompt-16-back.json" \
	"$dir/res/together-1.json" "$dir/res/together-crowded-1.json" \
	"$dir/res/prefill-groups-1.json" "$dir/res/prefill-groups-4.json" >/dev/null
python3 "$(dirname "$0")/check_survey.py" "$dir/model.json" "$dir/report"
python3 - "$dir/model.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
s = m["step_ms"]
d = {int(k): v for k, v in s["decode_ms"].items()}
fails = []
def want(ok, what):
    if not ok:
        fails.append(what)
want(m["server"]["slots"] == 4, "slots %r" % m["server"]["slots"])
want(sorted(d) == [1, 2, 3, 4], "decode batches %r" % sorted(d))  # pinned passes of 2, 3, 4
for b, v in d.items():
    want(4.0 <= v <= 6.0, "decode_ms[%d] = %.3f, want 5 +- 20%%" % (b, v))
want(s["per_prefill_token"] <= 0.002, "per_prefill_token %.4g" % s["per_prefill_token"])
want(m["fit"]["overhead_split"].startswith("server timings"), "no server timings used")
want(16.0 <= s["prefill_base"] + m["overhead_ms"] <= 26.0,
     "prefill_base + overhead = %.2f, want about 20" % (s["prefill_base"] + m["overhead_ms"]))
want(m["fit"]["measured_url"].startswith("http://127.0.0.1:"), "measured_url")
# the stub serves every request on its own schedule: requests sent together
# are never prefilled a step apart (a step is its 20 ms TTFT; a hiccup of
# half that on a busy machine may count once)
for key in ("split", "split_crowded"):
    sp = m["fit"][key]
    want(sp["trials"] >= 6 and sp["splits"] <= 1, "%s %r, want at most 1 split in 6+ trials" % (key, sp))
if fails:
    print("FAIL: " + "; ".join(fails), file=sys.stderr)
    sys.exit(1)
print("stub calibrate --url: OK", json.dumps(s))
PY
rc=0
"$sb" validate --model-file "$dir/model.json" --url "http://127.0.0.1:$port" --model stub \
	--num-requests 6 --input-len 64 --output-len 32 --no-knee --json "$dir/v.json" \
	>"$dir/v.txt" || rc=$?
tail -12 "$dir/v.txt"
[ "$rc" -eq 0 ] || { echo "FAIL: validate against the stub exited $rc (goals missed?)" >&2; exit 1; }
python3 - "$dir/v.json" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
d = v.get("server_drift")
if not d or abs(d["tpot_pct"]) > 10 or abs(d["ttft_pct"]) > 25:
    print("FAIL: server_drift %r" % d, file=sys.stderr)
    sys.exit(1)
print("stub validate --url: OK, drift", json.dumps(d))
PY

start_stub slowing --slow-after 60 --slow-factor 1.3
rc=0
"$sb" validate --model-file "$dir/model.json" --url "http://127.0.0.1:$port" --model stub \
	--num-requests 6 --input-len 64 --output-len 32 --seed 7 --json "$dir/v2.json" \
	--out-measured "$dir/m2.json" >"$dir/v2.txt" || rc=$?
sed -n '/^server speed/,$p' "$dir/v2.txt"
[ "$rc" -eq 1 ] || { echo "FAIL: validate against a server that slowed by 30% exited $rc, want 1" >&2; exit 1; }
# the stub's own lateness (its summary on TERM): how late its token writes were
kill "$spid"
wait "$spid" || true
late=$(sed -n 's/.*late_ms_p99=\([0-9.]*\).*/\1/p' "$dir/slowing.log")
late90=$(sed -n 's/.*late_ms_p90=\([0-9.]*\).*/\1/p' "$dir/slowing.log")
[ -n "$late" ] && [ -n "$late90" ] ||
	{ echo "FAIL: no lateness in the stub's summary" >&2; cat "$dir/slowing.log" >&2; exit 1; }
python3 - "$dir/v2.json" "$late" "$dir/inconclusive" "$late90" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
late, late90 = float(sys.argv[2]), float(sys.argv[4])
sp = v["server_speed"]
probes, adj = sp["probes"], sp["adjusted"]
fails = []
# the first probe that reads the change; every later one must read it too
k = next((i for i, p in enumerate(probes) if p["tpot_pct"] > 15), None)
if k is None or k < 2:
    fails.append("no change found after a steady start: %r" % [p["tpot_pct"] for p in probes])
else:
    # before the change: TPOT (a mean over 31 gaps) within 5%; TTFT (one
    # 20 ms first token, median of the probe's requests) within 10% (2 ms
    # for the client's own path) plus what the stub's measured lateness adds
    # to 20 ms: its p90 (a median of a probe's requests is late only when
    # most of them are; the p99 read 3.0 ms in two fresh-clone runs whose
    # probes moved by 0.1%). With the 10% alone CI runs under ASan read
    # +6.0% and then +11.3%, the stub's lateness not counted.
    ttft_tol = 10 + 100.0 * late90 / 20.0
    print("stub lateness p90 %.2f ms, p99 %.2f: probe TTFT tolerance before the change %.1f%%"
          % (late90, late, ttft_tol))
    if ttft_tol >= 20:
        # the probes and the level factors cannot be judged; the rest of
        # the test goes on, and it ends inconclusive (77) unless it fails
        print("INCONCLUSIVE: the stub ran %.2f ms late at p90; a probe's TTFT cannot "
              "tell its speed from the +30%% change" % late90)
        open(sys.argv[3], "w").close()
        sys.exit(0)
    for i, p in enumerate(probes):
        for q, tol in (("ttft_pct", ttft_tol), ("tpot_pct", 5)):
            if i < k and abs(p[q]) > tol:
                fails.append("probe %d %s %+.1f%% before the change" % (i, q, p[q]))
            if i >= k and not 20 <= p[q] <= 40:
                fails.append("probe %d %s %+.1f%% after the change, want about +30%%" % (i, q, p[q]))
    # a level's factors are the mean of the probes' ratios beside it: 0.05,
    # plus what the stub's measured lateness (p99 of its token writes) can
    # add to a probe's TTFT against the model's 20 ms (a CI run under ASan
    # read 1.356 and 1.368 for 1.3); a TPOT averages 31 gaps, where one
    # late write weighs 1/31 of that
    tol = {"prefill_factor": 0.05 + late / 20.0, "decode_factor": 0.05 + late / (31 * 5.0)}
    for l in adj["levels"]:
        want = 1.0 if l["index"] < k - 1 else 1.3 if l["index"] >= k else None
        for f in ("prefill_factor", "decode_factor"):
            if want is not None and abs(l[f] - want) > tol[f]:
                fails.append("level %d %s %.3f, want %.1f +- %.3f (stub late p99 %.2f ms)"
                             % (l["index"], f, l[f], want, tol[f], late))
# one step change among steady probes: the typical probe-to-probe change
# stays small (the stub's own timing noise)
for q in ("ttft", "tpot"):
    c = sp["probe_change_pct"][q]
    if c is None or not 0 <= c <= 5:
        fails.append("probe-to-probe change %s %r, want 0..5%% (one step among steady probes)" % (q, c))
s = adj["summary"]
if not (s["central_pct"] <= 5 and s["tail_pct"] <= 10):
    fails.append("speed-adjusted summary %r misses the goals" % s)
if v["goals_met"]:
    fails.append("goals met over every level despite the change")
if fails:
    print("FAIL: " + "; ".join(fails), file=sys.stderr)
    sys.exit(1)
print("stub validate, server slowed mid-run: OK, adjusted", json.dumps(s))
PY
rc=0
"$sb" validate --model-file "$dir/model.json" --measured "$dir/m2.json" --seed 7 \
	--json "$dir/v2off.json" >/dev/null || rc=$?
[ "$rc" -eq 1 ] || { echo "FAIL: offline validate of the slowed run exited $rc, want 1" >&2; exit 1; }
python3 - "$dir/v2.json" "$dir/v2off.json" <<'PY'
import json, sys
a, b = (json.load(open(f))["server_speed"] for f in sys.argv[1:3])
def same(x, y):  # the file holds numbers to about 10 digits
    if isinstance(x, dict):
        return isinstance(y, dict) and x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)
    if isinstance(x, list):
        return isinstance(y, list) and len(x) == len(y) and all(map(same, x, y))
    if isinstance(x, float) or isinstance(y, float):
        return abs(x - y) <= 1e-6 * max(1.0, abs(x))
    return x == y
if not same(a, b):
    print("FAIL: offline speed figures differ from the live run's", file=sys.stderr)
    sys.exit(1)
print("stub validate --measured: the same speed figures offline")
PY

start_stub dying --die-after 30
rc=0
"$sb" validate --model-file "$dir/model.json" --url "http://127.0.0.1:$port" --model stub \
	--num-requests 6 --input-len 64 --output-len 32 --out-measured "$dir/m3.json" \
	>"$dir/v3.txt" 2>"$dir/v3.err" || rc=$?
cat "$dir/v3.err"
[ "$rc" -eq 3 ] || { echo "FAIL: validate against a dying server exited $rc, want 3" >&2; exit 1; }
grep -q 'comparing the [1-9][0-9]* level(s) measured before it' "$dir/v3.err" ||
	{ echo "FAIL: no word of the levels kept" >&2; exit 1; }
grep -q 'median |error|' "$dir/v3.txt" || { echo "FAIL: the measured levels were not compared" >&2; exit 1; }
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert len(d["levels"]) >= 1, d' "$dir/m3.json" ||
	{ echo "FAIL: the measured levels were not written" >&2; exit 1; }
echo "stub validate, server died mid-run: OK, exit 3, levels kept"
if [ -e "$dir/inconclusive" ]; then
	echo "INCONCLUSIVE: the stub ran $late90 ms late at p90, too late to judge the probes around its slow-down"
	exit 77
fi
