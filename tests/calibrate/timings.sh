#!/bin/sh
# timings.sh — calibration from server timings (llama.cpp's prompt_ms)
# recovers known coefficients from synthetic records: prefill (base and per
# token) from prompt_ms, the client-side overhead as a line in the prompt
# length (TTFT - prompt_ms grows with the prompt: tokenising, JSON), and the
# prefill steps' noise cv.
#
# The data (timings.py, fixed seed) are drawn from the stated truth with
# multiplicative prefill noise, so the fits' own 95% intervals must hold
# the truth; with a fixed seed the test is deterministic, and for an
# unbiased fitter the chance that one of the five intervals misses is
# about 5 x 5% for an arbitrary seed (82 of 400 seeds tried; this seed was
# not chosen for passing: it is the first one tried).
# Holding the truth is not enough (0..inf holds it): each interval must
# also be as wide as the estimator's true sd, computed from the truth and
# the design, says a 95% interval with an estimated sd is — 2.63..5.45 sds
# (3.92 nominal), 2.10..6.81 for the prefill fit's terms; where the numbers
# come from is in timings.py (check).
# usage: timings.sh SERVEBENCH
set -eu
sb=$1
dir=$(mktemp -d "${TMPDIR:-/tmp}/sb-cal-timings.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM HUP
here=$(cd "$(dirname "$0")" && pwd)
python3 "$here/timings.py" "$dir" 1
"$sb" calibrate "$dir"/p*.json --slots 2 -o "$dir/model.json" >"$dir/report"
python3 "$here/timings.py" --check "$dir/model.json"
