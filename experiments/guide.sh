#!/usr/bin/env bash
# experiments/guide.sh — regenerate everything docs/guide.md shows: the measurements of
# the seven experiments against a local llama-server (llama/), the model
# calibrated from Experiments 1-3 only, sbsim's predictions of Experiments 4-6,
# the replay comparisons, the plots and the tables.
#
#   experiments/guide.sh [--quick] [--analyse-only] [--build DIR] [--data DIR] [--img DIR]
#                 [--guide FILE]
#
#   --quick          a smoke run: few requests, short outputs, few levels
#                    (a few minutes even on a loaded machine). Writes to
#                    BUILD/guide-quick/{data,img} unless --data/--img are given,
#                    so the committed results are not overwritten.
#   --analyse-only   measure nothing: recalibrate, predict, compare, plot and
#                    print the tables from the results already in the data dir.
#   --build DIR      meson build directory with app/servebench and app/sbsim
#                    (default build-doc; configured and compiled when missing)
#   --data DIR       results directory (default runs/guide)
#   --img DIR        plot directory (default docs/img)
#   --guide FILE     refresh the tables between <!-- table:NAME --> and
#                    <!-- /table --> lines of FILE from this run (default
#                    docs/guide.md; none with --quick; '' for none)
#
# Every llama-server the script starts is stopped on exit, on error and on
# Ctrl-C. Exit status: 0 done; 1 a step failed (the step is named); 2 bad usage.
# Needs: jq, gnuplot, and what llama/llama.sh needs.
set -euo pipefail
export LC_ALL=C

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

QUICK=0 ANALYSE_ONLY=0 BUILD=build-doc DATA="" IMG="" GUIDE="-"
usage() { sed -n '2,25s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2; exit 2; }
while (($#)); do
    case "$1" in
        --quick) QUICK=1; shift ;;
        --analyse-only) ANALYSE_ONLY=1; shift ;;
        --build) BUILD="${2:?--build needs a directory}"; shift 2 ;;
        --data) DATA="${2:?--data needs a directory}"; shift 2 ;;
        --img) IMG="${2:?--img needs a directory}"; shift 2 ;;
        --guide) GUIDE="${2?--guide needs a file (or '' for none)}"; shift 2 ;;
        -h|--help) usage ;;
        *) printf 'guide.sh: unknown option: %s\n' "$1" >&2; usage ;;
    esac
done
if ((QUICK)); then
    DATA="${DATA:-$BUILD/guide-quick/data}"
    IMG="${IMG:-$BUILD/guide-quick/img}"
else
    DATA="${DATA:-runs/guide}"
    IMG="${IMG:-docs/img}"
fi
if [[ "$GUIDE" == - ]]; then
    if ((QUICK)); then GUIDE=""; else GUIDE=docs/guide.md; fi
fi

say() { printf '\n== %s\n' "$*"; }
die() { printf '\nguide.sh: FAILED: %s\n' "$*" >&2; exit 1; }
for tool in jq gnuplot; do
    command -v "$tool" >/dev/null || die "$tool is not installed (apt-get install $tool)"
done

# ---- the workload of each experiment ----------------------------------------
if ((QUICK)); then
    E1_LENS=(16 128 256); E1_N=2; E1_OUT=16
    E3_IN=64; E3_OUT=16; E3_N_NP1=3; E3_N_NP4=4; E3_N_NP8=8
    E4_LEVELS=1,2,4,5; E4_N=4
    E6_FRACTIONS=(0.5 1.1); E6_N=6
    E7_IN=256; E7_OUT=8; E7_N=3
    REPS=5
else
    E1_LENS=(16 256 1024 2048); E1_N=8; E1_OUT=64
    E3_IN=256; E3_OUT=128; E3_N_NP1=12; E3_N_NP4=24; E3_N_NP8=32
    E4_LEVELS=1,2,4,5,6,8; E4_N=32
    E6_FRACTIONS=(0.3 0.5 0.7 0.9 1.1); E6_N=40
    E7_IN=1024; E7_OUT=16; E7_N=8
    REPS=20
fi
SLOTS=4    # the server Experiments 4-6 predict: -np 4
API=openai-completions   # exact prompt lengths (the chat template adds ~28 tokens)

SB="$BUILD/app/servebench"
SIM="$BUILD/app/sbsim"

# ---- build ------------------------------------------------------------------
if [[ ! -x "$SB" || ! -x "$SIM" ]]; then
    say "building servebench and sbsim in $BUILD"
    [[ -d "$BUILD" ]] || meson setup "$BUILD" >/dev/null || die "meson setup $BUILD"
    meson compile -C "$BUILD" -j 2 app/servebench:executable app/sbsim:executable \
        || die "meson compile -C $BUILD"
fi

mkdir -p "$DATA" "$IMG"

# ---- servers: started here, always stopped ----------------------------------
RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/guide-sh.XXXXXX")"
export SERVEBENCH_RUN_DIR="$RUN_DIR"
PIDFILE="" URL="" LOG="" SERVER_NAME=""

