#!/bin/sh
# export.sh SERVEBENCH SBSIM — `servebench export`: every record of every
# level becomes one CSV row whose cells equal the results file's values
# (read back with Python's csv module, so quoting is checked too): an error
# class holding a comma and a quote, a request without a first token (empty
# cell), token gaps space-separated, the level and mode of each row; read
# back (core/import.c), it replays exactly as the results file. One level
# as vLLM's bench JSON reads back equal. Bad
# input: a missing file, an unknown format, a file that is not results, an
# unwritable output: exit 2 naming it.
set -u
SB=$1 SBSIM=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT INT TERM
fails=0
"$SBSIM" --concurrency 1,2 --requests 6 --output-len 4 --seed 5 --json "$T/s.json" \
	--json-requests >/dev/null 2>"$T/err" || { echo "FAIL: sbsim"; cat "$T/err"; exit 1; }
python3 - "$T/s.json" "$T/r.json" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
q = d["levels"][1]["requests"][0]
q["ttft_ms"] = None
q["itl_ms"] = []
q["error"] = {"class": 'http_5xx, "busy"', "message": "server said no"}
d["levels"][0]["requests"][0]["itl_ms"] = [10.5, 11.25, 12.0]
json.dump(d, open(sys.argv[2], "w"))
PY
"$SB" export "$T/r.json" -o "$T/r.csv" 2>"$T/err" || { echo "FAIL: export"; cat "$T/err"; exit 1; }
grep -q "wrote 12 requests to" "$T/err" || { echo "FAIL: no 'wrote 12 requests'"; cat "$T/err"; fails=$((fails+1)); }
python3 - "$T/r.json" "$T/r.csv" <<'PY' || fails=$((fails+1))
import csv, json, math, sys
d = json.load(open(sys.argv[1]))
rows = list(csv.DictReader(open(sys.argv[2], newline="")))
want = [(l, q) for l in d["levels"] for q in l["requests"]]
assert len(rows) == len(want), (len(rows), len(want))
def same(cell, v):
    if v is None:
        return cell == ""
    return abs(float(cell) - v) <= 1e-9 * max(1.0, abs(v))
for row, (l, q) in zip(rows, want):
    for k in ("t_sent_s", "ttft_ms", "e2e_ms", "t_scheduled_s", "wait_ms"):
        assert same(row[k], q.get(k)), (k, row[k], q.get(k))
    assert int(row["prompt_tokens"]) == q["prompt_tokens"]
    assert int(row["output_tokens"]) == q["output_tokens"]
    assert int(row["id"]) == q["id"]
    assert float(row["level"]) == l["level"] and row["mode"] == l["mode"], row
    err = (q.get("error") or {}).get("class", "")
    assert row["error"] == err, (row["error"], err)
    gaps = [float(x) for x in row["itl_ms"].split()]
    assert gaps == q.get("itl_ms", []), (gaps, q.get("itl_ms"))
print("export: %d rows equal the file's records" % len(rows))
PY
# Read back: sbsim --compare replays the CSV exactly as the results file
# (every level, its mode, ids and times), so the two reports differ only in
# the file name.
"$SBSIM" --compare "$T/s.json" --seed 3 2>&1 | sed 1d >"$T/cj" || fails=$((fails+1))
"$SB" export "$T/s.json" -o "$T/s.csv" 2>/dev/null || fails=$((fails+1))
"$SBSIM" --compare "$T/s.csv" --seed 3 2>&1 | sed 1d >"$T/cc" || fails=$((fails+1))
grep -q "closed loop c=2" "$T/cc" || { echo "FAIL: the CSV lost level 2"; cat "$T/cc"; fails=$((fails+1)); }
cmp -s "$T/cj" "$T/cc" || { echo "FAIL: the CSV replays differently:"; diff "$T/cj" "$T/cc" | head; fails=$((fails+1)); }

# --format vllm: one level in vLLM's bench JSON; read back (core/import.c,
# vllm-bench-serve) its records equal the level's (a failed request's
# output length, TTFT and latency 0, as vLLM writes them; its error the
# message), the level and mode survive (closed loop at 2: request_rate
# "inf", max_concurrency 2), and vLLM's summary is computed from them.
"$SB" export "$T/r.json" --format vllm --level 2 -o "$T/r2.vllm.json" 2>"$T/err" ||
	{ echo "FAIL: export --format vllm"; cat "$T/err"; fails=$((fails+1)); }
"$SB" export "$T/r2.vllm.json" -o "$T/r2back.csv" 2>"$T/err" ||
	{ echo "FAIL: the vLLM JSON does not read back"; cat "$T/err"; fails=$((fails+1)); }
python3 - "$T/r.json" "$T/r2.vllm.json" "$T/r2back.csv" <<'PY' || fails=$((fails+1))
import csv, json, statistics, sys
l = json.load(open(sys.argv[1]))["levels"][1]
v = json.load(open(sys.argv[2]))
rows = list(csv.DictReader(open(sys.argv[3], newline="")))
want = [q for q in l["requests"] if not q.get("warmup")]
assert v["request_rate"] == "inf" and v["max_concurrency"] == 2, v["request_rate"]
assert v["completed"] + v["failed"] == len(want) == len(rows), (v["completed"], len(rows))
def same(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))
for row, q in zip(rows, want):
    assert row["level"] == "2" and row["mode"] == "concurrency", row
    assert same(float(row["t_sent_s"]), q["t_sent_s"]), (row, q)
    assert int(row["prompt_tokens"]) == q["prompt_tokens"]
    if q.get("error"):
        assert row["error"] != "", row
        continue
    assert int(row["output_tokens"]) == q["output_tokens"]
    for k in ("ttft_ms", "e2e_ms"):
        assert same(float(row[k]), q[k]), (k, row[k], q[k])
ok = [q for q in want if not q.get("error")]
assert same(v["mean_ttft_ms"], statistics.mean(q["ttft_ms"] for q in ok)), v["mean_ttft_ms"]
assert same(v["median_e2el_ms"], statistics.median(q["e2e_ms"] for q in ok)), v["median_e2el_ms"]
print("export --format vllm: %d requests read back equal" % len(rows))
PY

bad() {   # WANT ARGS...
	want=$1; shift
	"$SB" export "$@" >"$T/out" 2>"$T/err"; rc=$?
	[ $rc -eq 2 ] || { echo "FAIL: export $* exited $rc, want 2"; fails=$((fails+1)); }
	grep -qF -- "$want" "$T/err" || { echo "FAIL: export $*: stderr lacks '$want'"; cat "$T/err"; fails=$((fails+1)); }
}
bad "No such file" "$T/none.json"
bad "'xls' is not a format" "$T/r.json" --format xls
echo '{"schema": "nope"}' >"$T/bad.json"
bad "bad.json" "$T/bad.json"
bad "-o $T/no/dir/x.csv" "$T/r.json" -o "$T/no/dir/x.csv"
bad "needs one results file" "$T/r.json" "$T/r.json"
bad "several levels: choose one with --level (the file has concurrency 1, concurrency 2)" "$T/r.json" --format vllm
bad "--level 3: no such level" "$T/r.json" --format vllm --level 3
bad "--level goes with --format vllm" "$T/r.json" --level 2
[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "export checks passed"
