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
#                     [--flamegraph FILE] [--] COMMAND [ARG...]
#       perf record COMMAND with the right options, perf inject --jit, all
#       output in DIR; prints what was written, how many call chains were
#       cut short, and what to run next.
#   pyperf-run report DIR [--flamegraph FILE] [-- PERF-REPORT-ARGS...]
#       perf report on DIR's injected data, or write a flame graph
#       (FILE.html: perf's flamegraph script; FILE.svg: inferno or FlameGraph).
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
#   pyperf-run --pid PID on|off|status
#       Switch profiling in a running process that was started with
#       PYPERFINJECT_SIGNAL set (opt-in): sends that signal with a sigqueue
#       value (1 on, 0 off). `status` shows the setting found.
#   pyperf-run --print-lib | --help | --version
#
# Exit status: COMMAND's own (exec mode; record returns the profiled
# command's), 125 for an error of pyperf-run itself, 126/127 when COMMAND
# cannot be run / is not found.
# Environment: PYPERFINJECT_LIB (the library to preload), PERF (the perf
# binary), PYPERF_RUN_FLAMEGRAPH_TEMPLATE (d3-flame-graph HTML template),
# FLAMEGRAPH_DIR (FlameGraph scripts), HOTSPOT (the hotspot binary); the
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
    local h
    h="$(script_dir)/libpyperfinject/state.h"
    if [ -f "$h" ]; then
        sed -n 's/^#define PI_VERSION "\(.*\)"/\1 (source tree)/p' "$h"
    else
        echo "unknown (source tree)"
    fi
}

# Absolute path of an existing directory.
abs_dir() { (cd -- "$1" && pwd -P); }

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
            readlink -f -- "$cand"
            return
        fi
    done
    die "libpyperfinject.so not found" \
        "looked in: ${cands[*]}" \
        "build it (make, in the source tree), install it (make install), or set PYPERFINJECT_LIB=/path/to/libpyperfinject.so"
}

# Prints the path of pyperf-run-flamegraph.py: next to this script (source
# tree), or ../lib/pyperfinject next to it or in the libdir it was installed
# for.
find_flamegraph_helper() {
    local dir cand name=pyperf-run-flamegraph.py
    dir=$(script_dir)
    local -a cands=("$dir/$name" "$dir/../lib/pyperfinject/$name")
    [[ $CONFIGURED_LIBDIR == @* ]] || cands+=("$CONFIGURED_LIBDIR/pyperfinject/$name")
    for cand in "${cands[@]}"; do
        if [ -f "$cand" ]; then
            readlink -f -- "$cand"
            return 0
        fi
    done
    return 1
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

readonly PROBE_CODE='
import sys, platform
fp = "no"
ft = "no"
try:
    import sysconfig
    flags = " ".join(str(sysconfig.get_config_var(k) or "") for k in
                     ("CONFIGURE_CFLAGS", "CFLAGS", "PY_CFLAGS", "PY_CFLAGS_NODIST", "OPT"))
    last_on = flags.rfind("-fno-omit-frame-pointer")
    last_off = flags.rfind("-fomit-frame-pointer")
    if last_on >= 0 and last_on > last_off:
        fp = "yes"
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        ft = "yes"
except Exception:
    pass
sys.stdout.write("%s\t%d.%d\t%s\t%s\t%s\n" % (platform.python_implementation().lower(),
                 sys.version_info[0], sys.version_info[1], fp, ft, sys.executable))
'

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
    if ! out=$(env -u LD_PRELOAD timeout 60 "$cand" -E -s -S -c "$PROBE_CODE" 2>&1 </dev/null); then
        PY_WHY="$cand did not answer as a Python interpreter: ${out:0:300}"
        return 1
    fi
    IFS=$'\t' read -r PY_IMPL PY_VER PY_FP PY_FT PY_EXE <<<"$(tail -n 1 <<<"$out")"
    [ -n "$PY_EXE" ] || PY_EXE=$cand
    return 0
}

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
    if [ "$PY_FT" = yes ]; then
        die "$PY_EXE is a free-threaded (no-GIL) build of CPython $PY_VER, which libpyperfinject does not support" \
            "use the regular build of the same version"
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
    local lib
    lib=$(find_lib)
    if [ -n "$dir" ]; then
        local ns sub
        mkdir -p -- "$dir" || die "cannot create the output directory $dir"
        # One subdirectory per PID namespace: containers sharing one mounted
        # directory all see themselves as pid 1.
        ns=$(readlink /proc/self/ns/pid 2>/dev/null || true)
        ns=${ns//[!0-9]/}
        sub=$dir
        [ -z "$ns" ] || sub="$dir/pidns-$ns"
        mkdir -p -- "$sub" || die "cannot create $sub"
        PYPERFINJECT_DIR=$(abs_dir "$sub")
        export PYPERFINJECT_DIR
    fi
    require_command "$1"
    LD_PRELOAD=$(preload_value "$lib")
    export LD_PRELOAD
    exec -- "$@"
}

