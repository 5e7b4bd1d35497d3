#!/usr/bin/env bash
# pyperf-run - Linux perf with Python function names, for unmodified CPython
# 3.6-3.15 (libpyperfinject). Installed as `pyperf-run`; `man pyperf-run`.
#
#   pyperf-run [--dir DIR] [--] COMMAND [ARG...]
#       Run COMMAND with libpyperfinject preloaded (appended to LD_PRELOAD).
#       Wraps any profiler or program; execs COMMAND (signals, exit status
#       and the pid are COMMAND's own), so it can be a container ENTRYPOINT.
#       --dir DIR: write the map and jitdump files under DIR/pidns-INODE
#       (a mounted directory in a container) instead of /tmp.
#   pyperf-run record [-o DIR] [-F HZ] [--mode auto|fp|dwarf] [-e EVENT]
#                     [--stack-size BYTES] [--max-stack FRAMES] [-a]
#                     [--flamegraph FILE [--native]] [--buildid-dir DIR]
#                     [-- PERF-OPTIONS] -- COMMAND [ARG...]
#   pyperf-run record [OPTIONS] --pid PID [--seconds N] [-- PERF-OPTIONS]
#       perf record COMMAND (or the running process PID: attached for the
#       recording and detached after, unless it runs with the library) with
#       the right options, perf inject --jit, all
#       output in DIR (perf's build-id cache in DIR/.debug); prints what was
#       written, how many call chains were cut short, and what to run next.
#       A pyenv shim is resolved to its interpreter. PERF-OPTIONS (starting
#       with a dash, between two --) go to perf record last.
#   pyperf-run report DIR [--flamegraph FILE [--native]] [-- PERF-REPORT-ARGS...]
#       perf report on DIR's injected data, or write a flame graph in the
#       Python view (below), --native: every frame (FILE.html: the
#       d3-flame-graph template `make` fetched; FILE.svg: inferno or
#       FlameGraph).
#   pyperf-run report DIR --top | --folded FILE | --speedscope FILE | --pprof FILE [--native]
#       the functions where time goes (self and total, as text), or export
#       the samples: collapsed stacks; speedscope's JSON; pprof's
#       profile.proto (FILE.pb.gz: go tool pprof, Pyroscope, Parca). The
#       Python view folds the interpreter's call machinery between Python
#       frames; --native keeps every frame.
#   pyperf-run hotspot DIR [-- HOTSPOT-ARGS...]
#       Open DIR's recording in hotspot with its Python names (hotspot reads
#       them from perf-PID.map files in its TMPDIR: a private one, removed
#       when hotspot exits).
#   pyperf-run import [-i PERF.DATA] DIR
#       Host side, after the fact: make a perf.data recorded on the host show
#       the Python names of processes that ran in containers (other PID and
#       mount namespaces) and wrote their files under DIR, also once they
#       have exited. Writes DIR/perf.jit.data.
#   pyperf-run check [-- COMMAND...]
#       Show what pyperf-run would use: library, perf, permissions, flame
#       graph tools and, given COMMAND, the interpreter and call-graph mode.
#   pyperf-run attach PID [--dir DIR]
#       Load the library into the running CPython process PID and install it
#       there, as if it had been preloaded (ptrace: needs what ptrace needs).
#       Functions called from then on are named in DIR/perf-PID.map and
#       DIR/jit-PID.dump (DIR as the process sees it; default /tmp). A second
#       attach is a no-op that says so.
#   pyperf-run detach PID
#       Switch profiling off in PID: its interpreters run without the hook
#       again (attach switches it back on).
#   pyperf-run --pid PID on|off|status
#       Switch profiling in a running process that was started with
#       PYPERFINJECT_SIGNAL set (opt-in): sends that signal with a sigqueue
#       value (1 on, 0 off). `status` (any process with the library) says
#       whether profiling is on or off there, and the switching signal.
#   pyperf-run --print-lib | --help | --version
#
# Exit status: COMMAND's own (exec mode; record returns the profiled
# command's), 125 for an error of pyperf-run itself, 126/127 when COMMAND
# cannot be run / is not found.
# Environment: PYPERFINJECT_LIB (the library to preload), PERF (the perf
# binary), PYPERF_RUN_FLAMEGRAPH_TEMPLATE (d3-flame-graph HTML template),
# FLAMEGRAPH_DIR (FlameGraph's flamegraph.pl), HOTSPOT (the hotspot binary); the
# library's PYPERFINJECT_* settings pass through unchanged.
set -euo pipefail

readonly PROG=pyperf-run
# Replaced by `make install`; left as is in the source tree.
readonly CONFIGURED_LIBDIR="@LIBDIR@"
readonly CONFIGURED_VERSION="@VERSION@"
readonly DEFAULT_FREQ=999
# The user stack copied with each DWARF sample: the most perf accepts (a
# sample's size is 16 bits; 65528 is 64 KiB rounded down to 8 bytes).
readonly DWARF_STACK_MAX=65528
readonly DWARF_STACK=$DWARF_STACK_MAX
# Frame-pointer chains: the kernel records at most kernel.perf_event_max_stack
# native frames (127 by default); record raises it to this when root.
readonly FP_MAX_STACK=1024 FP_MAX_STACK_LIMIT=4096
# perf report/script stop at --max-stack frames (default 127). A DWARF stack
# copy holds at most 65528/8 return addresses, so 8192 never cuts a chain.
readonly REPORT_MAX_STACK=8192
# The cut-chain check unwinds at most this many samples (time slices).
readonly CHECK_SAMPLES=1000
readonly MAX_STACK_SYSCTL=/proc/sys/kernel/perf_event_max_stack
readonly D3_TEMPLATE_NAME=d3-flamegraph-base.html
readonly D3_TEMPLATE_PKG=d3-flame-graph@4.1.3

PERF=${PERF:-perf}
# perf's global options: the build-id cache of the recording being written.
PERF_CACHE=()

# ------------------------------------------------------------------ helpers
note() { printf '%s: %s\n' "$PROG" "$*" >&2; }
warn() { printf '%s: warning: %s\n' "$PROG" "$*" >&2; }
die() {
    printf '%s: error: %s\n' "$PROG" "$1" >&2
    shift
    local line
    for line in "$@"; do printf '  %s\n' "$line" >&2; done
    exit 125
}
usage() { sed -n '2,/^set -euo/s/^# \{0,1\}//p' "$(script_path)"; }
usage_error() {
    printf '%s: %s\n' "$PROG" "$*" >&2
    printf "Try '%s --help'.\n" "$PROG" >&2
    exit 125
}

script_path() { readlink -f -- "${BASH_SOURCE[0]}"; }
script_dir() { dirname -- "$(script_path)"; }

version() {
    if [[ $CONFIGURED_VERSION != @* ]]; then
        printf '%s\n' "$CONFIGURED_VERSION"
        return
    fi
    local v
    if v=$(cat -- "$(script_dir)/VERSION" 2>/dev/null) && [ -n "$v" ]; then
        printf '%s (source tree)\n' "$v"
    else
        echo "unknown (source tree)"
    fi
}

# Absolute path of an existing directory.
abs_dir() { (cd -- "$1" && pwd -P); }
# True when FILE starts with the ELF magic.
is_elf() { [ "$(head -c 4 -- "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]; }
# The value of variable NAME in the environment process PID started with.
process_env() { tr '\0' '\n' <"/proc/$1/environ" | sed -n "s/^$2=//p" | tail -n 1; }

# A python3 to run pyperf-run's own helper with (not the profiled one, and
# never with the library preloaded).
helper_python() {
    local p
    for p in /usr/bin/python3 /usr/local/bin/python3 "$(command -v python3 || true)"; do
        if [ -n "$p" ] && [ -x "$p" ]; then
            printf '%s\n' "$p"
            return 0
        fi
    done
    return 1
}

# ---------------------------------------------------------- the library
# Prints the library's absolute path. Order: $PYPERFINJECT_LIB, the build tree
# next to this script, ../lib next to it (installed), the libdir it was
# installed for, the usual library directories.
LIB_SOURCE=""
find_lib() {
    local name=libpyperfinject.so dir cand
    if [ -n "${PYPERFINJECT_LIB:-}" ]; then
        [ -f "$PYPERFINJECT_LIB" ] || die "PYPERFINJECT_LIB=$PYPERFINJECT_LIB is not a file"
        # ld.so would refuse it in every process, with a message each time.
        is_elf "$PYPERFINJECT_LIB" ||
            die "PYPERFINJECT_LIB=$PYPERFINJECT_LIB is not a shared library (no ELF header)"
        grep -q pyperfinject_version -- "$PYPERFINJECT_LIB" 2>/dev/null ||
            die "PYPERFINJECT_LIB=$PYPERFINJECT_LIB is not libpyperfinject (it exports no pyperfinject_version)"
        LIB_SOURCE="PYPERFINJECT_LIB"
        readlink -f -- "$PYPERFINJECT_LIB"
        return
    fi
    dir=$(script_dir)
    local -a cands=("$dir/build/$name" "$dir/../lib/$name")
    [[ $CONFIGURED_LIBDIR == @* ]] || cands+=("$CONFIGURED_LIBDIR/$name")
    cands+=(/usr/local/lib/"$name" /usr/local/lib64/"$name"
        "/usr/lib/$(uname -m)-linux-gnu/$name" /usr/lib64/"$name" /usr/lib/"$name")
    for cand in "${cands[@]}"; do
        if [ -f "$cand" ]; then
            case "$cand" in
            "$dir/build/"*) LIB_SOURCE="build tree" ;;
            *) LIB_SOURCE="installed" ;;
            esac
            # The link make install made (libpyperfinject.so -> .so.0 ->
            # .so.VERSION) stays a link: what a later install updates.
            printf '%s/%s\n' "$(abs_dir "$(dirname -- "$cand")")" "$name"
            return
        fi
    done
    die "libpyperfinject.so not found" \
        "looked in: ${cands[*]}" \
        "build it (make, in the source tree), install it (make install), or set PYPERFINJECT_LIB=/path/to/libpyperfinject.so"
}

