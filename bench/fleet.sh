#!/bin/sh
# bench/fleet.sh — fleet simulation speed (printed, never asserted):
# simulated requests per second per core for fleets of 1, 10 and 100
# replicas x 8 slots in engine mode (the seed workload, 256 in / 128 out),
# Poisson arrivals at 0.8 of the fleet's capacity, routed by
# least-outstanding and by p2c, one thread (--jobs 1; user CPU time).
#
# Builds sbsim in build-bench-sim (buildtype=release: asserts off) if needed.
# Usage: bench/fleet.sh [N]   (N: requests per run, default 2000000)
set -eu
cd "$(dirname "$0")/.."
B=build-bench-sim
N=${1:-2000000}
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

MU=$("$SBSIM" --slots 8 --rate 1 --requests 10 | sed -n 's/^capacity μ ≈ \([0-9.]*\).*/\1/p')
echo "sbsim fleet benchmark ($(uname -m), $(nproc) cores, one used), $N requests per run"
echo "one replica: 8 slots, capacity μ ≈ $MU req/s; arrivals at 0.8 μ per replica"
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
		# shellcheck disable=SC2086
		u=$(user_s "$SBSIM" --slots 8 --rate "$rate" --requests "$N" --warmup 0 --seed 1 \
			--jobs 1 $fl)
		echo "$name: $u s user -> $(awk -v n="$N" -v t="$u" 'BEGIN{printf "%.2f", n/t/1e6}') M requests/s per core"
		[ "$n" = 1 ] && break
	done
done