# ------------------------------------------------------------ record mode
cmd_record() {
    local out="" freq=$DEFAULT_FREQ mode=auto event=cpu-clock sw=0 flame=""
    local stack=$DWARF_STACK max_stack=$FP_MAX_STACK
    while [ $# -gt 0 ]; do
        case "$1" in
        --) shift; break ;;
        -o | --output) [ $# -ge 2 ] || usage_error "$1 needs a directory"; out=$2; shift 2 ;;
        -F | --freq) [ $# -ge 2 ] || usage_error "$1 needs a frequency"; freq=$2; shift 2 ;;
        --mode) [ $# -ge 2 ] || usage_error "--mode needs auto, fp or dwarf"; mode=$2; shift 2 ;;
        -e | --event) [ $# -ge 2 ] || usage_error "$1 needs an event"; event=$2; shift 2 ;;
        --stack-size) [ $# -ge 2 ] || usage_error "--stack-size needs a size in bytes"; stack=$2; shift 2 ;;
        --max-stack) [ $# -ge 2 ] || usage_error "--max-stack needs a number of frames"; max_stack=$2; shift 2 ;;
        -a | --all-cpus) sw=1; shift ;;
        --flamegraph) [ $# -ge 2 ] || usage_error "--flamegraph needs a file"; flame=$2; shift 2 ;;
        -*) usage_error "record: unknown option '$1'" ;;
        *) break ;;
        esac
    done
    [ $# -gt 0 ] || usage_error "record: no COMMAND given (pyperf-run record [-o DIR] -- python app.py)"
    [[ $freq =~ ^[1-9][0-9]*$ ]] || usage_error "record: --freq must be a positive integer (Hz), not '$freq'"
    case "$mode" in auto | fp | dwarf) ;; *) usage_error "record: --mode must be auto, fp or dwarf" ;; esac
    { [[ $stack =~ ^[1-9][0-9]{0,4}$ ]] && [ "$stack" -le "$DWARF_STACK_MAX" ]; } ||
        usage_error "record: --stack-size must be a number of bytes from 8 to $DWARF_STACK_MAX (perf's limit), not '$stack'"
    { [[ $max_stack =~ ^[1-9][0-9]{0,3}$ ]] && [ "$max_stack" -le "$FP_MAX_STACK_LIMIT" ]; } ||
        usage_error "record: --max-stack must be a number of frames from 1 to $FP_MAX_STACK_LIMIT, not '$max_stack'"

    local lib
    lib=$(find_lib)
    require_perf "$event" "$sw"
    require_command "$1"

    local why
    if probe_python "$@"; then
        require_supported_python
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
        fi
    else
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

    local -a popts=(-F "$freq" -k CLOCK_MONOTONIC -e "$event" -o "$out/perf.data")
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
    [ "$sw" -eq 0 ] || popts+=(-a)

    local shown
    shown=$(printf '%q ' "$@")
    shown=${shown% }
    note "recording $shown"
    note "call graphs: $mode ($why); event $event at $freq Hz; output $out"
    if [ "$mode" = fp ]; then
        raise_max_stack "$max_stack"
        depth="max-stack: $MAX_STACK_USED native frames (kernel.perf_event_max_stack)"
    else
        depth="stack-size: $stack bytes"
    fi
    {
        echo "command: $shown"
        echo "date: $(date -Is)"
        echo "mode: $mode ($why)"
        echo "perf record ${popts[*]}"
        echo "$depth"
        echo "library: $lib"
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
    trap 'interrupted=1' INT
    LD_PRELOAD="$(preload_value "$lib")" PYPERFINJECT_DIR="$out" \
        "$PERF" record "${popts[@]}" -- "$@" || rc=$?
    trap - INT
    restore_max_stack
    echo "exit status: $rc" >>"$out/pyperf-run.txt"
    [ -s "$out/perf.data" ] || die "perf record wrote no data (exit status $rc)"
    [ "$interrupted" -eq 0 ] || note "interrupted; processing what was recorded"

    fix_and_inject "$out" "$out/perf.data" "$out" || true
    local checked=$out/perf.jit.data
    [ -f "$checked" ] || checked=$out/perf.data
    check_chains "$out" "$checked" save
    report_written "$out" "$@"
    if [ -n "$flame" ]; then
        make_flamegraph "$(data_of "$out")" "$flame"
    fi
    [ "$rc" -eq 0 ] || note "$1 exited with status $rc"
    exit "$rc"
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
        [ ! -f "$out/perf.jit.data" ] || echo "  perf.jit.data   the recording with Python function names (use this one)"
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

# Makes OUT/perf.jit.data from DATA: first rewrites the records of processes
# that ran in another PID namespace (their files are found under SEARCH),
# then perf inject --jit. Returns 1 if only DATA is usable.
fix_and_inject() {
    local out=$1 data=$2 search=$3 py input fixed
    input=$data
    fixed="$out/.perf.host.data"
    rm -f -- "$fixed"
    if py=$(helper_python); then
        local rc=0
        env -u LD_PRELOAD "$py" -I -c "$HOST_FIX_CODE" "$data" "$search" "$out/host-pids" "$fixed" || rc=$?
        case "$rc" in
        0) input=$fixed ;;
        3) ;; # nothing to change
        *) warn "could not adapt the recording to processes from other PID namespaces (see above)" ;;
        esac
    else
        warn "no python3 here to adapt the recording to processes from other PID namespaces; if there were such processes their Python names will be missing"
    fi
    local err
    if ! err=$(cd -- "$out" && "$PERF" inject --jit -i "$input" -o "$out/perf.jit.data" 2>&1); then
        rm -f -- "$fixed" "$out/perf.jit.data"
        warn "perf inject --jit failed; only perf.data (names from the perf-*.map files, innermost frames in DWARF mode) is available:"
        printf '%s\n' "$err" >&2
        return 1
    fi
    rm -f -- "$fixed"
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

