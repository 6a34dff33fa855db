#!/bin/sh
# stub_drift.sh — `servebench validate --drift-ref FILE`: the server against
# its own earlier measurement of the same load, against the stub server
# (suite stub).
#
# The stub: 2 slots, first token after 40 ms, then one every 8 ms (16
# output tokens: E2E 160 ms). The reference: `servebench run` of that stub
# at one client, 8 requests of 32 in / 16 out tokens.
#
# 1. validate with --drift-ref on the same stub: one drift run before the
#    levels and one after, each 8 requests (the reference's count), and
#    every p50 within 10% of the reference's (the same stub, measured vs
#    measured); the report's line and the JSON say so; --out-measured keeps
#    the runs.
# 2. Offline: validate --measured of that document (no --drift-ref)
#    reproduces the JSON "reference_drift" (the same keys and numbers).
# 3. A reference doctored to be 2x slower (its level's times doubled): every
#    run reads about -50% (within 5 points); --drift-requests 4 is obeyed.
# 4. A stub 1.5x slower than the reference's (a server that slowed down
#    since): about +50% (within 8 points) before and after.
# 5. Bad references — missing, not JSON, no concurrency-1 level, length
#    distributions — and --drift-ref with --measured: exit 2 naming the
#    file, before anything is measured (the URL has no server: measuring
#    would exit 3).
# 6. --drift-each-level on the 1.5x slower stub: runs before, between and
#    after the two levels (next_level 0, 1, 2); offline, --drift-factors
#    predicts each level at the speed of the runs beside it (about 1.5 for
#    prompt and decode, in the JSON), so the exact model of the fast stub
#    misses the slow one by under 8% where the plain replay misses by about
#    a third; --drift-factors on a document without those runs, or with
#    --speed-factors: exit 2.
# 7. The drift runs send the reference's prompt-cache setting (the same
#    load): a reference measured with the cache gets drift runs with it, one
#    measured with --no-cache-prompt drift runs without it (the stub logs
#    which requests asked for no cache); reference_drift.cache_prompt says so.
# usage: stub_drift.sh SERVEBENCH STUB_SERVER
set -eu
sb=$1
stub=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/sb-drift-stub.XXXXXX")
spid=""
spid2=""
cleanup() {
	for p in $spid $spid2; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$dir"
}
trap cleanup EXIT INT TERM HUP
# start_stub NAME ARGS...: a stub in the background; its URL in $url, its
# pid in $pid
start_stub() {
	name=$1
	shift
	"$stub" "$@" >"$dir/$name.port" 2>"$dir/$name.log" &
	pid=$!
	i=0
	while ! grep -q '^PORT=' "$dir/$name.port" 2>/dev/null; do
		i=$((i + 1))
		[ "$i" -lt 100 ] || { echo "stub did not start" >&2; cat "$dir/$name.log" >&2; exit 1; }
		sleep 0.1
	done
	url="http://127.0.0.1:$(sed -n 's/^PORT=//p' "$dir/$name.port")"
}
start_stub fast --slots 2 --ttft-ms 40 --itl-ms 8
spid=$pid
fast=$url
cat >"$dir/model.json" <<'JSON'
{ "schema": "servebench.model/1", "name": "stub",
  "server": { "slots": 2, "max_queue": -1, "batch_tokens": 2048, "kv_cache": "per-slot" },
  "overhead_ms": 32.0,
  "step_ms": { "decode_ms": { "1": 8.0, "2": 8.0 }, "per_prefill_token": 0.0,
               "prefill_base": 8.0 },
  "noise": { "kind": "none" } }
JSON
fail=0
"$sb" run --url "$fast" --model stub --concurrency 1 --num-requests 8 --warmup 1 \
	--input-len 32 --output-len 16 --seed 11 --quiet --out "$dir/ref.json"
common="--model-file $dir/model.json --model stub --input-len 32 --output-len 16
	--rates none --num-requests 8 --probe 0 --no-forecast --seed 5"
# validate_live NAME URL ARGS...: validate with --drift-ref; its exit status
# in $rc, its report in $dir/NAME.out
validate_live() {
	name=$1
	u=$2
	shift 2
	rc=0
	# shellcheck disable=SC2086
	"$sb" validate --url "$u" $common --json "$dir/$name-cmp.json" "$@" >"$dir/$name.out" || rc=$?
	cat "$dir/$name.out"
	if [ "$rc" -gt 1 ]; then echo "FAIL: $name: exit $rc"; fail=1; fi
}
# check NAME WANT_PCT TOL REQUESTS: every run's change within TOL of WANT
check() {
	python3 - "$dir/$1-cmp.json" "$2" "$3" "$4" "$dir/ref.json" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))["reference_drift"]
want, tol, n = float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
bad = []
if [r["when"] for r in d["runs"]] != ["before", "after"]:
    bad.append("runs %r" % [r["when"] for r in d["runs"]])
if (d["input_len"], d["output_len"], d["requests"]) != (32, 16, n):
    bad.append("load %r" % ((d["input_len"], d["output_len"], d["requests"]),))
