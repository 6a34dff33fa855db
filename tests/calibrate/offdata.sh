#!/bin/sh
# offdata.sh SCRIPT BUILD-DIR — the error bars off the data: SCRIPT
# (experiments/coverage_offdata.py) calibrates 60 data sets simulated from
# each of four truths, three of forms the calibrator does not assume, and
# predicts configurations inside and beyond the data; check_offdata.py then
# asserts each cell's coverage (not below 80% beyond chance) and, inside the
# data, the intervals' width against the truth's own run-to-run spread, and
# that three negative controls (a model without the spread of the decode
# line between its points; one without the decode rule's error beyond
# them; a dropped attention term apart from the terms it moves, as before
# 2026-12-07) fail the coverage rule (the rules and the cells not asserted,
# with why: check_offdata.py). The draws' seeds are fixed: the same
# binaries give the same table. About 85 s.
set -u
SCRIPT=$1 BUILD=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT INT TERM
python3 "$SCRIPT" --build "$BUILD" --draws 60 --json "$T/c.json" >"$T/table" 2>&1 || {
	echo "FAIL: $SCRIPT"
	cat "$T/table"
	exit 1
}
tail -n 4 "$T/table"
python3 "$(dirname "$0")/check_offdata.py" "$T/c.json"
