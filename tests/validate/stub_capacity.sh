#!/bin/sh
# stub_capacity.sh — `servebench validate --plan` and a model of another slot
# count, against the stub server (suite stub).
#
# The stub: 2 FIFO slots, first token after 5 ms, then one every 5 ms; 16
# output tokens hold a slot 80 ms (capacity 25 req/s). Its model (written
# here): 2 slots, decode_ms 5 at every batch, no prefill cost or overhead;
# it predicts the stub's open-loop TTFT within a few per cent.
#
# 1. The plan with that model: SLO TTFT p50 <= 40 ms at 200 requests per
#    level. The median is the percentile chosen because its order-statistic
#    interval is narrow at 200 requests (ranks 86..115, about p43..p57) and
#    the median TTFT rises steeply near the knee (about 40 ms at the planned
#    19.3 req/s, 100 ms 15% above it), so the higher rate's interval lies
#    wholly above the SLO: the plan must be confirmed (exit 0), the higher
#    rate "broke", the planned one not "broke"; the JSON records both rates.
# 2. A model twice as fast (decode 2.5 ms) plans about twice the rate the
#    stub can serve: the SLO breaks at the planned rate: plan wrong, exit 1.
# 3. A model twice as slow (decode 10 ms) plans about half: 15% above it
#    the SLO still holds clearly: plan wrong, exit 1.
# 4. A model calibrated at 1 slot against the 2-slot stub: validate
#    simulates 2 slots and says so; closed loop at 4 clients its E2E is
#    within 10% of the stub's (with 1 slot it would be ~100% off).
# 5. Usage: --plan without an SLO, --plan with --rates, an SLO without
#    --plan: exit 2.
# usage: stub_capacity.sh SERVEBENCH STUB_SERVER
set -eu
sb=$1
stub=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/sb-plan-stub.XXXXXX")
spid=""
cleanup() {
	[ -z "$spid" ] || { kill "$spid" 2>/dev/null || true; wait "$spid" 2>/dev/null || true; }
	rm -rf "$dir"
}
trap cleanup EXIT INT TERM HUP
"$stub" --slots 2 --ttft-ms 5 --itl-ms 5 >"$dir/port" 2>"$dir/stub.log" &
spid=$!
i=0
while ! grep -q '^PORT=' "$dir/port" 2>/dev/null; do
	i=$((i + 1))
	[ "$i" -lt 100 ] || { echo "stub did not start" >&2; cat "$dir/stub.log" >&2; exit 1; }
	sleep 0.1
done
url="http://127.0.0.1:$(sed -n 's/^PORT=//p' "$dir/port")"
# model NAME SLOTS DECODE_TABLE
model() {
	cat >"$dir/$1.json" <<JSON
{ "schema": "servebench.model/1", "name": "$1",
  "server": { "slots": $2, "max_queue": -1, "batch_tokens": 2048, "kv_cache": "per-slot" },
  "overhead_ms": 0.0,
  "step_ms": { "decode_ms": { $3 }, "per_prefill_token": 0.0 },
  "noise": { "kind": "none" } }
JSON
}
model right 2 '"1": 5.0, "2": 5.0'
model fast 2 '"1": 2.5, "2": 2.5'
model slow 2 '"1": 10.0, "2": 10.0'
model one 1 '"1": 5.0'
common="--url $url --model stub --input-len 32 --output-len 16 --no-forecast --probe 0 --quiet"
# plan NAME REQUESTS: validate --plan with model NAME; its exit status in $rc
plan() {
	rc=0
	# shellcheck disable=SC2086
	"$sb" validate --plan --slo-ttft-ms 40 --slo-percentile 50 --model-file "$dir/$1.json" \
		$common --num-requests "$2" --seed 3 --json "$dir/$1-cmp.json" >"$dir/$1.out" || rc=$?
	cat "$dir/$1.out"
}
fail=0
want() { # want STATUS WHAT
	if [ "$rc" -ne "$1" ]; then echo "FAIL: $2: exit $rc, want $1"; fail=1; fi
}

