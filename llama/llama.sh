#!/usr/bin/env bash
# Start and stop a real llama.cpp llama-server with a random-weight model.
#
#   llama.sh start [--np N] [--ctx C] [--port P] [--threads T] [--cpus LIST]
#                  [--load-mode M] [--model GGUF] [--extra ARG...]
#       Builds llama-server and writes the model if needed (both cached), starts
#       the server on 127.0.0.1, waits until GET /health is OK and prints
#       shell-evaluable lines: URL=... PID=... PIDFILE=... LOG=... MODEL=...
#       Everything after --extra is passed to llama-server unchanged.
#       --threads defaults to 1: llama.cpp's threads meet at a barrier every
#       step, so on a 2-core machine shared with the client two threads stall
#       whenever the client runs (step noise cv 0.56-0.71 with two threads,
#       0.39-0.45 with one, in calibrations on the same machine and day);
#       one thread is slower but steadier, and steadiness is what the live
#       tests and the guide's comparisons need.
#       --load-mode defaults to none (the weights read into the server's own
#       memory, not mapped from the file): on the development machine a
#       memory-mapped model stalled every ~0.5 s, 30-150 ms at a time (6-35%
#       of one client's decode time, changing over the day), and a server
#       reading the same file into memory never did, side by side
#       (experiments/speed_noise.sh, docs/model-notes.md "Stalls").
#       --cpus LIST runs the server on those CPUs only (taskset -c LIST), so a
#       client pinned to the others does not take its core.
#       --ctx is the total context (split over the N slots), a multiple of
#       1024; default 4096*N. Files go to $SERVEBENCH_RUN_DIR (or a new
#       temporary directory).
#   llama.sh stop PIDFILE_OR_PID
#       Sends TERM to that llama-server, KILL after 5 s; removes the pid file.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PYTHON="${SERVEBENCH_PYTHON:-/usr/bin/python3}"
HEALTH_TIMEOUT="${SERVEBENCH_HEALTH_TIMEOUT:-60}"

log() { printf 'llama.sh: %s\n' "$*" >&2; }
die() { printf 'llama.sh: error: %s\n' "$*" >&2; exit 1; }
usage() { sed -n '2,28s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2; exit 2; }

is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }

# True while PID is a live (non-zombie) process.
alive() {
    local pid="$1" state
    [[ -r "/proc/$pid/stat" ]] || return 1
    state="$(sed -E 's/^.*\) ([A-Za-z]).*$/\1/' "/proc/$pid/stat" 2>/dev/null)" || return 1
    [[ -n "$state" && "$state" != Z && "$state" != X ]]
}