# Prints the path of pyperf-run's helper program NAME (pyperf-run-helpers/
# in the source tree; installed in LIBDIR/pyperfinject/), or dies.
find_helper() {
    local dir cand name=$1
    dir=$(script_dir)
    local -a cands=("$dir/pyperf-run-helpers/$name" "$dir/../lib/pyperfinject/$name")
    [[ $CONFIGURED_LIBDIR == @* ]] || cands+=("$CONFIGURED_LIBDIR/pyperfinject/$name")
    for cand in "${cands[@]}"; do
        if [ -f "$cand" ]; then
            readlink -f -- "$cand"
            return 0
        fi
    done
    die "pyperf-run's helper $name is missing (looked in: ${cands[*]}); reinstall (make install)"
}

# LD_PRELOAD with the library appended (kept once).
preload_value() {
    local lib=$1 cur=${LD_PRELOAD:-}
    case "$lib" in
    *[[:space:]:]*) die "the library path '$lib' contains a space or ':', which LD_PRELOAD cannot express" ;;
    esac
    case " ${cur//:/ } " in
    *" $lib "*) printf '%s\n' "$cur" ;;
    *) printf '%s\n' "${cur:+$cur:}$lib" ;;
    esac
}

# ---------------------------------------------------------------- perf
# Exits with a clear message unless perf can record here. $1: event, $2: 1 for
# system-wide (-a).
PERF_ERR=""
perf_problem() {
    local event=$1 sw=${2:-0} paranoid
    if ! command -v "$PERF" >/dev/null 2>&1; then
        PERF_ERR="perf is not installed ($PERF not found).
Install it: Debian: apt-get install linux-perf; Ubuntu: apt-get install linux-tools-common linux-tools-\$(uname -r); Fedora/RHEL: dnf install perf"
        return 0
    fi
    local -a args=(record -q -e "$event" -o /dev/null --no-buildid)
    [ "$sw" -eq 0 ] || args+=(-a)
    local out
    # --no-bpf-event saves a second (perf 5.1+; retried without it).
    if out=$("$PERF" "${args[@]}" --no-bpf-event -- true 2>&1); then
        return 1
    fi
    if grep -q 'unknown option' <<<"$out" && out=$("$PERF" "${args[@]}" -- true 2>&1); then
        return 1
    fi
    paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo unknown)
    if grep -qiE 'not found for kernel|no such file|command not found' <<<"$out"; then
        PERF_ERR="perf does not run here (its wrapper found no perf for kernel $(uname -r)):
$out
Install the perf matching the running kernel (Debian: linux-perf; Ubuntu: linux-tools-\$(uname -r))."
    elif grep -qiE 'permission|not permitted|paranoid|access to performance monitoring' <<<"$out"; then
        if [ "$(id -u)" -eq 0 ]; then
            PERF_ERR="perf_event_open is refused even for root (kernel.perf_event_paranoid = $paranoid).
Inside a container the runtime blocks it: run with --cap-add PERFMON (Linux 5.8+; CAP_SYS_ADMIN before) and a seccomp profile that allows perf_event_open (docker: --security-opt seccomp=unconfined), or profile from the host (docs/containers.md)."
        else
            local need=2
            [ "$sw" -eq 0 ] || need=0
            PERF_ERR="perf is not permitted to record: kernel.perf_event_paranoid = $paranoid$([ "$sw" -eq 0 ] || echo ' (system-wide -a)').
Allow it with: sudo sysctl kernel.perf_event_paranoid=$need   (persist in /etc/sysctl.d/)
or run as root, or give perf CAP_PERFMON (Linux 5.8+; CAP_SYS_ADMIN before): sudo setcap cap_perfmon,cap_sys_ptrace,cap_syslog+ep /path/to/the/real/perf/binary"
        fi
    elif grep -qiE 'not supported|event syntax|unknown tracepoint|invalid or unsupported' <<<"$out"; then
        PERF_ERR="the event '$event' cannot be recorded here (virtual machines often have no hardware counters):
$out
Use a software event: -e cpu-clock (the default)."
    else
        PERF_ERR="perf cannot record here:
$out"
    fi
    return 0
}

