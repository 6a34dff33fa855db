#!/bin/sh
# leave_one_out.sh SCRIPT SERVEBENCH SBSIM GUIDE-DIR — experiments/leave_one_out.sh
# runs and prints its table: a row per left-out slot count (1, 4, 8), level
# and metric (TTFT and TPOT p50), each with a 90% interval and a yes/no.
#
# What it asserts is the claim docs/accuracy.md ("The guide's data, leave
# one out") makes from it: on the guide's data the 90% intervals are far too
# narrow (they hold what the coefficients' covariance says, not the model's
# form or the server's drift), which is why data/default-model.json carries
# no fit.covariance. If they held the left-out measurement 90% of the time,
# the count of the 8 rows inside would be Binomial(8, 0.9), and
# P(count <= 4) = 0.0050: at most 4 inside rejects 90% coverage at the 1%
# level (one-sided; the claim is "below"). The rows are not independent (a
# level's TTFT and TPOT share a run); taken as 4 pairs, P(at most 1 pair
# both inside | p = 0.9) = 0.0037, the same verdict for today's table (1 row
# inside, no pair). Intervals that grow to hold the measurements (honest
# ones, or 0..inf) fail this, and the doc's claim and the default model's
# missing covariance must then be revisited. Each interval must also have a
# width (lo < hi): a point is not an interval.
# The run is deterministic (fixed files, sbsim --seed 1) and takes seconds.
set -u
out=$(sh "$1" "$2" "$3" "$4") || { echo "FAIL: the script failed"; echo "$out"; exit 1; }
echo "$out"
re='^[0-9]+ +[0-9]+ +T(TFT|POT) p50 .*\[[0-9.]+, [0-9.]+\] +[-+][0-9.]+% (yes|no)$'
rows=$(echo "$out" | grep -Ec "$re")
for s in 1 4 8; do
	echo "$out" | grep -Eq "^$s " || { echo "FAIL: no row for slots $s"; exit 1; }
done
[ "$rows" -eq 8 ] || { echo "FAIL: $rows rows with an interval, want 8"; exit 1; }
flat=$(echo "$out" | grep -E "$re" | sed 's/.*\[\([0-9.]*\), \([0-9.]*\)\].*/\1 \2/' |
	awk '!($1 < $2)' | wc -l)
[ "$flat" -eq 0 ] || { echo "FAIL: $flat intervals without a width (lo >= hi)"; exit 1; }
inside=$(echo "$out" | grep -E "$re" | grep -c ' yes$')
echo "inside the 90% interval: $inside of 8 (90% coverage rejected at 1% when at most 4)"
[ "$inside" -le 4 ] || {
	echo "FAIL: $inside of 8 inside: the intervals no longer look too narrow on the guide's"
	echo "data; docs/accuracy.md (\"The guide's data, leave one out\") says they are"
	exit 1
}
echo "leave-one-out table complete; coverage far below 90%, as docs/accuracy.md says"