is_llama_server() {
    local pid="$1"
    [[ -r "/proc/$pid/cmdline" ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q 'llama-server'
}

# True if a socket listening on 127.0.0.1/any address at PORT is open in PID.
owns_port() {
    local pid="$1" port="$2" hex inode fd
    hex="$(printf '%04X' "$port")"
    for inode in $(awk -v h=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == h { print $10 }' \
                       /proc/net/tcp /proc/net/tcp6 2>/dev/null); do
        for fd in /proc/"$pid"/fd/*; do
            [[ "$(readlink "$fd" 2>/dev/null)" == "socket:[$inode]" ]] && return 0
        done
    done
    return 1
}

port_in_use() {
    "$PYTHON" -c 'import socket, sys
s = socket.socket()
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(0)
sys.exit(1)' "$1"
}

free_port() {
    "$PYTHON" -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

cmd_start() {
    local np=4 ctx="" port="" threads=1 model="" load_mode=none
    local -a extra=() pin=()
    while (($#)); do
        case "$1" in
            --np) np="${2:?--np needs a value}"; shift 2 ;;
            --ctx) ctx="${2:?--ctx needs a value}"; shift 2 ;;
            --port) port="${2:?--port needs a value}"; shift 2 ;;
            --threads) threads="${2:?--threads needs a value}"; shift 2 ;;
            --model) model="${2:?--model needs a value}"; shift 2 ;;
            --load-mode) load_mode="${2:?--load-mode needs a value}"; shift 2 ;;
            --cpus) pin=(taskset -c "${2:?--cpus needs a value}"); shift 2 ;;
            --extra) shift; extra=("$@"); break ;;
            -h|--help) usage ;;
            *) die "unknown option for start: $1" ;;
        esac
    done
    is_uint "$np" && ((np >= 1)) || die "--np must be a positive integer"
    is_uint "$threads" && ((threads >= 1)) || die "--threads must be a positive integer"
    [[ -n "$ctx" ]] || ctx=$((1024 * 4 * np))
    is_uint "$ctx" && ((ctx > 0 && ctx % 1024 == 0)) || die "--ctx must be a positive multiple of 1024 (got $ctx)"
    [[ -z "$port" ]] || { is_uint "$port" && ((port > 0 && port < 65536)); } || die "bad --port $port"
    command -v curl >/dev/null || die "curl is missing (run llama/ensure-deps.sh)"

    local bin
    bin="$("$HERE/build-llama.sh" | tail -n 1)" || die "build-llama.sh failed"
    [[ -x "$bin" ]] || die "build-llama.sh did not give an executable ($bin)"
    if [[ -z "$model" ]]; then
        model="$("$PYTHON" "$HERE/make-model.py" | tail -n 1)" || die "make-model.py failed"
    fi
    [[ -f "$model" ]] || die "model file not found: $model"

    local run_dir="${SERVEBENCH_RUN_DIR:-}"
    if [[ -n "$run_dir" ]]; then
        mkdir -p "$run_dir"
    else
        run_dir="$(mktemp -d "${TMPDIR:-/tmp}/servebench-llama.XXXXXX")"
    fi
    run_dir="$(cd "$run_dir" && pwd)"

    # A chosen free port can be taken before the server binds it: retry.
    local attempts=1 fixed_port=0 pid="" pidfile logfile
    [[ -n "$port" ]] && fixed_port=1 || attempts=3
    for ((try = 1; try <= attempts; try++)); do
        if ((fixed_port)); then
            ! port_in_use "$port" || die "port $port on 127.0.0.1 is already in use"
        else
            port="$(free_port)" || die "could not find a free port"
        fi
        pidfile="$run_dir/llama-server-$port.pid"
        logfile="$run_dir/llama-server-$port.log"
        ${pin[@]+"${pin[@]}"} "$bin" -m "$model" --host 127.0.0.1 --port "$port" -np "$np" -c "$ctx" -t "$threads" \
            --load-mode "$load_mode" --metrics --slots --no-webui ${extra[@]+"${extra[@]}"} \
            </dev/null >"$logfile" 2>&1 &
        pid=$!
        STARTING_PID="$pid"
        printf '%s\n' "$pid" >"$pidfile"

        local deadline=$((SECONDS + HEALTH_TIMEOUT)) ok=0
        while ((SECONDS < deadline)); do
            if ! alive "$pid"; then break; fi
            # Healthy only if the server answering is ours (not another process on the port).
            if owns_port "$pid" "$port" \
                && curl -sf -o /dev/null --max-time 2 "http://127.0.0.1:$port/health"; then
                ok=1; break
            fi
            sleep 0.2
        done
        if ((ok)); then
            STARTING_PID=""
            log "llama-server ready on 127.0.0.1:$port (pid $pid, np $np, ctx $ctx)"
            printf 'URL=%q\nPID=%q\nPIDFILE=%q\nLOG=%q\nMODEL=%q\nRUN_DIR=%q\n' \
                "http://127.0.0.1:$port" "$pid" "$pidfile" "$logfile" "$model" "$run_dir"
            return 0
        fi
        if alive "$pid"; then
            kill -KILL "$pid" 2>/dev/null || true
            rm -f "$pidfile"
            tail -n 20 "$logfile" >&2 || true
            die "llama-server (pid $pid) not healthy after ${HEALTH_TIMEOUT}s; log: $logfile"
        fi
        rm -f "$pidfile"
        if ((!fixed_port)) && grep -qi 'bind\|address already in use' "$logfile"; then
            log "port $port was taken, retrying"
            continue
        fi
        tail -n 20 "$logfile" >&2 || true
        die "llama-server exited during startup; log: $logfile"
    done
    die "llama-server could not bind a port after $attempts tries"
}

cmd_stop() {
    (($# == 1)) || die "usage: llama.sh stop PIDFILE_OR_PID"
    local arg="$1" pid pidfile=""
    if is_uint "$arg" && [[ ! -f "$arg" ]]; then
        pid="$arg"
    else
        [[ -f "$arg" ]] || die "no such pid file: $arg"
        pidfile="$arg"
        pid="$(tr -dc '0-9' <"$pidfile")"
        is_uint "$pid" || die "pid file $pidfile holds no pid"
    fi
    if ! alive "$pid"; then
        log "process $pid is not running"
        [[ -z "$pidfile" ]] || rm -f "$pidfile"
        return 0
    fi
    is_llama_server "$pid" || die "process $pid is not a llama-server; not stopping it"
    kill -TERM "$pid" 2>/dev/null || true
    local i
    for ((i = 0; i < 50; i++)); do
        alive "$pid" || break
        sleep 0.1
    done
    if alive "$pid"; then
        log "pid $pid ignored TERM for 5 s; sending KILL"
        kill -KILL "$pid" 2>/dev/null || true
        for ((i = 0; i < 20; i++)); do alive "$pid" || break; sleep 0.1; done
    fi
    alive "$pid" && die "could not stop pid $pid"
    [[ -z "$pidfile" ]] || rm -f "$pidfile"
    log "stopped llama-server pid $pid"
}

# If start is interrupted or fails before the server is healthy, do not leave it behind.
STARTING_PID=""
trap '[[ -z "$STARTING_PID" ]] || kill -KILL "$STARTING_PID" 2>/dev/null || true' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

(($#)) || usage
case "$1" in
    start) shift; cmd_start "$@" ;;
    stop) shift; cmd_stop "$@" ;;
    -h|--help|help) usage ;;
    *) die "unknown command: $1 (use start or stop)" ;;
esac
