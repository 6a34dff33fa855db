#!/bin/sh
# export.sh SERVEBENCH SBSIM — `servebench export`: every record of every
# level becomes one CSV row whose cells equal the results file's values
# (read back with Python's csv module, so quoting is checked too): an error
# class holding a comma and a quote, a request without a first token (empty
# cell), token gaps space-separated, the level and mode of each row; read
# back (core/import.c), it replays exactly as the results file. Bad
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
[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "export checks passed"
