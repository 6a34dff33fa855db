#!/bin/sh
# test_scenarios.sh SBSIM DIR — tests as data: runs every scenario in DIR
# with --check, which compares the simulated sweep with the file's
# "expect" bands (bands on the model's physics, e.g. where the knee is).
set -u
SBSIM=$1
DIR=$2
fails=0
n=0
for f in "$DIR"/*.json; do
	n=$((n+1))
	if ! "$SBSIM" --scenario "$f" --check >/tmp/sbsim-scen.$$ 2>&1; then
		echo "FAIL: $f"; cat /tmp/sbsim-scen.$$; fails=$((fails+1))
	else
		echo "ok: $f ($(tail -1 /tmp/sbsim-scen.$$))"
	fi
done
rm -f /tmp/sbsim-scen.$$
[ $n -gt 0 ] || { echo "no scenarios in $DIR"; exit 1; }
[ $fails -eq 0 ]