require_perf() {
    if perf_problem "$@"; then
        local first rest
        first=${PERF_ERR%%$'\n'*}
        rest=${PERF_ERR#*$'\n'}
        [ "$rest" != "$PERF_ERR" ] || rest=""
        local -a lines=()
        [ -z "$rest" ] || mapfile -t lines <<<"$rest"
        die "$first" "${lines[@]}"
    fi
}

# ---------------------------------------------------------- interpreter
# Finds the Python interpreter COMMAND runs (the command itself, a script's
# shebang, a pyenv shim) and asks it. Sets PY_EXE PY_IMPL PY_VER PY_FP
# PY_FT; returns 1 when COMMAND does not look like Python.
PY_EXE="" PY_IMPL="" PY_VER="" PY_FP="" PY_FT="" PY_WHY=""
is_python_name() {
    local b=${1##*/}
    [[ $b =~ ^(python|pypy)[0-9.]*([-_.a-z0-9]*)$ ]] && [[ $b != *-config ]]
}

probe_python() {
    local path cand="" first line interp word
    PY_EXE="" PY_IMPL="" PY_VER="" PY_FP="" PY_FT="" PY_WHY=""
    path=$(command -v -- "$1" 2>/dev/null) || {
        PY_WHY="$1: command not found"
        return 1
    }
    if is_python_name "$path"; then
        cand=$path
    elif [ -f "$path" ] && IFS= read -r first <"$path" 2>/dev/null && [[ $first == '#!'* ]]; then
        line=${first#\#!}
        read -r -a words <<<"$line"
        interp=${words[0]:-}
        if [ "${interp##*/}" = env ]; then
            interp=""
            for word in "${words[@]:1}"; do
                case "$word" in -*) continue ;; *=*) continue ;; esac
                interp=$word
                break
            done
        fi
        if [ -n "$interp" ] && is_python_name "$interp"; then
            cand=$(command -v -- "$interp" 2>/dev/null || true)
        fi
    fi
    if [ -z "$cand" ]; then
        PY_WHY="$1 is neither a Python interpreter nor a script run by one"
        return 1
    fi
    local out
    if ! out=$(env -u LD_PRELOAD timeout 60 "$cand" -E -s -S "$(find_helper probe.py)" 2>&1 </dev/null); then
        PY_WHY="$cand did not answer as a Python interpreter: ${out:0:300}"
        return 1
    fi
    IFS=$'\t' read -r PY_IMPL PY_VER PY_FP PY_FT PY_EXE <<<"$(tail -n 1 <<<"$out")"
    [ -n "$PY_EXE" ] || PY_EXE=$cand
    return 0
}

# " (free-threaded)" for a free-threaded build: named like the others.
ft_note() { [ "$PY_FT" != yes ] || printf ' (free-threaded)'; }

# Dies unless the probed interpreter is one the library names functions in.
require_supported_python() {
    if [ "$PY_IMPL" != cpython ]; then
        die "$PY_EXE is $PY_IMPL $PY_VER, not CPython: libpyperfinject names functions only in CPython 3.6-3.15" \
            "(PyPy has its own JIT; for it use its perf support, if any)"
    fi
    local major=${PY_VER%%.*} minor=${PY_VER#*.}
    if [ "$major" -ne 3 ] || [ "$minor" -lt 6 ] || [ "$minor" -gt 15 ]; then
        die "$PY_EXE is CPython $PY_VER: libpyperfinject supports CPython 3.6-3.15, so perf would show no Python names"
    fi
}

# ------------------------------------------------------------- exec mode
# Exits 127 (not found) or 126 (not executable) as a shell would.
require_command() {
    if [[ $1 == */* ]] && [ -e "$1" ] && { [ -d "$1" ] || [ ! -x "$1" ]; }; then
        printf '%s: %s: not an executable file\n' "$PROG" "$1" >&2
        exit 126
    fi
    if ! command -v -- "$1" >/dev/null 2>&1; then
        printf '%s: %s: command not found\n' "$PROG" "$1" >&2
        exit 127
    fi
}

# The name of this PID namespace's run: pidns-INODE-START. The inode alone
# was the same for successive containers (the kernel reuses it), whose
# perf-1.map then overwrote each other's; START, when the namespace's pid 1
# started (clock ticks since boot), tells the runs apart.
pidns_run_name() {
    local ns stat rest start=""
    ns=$(readlink /proc/self/ns/pid 2>/dev/null || true)
    ns=${ns//[!0-9]/}
    [ -n "$ns" ] || return 1
    stat=$(cat /proc/1/stat 2>/dev/null || true)
    if [ -n "$stat" ]; then
        rest=${stat##*) }
        local -a f
        read -r -a f <<<"$rest"
        start=${f[19]:-}
    fi
    printf 'pidns-%s%s\n' "$ns" "${start:+-$start}"
}

# exec mode is a guest's entry point: nothing on pyperf-run's side may keep
# the program from running. Says why (the first line of a die() message),
# once, and runs it without profiling.
exec_unprofiled() {
    local why=${1#"$PROG: error: "}
    shift
    warn "${why%%$'\n'*}; running the program without profiling"
    exec -- "$@"
}

cmd_exec() {
    local dir=""
    while [ $# -gt 0 ]; do
        case "$1" in
        --) shift; break ;;
        -d | --dir)
            [ $# -ge 2 ] || usage_error "$1 needs a directory"
            dir=$2
            shift 2
            ;;
        --dir=*) dir=${1#--dir=}; shift ;;
        -*) usage_error "unknown option '$1'" ;;
        *) break ;;
        esac
    done
    [ $# -gt 0 ] || usage_error "no COMMAND given"
    require_command "$1"
    local lib msg
    msg=$(find_lib 2>&1) || exec_unprofiled "$msg" "$@"
    lib=$msg
    msg=$(preload_value "$lib" 2>&1) || exec_unprofiled "$msg" "$@"
    LD_PRELOAD=$msg
    case "${PYPERFINJECT_ENABLE:-1}" in
    0 | [Nn][Oo] | [Oo][Ff][Ff] | [Ff][Aa][Ll][Ss][Ee]) dir="" ;; # the library does nothing: no directory
    esac
    if [ -n "$dir" ]; then
        local sub="" name
        # One subdirectory per PID namespace run: containers sharing one
        # mounted directory all see themselves as pid 1.
        if name=$(pidns_run_name); then sub="$dir/$name"; else sub=$dir; fi
        if mkdir -p -- "$sub" 2>/dev/null && [ -w "$sub" ] && sub=$(abs_dir "$sub"); then
            PYPERFINJECT_DIR=$sub
            # The host may have other files at the interpreter's paths: keep
            # this process's own, once per build id in the shared directory
            # (not per run: every container start would copy them again).
            PYPERFINJECT_KEEP_BINARIES=${PYPERFINJECT_KEEP_BINARIES:-$(abs_dir "$dir")}
            export PYPERFINJECT_DIR PYPERFINJECT_KEEP_BINARIES
        else
            # A read-only root without the mount, or a user who may not
            # write there: the library keeps its default (/tmp), where it
            # stands aside by itself if it cannot write either.
            warn "cannot create or write $sub (--dir $dir); the library writes to ${PYPERFINJECT_DIR:-/tmp} instead"
        fi
    fi
    export LD_PRELOAD
    exec -- "$@"
}

# ------------------------------------------------------------ record mode
cmd_record() {
    local out="" freq=$DEFAULT_FREQ mode=auto event=cpu-clock sw=0 flame="" native="" cache=""
    local pid="" seconds=""
    local stack=$DWARF_STACK max_stack=$FP_MAX_STACK
    local -a perf_extra=()
    while [ $# -gt 0 ]; do
        case "$1" in
        --)
            shift
            # `-- PERF-OPTIONS -- COMMAND`: what follows the first -- and
            # starts with a dash goes to perf record, up to the second --
            # (or the end, with --pid). A COMMAND never starts with a dash.
            if [ $# -gt 0 ] && [[ $1 == -* ]]; then
                while [ $# -gt 0 ] && [ "$1" != -- ]; do
                    perf_extra+=("$1")
                    shift
                done
                if [ $# -gt 0 ]; then
                    shift
                elif [ -z "$pid" ]; then
                    usage_error "record: perf options end with a second -- before the COMMAND (pyperf-run record -- ${perf_extra[*]} -- python app.py)"
                fi
            fi
            break
            ;;
        -o | --output) [ $# -ge 2 ] || usage_error "$1 needs a directory"; out=$2; shift 2 ;;
        -F | --freq) [ $# -ge 2 ] || usage_error "$1 needs a frequency"; freq=$2; shift 2 ;;
        --mode) [ $# -ge 2 ] || usage_error "--mode needs auto, fp or dwarf"; mode=$2; shift 2 ;;
        -e | --event) [ $# -ge 2 ] || usage_error "$1 needs an event"; event=$2; shift 2 ;;
        --stack-size) [ $# -ge 2 ] || usage_error "--stack-size needs a size in bytes"; stack=$2; shift 2 ;;
        --max-stack) [ $# -ge 2 ] || usage_error "--max-stack needs a number of frames"; max_stack=$2; shift 2 ;;
        -a | --all-cpus) sw=1; shift ;;
        --flamegraph) [ $# -ge 2 ] || usage_error "--flamegraph needs a file"; flame=$2; shift 2 ;;
        --native) native=--native; shift ;;
        --buildid-dir) [ $# -ge 2 ] || usage_error "--buildid-dir needs a directory"; cache=$2; shift 2 ;;
        -p | --pid) [ $# -ge 2 ] || usage_error "$1 needs a process id"; pid=$2; shift 2 ;;
        --seconds) [ $# -ge 2 ] || usage_error "--seconds needs a number"; seconds=$2; shift 2 ;;
        -*) usage_error "record: unknown option '$1' (perf's own options go after --: pyperf-run record -- $1 ... -- COMMAND)" ;;
        *) break ;;
        esac
    done
    [ -z "$native" ] || [ -n "$flame" ] || usage_error "record: --native goes with --flamegraph FILE"
    if [ -n "$pid" ]; then
        [ $# -eq 0 ] || usage_error "record: --pid records a running process; give no COMMAND (--seconds N to stop after N seconds)"
    else
        [ $# -gt 0 ] || usage_error "record: no COMMAND given (pyperf-run record [-o DIR] -- python app.py)"
        [ -z "$seconds" ] || usage_error "record: --seconds goes with --pid (a COMMAND's recording ends when it exits)"
    fi
    [[ $freq =~ ^[1-9][0-9]*$ ]] || usage_error "record: --freq must be a positive integer (Hz), not '$freq'"
    case "$mode" in auto | fp | dwarf) ;; *) usage_error "record: --mode must be auto, fp or dwarf" ;; esac
    { [[ $stack =~ ^[1-9][0-9]{0,4}$ ]] && [ "$stack" -le "$DWARF_STACK_MAX" ]; } ||
        usage_error "record: --stack-size must be a number of bytes from 8 to $DWARF_STACK_MAX (perf's limit), not '$stack'"
    { [[ $max_stack =~ ^[1-9][0-9]{0,3}$ ]] && [ "$max_stack" -le "$FP_MAX_STACK_LIMIT" ]; } ||
        usage_error "record: --max-stack must be a number of frames from 1 to $FP_MAX_STACK_LIMIT, not '$max_stack'"
    [ -z "$seconds" ] || [[ $seconds =~ ^[1-9][0-9]*$ ]] ||
        usage_error "record: --seconds must be a positive integer, not '$seconds'"
    local o
    for o in "${perf_extra[@]}"; do
        case "$o" in
        -o | --output | --output=* | -o?*) usage_error "record: give the output directory with pyperf-run's -o DIR, not perf's $o" ;;
        -p | --pid | --pid=* | -t | --tid | --tid=*) usage_error "record: record a running process with pyperf-run's --pid PID, not perf's $o" ;;
        esac
    done

    local lib
    lib=$(find_lib)
    require_perf "$event" "$sw"
    [ -z "$flame" ] || require_flamegraph_tool "$flame"

    local launcher="" target_dir=""
    if [ -n "$pid" ]; then
        require_recordable_process "$pid"
        target_dir=$PID_DIR
        set -- "$PID_EXE"
    else
        require_command "$1"
    fi
    local why
    if probe_python "$@"; then
        require_supported_python
        [ -n "$pid" ] || preflight_library "$lib"
        if [ -z "$pid" ] && launcher=$(launcher_of "$1"); then
            # A pyenv shim is a bash script that runs `pyenv exec`: recorded
            # as typed, its bash processes took a third of the samples. Run
            # the interpreter it resolves to, as `pyenv exec` does (its
            # directory first in PATH).
            set -- "$PY_EXE" "${@:2}"
            PATH="$(dirname -- "$PY_EXE"):$PATH"
            export PATH
        fi
        if [ "$mode" = auto ]; then
            if [ "$PY_FP" = yes ]; then
                mode=fp
                why="$PY_EXE (CPython $PY_VER) is built with frame pointers"
            else
                mode=dwarf
                why="$PY_EXE (CPython $PY_VER) is built without frame pointers"
            fi
        else
            why="chosen with --mode; $PY_EXE is CPython $PY_VER"
            if [ "$mode" = fp ] && [ "$PY_FP" != yes ]; then
                warn "$PY_EXE (CPython $PY_VER) is built without frame pointers: with --mode fp perf's chains stop inside the interpreter and show almost no Python names; --mode dwarf (the default for it) shows them"
                why="$why, built without frame pointers"
            fi
        fi
    else
        [ -z "$pid" ] || warn "process $pid: $PY_WHY; recording anyway"
        if [ "$mode" = auto ]; then
            mode=dwarf
            why="$PY_WHY; DWARF call graphs work with any interpreter"
        else
            why="chosen with --mode"
        fi
    fi

    [ -n "$out" ] || out="pyperf-$(date +%Y%m%d-%H%M%S)"
    if [ -e "$out/perf.data" ] || [ -e "$out/perf.jit.data" ]; then
        die "$out already holds a recording; choose another -o DIR or remove it"
    fi
    mkdir -p -- "$out" || die "cannot create the output directory $out"
    out=$(abs_dir "$out")
    case "$out" in *[[:cntrl:]]*) die "the output directory's path has control characters" ;; esac
    # perf keeps a copy of every object it sees, each jitted-*.so included,
    # in its build-id cache (~/.debug: 82 MB after a dozen recordings): this
    # one stays in the recording unless --buildid-dir says otherwise.
    [ -n "$cache" ] || cache="$out/.debug"
    mkdir -p -- "$cache" || die "cannot create the build-id cache $cache"
    PERF_CACHE=(--buildid-dir "$(abs_dir "$cache")")

    local -a popts=(-k CLOCK_MONOTONIC -e "$event" -o "$out/perf.data")
    # perf refuses a frequency and a period together: a period (-c) or a
    # frequency given to perf replaces -F.
    local sampling=freq
    for o in "${perf_extra[@]}"; do
        case "$o" in -c | --count | --count=* | -c[0-9]* | -F | --freq | --freq=* | -F[0-9]*) sampling=perf ;; esac
    done
    [ "$sampling" = perf ] || popts+=(-F "$freq")
    local depth
    if [ "$mode" = fp ]; then
        popts+=(--call-graph fp)
    else
        popts+=(--call-graph "dwarf,$stack")
        # DWARF samples carry up to 64 KiB of stack each: a bigger ring
        # buffer loses fewer of them (the mlock limit allows this only for
        # root). 8 MiB per CPU lost none with two busy CPUs at 64 KiB.
        [ "$(id -u)" -ne 0 ] || popts+=(-m 8M)
    fi
    # System-wide: some processes may run in containers, whose files at a
    # path differ from the host's. The kernel's build id in each mmap record
    # lets perf find their own copies (cache_kept_binaries).
    [ "$sw" -eq 0 ] || popts+=(-a --buildid-mmap)
    [ -z "$pid" ] || popts+=(-p "$pid")
    # Last, so that perf's own options given after -- win.
    popts+=("${perf_extra[@]}")

    local shown
    if [ -n "$pid" ]; then
        shown="process $pid ($PID_EXE)"
    else
        shown=$(printf '%q ' "$@")
        shown=${shown% }
    fi
    note "recording $shown${launcher:+ (the interpreter $launcher runs)}"
    local rate="at $freq Hz"
    [ "$sampling" = freq ] || rate="sampled as perf's options say"
    note "call graphs: $mode ($why); event $event $rate; output $out"
    if [ -n "$pid" ]; then
        if [ -n "$seconds" ]; then
            note "for $seconds seconds (Ctrl-C stops sooner)"
        else
            note "until Ctrl-C"
        fi
    fi
    if [ "$mode" = fp ]; then
        raise_max_stack "$max_stack"
        depth="max-stack: $MAX_STACK_USED native frames (kernel.perf_event_max_stack)"
    else
        depth="stack-size: $stack bytes"
    fi
    {
        echo "command: $shown"
        [ -z "$launcher" ] || echo "launcher: $launcher (resolved to $PY_EXE)"
        echo "date: $(date -Is)"
        echo "mode: $mode ($why)"
        echo "perf record ${popts[*]}"
        echo "$depth"
        echo "library: $lib"
        echo "build-id cache: ${PERF_CACHE[1]}"
    } >"$out/pyperf-run.txt"

    # Ctrl-C stops the program and perf, and pyperf-run still finishes the
    # job (the trap is not inherited: children get the default action).
    # perf starts COMMAND itself, with the preload in its environment (the
    # library stays idle in perf, which starts no interpreter). Not through
    # env(1): perf 6.1 keeps the mappings of the image before an exec, and
    # the DWARF unwinder takes a library's lowest mapping as its base, so a
    # libc that env had mapped lower stopped the unwinding of every sample
    # taken in libc after one frame (in about half of the runs).
    local interrupted=0 rc=0
    if [ -n "$pid" ] && [ "$PID_ATTACH" -eq 1 ]; then
        attach_process "$pid" "$PID_DIR" >/dev/null
        note "attached the library to process $pid for the recording (switched off again after it)"
        echo "attached: yes (detached after recording)" >>"$out/pyperf-run.txt"
    fi
    trap 'interrupted=1' INT
    if [ -n "$pid" ]; then
        # perf records the process until the timing command (sleep) ends, or
        # until Ctrl-C.
        local -a timer=()
        [ -z "$seconds" ] || timer=(-- sleep "$seconds")
        "$PERF" "${PERF_CACHE[@]}" record "${popts[@]}" "${timer[@]}" || rc=$?
        [ "$interrupted" -eq 0 ] || rc=0
    else
        LD_PRELOAD="$(preload_value "$lib")" PYPERFINJECT_DIR="$out" \
            "$PERF" "${PERF_CACHE[@]}" record "${popts[@]}" -- "$@" || rc=$?
    fi
    trap - INT
    restore_max_stack
    if [ -n "$pid" ] && [ "$PID_ATTACH" -eq 1 ] && [ -d "/proc/$pid" ]; then
        env -u LD_PRELOAD "$(find_attacher)" --call "$pid" pyperfinject_disable >/dev/null 2>&1 ||
            warn "process $pid: could not switch profiling off after the recording (pyperf-run detach $pid)"
    fi
    echo "exit status: $rc" >>"$out/pyperf-run.txt"
    [ -s "$out/perf.data" ] || die "perf record wrote no data (exit status $rc)"
    [ "$interrupted" -eq 0 ] || note "interrupted; processing what was recorded"
    [ -z "$pid" ] || copy_process_maps "$pid" "$target_dir" "$out"

    fix_and_inject "$out" "$out/perf.data" "$out" "$pid" || true
    local checked=$out/perf.jit.data
    [ -f "$checked" ] || checked=$out/perf.data
    check_chains "$out" "$checked" save
    report_written "$out" "$@"
    if [ -n "$flame" ]; then
        # The program has run: a flame graph that fails costs a warning, not
        # the program's exit status.
        (make_flamegraph "$(data_of "$out")" "$flame" "$native") ||
            warn "no flame graph (see above); the recording is in $out"
    fi
    if [ -z "$pid" ]; then
        [ "$rc" -eq 0 ] || note "$1 exited with status $rc"
    elif [ "$rc" -ne 0 ]; then
        note "perf record exited with status $rc"
    fi
    exit "$rc"
}

# Starts the probed interpreter once with the library and the user's
# PYPERFINJECT_* settings, and dies on what the library or the loader would
# say in every process of the recording (a bad setting, an unloadable
# library): a recording that cannot have Python names is not started.
preflight_library() {
    local lib=$1 tmp err line
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/pyperf-run.XXXXXX") || return 0
    err=$(cd "$tmp" || exit 0
        LD_PRELOAD="$(preload_value "$lib")" PYPERFINJECT_DIR="$tmp" \
            timeout 60 "$PY_EXE" -I -c pass 2>&1 >/dev/null </dev/null || true)
    rm -rf -- "$tmp"
    while IFS= read -r line; do
        case "$line" in
        pyperfinject:*"profiling disabled"* | *ld.so:*LD_PRELOAD*)
            die "the library would not profile $PY_EXE: ${line#pyperfinject: }" \
                "(nothing was recorded; fix the setting and run again)" ;;
        esac
    done <<<"$err"
}

# Dies unless process PID is a Python process to record here. Sets PID_EXE
# (its executable, as this mount namespace sees it), PID_DIR (where it
# writes its perf map and jitdump: its PYPERFINJECT_DIR, else /tmp) and
# PID_ATTACH (1 when the library is not loaded yet: record attaches it).
PID_EXE="" PID_DIR="" PID_ATTACH=0
require_recordable_process() {
    local pid=$1
    [[ $pid =~ ^[1-9][0-9]*$ ]] || usage_error "record: --pid needs a process id, not '$pid'"
    [ -d "/proc/$pid" ] || die "no process $pid"
    { head -c 1 -- "/proc/$pid/maps" && head -c 1 -- "/proc/$pid/environ"; } >/dev/null 2>&1 ||
        die "cannot read /proc/$pid/maps (process $pid belongs to another user; run as that user or root)"
    PID_ATTACH=0
    grep -q 'libpyperfinject' "/proc/$pid/maps" 2>/dev/null || PID_ATTACH=1
    [ "$PID_ATTACH" -eq 0 ] || require_python_process "$pid"
    PID_EXE=$(readlink -- "/proc/$pid/exe" 2>/dev/null || true)
    PID_EXE=${PID_EXE% (deleted)}
    [ -x "$PID_EXE" ] || PID_EXE="/proc/$pid/exe"
    # Where its files are: the directory of the jitdump it maps (the library
    # maps it for perf), whether it was preloaded or attached with --dir;
    # else its PYPERFINJECT_DIR; /tmp for the attach record makes.
    local dump
    dump=$(grep -oE '/[^ ]*/jit-[0-9]+\.dump' "/proc/$pid/maps" 2>/dev/null | head -n 1 || true)
    PID_DIR=${dump%/*}
    [ -n "$PID_DIR" ] || PID_DIR=$(process_env "$pid" PYPERFINJECT_DIR)
    [ -n "$PID_DIR" ] && [ "$PID_ATTACH" -eq 0 ] || PID_DIR=/tmp
    # Its files are named by its pid in its own PID namespace.
    local nspid
    nspid=$(sed -n 's/^NStgid:.*[[:space:]]\([0-9][0-9]*\)$/\1/p' "/proc/$pid/status" 2>/dev/null || true)
    if [ -n "$nspid" ] && [ "$nspid" != "$pid" ]; then
        die "process $pid runs in another PID namespace (a container, pid $nspid there)" \
            "record it from the host with perf record -k CLOCK_MONOTONIC, then: pyperf-run import (docs/containers.md)"
    fi
}

# Copies the perf map of a process recorded with --pid into the recording
# (hotspot and report read it from there; fix_and_inject copies its jitdump).
copy_process_maps() {
    local pid=$1 dir=$2 out=$3
    local map="$dir/perf-$pid.map"
    if [ -f "$map" ] && [ ! -L "$map" ]; then
        cp -- "$map" "$out/perf-$pid.map" || warn "could not copy $map into $out"
    else
        warn "process $pid wrote no $map (started with profiling off, or PYPERFINJECT_DIR is elsewhere?)"
    fi
}

# Prints the interpreter's path when COMMAND is a launcher script that runs
# it (a pyenv shim; an asdf one): probe_python has asked it (PY_EXE).
launcher_of() {
    local path
    path=$(command -v -- "$1" 2>/dev/null) || return 1
    [ -f "$path" ] && is_python_name "$path" || return 1
    [ "$(readlink -f -- "$path")" != "$(readlink -f -- "$PY_EXE")" ] || return 1
    [ -x "$PY_EXE" ] && is_elf "$PY_EXE" || return 1
    [ "$(head -c 2 -- "$path" 2>/dev/null)" = '#!' ] || return 1
    grep -qE '(pyenv|asdf)"? exec' "$path" 2>/dev/null || return 1
    printf '%s\n' "$path"
}

# Prints what a recording directory holds and what to run next.
report_written() {
    local out=$1
    shift
    local -a maps=()
    mapfile -t maps < <(find "$out" -path "$out/host-pids" -prune -o -name 'perf-*.map' -type f -print 2>/dev/null | sort)
    local names=0 m
    for m in "${maps[@]}"; do
        names=$((names + $(grep -c ' py::' "$m" || true)))
    done
    local jitted
    jitted=$(find "$out" -name 'jitted-*.so' -type f 2>/dev/null | wc -l)
    {
        echo
        echo "pyperf-run: wrote $out"
        local injected="the recording with Python function names (use this one)"
        [ "${#maps[@]}" -gt 0 ] || injected="the recording after perf inject --jit (no Python names: see below)"
        [ ! -f "$out/perf.jit.data" ] || echo "  perf.jit.data   $injected"
        echo "  perf.data       perf's raw recording"
        echo "  perf-*.map, jit-*.dump, jitted-*.so: ${#maps[@]} process(es), $names Python function names, $jitted code objects"
        echo "  pyperf-run.txt  how it was recorded"
        if [ "${#maps[@]}" -eq 0 ]; then
            echo
            echo "  No Python process wrote names: COMMAND ran no CPython the library attached to."
            echo "  Run it with PYPERFINJECT_VERBOSE=2 to see why."
        fi
        echo
        echo "next:"
        echo "  pyperf-run report $(printf '%q' "$out")"
        echo "  pyperf-run report $(printf '%q' "$out") --flamegraph $(printf '%q' "$out/flamegraph.html")"
        echo "  pyperf-run hotspot $(printf '%q' "$out")"
    } >&2
}

# Gives the ELF files that processes kept under SEARCH (binaries/BUILD-ID/,
# PYPERFINJECT_KEEP_BINARIES, which exec mode sets to its --dir) to perf's
# build-id cache: a recording made with --buildid-mmap then symbolises and
# unwinds a container's interpreter with its own file, not with the host's
# file at the same path.
cache_kept_binaries() {
    local search=$1 f id cache=${PERF_CACHE[1]} added=0 failed=0
    while IFS= read -r -d '' f; do
        id=${f%/*}
        id=${id##*/}
        [[ "$id" =~ ^[0-9a-f]{4,128}$ ]] || continue
        [ ! -e "$cache/.build-id/${id:0:2}/${id:2}" ] || continue
        if "$PERF" "${PERF_CACHE[@]}" buildid-cache -a "$f" 2>/dev/null; then
            added=$((added + 1))
        else
            failed=$((failed + 1))
        fi
    done < <(find "$search" -path "$cache" -prune -o -path '*/binaries/*/*' -type f ! -name '.*' -print0 2>/dev/null)
    [ "$added" -eq 0 ] || note "added $added binaries the profiled processes kept to the build-id cache $cache"
    [ "$failed" -eq 0 ] || warn "perf buildid-cache refused $failed of the binaries kept under $search"
}

# Makes OUT/perf.jit.data from DATA: first rewrites the records of processes
# that ran in another PID namespace (their files are found under SEARCH) and
# points those of ADOPT (record --pid's process) at a copy of its jitdump in
# OUT, so that perf inject writes the jitted-*.so there; then perf inject
# --jit. Returns 1 if only DATA is usable.
fix_and_inject() {
    # A jitdump of another process can vanish between the check and perf
    # inject (-a on a busy machine): perf inject then fails without a word.
    # The second pass finds it gone and sets it aside.
    local said=$1/.inject.log rc=0
    __fix_and_inject "$@" 2>"$said" || rc=$?
    if [ "$rc" -eq 0 ]; then
        cat -- "$said" >&2
        rm -f -- "$said"
        return 0
    fi
    rm -f -- "$said"
    __fix_and_inject "$@"
}

__fix_and_inject() {
    local out=$1 data=$2 search=$3 adopt=${4:-} py input fixed
    input=$data
    fixed="$out/.perf.host.data"
    rm -f -- "$fixed" "$fixed.tmp"
    if py=$(helper_python); then
        local rc=0
        env -u LD_PRELOAD "$py" -I -B "$(find_helper nsfix.py)" "$data" "$search" "$out/host-pids" "$fixed" "$adopt" || rc=$?
        case "$rc" in
        0) input=$fixed ;;
        3) ;; # nothing to change
        *) warn "could not adapt the recording to processes from other PID namespaces (see above)" ;;
        esac
    else
        warn "no python3 here to adapt the recording to processes from other PID namespaces; if there were such processes their Python names will be missing"
    fi
    cache_kept_binaries "$search"
    local err
    if ! err=$(cd -- "$out" && "$PERF" "${PERF_CACHE[@]}" inject --jit -i "$input" -o "$out/perf.jit.data" 2>&1); then
        rm -f -- "$fixed" "$fixed.tmp" "$out/perf.jit.data"
        warn "perf inject --jit failed; only perf.data (names from the perf-*.map files, innermost frames in DWARF mode) is available:"
        printf '%s\n' "$err" >&2
        return 1
    fi
    rm -f -- "$fixed" "$fixed.tmp"
    return 0
}

# ------------------------------------------------------------ report mode
# The data file of a recording directory (or the file itself).
data_of() {
    local d=$1
    if [ -f "$d" ]; then
        printf '%s\n' "$d"
    elif [ -f "$d/perf.jit.data" ]; then
        printf '%s\n' "$d/perf.jit.data"
    elif [ -f "$d/perf.data" ]; then
        warn "$d has no perf.jit.data (recorded elsewhere? run: pyperf-run import $d); using perf.data"
        printf '%s\n' "$d/perf.data"
    else
        die "$d holds no recording (no perf.jit.data or perf.data)"
    fi
}

# perf's build-id cache of the recording DATA is in (record and import keep
# one there, with the binaries of processes from containers).
use_recording_cache() {
    local d
    d=$(dirname -- "$(readlink -f -- "$1")")
    [ ! -d "$d/.debug" ] || PERF_CACHE=(--buildid-dir "$d/.debug")
}

# export_samples DATA FORMAT FILE [--native]: export.py's one line (on
# stderr; FILE - is stdout), or die.
export_samples() {
    local data=$1 format=$2 file=$3 py
    shift 3
    py=$(helper_python) || die "--$format needs python3 on this machine"
    if [ "$file" = - ]; then
        env -u LD_PRELOAD "$py" -I -B "$(find_helper export.py)" "$PERF" "$data" "$format" - "$@" ||
            die "could not read $data"
    else
        env -u LD_PRELOAD "$py" -I -B "$(find_helper export.py)" "$PERF" "$data" "$format" "$file" "$@" >&2 ||
            die "could not write $file"
    fi
}

# renderer_file IN_BUILD INSTALLED: the copy of a viewer file `make`
# fetched (renderers/package.json), in the source tree's build/renderers/
# or installed in share/pyperfinject/ next to bin/; fails if neither.
renderer_file() {
    local c
    for c in "$(script_dir)/build/renderers/node_modules/$1" "$(script_dir)/../share/pyperfinject/$2"; do
        if [ -f "$c" ]; then
            readlink -f -- "$c"
            return 0
        fi
    done
    return 1
}

# Says how to open FILE (an export) in speedscope's offline build, else on
# the web.
speedscope_url() {
    local index
    if index=$(renderer_file speedscope/dist/release/index.html speedscope/index.html); then
        note "open offline in a browser: file://$index#localProfilePath=$(readlink -f -- "$1").js"
    else
        note "open it at https://www.speedscope.app (no offline copy of speedscope here: make renderers)"
    fi
}

cmd_report() {
    local dir="" flame="" format="" file="" native=""
    local -a extra=()
    while [ $# -gt 0 ]; do
        case "$1" in
        --) shift; extra=("$@"); break ;;
        --flamegraph) [ $# -ge 2 ] || usage_error "--flamegraph needs a file"; flame=$2; shift 2 ;;
        --flamegraph=*) flame=${1#--flamegraph=}; shift ;;
        --folded | --speedscope | --pprof)
            [ $# -ge 2 ] || usage_error "$1 needs a file"
            [ -z "$format" ] || usage_error "one of --top, --folded, --speedscope, --pprof at a time"
            format=${1#--}
            file=$2
            shift 2
            ;;
        --top)
            [ -z "$format" ] || usage_error "one of --top, --folded, --speedscope, --pprof at a time"
            format=top
            file=-
            shift
            ;;
        --native) native=--native; shift ;;
        -*) usage_error "report: unknown option '$1' (perf report options go after --)" ;;
        *)
            [ -z "$dir" ] || usage_error "report: one DIR only"
            dir=$1
            shift
            ;;
        esac
    done
    [ -n "$dir" ] || usage_error "report: which recording? pyperf-run report DIR"
    command -v "$PERF" >/dev/null 2>&1 || require_perf cpu-clock
    local data
    data=$(data_of "$dir")
    use_recording_cache "$data"
    if [ -n "$format" ]; then
        [ -z "$flame" ] || usage_error "--flamegraph and --$format: one at a time"
        export_samples "$data" "$format" "$file" ${native:+"$native"}
        [ "$format" != speedscope ] || speedscope_url "$file"
        return
    fi
    [ -z "$native" ] || [ -n "$flame" ] ||
        usage_error "--native goes with --flamegraph, --top, --folded, --speedscope or --pprof (perf report shows every frame)"
    report_chains "$dir" "$data"
    if [ -n "$flame" ]; then
        make_flamegraph "$data" "$flame" "$native"
        return
    fi
    # perf report shows no progress in --stdio: say what it is reading.
    local mb=$(($(stat -L -c %s -- "$data") >> 20))
    [ "$mb" -lt 100 ] || note "perf report is reading $mb MB ($data)"
    # The arguments after -- come last: a --max-stack there wins.
    exec "$PERF" "${PERF_CACHE[@]}" report -i "$data" --max-stack "$REPORT_MAX_STACK" --no-inline "${extra[@]}"
}