cmd_report() {
    local dir="" flame=""
    local -a extra=()
    while [ $# -gt 0 ]; do
        case "$1" in
        --) shift; extra=("$@"); break ;;
        --flamegraph) [ $# -ge 2 ] || usage_error "--flamegraph needs a file"; flame=$2; shift 2 ;;
        --flamegraph=*) flame=${1#--flamegraph=}; shift ;;
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
    report_chains "$dir" "$data"
    if [ -n "$flame" ]; then
        make_flamegraph "$data" "$flame"
        return
    fi
    # The arguments after -- come last: a --max-stack there wins.
    exec "$PERF" report -i "$data" --max-stack "$REPORT_MAX_STACK" "${extra[@]}"
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
# Tools, each a maintained one: perf's own flamegraph script with the
# d3-flame-graph HTML template, inferno, FlameGraph. Sets FG_* and a
# description of what is missing.
FG_MISSING=() FG_TOOL="" FG_SCRIPT="" D3_TEMPLATE=""
# Sets D3_TEMPLATE to the d3-flame-graph template, if there is one.
find_d3_template() {
    [ -z "$D3_TEMPLATE" ] || return 0
    local c root rel="d3-flame-graph/dist/templates/$D3_TEMPLATE_NAME"
    local -a cands=()
    [ -z "${PYPERF_RUN_FLAMEGRAPH_TEMPLATE:-}" ] || cands+=("$PYPERF_RUN_FLAMEGRAPH_TEMPLATE")
    cands+=("/usr/share/d3-flame-graph/$D3_TEMPLATE_NAME"
        "${XDG_CACHE_HOME:-${HOME:-/nonexistent}/.cache}/pyperfinject/npm/node_modules/$rel")
    for c in "${cands[@]}"; do
        if [ -f "$c" ]; then
            D3_TEMPLATE=$c
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

# Sets FG_SCRIPT to perf's flamegraph.py if this perf can run it.
perf_flamegraph_script() {
    [ -z "$FG_SCRIPT" ] || return 0
    local exec_path opts
    exec_path=$("$PERF" --exec-path 2>/dev/null) || return 1
    [ -f "$exec_path/scripts/python/flamegraph.py" ] || return 1
    opts=$("$PERF" version --build-options 2>/dev/null) || return 1
    grep -qE 'libpython: +\[ on' <<<"$opts" || return 1
    FG_SCRIPT="$exec_path/scripts/python/flamegraph.py"
}

# Sets FG_TOOL to the first available tool among $@ (perf-d3 inferno
# flamegraph-pl) and FG_MISSING to why each one before it is unavailable.
pick_flamegraph_tool() {
    local t
    FG_MISSING=()
    FG_TOOL=""
    for t in "$@"; do
        case "$t" in
        perf-d3)
            if ! perf_flamegraph_script; then
                FG_MISSING+=("perf's flamegraph script: this perf has no scripts/python/flamegraph.py or no Python scripting support")
            elif ! find_d3_template; then
                FG_MISSING+=("perf's flamegraph script (HTML): the d3-flame-graph template $D3_TEMPLATE_NAME is missing; install it with: npm install -g $D3_TEMPLATE_PKG (Fedora: dnf install js-d3-flame-graph), or set PYPERF_RUN_FLAMEGRAPH_TEMPLATE=/path/to/$D3_TEMPLATE_NAME")
            else
                FG_TOOL=perf-d3
                return 0
            fi
            ;;
        inferno)
            if command -v inferno-collapse-perf >/dev/null 2>&1 && command -v inferno-flamegraph >/dev/null 2>&1; then
                FG_TOOL=inferno
                return 0
            fi
            FG_MISSING+=("inferno (SVG): inferno-collapse-perf and inferno-flamegraph are not on PATH; install with: cargo install inferno")
            ;;
        flamegraph-pl)
            if fg_pl stackcollapse-perf.pl >/dev/null && fg_pl flamegraph.pl >/dev/null; then
                FG_TOOL=flamegraph-pl
                return 0
            fi
            FG_MISSING+=("FlameGraph (SVG): stackcollapse-perf.pl and flamegraph.pl are neither on PATH nor in \$FLAMEGRAPH_DIR; get them from https://github.com/brendangregg/FlameGraph and set FLAMEGRAPH_DIR")
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

