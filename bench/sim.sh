#!/bin/sh
# bench/sim.sh — simulator speed and memory figures (printed, never asserted).
#
#   M/M/c (independent service, c=8, utilisation 0.8): simulated customers/s
#   seed workload (engine mode, S=8, 256 in / 128 out, λ = 0.8 μ):
#                                                       simulated requests/s
#   peak RSS for 1e6 vs 1e7 requests (streaming statistics: memory is flat)
#
# Builds sbsim in build-bench-sim (buildtype=release: asserts off) if needed.
# Usage: bench/sim.sh [N [SOAK]]   (N: customers for the speed runs, default
# 1e7; SOAK: the largest run of the memory check, default 1e7 — pass 1e8 for
# the 100-million-request soak)
set -eu
cd "$(dirname "$0")/.."
B=build-bench-sim
N=${1:-10000000}
SOAK=${2:-10000000}
if [ ! -d "$B" ]; then
	meson setup "$B" -Dbuildtype=release -Db_ndebug=true >/dev/null
fi
meson compile -C "$B" -j 2 app/sbsim:executable >/dev/null
SBSIM=$B/app/sbsim

# ELAPSED USER_S MAXRSS_KIB of a command, quietly
measure() {
	if [ -x /usr/bin/time ]; then
		/usr/bin/time -f "%e %U %M" -o "$T" "$@" >/dev/null
		cat "$T"
	else
		echo "0 0 0"
	fi
}
T=$(mktemp)
trap 'rm -f "$T"' EXIT INT TERM

echo "sbsim benchmark ($(uname -m), $(nproc) cores, one core used)"
set -- $(measure "$SBSIM" --service exp:1 --slots 8 --rate 6.4 --requests "$N" --warmup 0 --seed 1)
echo "M/M/8 at rho=0.8, $N customers: ${2} s user -> $(awk -v n="$N" -v t="$2" 'BEGIN{printf "%.2f", n/t/1e6}') M customers/s (peak RSS ${3} KiB)"

MU=$("$SBSIM" --slots 8 --rate 1 --requests 10 | sed -n 's/^capacity μ ≈ \([0-9.]*\).*/\1/p')
RATE=$(awk -v m="$MU" 'BEGIN{printf "%.4f", 0.8*m}')
set -- $(measure "$SBSIM" --slots 8 --rate "$RATE" --input-len 256 --output-len 128 --requests "$N" --warmup 0 --seed 1)
echo "seed workload S=8 256/128 at λ=$RATE (0.8 μ, μ=$MU req/s), $N requests: ${2} s user -> $(awk -v n="$N" -v t="$2" 'BEGIN{printf "%.2f", n/t/1e6}') M requests/s"

for n in 1000000 10000000 $( [ "$SOAK" -gt 10000000 ] && echo "$SOAK" ); do
	set -- $(measure "$SBSIM" --slots 8 --rate "$RATE" --requests "$n" --warmup 0 --seed 2)
	echo "peak RSS, seed workload, $n requests: ${3} KiB"
done
