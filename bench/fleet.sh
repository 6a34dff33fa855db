#!/bin/sh
# bench/fleet.sh — fleet simulation speed (printed, never asserted):
# simulated requests per second per core for fleets of 1, 10 and 100
# replicas x 8 slots in engine mode (the seed workload, 256 in / 128 out),
# Poisson arrivals at 0.8 of the fleet's capacity, routed by
# least-outstanding and by p2c, one thread (--jobs 1; user CPU time).
#
# Builds sbsim in build-bench-sim (buildtype=release: asserts off) if needed.
# Usage: bench/fleet.sh [N]   (N: requests per run, default 2000000)
# ROUNDS=R repeats every row R times (default 1). OTHER=BINARY also runs
# another sbsim (e.g. a copy of an older build) on every row, alternating
# with this one, so that a before/after comparison sees the same load on a
# shared machine; its rows are marked "(other)". The outputs of the two are
# the same simulation, so only the speed differs.
set -eu
cd "$(dirname "$0")/.."
B=build-bench-sim
N=${1:-2000000}
ROUNDS=${ROUNDS:-1}
OTHER=${OTHER:-}
if [ ! -d "$B" ]; then
	meson setup "$B" -Dbuildtype=release -Db_ndebug=true >/dev/null
fi
meson compile -C "$B" -j 2 app/sbsim:executable >/dev/null
SBSIM=$B/app/sbsim
T=$(mktemp)
trap 'rm -f "$T"' EXIT INT TERM

# the user CPU seconds of a command, quietly
user_s() {
	/usr/bin/time -f "%U" -o "$T" "$@" >/dev/null
	cat "$T"
}

# one row: NAME BINARY MARK FLAGS...
row() {
	name=$1 bin=$2 mark=$3
	shift 3
	u=$(user_s "$bin" --slots 8 --requests "$N" --warmup 0 --seed 1 --jobs 1 "$@")
	echo "$name$mark: $u s user -> $(awk -v n="$N" -v t="$u" 'BEGIN{printf "%.2f", n/t/1e6}') M requests/s per core"
}

MU=$("$SBSIM" --slots 8 --rate 1 --requests 10 | sed -n 's/^capacity μ ≈ \([0-9.]*\).*/\1/p')
echo "sbsim fleet benchmark ($(uname -m), $(nproc) cores, one used), $N requests per run"
echo "one replica: 8 slots, capacity μ ≈ $MU req/s; arrivals at 0.8 μ per replica"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for n in 1 10 100; do
	rate=$(awk -v m="$MU" -v n="$n" 'BEGIN{printf "%.6g", 0.8 * m * n}')
	for route in least-outstanding p2c; do
		if [ "$n" = 1 ]; then
			fl=""
			name="single server"
		else
			fl="--replicas $n --route $route"
			name="$n x 8, $route"
		fi
		r=0
		while [ "$r" -lt "$ROUNDS" ]; do
			# shellcheck disable=SC2086
			row "$name" "$SBSIM" "" --rate "$rate" $fl
			if [ -n "$OTHER" ]; then
				# shellcheck disable=SC2086
				row "$name" "$OTHER" " (other)" --rate "$rate" $fl
			fi
			r=$((r + 1))
		done
		[ "$n" = 1 ] && break
	done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