# ------------------------------------------------------------ hotspot mode
# hotspot's parser (hotspot-perfparser; hotspot 1.3.0 in Debian 12) finds no
# symbol in perf inject's jitted-*.so files: it names Python frames only from
# perf-PID.map files, which it looks for in Qt's temporary directory ($TMPDIR,
# else /tmp). With the maps it names them in perf.data (the trampolines are
# an anonymous mapping there) in both call-graph modes, in perf.jit.data in
# DWARF recordings only. So: perf.data, and TMPDIR set to a private directory
# of links to the recording's maps for hotspot and the parser it starts,
# removed when hotspot exits (hotspot runs the parser again when a file is
# reopened). Nothing is written to /tmp.
cmd_hotspot() {
    local dir="" data=""
    local -a extra=()
    while [ $# -gt 0 ]; do
        case "$1" in
        --) shift; extra=("$@"); break ;;
        -*) usage_error "hotspot: unknown option '$1' (hotspot's options go after --)" ;;
        *)
            [ -z "$dir" ] || usage_error "hotspot: one DIR only"
            dir=$1
            shift
            ;;
        esac
    done
    [ -n "$dir" ] || usage_error "hotspot: which recording? pyperf-run hotspot DIR"
    if [ -f "$dir" ]; then
        data=$(readlink -f -- "$dir")
        dir=$(dirname -- "$data")
    elif [ -d "$dir" ]; then
        dir=$(abs_dir "$dir")
        if [ -f "$dir/perf.data" ]; then
            data=$dir/perf.data
        elif [ -f "$dir/perf.jit.data" ]; then
            data=$dir/perf.jit.data
        fi
    fi
    [ -n "$data" ] || die "$dir holds no recording (no perf.data or perf.jit.data)"
    case "$data" in
    */perf.jit.data) warn "hotspot names the Python frames of perf.jit.data in DWARF recordings only (perf.data: in frame-pointer ones too)" ;;
    esac
    local hs=${HOTSPOT:-hotspot}
    command -v -- "$hs" >/dev/null 2>&1 ||
        die "hotspot is not installed ($hs not found)" \
            "Debian 12+, Ubuntu: apt-get install hotspot; elsewhere: the AppImage from https://github.com/KDAB/hotspot/releases (or set HOTSPOT=/path/to/hotspot)"
    local tmp m pid n=0
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/pyperf-run-hotspot.XXXXXX") ||
        die "cannot create a temporary directory in ${TMPDIR:-/tmp}"
    # shellcheck disable=SC2064 # expand now: tmp is local
    trap "rm -rf -- '$tmp'" EXIT
    # The recording's pids; a host-pids/ map (pyperf-run import: the host's
    # pid of a process from another PID namespace) wins over a name in DIR.
    for m in "$dir"/perf-*.map "$dir"/host-pids/perf-*.map; do
        { [ -f "$m" ] && [ ! -L "$m" ]; } || continue
        pid=${m##*/perf-}
        pid=${pid%.map}
        [[ $pid =~ ^[0-9]+$ ]] || continue
        ln -sfn -- "$m" "$tmp/perf-$pid.map" || die "cannot link $m into $tmp"
        n=$((n + 1))
    done
    if [ "$n" -eq 0 ]; then
        warn "$dir has no perf-PID.map: hotspot will show no Python names"
    fi
    note "hotspot $data (Python names from $n perf-PID.map file(s), through TMPDIR=$tmp until hotspot exits)"
    local rc=0
    TMPDIR=$tmp "$hs" "${extra[@]}" "$data" || rc=$?
    exit "$rc"
}