make_flamegraph() {
    local data file=$2
    local -a order
    data=$(readlink -f -- "$1")
    case "$file" in
    *.svg) order=(inferno flamegraph-pl) ;;
    *.html | *.htm) order=(perf-d3) ;;
    *) order=(perf-d3 inferno flamegraph-pl) ;;
    esac
    if ! pick_flamegraph_tool "${order[@]}"; then
        local hint="name the file .html or .svg to choose a format"
        case "$file" in
        *.svg) hint="or ask for an HTML flame graph: --flamegraph ${file%.svg}.html" ;;
        *.html | *.htm) hint="or ask for an SVG flame graph: --flamegraph ${file%.*}.svg" ;;
        esac
        die "no flame graph tool for $file:" "${FG_MISSING[@]}" "$hint"
    fi
    local dir
    dir=$(dirname -- "$file")
    [ -d "$dir" ] || die "the directory of $file does not exist"
    file="$(abs_dir "$dir")/$(basename -- "$file")"
    local tmp
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/pyperf-run.XXXXXX")
    # shellcheck disable=SC2064 # expand now: tmp is local
    trap "rm -rf -- '$tmp'" EXIT
    case "$FG_TOOL" in
    perf-d3)
        local script=$FG_SCRIPT template=$D3_TEMPLATE
        # flamegraph.py reads the header of ./perf.data for its "Context" pane.
        ln -s -- "$(readlink -f -- "$data")" "$tmp/perf.data"
        # Through pyperf-run-flamegraph.py when it is here: whole chains are
        # too deep for the script's JSON encoding at Python's default limit.
        local -a run=(-s "$script" --)
        local deep
        if deep=$(find_flamegraph_helper); then run=(-s "$deep" -- "$script"); fi
        (cd "$tmp" && "$PERF" script -i "$data" --max-stack "$REPORT_MAX_STACK" "${run[@]}" \
            --format html --template "$template" -o "$file") >"$tmp/log" 2>&1 ||
            { cat "$tmp/log" >&2; die "perf's flamegraph script failed"; }
        note "flame graph: $file (perf's flamegraph script, template $template)"
        ;;
    inferno)
        "$PERF" script -i "$data" --max-stack "$REPORT_MAX_STACK" 2>"$tmp/log" | inferno-collapse-perf | inferno-flamegraph \
            --title "pyperf-run: $(basename -- "$(dirname -- "$data")")" >"$file" ||
            { cat "$tmp/log" >&2; die "inferno failed"; }
        note "flame graph: $file (inferno)"
        ;;
    flamegraph-pl)
        "$PERF" script -i "$data" --max-stack "$REPORT_MAX_STACK" 2>"$tmp/log" | "$(fg_pl stackcollapse-perf.pl)" | "$(fg_pl flamegraph.pl)" \
            --title "pyperf-run: $(basename -- "$(dirname -- "$data")")" >"$file" ||
            { cat "$tmp/log" >&2; die "FlameGraph failed"; }
        note "flame graph: $file (FlameGraph)"
        ;;
    esac
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
    if perf_flamegraph_script && find_d3_template; then
        echo "flame graphs: HTML with perf's flamegraph script ($D3_TEMPLATE)"
        any=1
    fi
    if command -v inferno-flamegraph >/dev/null 2>&1; then echo "flame graphs: SVG with inferno"; any=1; fi
    if fg_pl flamegraph.pl >/dev/null; then echo "flame graphs: SVG with FlameGraph"; any=1; fi
    for m in perf-d3 inferno flamegraph-pl; do
        pick_flamegraph_tool "$m" || echo "missing:      ${FG_MISSING[0]}"
    done
    [ "$any" -eq 1 ] || echo "flame graphs: NONE available (perf's flamegraph script needs the d3-flame-graph template: npm install -g $D3_TEMPLATE_PKG)"
    if [ $# -gt 0 ]; then
        if probe_python "$@"; then
            local verdict
            verdict=$( (require_supported_python) 2>&1) || { echo "interpreter:  UNSUPPORTED: ${verdict#*error: }"; return 1; }
            if [ "$PY_FP" = yes ]; then
                echo "interpreter:  $PY_EXE: CPython $PY_VER with frame pointers -> record uses --call-graph fp"
            else
                echo "interpreter:  $PY_EXE: CPython $PY_VER without frame pointers -> record uses --call-graph dwarf,$DWARF_STACK"
            fi
        else
            echo "interpreter:  $PY_WHY -> record uses --call-graph dwarf,$DWARF_STACK"
        fi
    fi
    return "$ok"
}