stop_server() {
    if [[ -n "$PIDFILE" && -f "$PIDFILE" ]]; then
        llama/llama.sh stop "$PIDFILE" || true
    fi
    if [[ -n "$LOG" && -f "$LOG" && -n "$SERVER_NAME" ]]; then
        mkdir -p "$DATA/server-logs"
        gzip -9c "$LOG" >"$DATA/server-logs/$SERVER_NAME.log.gz" || true
    fi
    PIDFILE="" URL="" LOG="" SERVER_NAME=""
}
cleanup() {
    local rc=$?
    stop_server
    rm -rf "$RUN_DIR"
    exit "$rc"
}
# A signal stops the measurement running in the background first (bash would
# otherwise wait for it), then the EXIT trap stops the server.
CHILD=""
on_signal() {
    if [[ -n "$CHILD" ]]; then
        kill -TERM "$CHILD" 2>/dev/null || true
        wait "$CHILD" 2>/dev/null || true
        CHILD=""
    fi
    printf '\nguide.sh: interrupted\n' >&2
    exit "$1"
}
trap cleanup EXIT
trap 'on_signal 130' INT
trap 'on_signal 143' TERM HUP

# start_server NAME NP: a fresh llama-server with NP slots; sets URL PIDFILE LOG.
start_server() {
    stop_server
    local out
    out="$(llama/llama.sh start --np "$2")" || die "llama/llama.sh start --np $2"
    eval "$out"
    SERVER_NAME="$1"
    printf 'server %s: -np %s at %s (pid %s)\n' "$1" "$2" "$URL" "$PID"
}

# load_now: the 1-minute load average, for the record.
load_now() { cut -d' ' -f1 /proc/loadavg; }
LOADS=()
FAILED_RUNS=()

# sb_run NAME ARGS...: one `servebench run` into DATA/NAME.json.
sb_run() {
    local name="$1"; shift
    local -a cmd=("$SB" run --url "$URL" --model local --api "$API" "$@" --out "$DATA/$name.json")
    printf '+ servebench run %s --out %s\n' "$*" "$DATA/$name.json"
    local l0 l1 t0=$SECONDS
    l0="$(load_now)"
    local rc=0
    "${cmd[@]}" &
    CHILD=$!
    wait "$CHILD" || rc=$?
    CHILD=""
    # Exit 1: some requests failed, the results (with each error) are written;
    # a stray failure should not cost the whole run, so it is reported and kept.
    if ((rc == 1)) && [[ -s "$DATA/$name.json" ]]; then
        printf 'guide.sh: WARNING: %s: some requests failed; kept (errors in %s)\n' "$name" "$DATA/$name.json" >&2
        FAILED_RUNS+=("$name")
    elif ((rc != 0)); then
        die "servebench run for $name (exit $rc); partial log: $DATA/$name.json.partial.jsonl"
    fi
    rm -f "$DATA/$name.json.partial.jsonl"   # the results file holds every record
    l1="$(load_now)"
    LOADS+=("$(jq -nc --arg n "$name" --arg a "$l0" --arg b "$l1" --argjson s $((SECONDS - t0)) \
        '{run:$n, load1_before:($a|tonumber), load1_after:($b|tonumber), seconds:$s}')")
}