# --------------------------------------------------------------- flame graphs
# Renderers, each a maintained one: the d3-flame-graph HTML template (filled
# by export.py), inferno, FlameGraph (fed export.py's folded stacks). Sets
# FG_* and a description of what is missing.
FG_MISSING=() FG_TOOL="" D3_TEMPLATE=""
# Sets D3_TEMPLATE to the d3-flame-graph template, if there is one.
find_d3_template() {
    [ -z "$D3_TEMPLATE" ] || return 0
    local c root rel="d3-flame-graph/dist/templates/$D3_TEMPLATE_NAME"
    local -a cands=()
    [ -z "${PYPERF_RUN_FLAMEGRAPH_TEMPLATE:-}" ] || cands+=("$PYPERF_RUN_FLAMEGRAPH_TEMPLATE")
    # The pinned copy `make` fetched.
    c=$(renderer_file "$rel" "$D3_TEMPLATE_NAME") && cands+=("$c")
    cands+=("/usr/share/d3-flame-graph/$D3_TEMPLATE_NAME"
        "${XDG_CACHE_HOME:-${HOME:-/nonexistent}/.cache}/pyperfinject/npm/node_modules/$rel")
    for c in "${cands[@]}"; do
        if [ -f "$c" ]; then
            D3_TEMPLATE=$(readlink -f -- "$c")
            return 0
        fi
    done
    # Last, the global npm modules (asking npm takes a moment).
    if command -v npm >/dev/null 2>&1; then
        root=$(npm root -g 2>/dev/null || true)
        if [ -n "$root" ] && [ -f "$root/$rel" ]; then
            D3_TEMPLATE="$root/$rel"
            return 0
        fi
    fi
    return 1
}