# ---------------------------------------------------- host-side fix (python)
# Arguments: PERF_DATA SEARCH_DIR HOST_DIR OUT_DATA. For every mmap of a
# jit-N.dump by host process P != N (a process in another PID namespace)
# that is no longer running there, finds the dump under SEARCH_DIR (the
# longest matching path suffix), writes HOST_DIR/jit-P.dump with P in its
# header and records, copies perf-N.map to HOST_DIR/perf-P.map and
# /tmp/perf-P.map, and writes OUT_DATA: PERF_DATA with those mmaps renamed
# (perf 6.1 inject only accepts jit-PID.dump of the recorded pid).
# Exit status: 0 OUT_DATA written, 3 nothing to change, 1 error.
# shellcheck disable=SC2016 # python code, not shell
readonly HOST_FIX_CODE='
import os, re, shutil, struct, sys, tempfile

PERF_RECORD_MMAP, PERF_RECORD_MMAP2, PERF_RECORD_COMPRESSED = 1, 10, 81
HEADER_AUXTRACE = 18
JIT_MAGIC = 0x4A695444
DUMP_RE = re.compile(r"jit-(\d+)\.dump$")

def say(msg):
    sys.stderr.write("pyperf-run: %s\n" % msg)

def fail(msg):
    say("error: " + msg)
    sys.exit(1)

def records(f, off, size):
    pos, end = off, off + size
    while pos + 8 <= end:
        f.seek(pos)
        hdr = f.read(8)
        rtype, misc, rsize = struct.unpack("<IHH", hdr)
        if rsize < 8:
            fail("corrupt perf.data record at offset %d" % pos)
        yield pos, rtype, rsize
        pos += rsize

def mmap_name(rtype, body):
    off = 32 if rtype == PERF_RECORD_MMAP else 64
    end = body.find(b"\0", off)
    if end < 0:
        return None, off
    return body[off:end], off

def live_nspid(pid):
    try:
        with open("/proc/%d/status" % pid) as st:
            for line in st:
                if line.startswith("NStgid:"):
                    return int(line.split()[-1])
    except OSError:
        return None
    return None

def best_match(cands, container_path):
    want = container_path.strip("/").split("/")
    scored = []
    for c in cands:
        have = os.path.realpath(c).strip("/").split("/")
        n = 0
        while n < min(len(want), len(have)) and want[-1 - n] == have[-1 - n]:
            n += 1
        scored.append((n, c))
    scored.sort(reverse=True)
    if len(scored) > 1 and scored[0][0] == scored[1][0]:
        return None, [c for n, c in scored if n == scored[0][0]]
    return scored[0][1], None

def rewrite_dump(src, dst, pid):
    with open(src, "rb") as f:
        data = bytearray(f.read())
    if len(data) < 40 or struct.unpack_from("<I", data, 0)[0] != JIT_MAGIC:
        fail("%s is not a little-endian jitdump file" % src)
    hsize = struct.unpack_from("<I", data, 8)[0]
    struct.pack_into("<I", data, 20, pid)
    pos = hsize
    while pos + 16 <= len(data):
        rid, rsize = struct.unpack_from("<II", data, pos)
        if rsize < 16 or pos + rsize > len(data):
            break
        if rid in (0, 1):  # JIT_CODE_LOAD, JIT_CODE_MOVE: pid, tid
            struct.pack_into("<II", data, pos + 16, pid, pid)
        pos += rsize
    write_file(dst, bytes(data[:pos]), os.stat(src).st_mode & 0o777)

def write_file(dst, data, mode):
    d = os.path.dirname(dst)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".pyperf-run.")
    try:
        os.fchmod(fd, mode)
        os.write(fd, data)
    finally:
        os.close(fd)
    os.rename(tmp, dst)