T_START=$SECONDS
if ((!ANALYSE_ONLY)); then
    rm -f "$DATA"/*.json "$DATA"/*.txt "$DATA"/*.partial.jsonl "$DATA"/server-logs/*.log.gz

    # ---- Experiments 1 and 2: prefill and decode at c=1 on 4 slots ----------
    say "Experiments 1-2: TTFT and TPOT against prompt length (c=1, -np $SLOTS)"
    start_server exp1-np4 "$SLOTS"
    seed=100
    for p in "${E1_LENS[@]}"; do
        seed=$((seed + 1))
        sb_run "prompt-$p" --concurrency 1 --num-requests "$E1_N" --input-len "$p" \
            --output-len "$E1_OUT" --seed "$seed"
    done

    # ---- Experiment 3: batching and slots -----------------------------------
    say "Experiment 3: batching (${E3_IN} in / ${E3_OUT} out)"
    sb_run np4-c4 --concurrency 4 --num-requests "$E3_N_NP4" --input-len "$E3_IN" \
        --output-len "$E3_OUT" --seed 201
    start_server exp3-np1 1
    sb_run np1 --concurrency 1,4 --num-requests "$E3_N_NP1" --input-len "$E3_IN" \
        --output-len "$E3_OUT" --seed 202
    start_server exp3-np8 8
    sb_run np8-c8 --concurrency 8 --num-requests "$E3_N_NP8" --input-len "$E3_IN" \
        --output-len "$E3_OUT" --seed 203
    stop_server
fi

# ---- calibrate from Experiments 1-3 only --------------------------------------
say "calibrating from Experiments 1-3 (model for -np $SLOTS)"
CAL_IN=()
for p in "${E1_LENS[@]}"; do CAL_IN+=("$DATA/prompt-$p.json"); done
CAL_IN+=("$DATA/np1.json" "$DATA/np4-c4.json" "$DATA/np8-c8.json")
printf '+ servebench calibrate %s --slots %s -o %s\n' "${CAL_IN[*]}" "$SLOTS" "$DATA/model.json"
"$SB" calibrate "${CAL_IN[@]}" --slots "$SLOTS" --name "llama-server 100M random, CPU (calibrated)" \
    -o "$DATA/model.json" >"$DATA/calibrate.txt" 2>&1 \
    || { cat "$DATA/calibrate.txt" >&2; die "servebench calibrate"; }
cat "$DATA/calibrate.txt"

# The open-loop rates of Experiment 6: fractions of the capacity sbsim predicts.
"$SIM" --model-file "$DATA/model.json" --slots "$SLOTS" --rate 1 --input-len "$E3_IN" \
    --output-len "$E3_OUT" --requests 50 --seed 7 --json "$DATA/capacity.json" >/dev/null \
    || die "sbsim capacity"
CAPACITY="$(jq -r '.simulation.capacity_req_s' "$DATA/capacity.json")"
[[ "$CAPACITY" != null ]] || die "sbsim gave no capacity in $DATA/capacity.json"
RATES=""
for f in "${E6_FRACTIONS[@]}"; do
    r="$(jq -n --argjson c "$CAPACITY" --argjson f "$f" '($c * $f * 100 | round) / 100')"
    RATES="${RATES:+$RATES,}$r"
done
if ((ANALYSE_ONLY)) && [[ -f "$DATA/rate.json" ]]; then
    # the rates that were measured (a model recalibrated since then can
    # predict a slightly different capacity)
    RATES="$(jq -r '[.levels[].level] | map(tostring) | join(",")' "$DATA/rate.json")"
fi
printf 'predicted capacity at -np %s, %s in / %s out: %.3f req/s; Experiment 6 rates: %s req/s\n' \
    "$SLOTS" "$E3_IN" "$E3_OUT" "$CAPACITY" "$RATES"

# ---- forecasts of Experiments 4-6, made before they are measured ------------------
say "predicting Experiments 4-6 with sbsim"
# --warmup 0: servebench run sends its warm-up requests one at a time before a
# level starts, so every level begins on an idle server; sbsim's default
# (--warmup 2) would instead leave the first two requests of the level itself
# uncounted, which at c=4 shrinks its lambda*W to about 3.6 for 32 requests.
sim_forecast() {  # NAME ARGS...: sbsim forecast into DATA/pred-NAME.json and .txt
    local name="$1"; shift
    printf '+ sbsim --model-file %s %s --json %s\n' "$DATA/model.json" "$*" "$DATA/pred-$name.json"
    "$SIM" --model-file "$DATA/model.json" "$@" --warmup 0 --replications "$REPS" --seed 11 \
        --json "$DATA/pred-$name.json" >"$DATA/pred-$name.txt" 2>&1 \
        || { cat "$DATA/pred-$name.txt" >&2; die "sbsim forecast $name"; }
    cat "$DATA/pred-$name.txt"
}
sim_forecast knee --slots "$SLOTS" --concurrency "$E4_LEVELS" --input-len "$E3_IN" \
    --output-len "$E3_OUT" --requests "$E4_N"
sim_forecast rate --slots "$SLOTS" --rate "$RATES" --input-len "$E3_IN" \
    --output-len "$E3_OUT" --requests "$E6_N"

if ((!ANALYSE_ONLY)); then
    # ---- Experiments 4 and 5: the p99 knee and Little's law on 4 slots ------
    say "Experiments 4-5: closed loop past the slot count (-np $SLOTS)"
    start_server exp4-np4 "$SLOTS"
    sb_run knee --concurrency "$E4_LEVELS" --num-requests "$E4_N" --input-len "$E3_IN" \
        --output-len "$E3_OUT" --seed 401

    # ---- Experiment 6: open loop -------------------------------------------------
    say "Experiment 6: Poisson arrivals at $RATES req/s"
    start_server exp6-np4 "$SLOTS"
    sb_run rate --mode rate --levels "$RATES" --num-requests "$E6_N" --input-len "$E3_IN" \
        --output-len "$E3_OUT" --seed 601

    # ---- Experiment 7: pitfalls ---------------------------------------------------
    say "Experiment 7: pitfalls"
    # A fresh server, no warm-up: the very first request is in the results.
    start_server exp7-np4 "$SLOTS"
    sb_run cold --concurrency 1 --num-requests "$E7_N" --warmup 0 --input-len 256 \
        --output-len "$E7_OUT" --seed 701
    # The same prompt every time (prefix cache hit) against fresh prompts.
    sb_run cache-fresh --concurrency 1 --num-requests "$E7_N" --input-len "$E7_IN" \
        --output-len "$E7_OUT" --seed 702
    sb_run cache-reuse --concurrency 1 --num-requests "$E7_N" --input-len "$E7_IN" \
        --output-len "$E7_OUT" --seed 703 --reuse-prompt
    sb_run cache-reuse-off --concurrency 1 --num-requests "$E7_N" --input-len "$E7_IN" \
        --output-len "$E7_OUT" --seed 704 --reuse-prompt --no-cache-prompt
    # The host name: localhost against the literal address.
    URL_IP="$URL"
    sb_run host-ip --concurrency 1 --num-requests "$E7_N" --input-len 16 \
        --output-len "$E7_OUT" --seed 705
    URL="${URL_IP/127.0.0.1/localhost}"
    sb_run host-localhost --concurrency 1 --num-requests "$E7_N" --input-len 16 \
        --output-len "$E7_OUT" --seed 706
    URL="$URL_IP"
    stop_server

    printf '%s\n' "${LOADS[@]}" | jq -s \
        --arg date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --argjson cpus "$(nproc)" \
        --arg llama "$(git -C "${SERVEBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/servebench}/llama-3.21.1/src" \
                        rev-parse --short HEAD 2>/dev/null || echo unknown)" \
        --arg rev "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
        --argjson quick "$QUICK" --argjson secs $((SECONDS - T_START)) \
        '{date:$date, cpus:$cpus, llama_cpp_commit:$llama, servebench_commit:$rev,
          quick:($quick == 1), measure_and_predict_seconds:$secs, runs:.}' >"$DATA/env.json"
fi

# ---- replay every measurement through the model ---------------------------------------
say "replaying the measurements through the calibrated model"
# Experiment 3's runs on 1 and 8 slots are replayed through the same calibrated
# model with only its slot count changed (what `sbsim --slots N` does).
for np in 1 8; do
    jq --argjson s "$np" '.server.slots = $s | .name += " with \($s) slots"' "$DATA/model.json" \
        >"$DATA/model-np$np.json" || die "writing $DATA/model-np$np.json"
done
replay() {  # NAME [MODEL]: DATA/NAME.json -> replay-NAME.json, replay-NAME-sim.json, replay-NAME.txt
    local name="$1" model="${2:-$DATA/model.json}" rc=0
    printf '+ servebench validate --model-file %s --measured %s\n' "$model" "$DATA/$name.json"
    "$SB" validate --model-file "$model" --measured "$DATA/$name.json" \
        --replications "$REPS" --seed 13 --json "$DATA/replay-$name.json" \
        --out-simulated "$DATA/replay-$name-sim.json" >"$DATA/replay-$name.txt" 2>&1 || rc=$?
    # 1 only says the accuracy goals were missed; that is a result, not a failure.
    ((rc <= 1)) || { cat "$DATA/replay-$name.txt" >&2; die "servebench validate --measured $name.json (exit $rc)"; }
}
for p in "${E1_LENS[@]}"; do replay "prompt-$p"; done
replay np1 "$DATA/model-np1.json"
replay np8-c8 "$DATA/model-np8.json"
for n in np4-c4 knee rate; do replay "$n"; done
cat "$DATA/replay-knee.txt" "$DATA/replay-rate.txt"

# ---- Experiment 3's 8-slot row predicted from the 1- and 4-slot data alone -----
# The model is calibrated again without np8-c8.json, so decode_ms(8) comes from
# the line fitted through decode_ms(1) and decode_ms(4) (an extrapolation, which
# sbsim marks), and sbsim draws the calibration's uncertain coefficients per
# replication: the 90% interval covers what calibration did not pin down and
# the luck of a 32-request run.
say "predicting Experiment 3's 8-slot run from the 1- and 4-slot runs alone"
CAL14=()
for p in "${E1_LENS[@]}"; do CAL14+=("$DATA/prompt-$p.json"); done
CAL14+=("$DATA/np1.json" "$DATA/np4-c4.json")
"$SB" calibrate "${CAL14[@]}" --slots 8 --name "llama-server 100M random, CPU (from -np 1 and 4)" \
    -o "$DATA/model-np1-np4.json" >"$DATA/calibrate-np1-np4.txt" 2>&1 \
    || { cat "$DATA/calibrate-np1-np4.txt" >&2; die "servebench calibrate (without the 8-slot run)"; }
"$SIM" --model-file "$DATA/model-np1-np4.json" --slots 8 --concurrency 8 --input-len "$E3_IN" \
    --output-len "$E3_OUT" --requests "$E3_N_NP8" --warmup 0 --replications 40 --seed 17 \
    --json "$DATA/pred-np8-from-np1-np4.json" >"$DATA/pred-np8-from-np1-np4.txt" \
    || die "sbsim (8 slots from the 1- and 4-slot model)"

# ---- plots -----------------------------------------------------------------------------
say "plots into $IMG"
# Experiments 1-2: servebench plot puts load on the x axis, so TTFT and TPOT
# against prompt length are drawn here: measured points (p50, bars p50..p99)
# and sbsim's line over a grid of prompt lengths.
PLOT_DIR="$RUN_DIR/plot"; mkdir -p "$PLOT_DIR"
for p in "${E1_LENS[@]}"; do
    jq -r --arg p "$p" '.levels[0] | [$p, .ttft_ms.p50, .ttft_ms.p99, .tpot_ms.p50, .tpot_ms.p99] | @tsv' \
        "$DATA/prompt-$p.json"
done >"$PLOT_DIR/e1-measured.tsv"
maxp="${E1_LENS[-1]}"
: >"$PLOT_DIR/e1-sim.tsv"
for p in $(seq 16 $((maxp / 16 > 8 ? maxp / 16 : 8)) "$maxp") "$maxp"; do
    "$SIM" --model-file "$DATA/model.json" --slots "$SLOTS" --concurrency 1 --input-len "$p" \
        --output-len "$E1_OUT" --requests 40 --warmup 0 --seed 5 --json "$PLOT_DIR/s.json" >/dev/null \
        || die "sbsim at prompt length $p"
    jq -r --arg p "$p" '.levels[0] | [$p, .ttft_ms.p50, .tpot_ms.p50] | @tsv' "$PLOT_DIR/s.json" \
        >>"$PLOT_DIR/e1-sim.tsv"
done
cp "$PLOT_DIR/e1-measured.tsv" "$DATA/exp1-measured.tsv"
cp "$PLOT_DIR/e1-sim.tsv" "$DATA/exp1-sbsim-grid.tsv"
cat >"$PLOT_DIR/e1.gp" <<EOF
set terminal pngcairo size 1100,440 font 'DejaVu Sans,10' noenhanced
set output '$IMG/exp1-2-prompt-length.png'
set multiplot layout 1,2 title 'Experiments 1-2: one request at a time, ${E1_OUT} output tokens, -np ${SLOTS} (measured: p50, bar to p99)'
set grid
set key top left
set xlabel 'prompt tokens'
set ylabel 'TTFT (ms)'
set yrange [0:*]
plot '$PLOT_DIR/e1-measured.tsv' using 1:2:2:3 with yerrorbars pt 7 ps 1.2 lc rgb '#c0392b' title 'measured', \
     '$PLOT_DIR/e1-sim.tsv' using 1:2 with lines lw 2 lc rgb '#2c3e50' title 'sbsim (calibrated)'
set ylabel 'TPOT (ms per token)'
set key bottom right
plot '$PLOT_DIR/e1-measured.tsv' using 1:4:4:5 with yerrorbars pt 7 ps 1.2 lc rgb '#c0392b' title 'measured', \
     '$PLOT_DIR/e1-sim.tsv' using 1:3 with lines lw 2 lc rgb '#2c3e50' title 'sbsim (calibrated)'
unset multiplot
EOF
gnuplot "$PLOT_DIR/e1.gp" || die "gnuplot for Experiments 1-2"

plot() {  # OUT KIND TITLE FILE...
    local out="$1" kind="$2" title="$3"; shift 3
    printf '+ servebench plot %s --kind %s -o %s\n' "$*" "$kind" "$IMG/$out"
    "$SB" plot "$@" --kind "$kind" --title "$title" -o "$IMG/$out" || die "servebench plot $out"
}
plot exp4-knee.png latency "Experiment 4: -np $SLOTS, closed loop; lines: sbsim forecast from Exps 1-3" \
    "$DATA/knee.json" "$DATA/pred-knee.json"
plot exp4-knee-cdf.png cdf "Experiment 4: TTFT distribution per concurrency (measured)" \
    "$DATA/knee.json"
plot exp6-open-loop.png latency "Experiment 6: Poisson arrivals, -np $SLOTS; lines: sbsim forecast" \
    "$DATA/rate.json" "$DATA/pred-rate.json"
plot exp6-open-loop-replay.png latency "Experiment 6: measured vs the same arrivals replayed through sbsim" \
    "$DATA/rate.json" "$DATA/replay-rate-sim.json"

# Experiment 3: a simulated file with one level draws no line in servebench
# plot, so the four configurations are bars here.
for spec in "np1 1 1" "np1 1 4" "np4-c4 4 4" "np8-c8 8 8"; do
    set -- $spec
    jq -r --arg lab "np=$2 c=$3" --argjson c "$3" '.levels[] | select(.level == $c) | .metrics
        | [$lab, .output_tok_s.measured, .output_tok_s.predicted, .tpot_p50.measured,
           .tpot_p50.predicted, .ttft_p50.measured, .ttft_p50.predicted] | @tsv' "$DATA/replay-$1.json"
done >"$DATA/exp3-bars.tsv" || die "Experiment 3 plot data"
cat >"$PLOT_DIR/e3.gp" <<GP
set terminal pngcairo size 1400,420 font 'DejaVu Sans,10' noenhanced
set output '$IMG/exp3-batching.png'
set datafile separator '\t'
set multiplot layout 1,3 title 'Experiment 3: ${E3_IN} prompt / ${E3_OUT} output tokens (sbsim: the same requests replayed through the calibrated model)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics
set key top left
set yrange [0:*]
set xtics font ',8'
set title 'output tokens/s (all streams)'
plot '$DATA/exp3-bars.tsv' using 2:xtic(1) lc rgb '#c0392b' title 'measured', '' using 3 lc rgb '#2c3e50' title 'sbsim'
set title 'TPOT p50 (ms per token)'
plot '$DATA/exp3-bars.tsv' using 4:xtic(1) lc rgb '#c0392b' title 'measured', '' using 5 lc rgb '#2c3e50' title 'sbsim'
set title 'TTFT p50 (ms, log scale)'
set logscale y
set yrange [*:*]
plot '$DATA/exp3-bars.tsv' using 6:xtic(1) lc rgb '#c0392b' title 'measured', '' using 7 lc rgb '#2c3e50' title 'sbsim'
unset multiplot
GP
gnuplot "$PLOT_DIR/e3.gp" || die "gnuplot for Experiment 3"

# Experiment 7: servebench plot labels CDF curves by level only, so the three
# cache runs are drawn here (log x: a cached prompt is orders of magnitude
# faster), with the cold server's requests in order beside them.
for n in cache-fresh cache-reuse cache-reuse-off; do
    jq -r '.levels[0].requests | map(.ttft_ms) | sort | . as $t
           | range(0; length) | "\($t[.])\t\((. + 1) / ($t | length))"' \
        "$DATA/$n.json" >"$PLOT_DIR/e7-$n.tsv" || die "Experiment 7 plot data ($n)"
done
jq -r '.levels[0].requests | sort_by(.t_sent_s) | to_entries[]
       | "\(.key + 1)\t\(.value.ttft_ms)\t\(.value.server.prompt_ms // "NaN")"' \
    "$DATA/cold.json" >"$PLOT_DIR/e7-cold.tsv" || die "Experiment 7 plot data (cold)"
cat >"$PLOT_DIR/e7.gp" <<GP
set terminal pngcairo size 1100,420 font 'DejaVu Sans,10' noenhanced
set output '$IMG/exp7-pitfalls.png'
set multiplot layout 1,2 title 'Experiment 7: benchmarking pitfalls on the local llama-server'
set grid
set title 'prefix cache: TTFT of a ${E7_IN}-token prompt (CDF, log x)'
set logscale x
set xlabel 'TTFT (ms)'
set ylabel 'fraction of requests'
set yrange [0:1.05]
set key at graph 0.13, 0.97 left top samplen 2
plot '$PLOT_DIR/e7-cache-fresh.tsv' using 1:2 with steps lw 2 lc rgb '#c0392b' title 'fresh prompts', \
     '$PLOT_DIR/e7-cache-reuse.tsv' using 1:2 with steps lw 2 lc rgb '#27ae60' title 'same prompt (cache hit)', \
     '$PLOT_DIR/e7-cache-reuse-off.tsv' using 1:2 with steps lw 2 dt 2 lc rgb '#2c3e50' title 'same prompt, cache_prompt off'
unset logscale x
set title 'warm-up: fresh server, no warm-up requests (256-token prompts)'
set xlabel 'request, in the order sent'
set ylabel 'ms'
set yrange [0:*]
set xtics 1
set key default
set key top right
plot '$PLOT_DIR/e7-cold.tsv' using 1:2 with linespoints pt 7 lw 2 lc rgb '#c0392b' title 'TTFT (client)', \
     '$PLOT_DIR/e7-cold.tsv' using 1:3 with linespoints pt 6 lw 1 lc rgb '#2c3e50' title 'prompt_ms (server)'
unset multiplot
GP
gnuplot "$PLOT_DIR/e7.gp" || die "gnuplot for Experiment 7"

# ---- tables ----------------------------------------------------------------------------
say "tables (markdown, also in $DATA/tables.md)"
JQ_DEFS='
def num: if . == null then "–" elif (. | fabs) >= 100 then (round | tostring)
         elif (. | fabs) >= 10 then ((. * 10 | round) / 10 | tostring)
         else ((. * 100 | round) / 100 | tostring) end;
def pct: if . == null then "–" else ((if . >= 0 then "+" else "" end) + ((. * 10 | round) / 10 | tostring) + "%") end;
def cell(m): "\(m.measured | num) | \(m.predicted | num) | \(m.error_pct | pct)";
def lvl($x): .levels[] | select(.level == $x);
def median: sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
            else (.[length / 2 - 1] + .[length / 2]) / 2 end;
'
TDIR="$DATA/tables"
mkdir -p "$TDIR"
# fc(meas; pred): "measured | forecast | error" from two numbers.
JQ_DEFS="$JQ_DEFS"'
def err($m; $p): if $m == null or $p == null or $m == 0 then null else ($p - $m) / $m * 100 end;
def fc($m; $p): "\($m | num) | \($p | num) | \(err($m; $p) | pct)";
def inside($t): if $t.inside == null then "–" elif $t.inside then "yes" else "**no**" end;
'
{
    echo "| prompt tokens | TTFT p50 ms | sbsim | error | TTFT p99 ms | server prompt_ms (median) | prefill tok/s (server) |"
    echo "|---|---|---|---|---|---|---|"
    for p in "${E1_LENS[@]}"; do
        jq -r -n --arg p "$p" --slurpfile m "$DATA/prompt-$p.json" --slurpfile v "$DATA/replay-prompt-$p.json" "$JQ_DEFS"'
            ($m[0].levels[0]) as $L | ($v[0].levels[0].metrics) as $M
            | ([$L.requests[] | .server.prompt_ms // empty] | median) as $pm
            | ([$L.requests[] | .server.prompt_n // empty] | median) as $pn
            | "| \($p) | \(cell($M.ttft_p50)) | \($L.ttft_ms.p99 | num) | \($pm | num) | \(if $pm and $pn then $pn / $pm * 1000 | round | tostring else "–" end) |"'
    done
} >"$TDIR/exp1.md" || die "table for Experiment 1 (jq)"
{
    echo "| prompt tokens | TPOT p50 ms | sbsim | error | TPOT p99 ms | server ms per generated token (median) | out tok/s |"
    echo "|---|---|---|---|---|---|---|"
    for p in "${E1_LENS[@]}"; do
        jq -r -n --arg p "$p" --slurpfile m "$DATA/prompt-$p.json" --slurpfile v "$DATA/replay-prompt-$p.json" "$JQ_DEFS"'
            ($m[0].levels[0]) as $L | ($v[0].levels[0].metrics) as $M
            | ([$L.requests[] | .server.timings.predicted_per_token_ms // empty] | median) as $st
            | "| \($p) | \(cell($M.tpot_p50)) | \($L.tpot_ms.p99 | num) | \($st | num) | \($L.output_tok_s | num) |"'
    done
} >"$TDIR/exp2.md" || die "table for Experiment 2 (jq)"
{
    echo "| -np | c | out tok/s | sbsim | error | TPOT p50 ms | sbsim | error | TTFT p50 ms | sbsim | error |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|"
    for spec in "np1 1 1" "np1 1 4" "np4-c4 4 4" "np8-c8 8 8"; do
        set -- $spec
        jq -r -n --argjson np "$2" --argjson c "$3" --slurpfile v "$DATA/replay-$1.json" "$JQ_DEFS"'
            ($v[0] | lvl($c) | .metrics) as $M
            | "| \($np) | \($c) | \(cell($M.output_tok_s)) | \(cell($M.tpot_p50)) | \(cell($M.ttft_p50)) |"'
    done
} >"$TDIR/exp3.md" || die "table for Experiment 3 (jq)"
{
    echo "| -np 8, c = 8 | measured | predicted from -np 1 and 4 | 90% interval | inside? |"
    echo "|---|---|---|---|---|"
    jq -r -n --slurpfile m "$DATA/np8-c8.json" --slurpfile p "$DATA/pred-np8-from-np1-np4.json" "$JQ_DEFS"'
        ($m[0].levels[0]) as $L | ($p[0].levels[0]) as $P
        | [["out tok/s", $L.output_tok_s, $P.output_tok_s, "output_tok_s"],
           ["TPOT p50 ms", $L.tpot_ms.p50, $P.tpot_ms.p50, "tpot_ms.p50"],
           ["TTFT p50 ms", $L.ttft_ms.p50, $P.ttft_ms.p50, "ttft_ms.p50"],
           ["E2E p50 ms", $L.e2e_ms.p50, $P.e2e_ms.p50, "e2e_ms.p50"]][]
        | . as [$name, $meas, $pred, $key] | ($P.pi90[$key] // [null, null]) as [$lo, $hi]
        | "| \($name) | \($meas | num) | \($pred | num) (\(err($meas; $pred) | pct)) | \($lo | num)..\($hi | num) | \(if $lo == null then "–" elif $meas >= $lo and $meas <= $hi then "yes" else "**no**" end) |"'
    jq -r '"decode_ms(8) from the line through decode_ms(1) = \(.step_ms.decode_ms["1"] * 100 | round / 100) and decode_ms(4) = \(.step_ms.decode_ms["4"] * 100 | round / 100) ms: \((.step_ms.decode_ms["4"] + (.step_ms.decode_ms["4"] - .step_ms.decode_ms["1"]) / 3 * 4) * 100 | round / 100) ms."' \
        "$DATA/model-np1-np4.json"
} >"$TDIR/exp3-np8.md" || die "table for Experiment 3 at 8 slots (jq)"
{
    echo "| c | TTFT p50 ms | forecast | error | TTFT p99 ms | forecast | error | 95% range of p99 for ${E4_N} requests | inside? | TPOT p50 ms | forecast | error | out tok/s | forecast | error |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    jq -r -n --slurpfile m "$DATA/knee.json" --slurpfile p "$DATA/pred-knee.json" --slurpfile v "$DATA/replay-knee.json" "$JQ_DEFS"'
        $m[0].levels[] | .level as $c | . as $L | ($p[0] | lvl($c)) as $P
        | ([$v[0].levels[] | select(.level == $c) | .metrics.ttft_p99] | .[0]) as $t
        | "| \($c) | \(fc($L.ttft_ms.p50; $P.ttft_ms.p50)) | \(fc($L.ttft_ms.p99; $P.ttft_ms.p99)) | \($t.forecast_lo | num)..\($t.forecast_hi | num) | \(inside($t)) | \(fc($L.tpot_ms.p50; $P.tpot_ms.p50)) | \(fc($L.output_tok_s; $P.output_tok_s)) |"'
    echo
    jq -r -n --slurpfile p "$DATA/pred-knee.json" --slurpfile v "$DATA/replay-knee.json" '
        "Knee (the level where p99 TTFT rises most steeply, core/knee.h): measured at c=\($v[0].summary.knee_concurrency.measured // "none"), forecast at c=\($p[0].simulation.knee.level // "none")."'
} >"$TDIR/exp4.md" || die "table for Experiment 4 (jq)"
# A replay comparison as a table: replay_table FIRST-COLUMN OVER FILE
replay_table() {
    echo "| $1 | TTFT p50 ms | replay | error | TTFT p99 ms | replay | error | TPOT p50 ms | replay | error | E2E p99 ms | replay | error |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    jq -r -n --slurpfile v "$3" "$JQ_DEFS"'
        $v[0].levels[] | .metrics as $M
        | "| \(.level) | \(cell($M.ttft_p50)) | \(cell($M.ttft_p99)) | \(cell($M.tpot_p50)) | \(cell($M.e2e_p99)) |"'
    echo
    jq -r -n --arg over "$2" --slurpfile v "$3" "$JQ_DEFS"'
        $v[0].summary | "Median |error| over the \($over): TTFT mean/p50 \(.ttft_central_mdape_pct | num)%, TTFT p90/p99 \(.ttft_tail_mdape_pct | num)%, TPOT mean/p50 \(.tpot_central_mdape_pct | num)%, E2E mean/p50 \(.e2e_central_mdape_pct | num)%, throughput \(.mdape_throughput_pct | num)%."'
}
replay_table c levels "$DATA/replay-knee.json" >"$TDIR/exp4-replay.md" \
    || die "replay table for Experiment 4 (jq)"
{
    echo "| | λ = completed req/s | W = mean E2E (s) | λ·W | clients in flight |"
    echo "|---|---|---|---|---|"
    jq -r -n --slurpfile m "$DATA/knee.json" --slurpfile p "$DATA/pred-knee.json" "$JQ_DEFS"'
        def row($name; $L): "| \($name) | \($L.littles_law.lambda_req_s | num) | \($L.littles_law.w_s | num) | \($L.littles_law.l_law | num) | \($L.level) |";
        row("measured"; $m[0] | lvl(4)), row("sbsim forecast"; $p[0] | lvl(4))'
} >"$TDIR/exp5.md" || die "table for Experiment 5 (jq)"
{
    echo "| rate req/s | of capacity | TTFT p50 ms | forecast | error | TTFT p99 ms | forecast | error | 95% range of p99 for ${E6_N} requests | inside? | E2E p50 ms | forecast | error | mean queue wait ms | forecast |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    jq -r -n --argjson cap "$CAPACITY" --slurpfile m "$DATA/rate.json" --slurpfile p "$DATA/pred-rate.json" --slurpfile v "$DATA/replay-rate.json" "$JQ_DEFS"'
        $m[0].levels[] | .level as $r | . as $L | ($p[0] | lvl($r)) as $P
        | ([$v[0].levels[] | select(.level == $r) | .metrics.ttft_p99] | .[0]) as $t
        | "| \($r) | \($r / $cap * 100 | round)% | \(fc($L.ttft_ms.p50; $P.ttft_ms.p50)) | \(fc($L.ttft_ms.p99; $P.ttft_ms.p99)) | \($t.forecast_lo | num)..\($t.forecast_hi | num) | \(inside($t)) | \(fc($L.e2e_ms.p50; $P.e2e_ms.p50)) | \($L.wait_ms.mean | num) | \($P.wait_ms.mean | num) |"'
} >"$TDIR/exp6.md" || die "table for Experiment 6 (jq)"
replay_table "rate req/s" rates "$DATA/replay-rate.json" >"$TDIR/exp6-replay.md" \
    || die "replay table for Experiment 6 (jq)"
{
    echo "| run | TTFT p50 ms | TTFT min..max ms | prompt tokens reused from cache (server cache_n, median) | server prompt_ms (median) |"
    echo "|---|---|---|---|---|"
    for n in cache-fresh cache-reuse cache-reuse-off host-ip host-localhost; do
        jq -r -n --arg n "$n" --slurpfile m "$DATA/$n.json" "$JQ_DEFS"'
            $m[0].levels[0] as $L
            | "| \($n) | \($L.ttft_ms.p50 | num) | \($L.ttft_ms.min | num)..\($L.ttft_ms.max | num) | \([$L.requests[] | .server.cache_n // empty] | median | num) | \([$L.requests[] | .server.prompt_ms // empty] | median | num) |"'
    done
} >"$TDIR/exp7.md" || die "table for Experiment 7 (jq)"
{
    echo "| request (order sent) | TTFT ms | TPOT ms | server prompt_ms |"
    echo "|---|---|---|---|"
    jq -r -n --slurpfile m "$DATA/cold.json" "$JQ_DEFS"'
        $m[0].levels[0].requests | sort_by(.t_sent_s) | to_entries[]
        | .value as $r | "| \(.key + 1) | \($r.ttft_ms | num) | \(if $r.output_tokens > 1 then ($r.e2e_ms - $r.ttft_ms) / ($r.output_tokens - 1) else null end | num) | \($r.server.prompt_ms // null | num) |"'
} >"$TDIR/exp7-cold.md" || die "table for Experiment 7, cold start (jq)"
{
    echo "| coefficient | value | 95% interval | fitted from |"
    echo "|---|---|---|---|"
    jq -r "$JQ_DEFS"'
        def sig: if . == null then "–" elif . == 0 then "0" elif (. | fabs) >= 0.01 then num
                 else (. * 1e6 | round / 1e6 | tostring) end;
        .fit.coefficients | to_entries[]
        | "| \(.key) | \(.value.value | sig) \(.value.unit) | \(if .value.ci95[0] == null then "–" else "\(.value.ci95[0] | sig)..\(.value.ci95[1] | sig)" end) | \(.value.from | gsub("\\|"; "/")) |"' \
        "$DATA/model.json"
} >"$TDIR/cal.md" || die "calibration table (jq)"
{
    jq -r --argjson cap "$CAPACITY" '"Capacity sbsim predicts for -np 4, 256 in / 128 out: \($cap * 100 | round / 100) req/s."' -n
    if [[ -f "$DATA/env.json" ]]; then
        jq -r '"Measured \(.date) on \(.cpus) CPUs with llama.cpp \(.llama_cpp_commit) and servebench \(.servebench_commit); 1-minute load average \([.runs[].load1_before] | min)..\([.runs[].load1_after] | max) around the runs; measuring and predicting took \(.measure_and_predict_seconds) s."' "$DATA/env.json"
    fi
} >"$TDIR/env.md" || die "environment note (jq)"
for t in exp1 exp2 exp3 exp3-np8 cal exp4 exp4-replay exp5 exp6 exp6-replay exp7 exp7-cold env; do
    printf '### %s\n\n' "$t"; cat "$TDIR/$t.md"; printf '\n'
done >"$DATA/tables.md"
cat "$DATA/tables.md"

# The guide's tables live between <!-- table:NAME --> and <!-- /table --> lines;
# refresh them from this run (only for the committed results, not --quick).
if [[ -n "$GUIDE" ]]; then
    [[ -f "$GUIDE" ]] || die "no guide at $GUIDE"
    tmp="$GUIDE.tmp.$$"
    awk -v dir="$TDIR" '
        /^<!-- table:[a-z0-9-]+ -->$/ {
            print; name = $2; sub(/^table:/, "", name)
            f = dir "/" name ".md"
            while ((getline line < f) > 0) print line
            close(f); skip = 1; next }
        /^<!-- \/table -->$/ { skip = 0 }
        !skip { print }' "$GUIDE" >"$tmp" || { rm -f "$tmp"; die "filling $GUIDE"; }
    mv "$tmp" "$GUIDE"
    printf 'refreshed the tables in %s\n' "$GUIDE"
fi
((${#FAILED_RUNS[@]} == 0)) || printf 'guide.sh: runs with failed requests: %s\n' "${FAILED_RUNS[*]}"
printf '\nguide.sh: done in %d s; results in %s, plots in %s\n' $((SECONDS - T_START)) "$DATA" "$IMG"
