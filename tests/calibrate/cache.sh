#!/bin/sh
# cache.sh SERVEBENCH SBSIM TRUTH — calibration finds the prompt cache it
# was given. From data sbsim simulates from TRUTH with a slot prompt cache
# whose reused tokens cost 0.02 ms each (the sizes calibrate --url uses:
# one client at 16-2048 tokens, a sweep at 2-6 clients; plus one client at
# prompts of one of eight 1024-token prefixes, 64 tokens of their own (4
# slots: about half find their prefix),
# the records carrying what a llama.cpp server reports: prompt_n, cache_n):
#  - the model takes server.prompt_cache "slot", and per_cached_token's 95%
#    interval holds 0.02 and excludes 0.02 +- 50% (a cost that wrong must be
#    told apart: 512 tokens' worth of it is 5 ms of a 20-40 ms TTFT), with a
#    variance in fit.covariance;
#  - requests that reused nothing leave nothing over beyond the 95% interval
#    calibrate states for it (their spread and the prefill fit's error):
#    the rest of the model holds;
#  - the other fits do not see the prefix runs: decode_ms(1) and
#    per_prefill_token as without them;
#  - the fitted model replays the prefix run's mean TTFT within 5% (validate
#    --measured; the product's goal for means), and the same model without
#    its cache misses it by more than twice that;
#  - a truth without a cache: prompt_cache "none", a note, no coefficient;
#  - a truth whose cache keeps the prompts that left a slot (llama.cpp's
#    RAM cache): prompt_cache "ram", from reuses by groups beyond the 4
#    slots' most recent ones (a slot truth misses those); its reuses of a
#    slot's own prompt cost 0.005 ms a token and its restores from RAM 0.1
#    (about what the local llama-server showed): per_cached_token and
#    per_restored_token each found inside its 95% interval, the restore's
#    interval excluding 0.1 +- 50%.
set -u
SB=$1 SBSIM=$2 TRUTH=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT INT TERM
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

python3 - "$TRUTH" "$T" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["server"]["prompt_cache"] = "slot"
m["step_ms"]["per_cached_token"] = 0.02
json.dump(m, open(sys.argv[2] + "/cached.json", "w"))
m["server"]["prompt_cache"] = "ram"
m["step_ms"]["per_cached_token"] = 0.005
m["step_ms"]["per_restored_token"] = 0.1
json.dump(m, open(sys.argv[2] + "/shared.json", "w"))
m["step_ms"]["per_cached_token"] = 0.02
del m["step_ms"]["per_restored_token"]
m["server"]["prompt_cache"] = "none"
json.dump(m, open(sys.argv[2] + "/plain.json", "w"))
PY