echo "== 1. the right model"
plan right 200
want 0 "right model"
grep -q '^plan confirmed' "$dir/right.out" || { echo "FAIL: no 'plan confirmed'"; fail=1; }
python3 - "$dir/right-cmp.json" <<'PY' || fail=1
import json, sys
p = json.load(open(sys.argv[1]))["plan_check"]
bad = []
def want(ok, what):
    if not ok:
        bad.append(what)
want(p["outcome"] == "confirmed", "outcome %r" % p["outcome"])
want(p["slots"] == 2, "slots %r" % p["slots"])
r0, r1 = p["rates"]
# the model's capacity is 26.7 req/s; a p50 of 40 ms is reached well below it
want(15 < p["max_rate_req_s"] < 25, "plan %.3f req/s" % p["max_rate_req_s"])
want(abs(r0["rate_req_s"] - p["max_rate_req_s"]) < 1e-9, "first rate is not the plan")
want(abs(r1["rate_req_s"] / r0["rate_req_s"] - 1.15) < 1e-9, "second rate not 15% above")
want(r0["verdict"] in ("held", "undecided"), "planned rate %s" % r0["verdict"])
want(r1["verdict"] == "broke", "15%% above: %s" % r1["verdict"])
for r in (r0, r1):
    t = r["ttft"]
    want(t["n"] == 200, "n %r" % t["n"])
    want(t["ci_lo_ms"] <= t["measured_ms"] <= t["ci_hi_ms"], "point outside its interval")
    want(t["ci_coverage"] >= 0.95, "coverage %r" % t["ci_coverage"])
    want("tpot" not in r, "tpot without a TPOT SLO")
want(p["slo"] == {"percentile": 50.0, "ttft_ms": 40.0}, "slo %r" % p["slo"])
if bad:
    print("FAIL: " + "; ".join(bad))
    sys.exit(1)
PY

echo "== 2. a model twice as fast"
plan fast 100
want 1 "fast model"
grep -q '^plan wrong: the SLO broke at the planned rate' "$dir/fast.out" ||
	{ echo "FAIL: fast model: not 'broke at the planned rate'"; fail=1; }

echo "== 3. a model twice as slow"
plan slow 100
want 1 "slow model"
grep -q '^plan wrong: the SLO held 15% above' "$dir/slow.out" ||
	{ echo "FAIL: slow model: not 'held 15% above'"; fail=1; }

echo "== 4. a model calibrated at 1 slot, the stub has 2"
rc=0
# shellcheck disable=SC2086
"$sb" validate --model-file "$dir/one.json" $common --concurrency 4 --rates none \
	--num-requests 20 --seed 5 --json "$dir/one-cmp.json" >"$dir/one.out" || rc=$?
cat "$dir/one.out"
[ "$rc" -le 1 ] || { echo "FAIL: slots: exit $rc"; fail=1; }
grep -q '^model calibrated at 1 slots, server has 2: simulated with 2 slots; decode passes beyond 1 extrapolated$' \
	"$dir/one.out" || { echo "FAIL: the slot counts not reported"; fail=1; }
python3 - "$dir/one-cmp.json" <<'PY' || fail=1
import json, sys
c = json.load(open(sys.argv[1]))
s = c["slots"]
want = {"calibrated": 1, "server": 2, "simulated": 2, "extrapolated_beyond": 1}
if s != want:
    print("FAIL: slots %r, want %r" % (s, want)); sys.exit(1)
e = c["levels"][0]["metrics"]["e2e_mean"]["error_pct"]
if not abs(e) <= 10:
    print("FAIL: E2E mean at c=4 off by %.1f%% (2 slots simulated?)" % e); sys.exit(1)
PY

echo "== 5. usage"
for args in "--plan" "--plan --slo-ttft-ms 40 --rates 5" "--slo-ttft-ms 40"; do
	rc=0
	# shellcheck disable=SC2086
	"$sb" validate --model-file "$dir/right.json" --url "$url" --model stub $args \
		>/dev/null 2>"$dir/usage.err" || rc=$?
	want 2 "validate $args"
	cat "$dir/usage.err"
done
[ "$fail" -eq 0 ] && echo "stub_capacity: PASS"
exit "$fail"