if d["reference"]["requests"] != 8:
    bad.append("reference requests %r" % d["reference"]["requests"])
for r in d["runs"]:
    if r["requests"] != n:
        bad.append("%s: %r requests" % (r["when"], r["requests"]))
    for q in ("ttft", "tpot", "e2e"):
        p = r[q + "_pct"]
        ref = d["reference"][q + "_p50_ms"]
        if p is None or abs(p - want) > tol:
            bad.append("%s %s %r%% (want %g +- %g)" % (r["when"], q, p, want, tol))
        elif abs((r[q + "_p50_ms"] / ref - 1) * 100 - p) > 1e-6:
            bad.append("%s %s: pct is not run / reference - 1" % (r["when"], q))
for q in ("ttft", "tpot", "e2e"):
    m = max(abs(r[q + "_pct"]) for r in d["runs"])
    if abs(d["max_abs_pct"][q] - m) > 1e-9:
        bad.append("max_abs_pct %s %r, runs' %r" % (q, d["max_abs_pct"][q], m))
if bad:
    print("FAIL: " + sys.argv[1] + ": " + "; ".join(bad))
    sys.exit(1)
PY
}

echo "== 1. the same stub"
validate_live same "$fast" --drift-ref "$dir/ref.json" --concurrency 1,2 \
	--out-measured "$dir/same-meas.json"
check same 0 10 8
grep -q "^reference drift: the server against its own earlier measurement of the same load ($dir/ref.json, c=1, 32/16 tokens; measured vs measured, no model): TTFT p50 [-+][0-9.]*% before, [-+][0-9.]*% after; TPOT p50 .*; E2E p50 " \
	"$dir/same.out" || { echo "FAIL: no reference drift line"; fail=1; }

echo "== 2. offline, from the measured document"
rc=0
"$sb" validate --model-file "$dir/model.json" --measured "$dir/same-meas.json" --seed 5 \
	--no-forecast --quiet --json "$dir/offline-cmp.json" >"$dir/offline.out" || rc=$?
cat "$dir/offline.out"
[ "$rc" -le 1 ] || { echo "FAIL: offline: exit $rc"; fail=1; }
# the same figures; numbers to 1e-6 relative, or 1e-6 points for a change
# near 0 (the measured document keeps its times to 10 significant digits;
# the live figures came from memory)
python3 - "$dir/same-cmp.json" "$dir/offline-cmp.json" <<'PY' || fail=1
import json, sys
a = json.load(open(sys.argv[1]))["reference_drift"]
b = json.load(open(sys.argv[2]))["reference_drift"]
def same(x, y):
    if isinstance(x, dict):
        return isinstance(y, dict) and x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)
    if isinstance(x, list):
        return isinstance(y, list) and len(x) == len(y) and all(map(same, x, y))
    if isinstance(x, float) and isinstance(y, (int, float)):
        return abs(x - y) <= 1e-6 * max(abs(x), abs(y), 1)
    return x == y
if not same(a, b):
    print("FAIL: offline reference_drift differs:\n%r\n%r" % (a, b)); sys.exit(1)
PY
grep -q "^reference drift: " "$dir/offline.out" || { echo "FAIL: offline: no line"; fail=1; }

echo "== 3. a reference doctored 2x slower"
python3 - "$dir/ref.json" "$dir/slow-ref.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
lv = d["levels"][0]
for k in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"):
    lv[k] = {s: (v * 2 if isinstance(v, (int, float)) and s != "n" else v)
             for s, v in lv[k].items()}
for r in lv["requests"]:
    for k in ("ttft_ms", "e2e_ms"):
        r[k] *= 2
    r["itl_ms"] = [g * 2 for g in r.get("itl_ms") or []]
json.dump(d, open(sys.argv[2], "w"))
PY
validate_live slow "$fast" --drift-ref "$dir/slow-ref.json" --drift-requests 4 --concurrency 1
check slow -50 5 4

echo "== 4. a stub 1.5x slower than the reference's"
start_stub slower --slots 2 --ttft-ms 60 --itl-ms 12
spid2=$pid
validate_live slower "$url" --drift-ref "$dir/ref.json" --concurrency 1
check slower 50 8 8