# simulate KIND: the calibration's files from $T/KIND.json into $T/KIND-*.json
simulate() {
	for P in 16 256 1024 2048; do
		"$SBSIM" --model-file "$T/$1.json" --concurrency 1 --input-len $P --output-len 64 \
			--requests 100 --seed $P --json "$T/$1-c1-$P.json" --json-requests \
			--no-uncertainty >/dev/null || fail "sbsim c1 $P"
	done
	"$SBSIM" --model-file "$T/$1.json" --concurrency 2,4,5,6 --input-len 256 --output-len 128 \
		--requests 200 --seed 7 --json "$T/$1-sweep.json" --json-requests \
		--no-uncertainty >/dev/null || fail "sbsim sweep"
	"$SBSIM" --model-file "$T/$1.json" --concurrency 1 --input-len 64 --output-len 8 \
		--prefix-len 1024 --prefix-groups 8 --requests 100 --seed 11 \
		--json "$T/$1-prefix.json" --json-requests --no-uncertainty >/dev/null ||
		fail "sbsim prefix"
}
calibrate() { # KIND [without the prefix run]
	files="$T/$1-c1-16.json $T/$1-c1-256.json $T/$1-c1-1024.json $T/$1-c1-2048.json $T/$1-sweep.json"
	[ $# -eq 1 ] && files="$files $T/$1-prefix.json"
	# shellcheck disable=SC2086
	"$SB" calibrate $files -o "$T/$1${2:-}-fit.json" > "$T/$1${2:-}-report.txt" 2>&1 ||
		{ fail "calibrate $1${2:-}"; cat "$T/$1${2:-}-report.txt"; }
}
simulate cached
simulate plain
simulate shared
calibrate cached
calibrate cached -noprefix
calibrate plain
calibrate shared

python3 - "$T" <<'PY' || fails=$((fails + 1))
import json, sys
t = sys.argv[1]
m = json.load(open(t + "/cached-fit.json"))
base = json.load(open(t + "/cached-noprefix-fit.json"))
bad = []
if m["server"].get("prompt_cache") != "slot":
    bad.append("prompt_cache %r, want slot" % m["server"].get("prompt_cache"))
c = m["fit"]["coefficients"].get("per_cached_token")
if not c:
    bad.append("no per_cached_token coefficient")
else:
    lo, hi = c["ci95"]
    print("per_cached_token %.5f [%.5f, %.5f] (truth 0.02)" % (c["value"], lo, hi))
    if not lo <= 0.02 <= hi:
        bad.append("0.02 outside [%g, %g]" % (lo, hi))
    if lo <= 0.01 or hi >= 0.03:
        bad.append("[%g, %g] does not exclude 0.02 +- 50%%" % (lo, hi))
if "per_cached_token" not in m["fit"]["covariance"]["params"]:
    bad.append("per_cached_token has no variance in fit.covariance")
ex, h = m["fit"]["cache"]["miss_excess_ms"], m["fit"]["cache"]["miss_excess_h95_ms"]
print("requests that reused nothing: mean excess %s +- %s ms" % (ex, h))
if ex is None or h is None or abs(ex) > h:
    bad.append("requests that reused nothing left %s ms over (+- %s)" % (ex, h))
for k in ("decode_ms", ):
    if m["step_ms"][k] != base["step_ms"][k]:
        bad.append("%s moved with the prefix run: %s vs %s" % (k, m["step_ms"][k], base["step_ms"][k]))
if m["step_ms"]["per_prefill_token"] != base["step_ms"]["per_prefill_token"]:
    bad.append("per_prefill_token moved with the prefix run")
p = json.load(open(t + "/plain-fit.json"))
if p["server"].get("prompt_cache", "none") != "none" or "per_cached_token" in p["fit"]["coefficients"]:
    bad.append("a truth without a cache: %r" % p["server"])
if not any("reused" in n for n in p["fit"]["notes"]):
    bad.append("no note that nothing was reused: %r" % p["fit"]["notes"])
sh = json.load(open(t + "/shared-fit.json"))
cs = sh["fit"]["cache"]
cm = m["fit"]["cache"]
print("ram truth: %s (reused within the slots' groups %d, beyond them %d, missed beyond %d); "
      "slot truth: %d, %d, %d" % (sh["server"].get("prompt_cache"), cs["reused_within_slots"],
      cs["reused_beyond_slots"], cs["missed_beyond_slots"], cm["reused_within_slots"],
      cm["reused_beyond_slots"], cm["missed_beyond_slots"]))
if sh["server"].get("prompt_cache") != "ram":
    bad.append("a ram truth calibrated as %r" % sh["server"].get("prompt_cache"))
for k, truth, apart in (("per_cached_token", 0.005, False), ("per_restored_token", 0.1, True)):
    c = sh["fit"]["coefficients"].get(k)
    if not c:
        bad.append("ram truth: no %s coefficient" % k)
        continue
    lo, hi = c["ci95"]
    print("ram truth: %s %.5f [%.5f, %.5f] (truth %g)" % (k, c["value"], lo, hi, truth))
    if not lo <= truth <= hi:
        bad.append("ram truth: %s's interval misses %g" % (k, truth))
    if apart and (lo <= 0.5 * truth or hi >= 1.5 * truth):
        bad.append("ram truth: %s's interval does not exclude %g +- 50%%" % (k, truth))
    if k not in sh["fit"]["covariance"]["params"]:
        bad.append("ram truth: %s has no variance in fit.covariance" % k)
for b in bad:
    print("FAIL: " + b)
sys.exit(1 if bad else 0)
PY

for cache in slot none; do
	"$SB" validate --model-file "$T/cached-fit.json" --measured "$T/cached-prefix.json" \
		--prompt-cache $cache --seed 3 --quiet --json "$T/v-$cache.json" \
		>/dev/null 2>&1
done
python3 - "$T" <<'PY' || fails=$((fails + 1))
import json, sys
err = {}
for k in ("slot", "none"):
    lv = json.load(open(sys.argv[1] + "/v-%s.json" % k))["levels"][0]
    err[k] = lv["metrics"]["ttft_mean"]["error_pct"]
print("prefix run's TTFT mean, replayed: %+.1f%% with the cache, %+.1f%% without" %
      (err["slot"], err["none"]))
bad = abs(err["slot"]) > 5 or abs(err["none"]) <= 10
print("FAIL: the replay does not tell the cache" if bad else "ok")
sys.exit(1 if bad else 0)
PY
echo "calibrate cache: $fails failure(s)"
[ $fails -eq 0 ]