# Sets FG_TOOL to the first available tool among $@ (d3 inferno
# flamegraph-pl) and FG_MISSING to why each one before it is unavailable.
pick_flamegraph_tool() {
    local t
    FG_MISSING=()
    FG_TOOL=""
    for t in "$@"; do
        case "$t" in
        d3)
            if ! find_d3_template; then
                FG_MISSING+=("d3-flame-graph (HTML): the template $D3_TEMPLATE_NAME is missing; make fetches it when npm is installed (make renderers), or: npm install -g $D3_TEMPLATE_PKG (Fedora: dnf install js-d3-flame-graph), or set PYPERF_RUN_FLAMEGRAPH_TEMPLATE=/path/to/$D3_TEMPLATE_NAME")
            elif ! helper_python >/dev/null; then
                FG_MISSING+=("d3-flame-graph (HTML): pyperf-run fills its template with python3, which is not installed")
            else
                FG_TOOL=d3
                return 0
            fi
            ;;
        inferno)
            if command -v inferno-flamegraph >/dev/null 2>&1; then
                FG_TOOL=inferno
                return 0
            fi
            FG_MISSING+=("inferno (SVG): inferno-flamegraph is not on PATH; install with: cargo install inferno")
            ;;
        flamegraph-pl)
            if fg_pl flamegraph.pl >/dev/null; then
                FG_TOOL=flamegraph-pl
                return 0
            fi
            FG_MISSING+=("FlameGraph (SVG): flamegraph.pl is neither on PATH nor in \$FLAMEGRAPH_DIR; get it from https://github.com/brendangregg/FlameGraph and set FLAMEGRAPH_DIR")
            ;;
        esac
    done
    return 1
}

fg_pl() {
    if [ -n "${FLAMEGRAPH_DIR:-}" ] && [ -x "$FLAMEGRAPH_DIR/$1" ]; then
        printf '%s\n' "$FLAMEGRAPH_DIR/$1"
    else
        command -v "$1"
    fi
}

# Dies unless a tool can write the flame graph FILE (its name says the format)
# into an existing directory; sets FG_TOOL. record asks before it runs the
# program, so that a missing tool costs no recording.
require_flamegraph_tool() {
    local file=$1
    local -a order
    case "$file" in
    *.svg) order=(inferno flamegraph-pl) ;;
    *.html | *.htm) order=(d3) ;;
    *) order=(d3 inferno flamegraph-pl) ;;
    esac
    if ! pick_flamegraph_tool "${order[@]}"; then
        local hint="name the file .html or .svg to choose a format"
        case "$file" in
        *.svg) hint="or ask for an HTML flame graph: --flamegraph ${file%.svg}.html" ;;
        *.html | *.htm) hint="or ask for an SVG flame graph: --flamegraph ${file%.*}.svg" ;;
        esac
        die "no flame graph tool for $file:" "${FG_MISSING[@]}" "$hint"
    fi
    [ -d "$(dirname -- "$file")" ] || die "the directory of $file does not exist"
}

# make_flamegraph DATA FILE [--native]: the Python view, or every frame.
make_flamegraph() {
    local data file=$2 native=${3:-}
    data=$(readlink -f -- "$1")
    require_flamegraph_tool "$file"
    local dir
    dir=$(dirname -- "$file")
    file="$(abs_dir "$dir")/$(basename -- "$file")"
    local title
    title="pyperf-run: $(basename -- "$(dirname -- "$data")")"
    if [ "$FG_TOOL" = d3 ]; then
        export_samples "$data" flamegraph "$file" --template "$D3_TEMPLATE" ${native:+"$native"}
        note "flame graph: $file (d3-flame-graph, template $D3_TEMPLATE)"
    else
        local tmp
        tmp=$(mktemp -d "${TMPDIR:-/tmp}/pyperf-run.XXXXXX")
        # shellcheck disable=SC2064 # expand now: tmp is local
        trap "rm -rf -- '$tmp'" EXIT
        export_samples "$data" folded "$tmp/stacks.folded" ${native:+"$native"}
        case "$FG_TOOL" in
        inferno)
            inferno-flamegraph --title "$title" <"$tmp/stacks.folded" >"$file" || die "inferno failed"
            note "flame graph: $file (inferno)"
            ;;
        flamegraph-pl)
            "$(fg_pl flamegraph.pl)" --title "$title" "$tmp/stacks.folded" >"$file" || die "FlameGraph failed"
            note "flame graph: $file (FlameGraph)"
            ;;
        esac
    fi
    [ -s "$file" ] || die "the flame graph $file is empty"
    grep -q 'py::' "$file" || warn "the flame graph has no Python names (py::...)"
}

# ------------------------------------------------------------ import mode
cmd_import() {
    local data="" dir=""
    while [ $# -gt 0 ]; do
        case "$1" in
        -i | --input) [ $# -ge 2 ] || usage_error "$1 needs a perf.data file"; data=$2; shift 2 ;;
        -*) usage_error "import: unknown option '$1'" ;;
        *)
            [ -z "$dir" ] || usage_error "import: one DIR only"
            dir=$1
            shift
            ;;
        esac
    done
    [ -n "$dir" ] || usage_error "import: which directory? pyperf-run import [-i perf.data] DIR"
    [ -d "$dir" ] || die "$dir is not a directory"
    dir=$(abs_dir "$dir")
    [ -n "$data" ] || data="$dir/perf.data"
    [ -f "$data" ] || die "no recording at $data (record on the host with: perf record -k CLOCK_MONOTONIC ... -o $dir/perf.data)"
    command -v "$PERF" >/dev/null 2>&1 || require_perf cpu-clock
    helper_python >/dev/null || die "import needs python3 on this machine (to rewrite perf.data)"
    [ ! -e "$dir/perf.jit.data" ] || mv -f -- "$dir/perf.jit.data" "$dir/perf.jit.data.old"
    mkdir -p -- "$dir/.debug" && PERF_CACHE=(--buildid-dir "$dir/.debug")
    fix_and_inject "$dir" "$(readlink -f -- "$data")" "$dir" ||
        die "could not make $dir/perf.jit.data"
    note "wrote $dir/perf.jit.data; next: pyperf-run report $(printf '%q' "$dir")"
}