echo "== 5. bad references: exit 2 before measuring"
printf '{ "schema": "servebench.results/1", "levels": [\n' >"$dir/broken.json"
python3 - "$dir/ref.json" "$dir" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c2 = json.loads(json.dumps(d))
c2["levels"][0]["level"] = 2.0
json.dump(c2, open(sys.argv[2] + "/noc1.json", "w"))
ds = json.loads(json.dumps(d))
ds["workload"]["input_len"] = "lognormal:3.4,0.5"
json.dump(ds, open(sys.argv[2] + "/dist.json", "w"))
PY
for f in missing.json:No broken.json:broken.json:2 noc1.json:no\ level dist.json:distributions; do
	want=${f#*:}
	f=${f%%:*}
	rc=0
	"$sb" validate --url http://127.0.0.1:9 --model stub --model-file "$dir/model.json" \
		--drift-ref "$dir/$f" >/dev/null 2>"$dir/bad.err" || rc=$?
	cat "$dir/bad.err"
	[ "$rc" -eq 2 ] || { echo "FAIL: --drift-ref $f: exit $rc, want 2"; fail=1; }
	grep -qF -- "--drift-ref" "$dir/bad.err" && grep -qF -- "$dir/$f" "$dir/bad.err" ||
		{ echo "FAIL: $f not named"; fail=1; }
	grep -qF -- "$want" "$dir/bad.err" || { echo "FAIL: $f: no '$want'"; fail=1; }
done
rc=0
"$sb" validate --measured "$dir/same-meas.json" --model-file "$dir/model.json" \
	--drift-ref "$dir/ref.json" >/dev/null 2>"$dir/bad.err" || rc=$?
[ "$rc" -eq 2 ] || { echo "FAIL: --drift-ref with --measured: exit $rc, want 2"; fail=1; }

echo "== 6. a drift run beside every level, each level at its speed"
validate_live each "$url" --drift-ref "$dir/ref.json" --drift-each-level --concurrency 1,2 \
	--out-measured "$dir/each-meas.json"
for f in "" --drift-factors; do
	rc=0
	"$sb" validate --model-file "$dir/model.json" --measured "$dir/each-meas.json" --seed 5 \
		--no-forecast --quiet $f --json "$dir/each${f:+-f}.json" >/dev/null || rc=$?
	[ "$rc" -le 1 ] || { echo "FAIL: offline $f: exit $rc"; fail=1; }
done
python3 - "$dir/each-cmp.json" "$dir/each.json" "$dir/each-f.json" <<'PY' || fail=1
import json, sys
live, plain, adj = (json.load(open(p)) for p in sys.argv[1:])
bad = []
runs = live["reference_drift"]["runs"]
if [(r["when"], r["next_level"]) for r in runs] != [("before", 0), ("between", 1), ("after", 2)]:
    bad.append("runs %r" % [(r["when"], r.get("next_level")) for r in runs])
f = adj.get("drift_factors") or []
if len(f) != 2 or any(abs(x[k] - 1.5) > 0.12 for x in f for k in ("prefill", "decode")):
    bad.append("drift_factors %r, want about 1.5" % f)
for name, doc, lo, hi in (("plain", plain, -40, -25), ("at the drift speed", adj, -8, 8)):
    for l in doc["levels"]:
        for q in ("ttft", "tpot", "e2e"):
            e = l["metrics"][q + "_p50"]["error_pct"]
            if not lo <= e <= hi:
                bad.append("%s c=%g %s p50 error %.1f%% not in [%g, %g]" % (name, l["level"], q, e, lo, hi))
if bad:
    print("FAIL: --drift-each-level/--drift-factors: " + "; ".join(bad))
    sys.exit(1)
PY
for a in "--measured $dir/same-meas.json --drift-factors:--drift-each-level" \
	"--measured $dir/each-meas.json --drift-factors --speed-factors 1,1:--speed-factors"; do
	want=${a#*:}
	rc=0
	# shellcheck disable=SC2086
	"$sb" validate --model-file "$dir/model.json" ${a%%:*} >/dev/null 2>"$dir/bad.err" || rc=$?
	cat "$dir/bad.err"
	[ "$rc" -eq 2 ] && grep -qF -- "$want" "$dir/bad.err" ||
		{ echo "FAIL: ${a%%:*}: exit $rc, want 2 naming $want"; fail=1; }
done
echo "== 7. the drift runs re-measure the reference's load with its prompt cache"
start_stub logged --slots 2 --ttft-ms 40 --itl-ms 8 --log
spid2="$spid2 $pid"
"$sb" run --url "$url" --model stub --concurrency 1 --num-requests 8 --warmup 1 --no-cache-prompt \
	--input-len 32 --output-len 16 --seed 11 --quiet --out "$dir/ref-nocache.json"
nocache() { grep -ac 'POST.*\[no cache\]' "$dir/logged.log" || true; }
for r in ref:true:0 ref-nocache:false:18; do
	set -- $(echo "$r" | tr : ' ')
	n0=$(nocache)
	# the validation's own level with the cache, the drift runs with the reference's
	validate_live "cache-$1" "$url" --drift-ref "$dir/$1.json" --concurrency 1 >/dev/null
	got=$(python3 -c 'import json,sys; print(str(json.load(open(sys.argv[1]))["reference_drift"]["cache_prompt"]).lower())' "$dir/cache-$1-cmp.json")
	n=$(($(nocache) - n0))
	# 2 drift runs of 8 requests and a warm-up each; the level's own cached
	[ "$got" = "$2" ] && [ "$n" -eq "$3" ] ||
		{ echo "FAIL: drift runs of $1.json: cache_prompt $got (want $2), $n requests without the cache (want $3)"; fail=1; }
done
[ "$fail" -eq 0 ] && echo "stub_drift: PASS"
exit "$fail"
