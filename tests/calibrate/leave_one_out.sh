#!/bin/sh
# leave_one_out.sh SCRIPT SERVEBENCH SBSIM GUIDE-DIR — bench/leave_one_out.sh
# runs and prints its table: a row per left-out slot count (1, 4, 8), level
# and metric (TTFT and TPOT p50), each with a 90% interval and a yes/no.
# The coverage itself is reported (docs/accuracy.md), not asserted.
set -u
out=$(sh "$1" "$2" "$3" "$4") || { echo "FAIL: the script failed"; echo "$out"; exit 1; }
echo "$out"
rows=$(echo "$out" | grep -Ec '^[0-9]+ +[0-9]+ +T(TFT|POT) p50 .*\[[0-9.]+, [0-9.]+\] +[-+][0-9.]+% (yes|no)$')
for s in 1 4 8; do
	echo "$out" | grep -Eq "^$s " || { echo "FAIL: no row for slots $s"; exit 1; }
done
[ "$rows" -eq 8 ] || { echo "FAIL: $rows rows with an interval, want 8"; exit 1; }
echo "leave-one-out table complete"