# ------------------------------------------------------------- check mode
cmd_check() {
    [ "${1:-}" != -- ] || shift
    local ok=0 lib
    if lib=$( (find_lib) 2>&1); then
        ( find_lib >/dev/null; echo "library:      $lib ($LIB_SOURCE)" )
    else
        echo "library:      MISSING: ${lib#*error: }"
        ok=1
    fi
    if perf_problem cpu-clock 0; then
        echo "perf:         NOT USABLE: ${PERF_ERR//$'\n'/$'\n              '}"
        ok=1
    else
        echo "perf:         $(command -v "$PERF") ($("$PERF" version 2>/dev/null)), recording permitted"
    fi
    echo "paranoid:     kernel.perf_event_paranoid = $(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo unknown)"
    local m any=0
    if pick_flamegraph_tool d3; then
        echo "flame graphs: HTML with d3-flame-graph ($D3_TEMPLATE)"
        any=1
    fi
    if command -v inferno-flamegraph >/dev/null 2>&1; then echo "flame graphs: SVG with inferno"; any=1; fi
    if fg_pl flamegraph.pl >/dev/null; then echo "flame graphs: SVG with FlameGraph"; any=1; fi
    for m in d3 inferno flamegraph-pl; do
        pick_flamegraph_tool "$m" || echo "missing:      ${FG_MISSING[0]}"
    done
    [ "$any" -eq 1 ] || echo "flame graphs: NONE available (the HTML one needs the d3-flame-graph template: make renderers, or npm install -g $D3_TEMPLATE_PKG)"
    if [ $# -gt 0 ]; then
        if probe_python "$@"; then
            local verdict
            verdict=$( (require_supported_python) 2>&1) || { echo "interpreter:  UNSUPPORTED: ${verdict#*error: }"; return 1; }
            if [ "$PY_FP" = yes ]; then
                echo "interpreter:  $PY_EXE: CPython $PY_VER$(ft_note) with frame pointers -> record uses --call-graph fp"
            else
                echo "interpreter:  $PY_EXE: CPython $PY_VER$(ft_note) without frame pointers -> record uses --call-graph dwarf,$DWARF_STACK"
            fi
        else
            echo "interpreter:  $PY_WHY -> record uses --call-graph dwarf,$DWARF_STACK"
        fi
    fi
    return "$ok"
}

# ------------------------------------------------------- deep call chains
# Frame-pointer recordings: the kernel stops a chain at
# kernel.perf_event_max_stack native frames. As root, raise it for the
# recording and restore it afterwards, also when pyperf-run is stopped by
# SIGTERM/SIGHUP or dies; otherwise say what to change.
MAX_STACK_USED=127 MAX_STACK_SAVED=""
raise_max_stack() {
    local want=$1 cur err why=""
    cur=$(cat "$MAX_STACK_SYSCTL" 2>/dev/null) || cur=""
    if ! [[ $cur =~ ^[0-9]+$ ]]; then
        warn "cannot read $MAX_STACK_SYSCTL: frame-pointer chains may be cut at 127 native frames"
        return 0
    fi
    MAX_STACK_USED=$cur
    [ "$cur" -lt "$want" ] || return 0
    if [ "$(id -u)" -eq 0 ]; then
        trap 'restore_max_stack' EXIT
        trap 'restore_max_stack; exit 129' HUP
        trap 'restore_max_stack; exit 143' TERM
        MAX_STACK_SAVED=$cur
        if err=$( (printf '%s\n' "$want" >"$MAX_STACK_SYSCTL") 2>&1); then
            MAX_STACK_USED=$want
            note "frame-pointer chains: kernel.perf_event_max_stack raised from $cur to $want native frames for this recording (restored afterwards)"
            return 0
        fi
        MAX_STACK_SAVED=""
        trap - EXIT HUP TERM
        case "$err" in
        *busy*) why=" (it cannot be changed now: another perf session is recording call chains)" ;;
        *) why=" (it cannot be changed here: ${err##*: })" ;;
        esac
    fi
    warn "frame-pointer chains are cut at kernel.perf_event_max_stack = $cur native frames (about $((cur / 4)) Python frames)$why; for deeper ones: sudo sysctl kernel.perf_event_max_stack=$want (pyperf-run record does this itself as root, and restores it)"
}

restore_max_stack() {
    [ -n "$MAX_STACK_SAVED" ] || return 0
    local saved=$MAX_STACK_SAVED i
    MAX_STACK_SAVED=""
    trap - EXIT HUP TERM
    # Busy while another perf session records call chains: wait a little.
    for i in 1 2 3 4 5 6 7 8 9 10; do
        if (printf '%s\n' "$saved" >"$MAX_STACK_SYSCTL") 2>/dev/null; then
            return 0
        fi
        [ "$i" -eq 10 ] || sleep 0.5
    done
    warn "could not restore kernel.perf_event_max_stack to $saved (another perf session records call chains); restore it with: sysctl kernel.perf_event_max_stack=$saved"
}

# check_chains DIR DATA [save]: one line on how many samples of the Python
# processes (those that wrote DIR/perf-PID.map or DIR/host-pids/perf-PID.map)
# have a chain that does not reach the first frame of their process or
# thread, and why; with "save", also appended to DIR/pyperf-run.txt.
check_chains() {
    local dir=$1 data=$2 save=${3:-} py kmax line
    py=$(helper_python) || return 0
    local -a pids=()
    mapfile -t pids < <(find "$dir" "$dir/host-pids" -maxdepth 1 -name 'perf-*.map' -type f 2>/dev/null |
        sed -n 's|.*/perf-\([0-9][0-9]*\)\.map$|\1|p' | sort -un)
    [ "${#pids[@]}" -gt 0 ] || return 0
    # The kernel's frame limit when it was recorded (fp mode).
    kmax=$(sed -n 's/^max-stack: \([0-9][0-9]*\) .*/\1/p' "$dir/pyperf-run.txt" 2>/dev/null | tail -n 1 || true)
    [ -n "$kmax" ] || kmax=$(cat "$MAX_STACK_SYSCTL" 2>/dev/null || echo 127)
    local -a lines=()
    mapfile -t lines < <(env -u LD_PRELOAD "$py" -I -B "$(find_helper chains.py)" "$PERF" "$data" \
        "$REPORT_MAX_STACK" "$kmax" "$CHECK_SAMPLES" "${pids[@]}" 2>/dev/null || true)
    for line in "${lines[@]}"; do
        note "$line"
        [ "$save" != save ] || echo "chains: $line" >>"$dir/pyperf-run.txt"
    done
}

# The cut-chain line of a recording: the one record saved, else checked now.
report_chains() {
    local dir=$1 data=$2
    [ -d "$dir" ] || dir=$(dirname -- "$data")
    if grep -q '^chains: ' "$dir/pyperf-run.txt" 2>/dev/null; then
        local line
        while IFS= read -r line; do note "$line"; done < <(sed -n 's/^chains: //p' "$dir/pyperf-run.txt")
    else
        check_chains "$dir" "$data"
    fi
}


# ------------------------------------------------------------------ attach
# pyperf-attach: next to this script in the source tree (build/), or
# installed with the helpers.
find_attacher() {
    local dir cand
    dir=$(script_dir)
    local -a cands=("$dir/build/pyperf-attach" "$dir/../lib/pyperfinject/pyperf-attach")
    [[ $CONFIGURED_LIBDIR == @* ]] || cands+=("$CONFIGURED_LIBDIR/pyperfinject/pyperf-attach")
    for cand in "${cands[@]}"; do
        [ -x "$cand" ] && { printf '%s\n' "$cand"; return 0; }
    done
    die "pyperf-attach is missing (looked in: ${cands[*]}); build it (make) or reinstall (make install)"
}

# The library's path as process PID sees it: the same file at the same
# path in its mount namespace, or a copy put into its /tmp (said).
library_for_process() {
    local pid=$1 lib=$2 inside
    if [ "$(stat -L -c %d:%i -- "$lib")" = "$(stat -L -c %d:%i -- "/proc/$pid/root$lib" 2>/dev/null)" ]; then
        printf '%s\n' "$lib"
        return
    fi
    inside="/tmp/libpyperfinject-$(cksum <"$lib" | cut -d' ' -f1).so"
    if [ ! -f "/proc/$pid/root$inside" ]; then
        local tmp="/proc/$pid/root$inside.tmp.$$"
        if ! { cp -- "$lib" "$tmp" && chmod 0755 "$tmp" && mv -f -- "$tmp" "/proc/$pid/root$inside"; }; then
            rm -f -- "$tmp"
            die "process $pid does not see $lib, and it could not be copied into its /tmp"
        fi
        note "process $pid does not see $lib (another mount namespace): copied it to $inside there"
    fi
    printf '%s\n' "$inside"
}

# Dies unless PID is a CPython process this user may read.
require_python_process() {
    local pid=$1
    [[ $pid =~ ^[1-9][0-9]*$ ]] || usage_error "need a process id, not '$pid'"
    [ -d "/proc/$pid" ] || die "no process $pid"
    ! grep -q '^State:[[:space:]]*Z' "/proc/$pid/status" 2>/dev/null ||
        die "process $pid is a zombie: it has exited, and its parent has not collected it yet"
    head -c 1 -- "/proc/$pid/maps" >/dev/null 2>&1 ||
        die "cannot read /proc/$pid/maps: process $pid belongs to another user (run as that user or root)"
    local exe
    exe=$(readlink -- "/proc/$pid/exe" 2>/dev/null || true)
    case "${exe##*/}" in
    python2*) die "process $pid ($exe) runs Python 2, which the library does not serve" ;;
    pypy*) die "process $pid ($exe) runs PyPy, not CPython: the library serves CPython only" ;;
    esac
    is_python_name "${exe% (deleted)}" || grep -qE '/libpython3\.[0-9]+' "/proc/$pid/maps" ||
        grep -qE '/python3\.[0-9]+[^/]*$' "/proc/$pid/maps" ||
        die "process $pid ($exe) is not a Python process"
}

# The CPython version of process PID (3.X), from the files it mapped, or "".
process_python_version() {
    grep -oE '/(lib)?python3\.[0-9]+' "/proc/$1/maps" 2>/dev/null | head -n 1 | sed 's|.*python||'
}