def main(data_in, search, host_dir, data_out):
    if os.path.isdir(data_in):
        fail("%s is a directory (perf record --threads); record without it" % data_in)
    host_dir = os.path.abspath(host_dir)
    dumps = {}
    for root, dirs, files in os.walk(search):
        if os.path.abspath(root) == host_dir:
            dirs[:] = []
            continue
        for name in files:
            if DUMP_RE.match(name):
                dumps.setdefault(name, []).append(os.path.join(root, name))
    with open(data_in, "rb") as f:
        head = f.read(104)
        if len(head) < 104 or head[:8] != b"PERFILE2":
            fail("%s is not a perf.data file (or was written to a pipe)" % data_in)
        hsize = struct.unpack_from("<Q", head, 8)[0]
        f.seek(0)
        head = f.read(hsize)
        data_off, data_size = struct.unpack_from("<QQ", head, 40)
        if data_size == 0:
            fail("%s has no data section (perf record did not finish?)" % data_in)
        bitmap = int.from_bytes(head[72:hsize], "little")
        changes = {}
        done = {}
        for pos, rtype, rsize in records(f, data_off, data_size):
            if rtype == PERF_RECORD_COMPRESSED:
                fail("%s is compressed (perf record -z); record without -z" % data_in)
            if rtype not in (PERF_RECORD_MMAP, PERF_RECORD_MMAP2):
                continue
            f.seek(pos + 8)
            body = f.read(rsize - 8)
            name, off = mmap_name(rtype, body)
            if not name:
                continue
            path = name.decode("utf-8", "surrogateescape")
            m = DUMP_RE.search(os.path.basename(path))
            if not m or not os.path.basename(path) == m.group(0):
                continue
            pid = struct.unpack_from("<I", body, 0)[0]
            nspid = int(m.group(1))
            if pid == nspid or pid == 0:
                continue
            if live_nspid(pid) == nspid:
                say("host pid %d (pid %d in its namespace) is still running: perf finds its files itself" % (pid, nspid))
                continue
            key = (pid, path)
            if key not in done:
                cands = dumps.get(os.path.basename(path), [])
                if not cands:
                    say("warning: no copy of %s (host pid %d) under %s: its Python names stay missing" % (path, pid, search))
                    done[key] = None
                    continue
                src, tie = best_match(cands, path)
                if src is None:
                    say("warning: %s (host pid %d) matches several files: %s; give each container its own directory" % (path, pid, ", ".join(tie)))
                    done[key] = None
                    continue
                os.makedirs(host_dir, exist_ok=True)
                dst = os.path.join(host_dir, "jit-%d.dump" % pid)
                rewrite_dump(src, dst, pid)
                srcmap = os.path.join(os.path.dirname(src), "perf-%d.map" % nspid)
                if os.path.isfile(srcmap):
                    with open(srcmap, "rb") as mf:
                        mapdata = mf.read()
                    mode = os.stat(srcmap).st_mode & 0o777
                    write_file(os.path.join(host_dir, "perf-%d.map" % pid), mapdata, mode)
                    if os.path.exists("/proc/%d" % pid):
                        say("host pid %d is in use again: /tmp/perf-%d.map left alone" % (pid, pid))
                    else:
                        write_file("/tmp/perf-%d.map" % pid, mapdata, mode)
                say("namespace pid %d (%s) -> host pid %d" % (nspid, src, pid))
                done[key] = dst
            if done[key]:
                changes[pos] = (rsize, off, body, done[key].encode("utf-8", "surrogateescape"))
        if not changes:
            return 3
        if bitmap >> HEADER_AUXTRACE & 1:
            fail("%s has AUX area data, whose index cannot be moved" % data_in)
        nfeat = bin(bitmap).count("1")
        out = open(data_out + ".tmp", "wb")
        with out:
            f.seek(0)
            out.write(f.read(data_off))
            delta = 0
            for pos, rtype, rsize in records(f, data_off, data_size):
                if pos in changes:
                    _, off, body, newname = changes[pos]
                    oldname_len = body.find(b"\0", off) - off
                    tail = body[off + ((oldname_len + 1 + 7) & ~7):]
                    padded = newname + b"\0" * (((len(newname) + 1 + 7) & ~7) - len(newname))
                    newbody = body[:off] + padded + tail
                    if len(newbody) + 8 > 0xFFFF:
                        fail("path too long: %s" % newname)
                    f.seek(pos)
                    rt, misc, _ = struct.unpack("<IHH", f.read(8))
                    out.write(struct.pack("<IHH", rt, misc, len(newbody) + 8))
                    out.write(newbody)
                    delta += len(newbody) + 8 - rsize
                else:
                    f.seek(pos)
                    out.write(f.read(rsize))
            f.seek(data_off + data_size)
            table = f.read(16 * nfeat)
            for i in range(nfeat):
                foff, fsize = struct.unpack_from("<QQ", table, 16 * i)
                if foff < data_off + data_size:
                    fail("unexpected perf.data layout (feature section before the data)")
                out.write(struct.pack("<QQ", foff + delta, fsize))
            shutil.copyfileobj(f, out)
            out.seek(48)
            out.write(struct.pack("<Q", data_size + delta))
    os.rename(data_out + ".tmp", data_out)
    return 0

