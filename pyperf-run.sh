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
#                     [-a] [--flamegraph FILE] [--] COMMAND [ARG...]
#       perf record COMMAND with the right options, perf inject --jit, all
#       output in DIR; prints what was written and what to run next.
#   pyperf-run report DIR [--flamegraph FILE] [-- PERF-REPORT-ARGS...]
#       perf report on DIR's injected data, or write a flame graph
#       (FILE.html: perf's flamegraph script; FILE.svg: inferno or FlameGraph).
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
# FLAMEGRAPH_DIR (FlameGraph scripts); the library's PYPERFINJECT_* settings
# pass through unchanged.
set -euo pipefail

readonly PROG=pyperf-run
# Replaced by `make install`; left as is in the source tree.
readonly CONFIGURED_LIBDIR="@LIBDIR@"
readonly CONFIGURED_VERSION="@VERSION@"
readonly DEFAULT_FREQ=999
readonly DWARF_STACK=32768
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
usage() { sed -n '2,34s/^# \{0,1\}//p' "$(script_path)"; }
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
    while [ $# -gt 0 ]; do
        case "$1" in
        --) shift; break ;;
        -o | --output) [ $# -ge 2 ] || usage_error "$1 needs a directory"; out=$2; shift 2 ;;
        -F | --freq) [ $# -ge 2 ] || usage_error "$1 needs a frequency"; freq=$2; shift 2 ;;
        --mode) [ $# -ge 2 ] || usage_error "--mode needs auto, fp or dwarf"; mode=$2; shift 2 ;;
        -e | --event) [ $# -ge 2 ] || usage_error "$1 needs an event"; event=$2; shift 2 ;;
        -a | --all-cpus) sw=1; shift ;;
        --flamegraph) [ $# -ge 2 ] || usage_error "--flamegraph needs a file"; flame=$2; shift 2 ;;
        -*) usage_error "record: unknown option '$1'" ;;
        *) break ;;
        esac
    done
    [ $# -gt 0 ] || usage_error "record: no COMMAND given (pyperf-run record [-o DIR] -- python app.py)"
    [[ $freq =~ ^[1-9][0-9]*$ ]] || usage_error "record: --freq must be a positive integer (Hz), not '$freq'"
    case "$mode" in auto | fp | dwarf) ;; *) usage_error "record: --mode must be auto, fp or dwarf" ;; esac

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
    if [ "$mode" = fp ]; then
        popts+=(--call-graph fp)
    else
        popts+=(--call-graph "dwarf,$DWARF_STACK")
        # DWARF samples carry 32 KiB of stack each: a bigger ring buffer
        # loses fewer of them (the mlock limit allows this only for root).
        [ "$(id -u)" -ne 0 ] || popts+=(-m 8M)
    fi
    [ "$sw" -eq 0 ] || popts+=(-a)

    local shown
    shown=$(printf '%q ' "$@")
    shown=${shown% }
    note "recording $shown"
    note "call graphs: $mode ($why); event $event at $freq Hz; output $out"
    {
        echo "command: $shown"
        echo "date: $(date -Is)"
        echo "mode: $mode ($why)"
        echo "perf record ${popts[*]}"
        echo "library: $lib"
    } >"$out/pyperf-run.txt"

    # Ctrl-C stops the program and perf, and pyperf-run still finishes the
    # job (the trap is not inherited: children get the default action).
    local interrupted=0 rc=0
    trap 'interrupted=1' INT
    "$PERF" record "${popts[@]}" -- env LD_PRELOAD="$(preload_value "$lib")" \
        PYPERFINJECT_DIR="$out" "$@" || rc=$?
    trap - INT
    echo "exit status: $rc" >>"$out/pyperf-run.txt"
    [ -s "$out/perf.data" ] || die "perf record wrote no data (exit status $rc)"
    [ "$interrupted" -eq 0 ] || note "interrupted; processing what was recorded"

    fix_and_inject "$out" "$out/perf.data" "$out" || true
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
        echo "  hotspot $(printf '%q' "$out/perf.jit.data")"
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
    if [ -n "$flame" ]; then
        make_flamegraph "$data" "$flame"
        return
    fi
    exec "$PERF" report -i "$data" "${extra[@]}"
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
        (cd "$tmp" && "$PERF" script -i "$data" -s "$script" -- \
            --format html --template "$template" -o "$file") >"$tmp/log" 2>&1 ||
            { cat "$tmp/log" >&2; die "perf's flamegraph script failed"; }
        note "flame graph: $file (perf's flamegraph script, template $template)"
        ;;
    inferno)
        "$PERF" script -i "$data" 2>"$tmp/log" | inferno-collapse-perf | inferno-flamegraph \
            --title "pyperf-run: $(basename -- "$(dirname -- "$data")")" >"$file" ||
            { cat "$tmp/log" >&2; die "inferno failed"; }
        note "flame graph: $file (inferno)"
        ;;
    flamegraph-pl)
        "$PERF" script -i "$data" 2>"$tmp/log" | "$(fg_pl stackcollapse-perf.pl)" | "$(fg_pl flamegraph.pl)" \
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
    import) shift; cmd_import "$@" ;;
    check) shift; cmd_check "$@" ;;
    *) cmd_exec "$@" ;;
    esac
}

main "$@"