# The command that runs process PID's own interpreter here: its executable,
# or, when it runs through a loader (ld.so --library-path ... python3.X), the
# loader with its options and the interpreter's path. Fails in another
# mount namespace (its files are not ours to run).
OWN_INTERPRETER=()
own_interpreter() {
    local pid=$1 exe i
    [ "$(stat -L -c %d:%i /proc/self/ns/mnt)" = "$(stat -L -c %d:%i "/proc/$pid/ns/mnt" 2>/dev/null)" ] || return 1
    exe=$(readlink -- "/proc/$pid/exe" 2>/dev/null) || return 1
    OWN_INTERPRETER=("$exe")
    if [[ ${exe##*/} == ld-* ]]; then
        local -a args=()
        mapfile -d '' -t args <"/proc/$pid/cmdline"
        OWN_INTERPRETER=("${args[0]}")
        for ((i = 1; i < ${#args[@]}; i++)); do
            OWN_INTERPRETER+=("${args[i]}")
            case "${args[i]}" in
            --library-path | --argv0 | --preload | --audit | --inhibit-rpath | --glibc-hwcaps-mask | --glibc-hwcaps-prepend)
                i=$((i + 1)); OWN_INTERPRETER+=("${args[i]}") ;;
            --*) ;;
            *) break ;; # the interpreter's path
            esac
        done
    fi
    [ -x "${OWN_INTERPRETER[0]}" ]
}

# Why a 3.14+ process refuses PEP 768's remote execution, or "".
remote_debug_disabled() {
    local pid=$1 arg prev=""
    [ -z "$(process_env "$pid" PYTHON_DISABLE_REMOTE_DEBUG)" ] || { echo "PYTHON_DISABLE_REMOTE_DEBUG is set in it"; return; }
    while IFS= read -r -d '' arg; do
        if [ "$arg" = "-Xdisable-remote-debug" ] || { [ "$prev" = -X ] && [ "$arg" = disable-remote-debug ]; }; then
            echo "it was started with -X disable-remote-debug"
            return
        fi
        prev=$arg
    done <"/proc/$pid/cmdline"
}

# CPython 3.14+: the library goes in through PEP 768's remote execution,
# which the process's own interpreter asks for (sys.remote_exec). Prints
# "RC<TAB>WHY" as pyperf-attach does; returns 1 (with nothing printed) when
# this way is not open here, 2 with the reason printed when the process
# refuses.
attach_remote_exec() {
    local pid=$1 inside=$2 settings=$3 tag asked pending
    own_interpreter "$pid" || return 1
    # The script removes itself when it has run (remote_attach.py): one that
    # is still there is an earlier request the main thread has not reached.
    pending=$(compgen -G "/tmp/pyperf-attach-$pid-*.py" | head -n 1 || true)
    if [ -n "$pending" ]; then
        printf '3\tan earlier sys.remote_exec request (%s) waits for the main thread to run Python\n' "$pending"
        return 0
    fi
    tag="/tmp/pyperf-attach-$pid-$$"
    rm -f -- "$tag.settings" "$tag.result" "$tag.py"
    printf '%s\n' "$settings" >"$tag.settings"
    chmod 0644 "$tag.settings"
    asked=$(env -u LD_PRELOAD "${OWN_INTERPRETER[@]}" -I -B "$(find_helper remote_attach.py)" \
        "$pid" "$inside" "$tag.settings" "$tag.result" "$tag.py" 2>&1)
    if [ "$asked" != asked ]; then
        rm -f -- "$tag.settings" "$tag.result" "$tag.py"
        printf '%s\n' "${asked#refused: }"
        return 2
    fi
    local _
    for _ in $(seq 50); do [ -s "$tag.result" ] && break; sleep 0.1; done
    if [ -s "$tag.result" ]; then
        head -n 1 -- "$tag.result"
        rm -f -- "$tag.result"
    else
        # Never removed here: CPython would raise in the program if its
        # script were gone when the main thread gets to it.
        printf '3\tasked with sys.remote_exec; the main thread runs %s at its next Python step\n' "$tag.py"
    fi
}

# Attaches to PID with its files in DIR (as it sees it). Prints the result
# code of pyperfinject_attach (0 installed, 1 already on, 2 switched on, 3
# waiting for the main thread); dies with the reason when it failed.
attach_process() {
    local pid=$1 dir=$2 lib inside settings out rc version how=""
    lib=$(find_lib)
    inside=$(library_for_process "$pid" "$lib")
    settings=$(env | grep '^PYPERFINJECT_' | grep -vE '^PYPERFINJECT_(DIR|LIB)=' || true)
    settings+=$'\n'"PYPERFINJECT_DIR=$dir"
    version=$(process_python_version "$pid")
    if [ -n "$version" ] && [ "${version#*.}" -ge 14 ]; then
        # PEP 768: the interpreter's own way in. It respects the process's
        # choice to refuse it, and so does pyperf-run.
        local off
        off=$(remote_debug_disabled "$pid")
        [ -z "$off" ] ||
            die "process $pid (CPython $version) refuses remote debugging: $off" \
                "(restart it without that, or with the library: pyperf-run -- COMMAND)"
        local rrc=0
        out=$(attach_remote_exec "$pid" "$inside" "$settings") || rrc=$?
        case "$rrc" in
        0) how="sys.remote_exec" ;;
        2) die "process $pid (CPython $version) refused sys.remote_exec: $out" ;;
        *) note "process $pid runs in another mount namespace: attaching with ptrace instead of sys.remote_exec" ;;
        esac
    fi
    if [ -z "$how" ]; then
        local tracer
        tracer=$(sed -n 's/^TracerPid:[[:space:]]*//p' "/proc/$pid/status" 2>/dev/null || true)
        [ -z "$tracer" ] || [ "$tracer" = 0 ] ||
            die "process $pid is being traced by process $tracer ($(cat "/proc/$tracer/comm" 2>/dev/null || echo '?')): a debugger or tracer; detach it first" \
                "(process $pid was not changed)"
        out=$(env -u LD_PRELOAD "$(find_attacher)" "$pid" "$inside" "$settings" 2>&1) ||
            die "could not attach to process $pid: ${out#*$'\t'}" "(process $pid was not changed)"
        how="ptrace"
    fi
    rc=${out%%$'\t'*}
    case "$rc" in
    0 | 1 | 2 | 3) ;;
    *) die "could not attach to process $pid: ${out#*$'\t'}" ;;
    esac
    [ "$rc" = 1 ] || note "process $pid: attached with $how: ${out#*$'\t'}"
    if [ "$rc" = 3 ]; then
        # Installed by the main thread at its next Python step.
        local state="" _
        for _ in $(seq 50); do
            state=$(env -u LD_PRELOAD "$(helper_python)" -I -B "$(find_helper libstate.py)" "$pid" 2>/dev/null || true)
            [ "$state" != on ] || break
            sleep 0.1
        done
        [ "$state" = on ] ||
            warn "process $pid: the library is loaded; its main thread has not run Python for 5 s, and installs it at its next Python step"
    fi
    printf '%s\n' "$rc"
}

cmd_attach() {
    local pid="" dir=/tmp
    while [ $# -gt 0 ]; do
        case "$1" in
        --dir | -d) [ $# -ge 2 ] || usage_error "attach: $1 needs a directory"; dir=$2; shift 2 ;;
        --dir=*) dir=${1#--dir=}; shift ;;
        -*) usage_error "attach: unknown option '$1'" ;;
        *) [ -z "$pid" ] || usage_error "attach: one PID"; pid=$1; shift ;;
        esac
    done
    [ -n "$pid" ] || usage_error "attach: no PID"
    [[ $dir == /* ]] || usage_error "attach: --dir must be absolute (a path in the process's mount namespace)"
    require_python_process "$pid"
    local rc
    rc=$(attach_process "$pid" "$dir")
    case "$rc" in
    1) note "process $pid: already attached, profiling is on (nothing done)"; return 0 ;;
    2) note "process $pid: already attached; profiling was off and is switched on" ;;
    *) note "attached to process $pid: Python functions it calls from now on are named in $dir/perf-<pid>.map and $dir/jit-<pid>.dump (<pid> as the process sees itself)"
       note "functions that were already running (its main loop, <module>) stay unnamed until they are called again" ;;
    esac
    note "record it: pyperf-run record --pid $pid; switch off: pyperf-run detach $pid"
}

cmd_detach() {
    [ $# -eq 1 ] || usage_error "detach: one PID"
    local pid=$1 out
    require_python_process "$pid"
    grep -q 'libpyperfinject' "/proc/$pid/maps" || die "process $pid has no libpyperfinject loaded: nothing to detach"
    out=$(env -u LD_PRELOAD "$(find_attacher)" --call "$pid" pyperfinject_disable 2>&1) ||
        die "could not switch profiling off in process $pid: ${out#*$'\t'}"
    note "process $pid: profiling switched off; its interpreters run without the hook again (the library stays loaded: pyperf-run attach $pid switches it back on)"
}

# ------------------------------------------------------------------ --pid
# The switching signal is opt-in per process (PYPERFINJECT_SIGNAL); read it
# from the process's environment rather than guessing a signal that the
# program may use for something else.
cmd_pid() {
    local pid=${1:-} action=${2:-}
    [[ $pid =~ ^[0-9]+$ ]] || usage_error "--pid needs a process id"
    case "$action" in on | off | status) ;; *) usage_error "--pid PID on|off|status" ;; esac
    [ -r "/proc/$pid/environ" ] ||
        die "cannot read /proc/$pid/environ (no such process, or it belongs to another user)"
    grep -q 'libpyperfinject' "/proc/$pid/maps" 2>/dev/null ||
        die "process $pid has no libpyperfinject loaded"
    local sig
    sig=$(process_env "$pid" PYPERFINJECT_SIGNAL)
    case "${sig,,}" in "" | none | 0) sig="" ;; *) sig=${sig#[Ss][Ii][Gg]} ;; esac
    if [ "$action" = status ]; then
        local py state
        py=$(helper_python) || die "no python3 to read the process's state with"
        state=$(env -u LD_PRELOAD "$py" -I -B "$(find_helper libstate.py)" "$pid") ||
            state="unknown: the state reader failed"
        case "$state" in
        on | off) state="profiling $state" ;;
        waiting) state="the library waits for Python to start" ;;
        inactive) state="the library is inactive (no CPython found)" ;;
        stood-aside) state="the library stood aside (see the process's stderr)" ;;
        esac
        local switching="no switching signal (started without PYPERFINJECT_SIGNAL)"
        [ -z "$sig" ] || switching="switching signal SIG${sig^^}"
        echo "process $pid: $state; $switching"
        return 0
    fi
    [ -n "$sig" ] ||
        die "process $pid was not started with PYPERFINJECT_SIGNAL set; switching from outside is opt-in (start it with PYPERFINJECT_SIGNAL=USR2)"
    command -v kill >/dev/null || die "kill(1) is missing"
    local value=1
    [ "$action" = off ] && value=0
    # util-linux kill: -q sends the signal with a sigqueue value.
    /bin/kill -q "$value" -s "${sig^^}" "$pid" 2>/dev/null ||
        kill -q "$value" -s "${sig^^}" "$pid" ||
        die "could not signal process $pid"
    note "asked process $pid to switch profiling $action (SIG${sig^^}, value $value)"
}

# ------------------------------------------------------------------ main
main() {
    case "${1:-}" in
    "") usage >&2; exit 125 ;;
    -h | --help) usage; exit 0 ;;
    --version) echo "pyperf-run $(version)"; exit 0 ;;
    --print-lib) find_lib; exit 0 ;;
    --pid) shift; cmd_pid "$@" ;;
    record) shift; cmd_record "$@" ;;
    attach) shift; cmd_attach "$@" ;;
    detach) shift; cmd_detach "$@" ;;
    report) shift; cmd_report "$@" ;;
    hotspot) shift; cmd_hotspot "$@" ;;
    import) shift; cmd_import "$@" ;;
    check) shift; cmd_check "$@" ;;
    *) cmd_exec "$@" ;;
    esac
}

main "$@"