sys.exit(main(*sys.argv[1:5]))
'

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
    mapfile -t lines < <(env -u LD_PRELOAD "$py" -I -c "$CHAIN_CHECK_CODE" "$PERF" "$data" \
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

# Arguments: PERF DATA MAX_STACK KERNEL_MAX_STACK SAMPLES PID... Reads the
# samples' user stack copies (size, filled size) and callchain lengths from
# DATA, unwinds up to SAMPLES samples of the PIDs with perf script (time
# slices spread over the recording) and prints the verdict lines.
# shellcheck disable=SC2016 # python code, not shell
readonly CHAIN_CHECK_CODE='
import mmap, os, re, struct, subprocess, sys

SAMPLE, LOST, LOST_SAMPLES = 9, 2, 13
S_IP, S_TID, S_TIME, S_ADDR, S_READ, S_CALLCHAIN, S_ID, S_CPU = 1, 2, 4, 8, 16, 32, 64, 128
S_PERIOD, S_STREAM_ID, S_RAW, S_BRANCH, S_REGS_USER, S_STACK_USER = 256, 512, 1024, 2048, 4096, 8192
S_IDENTIFIER = 1 << 16
CONTEXT_MIN = 0xFFFFFFFFFFFFF001  # callchain context markers
KERNEL_MIN = 0xFFFF800000000000
# The outermost frames of a process (_start, the loader, libc) or a thread.
ENTRY = re.compile(r"^(_start|_dl_start|_dl_start_user|__libc_start_main\S*|__libc_start_call_main|"
                   r"start_thread|thread_start|clone3?|__clone3?|__GI___clone3?|libc_start_main_stage2)$")


def samples(path, pids):
    """Per sample of PIDS, keyed (tid, time): ("stack", copy full, size) or
    ("frames", frame limit reached, limit); their count, the first and last
    sample time, and the samples perf lost."""
    with open(path, "rb") as f:
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    if len(m) < 104 or m[:8] != b"PERFILE2":
        raise ValueError("not a perf.data file")
    # Each entry of the attrs section: perf_event_attr, then its ids section.
    entry, a_off, a_size, d_off, d_size = struct.unpack_from("<QQQQQ", m, 16)
    attrs, by_id, pos = [], {}, a_off
    while entry > 16 and pos + entry <= a_off + a_size:
        stype = struct.unpack_from("<Q", m, pos + 24)[0]
        bst, regs = struct.unpack_from("<QQ", m, pos + 72)
        maxst = struct.unpack_from("<H", m, pos + 108)[0] if entry - 16 >= 110 else 0
        a = (stype, bst, bin(regs).count("1"), maxst)
        attrs.append(a)
        ids_off, ids_size = struct.unpack_from("<QQ", m, pos + entry - 16)
        for i in range(ids_size // 8):
            by_id[struct.unpack_from("<Q", m, ids_off + 8 * i)[0]] = a
        pos += entry
    if not attrs or any(a[0] & S_READ for a in attrs):
        raise ValueError("unexpected sample format")
    mixed = len(set(a[0] for a in attrs)) > 1
    if mixed and not all(a[0] & S_IDENTIFIER for a in attrs):
        raise ValueError("several sample formats")
    out, n, lost, first, last = {}, 0, 0, None, 0
    pos, end = d_off, d_off + d_size
    while pos + 8 <= end:
        rtype, _, rsize = struct.unpack_from("<IHH", m, pos)
        if rsize < 8:
            break
        if rtype == LOST:
            lost += struct.unpack_from("<Q", m, pos + 16)[0]
        elif rtype == LOST_SAMPLES:
            lost += struct.unpack_from("<Q", m, pos + 8)[0]
        elif rtype == SAMPLE:
            p = pos + 8
            a = by_id.get(struct.unpack_from("<Q", m, p)[0]) if mixed else attrs[0]
            if a is None or not a[0] & S_TID:
                pos += rsize
                continue
            stype, bst, nregs, maxst = a
            p += 8 * bool(stype & S_IDENTIFIER) + 8 * bool(stype & S_IP)
            pid, tid = struct.unpack_from("<II", m, p)
            p += 8
            t = 0
            if stype & S_TIME:
                t = struct.unpack_from("<Q", m, p)[0]
                p += 8
            first = t if first is None else min(first, t)
            last = max(last, t)
            if pid not in pids:
                pos += rsize
                continue
            n += 1
            for bit in (S_ADDR, S_ID, S_STREAM_ID, S_CPU, S_PERIOD):
                p += 8 * bool(stype & bit)
            nframes = 0
            if stype & S_CALLCHAIN:
                nr = struct.unpack_from("<Q", m, p)[0]
                nframes = sum(1 for ip in struct.unpack_from("<%dQ" % nr, m, p + 8) if ip < CONTEXT_MIN)
                p += 8 + 8 * nr
            if stype & S_RAW:
                p += 4 + struct.unpack_from("<I", m, p)[0]
            if stype & S_BRANCH:
                nr = struct.unpack_from("<Q", m, p)[0]
                p += 8 + 8 * bool(bst & (1 << 17)) + 24 * nr
            if stype & S_REGS_USER:
                abi = struct.unpack_from("<Q", m, p)[0]
                p += 8 + (8 * nregs if abi else 0)
            if stype & S_STACK_USER:
                size = struct.unpack_from("<Q", m, p)[0]
                full = size > 0 and struct.unpack_from("<Q", m, p + 8 + size)[0] >= size
                out[(tid, t)] = ("stack", full, size)
            elif stype & S_CALLCHAIN:
                limit = maxst or KMAX
                out[(tid, t)] = ("frames", nframes >= limit, limit)
        pos += rsize
    return out, n, first or 0, last, lost


def chains(data, pids, slices):
    cmd = [PERF, "script", "-i", data, "--max-stack", MAX_STACK, "--no-inline", "--ns",
           "-F", "tid,time,ip,sym,dso", "--pid", ",".join(str(p) for p in pids)]
    if slices:
        cmd += ["--time", slices]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            cwd=os.path.dirname(data))
    key, frames = None, []
    for raw in proc.stdout:
        line = raw.decode("utf-8", "replace").rstrip("\n")
        if not line.strip():
            if key is not None:
                yield key, frames
            key, frames = None, []
        elif line[0] == "\t":
            if key is None:
                continue
            addr, _, rest = line.strip().partition(" ")
            sym, _, dso = rest.rpartition(" (")
            try:
                frames.append((int(addr, 16), sym.strip(), dso[:-1]))
            except ValueError:
                pass
        else:
            try:
                tid, when = line.split()[:2]
                sec, _, ns = when.rstrip(":").partition(".")
                key, frames = (int(tid), int(sec) * 1000000000 + int(ns.ljust(9, "0"))), []
            except ValueError:
                key = None
    if key is not None:
        yield key, frames
    proc.wait()


def whole(frames):
    """True if the chain reaches an entry frame, None without user frames."""
    user = [f for f in frames if f[0] < KERNEL_MIN]
    if not user:
        return None
    if any(ENTRY.match(f[1]) for f in user):
        return True
    # A libc without symbols: its entry functions show as [unknown], and a
    # frame-pointer walk may go on into the stack above them.
    known = [f for f in user if f[2] != "[unknown]"]
    return bool(known) and known[-1][1] == "[unknown]" and \
        re.match(r"libc[.-]", os.path.basename(known[-1][2])) is not None


def pct(a, b):
    return "%.1f%%" % (100.0 * a / b)


def main(data, pids):
    data = os.path.abspath(data)
    info, n, first, last, lost = samples(data, pids)
    slices = ""
    if n > CAP:
        # CAP samples in ten time slices spread over the recording
        w = 10.0 * CAP / n
        slices = ",".join("%.3f%%-%.3f%%" % (10 * i, 10 * i + w) for i in range(10))
    total = cut = 0
    causes = {"stack": [], "frames": [], "other": 0}
    size = 0
    for key, frames in chains(data, pids, slices):
        w = whole(frames)
        if w is None:
            continue
        total += 1
        if w:
            continue
        cut += 1
        kind, full, val = info.get(key, ("", False, 0))
        if full:
            size = val
            causes[kind].append(sum(1 for f in frames if f[1].startswith("py::")))
        else:
            causes["other"] += 1
    if total:
        seen = "%d samples" % total if not slices else "%d checked samples (of %d)" % (total, n)
        if not cut:
            print("whole chains: all %s of the Python processes reach the first frame of their process or thread" % seen)
        else:
            parts = []
            for kind, what in (("stack", "stack copy of %d KiB full" % ((size + 1023) // 1024)),
                               ("frames", "frame limit of %d native frames reached" % size)):
                depths = sorted(causes[kind])
                if depths:
                    share = "" if len(depths) == cut else " in " + pct(len(depths), total)
                    parts.append("%s%s: deeper than ~%d Python frames" % (what, share, depths[len(depths) // 2]))
            if causes["other"]:
                share = "" if causes["other"] == cut else " in " + pct(causes["other"], total)
                parts.append("unwinding stopped early%s: code without unwind information or frame pointer" % share)
            print("%s of %s have a cut chain (%s); see docs/usage.md" % (pct(cut, total), seen, "; ".join(parts)))
    if lost:
        print("perf lost %d samples (its ring buffer was full); see docs/usage.md" % lost)


PERF, MAX_STACK, KMAX, CAP = sys.argv[1], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
main(sys.argv[2], set(int(p) for p in sys.argv[6:]))
'

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
    local sig
    sig=$(tr '\0' '\n' <"/proc/$pid/environ" | sed -n 's/^PYPERFINJECT_SIGNAL=//p' | tail -n 1)
    case "${sig,,}" in
    "" | none | 0)
        die "process $pid was not started with PYPERFINJECT_SIGNAL set; switching from outside is opt-in (start it with PYPERFINJECT_SIGNAL=USR2)" ;;
    esac
    sig=${sig#[Ss][Ii][Gg]}
    if ! grep -q 'libpyperfinject' "/proc/$pid/maps" 2>/dev/null; then
        die "process $pid has no libpyperfinject loaded"
    fi
    if [ "$action" = status ]; then
        echo "process $pid: libpyperfinject loaded, switching signal SIG${sig^^}"
        return 0
    fi
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
    report) shift; cmd_report "$@" ;;
    hotspot) shift; cmd_hotspot "$@" ;;
    import) shift; cmd_import "$@" ;;
    check) shift; cmd_check "$@" ;;
    *) cmd_exec "$@" ;;
    esac
}

main "$@"
