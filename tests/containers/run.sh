#!/usr/bin/env bash
# tests/containers/run.sh - docs/containers.md's recipe on a real engine:
# rootful podman with runc, the documented Containerfile built as written
# (from a local Debian base image: tests/provision/container-image.sh), perf
# recording the whole machine from the host, pyperf-run import after the fact.
#
# Usage: run.sh [--smoke] [--only SUBSTRING]
#   (--smoke is accepted for run-all.sh; every case runs either way)
#
# Each case prints, for every container it ran, "S of N samples": the
# samples of its host pid whose chain shows py::foo called from py::bar
# called from py::main, out of all samples of that pid (its runc and
# pyperf-run start-up included), and the exit statuses it checked.
# Where the engine cannot start a container, every case is a SKIP with the
# engine's own error. Artifacts: build/containers-test/. The last line is
# "containers: N passed, N failed, N skipped".
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
ART=$ROOT/build/containers-test
W=$ROOT/pyperf-run.sh
APP=localhost/pyperfinject-test-app
SKIP_RC=77
export CONTAINERS_CONF=$HERE/containers.conf
# shellcheck source=tests/tools/tally.sh
. "$ROOT/tests/tools/tally.sh"

only=""
while [ $# -gt 0 ]; do
    case "$1" in
    --smoke) shift ;;
    --only) only=$2; shift 2 ;;
    -h | --help) sed -n '2,17s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done

# ------------------------------------------------------------ helpers
# (used inside a case, which runs in a subshell with set -e; $T is its dir)
skip_case() { echo "SKIP-REASON: $*"; exit "$SKIP_RC"; }
die_case() { echo "FAILED: $*"; exit 1; }
result() { echo "RESULT: $*"; }

# A fresh host directory for /profile, writable by any container user.
profile_dir() {
    local d
    d=$(mktemp -d "$T/profile.XXXXXX")
    chmod 1777 "$d"
    echo "$d"
}

# The frames of every sample of host pid PID in OUT's recording, innermost
# first, one sample a line; through OUT's build-id cache, as pyperf-run
# report reads it.
chains() {
    perf --buildid-dir "$1/.debug" script --no-inline -i "$1/perf.jit.data" -F pid,ip,sym \
        --pid "$2" 2>/dev/null | awk -v P="$2" '
            NF == 1 && $1 == P { if (s != "") print s; s = ""; next }
            NF >= 2 { s = s "|" $2 }
            END { if (s != "") print s }'
}

# named OUT PID: "S N" (whole Python chains, all samples of PID).
named() {
    local all whole
    chains "$1" "$2" >"$T/chains-$2.txt"
    all=$(wc -l <"$T/chains-$2.txt")
    whole=$(grep -c '|py::foo:[^|]*|.*|py::bar:[^|]*|.*|py::main:' "$T/chains-$2.txt" || true)
    echo "$whole $all"
}

# expect_named OUT PID WHAT: at least one whole chain, and the native frame
# right outside py::foo's trampoline is the container's evaluator: its own
# binary symbolised it, not the host's file at the same path.
expect_named() {
    local s n
    read -r s n < <(named "$1" "$2")
    result "$3: $s of $n samples of host pid $2 show py::main -> py::bar -> py::foo"
    [ "$s" -gt 0 ] || { head -n 5 "$T/chains-$2.txt"; die_case "$3: no whole Python chain for host pid $2"; }
    grep -q '|py::foo:[^|]*|_PyFunction_Vectorcall|' "$T/chains-$2.txt" ||
        { grep 'py::foo' "$T/chains-$2.txt" | head -n 3; die_case "$3: the interpreter's frames around py::foo are not its own symbols"; }
}

build_id() { readelf -n "$1" 2>/dev/null | sed -n 's/.*Build ID: //p'; }

# The host pids import paired with container files (after they exited).
host_pids() { find "$1/host-pids" -name 'perf-*.map' 2>/dev/null | sed 's|.*/perf-\([0-9]*\)\.map$|\1|' | sort -n; }

# run_container NAME [podman run options...] -- [command]: detached.
started=()
start_container() {
    local name=$1
    shift
    podman rm -f "$name" >/dev/null 2>&1 || true
    podman run -d --name "$name" "$@" >/dev/null
    started+=("$name")
}
exit_code() { podman wait "$1" 2>/dev/null | tail -n 1; }
cleanup_containers() { [ "${#started[@]}" -eq 0 ] || podman rm -f "${started[@]}" >/dev/null 2>&1 || true; }

# record OUT CMD...: pyperf-run record -a of CMD into OUT.
record() {
    local out=$1
    shift
    "$W" record -a -o "$out" -- "$@" >"$T/record.log" 2>&1
}

# ------------------------------------------------------------ cases
# record -a around podman run; the container is gone when import runs.
case_after_exit() {
    local p rc=0 pid
    p=$(profile_dir)
    record "$p" podman run --rm -v "$p:/profile" "$APP" python3 app.py 2 || rc=$?
    [ "$rc" -eq 0 ] || { cat "$T/record.log"; die_case "record -a exited $rc"; }
    pid=$(host_pids "$p" | head -n 1)
    [ -n "$pid" ] || { cat "$T/record.log"; die_case "import paired no host pid"; }
    expect_named "$p" "$pid" "after exit"
    result "exit status 0 through podman run and pyperf-run record"
}

# The service runs while the host records (the documented manual steps:
# perf record -a, then import while it still runs, then after it exited).
case_while_running() {
    local p pid rc
    p=$(profile_dir)
    # Long enough that import ends before it does (perf 6.1 enters a running
    # process's namespace for its files); podman stop ends it afterwards.
    start_container pyperfinject-test-running -v "$p:/profile" "$APP" python3 app.py 120
    sleep 2
    pid=$(podman inspect -f '{{.State.Pid}}' pyperfinject-test-running)
    perf record -q -F 999 -k CLOCK_MONOTONIC --call-graph dwarf,65528 -e cpu-clock -a \
        --buildid-mmap -o "$p/perf.data" -- sleep 3 >"$T/perf.log" 2>&1 ||
        { cat "$T/perf.log"; die_case "perf record -a failed"; }
    "$W" import "$p" >"$T/import.log" 2>&1 || { cat "$T/import.log"; die_case "import while running failed"; }
    expect_named "$p" "$pid" "import while running"
    [ "$(podman inspect -f '{{.State.Running}}' pyperfinject-test-running)" = true ] ||
        die_case "the service ended before import did: this case showed nothing"
    podman stop -t 20 pyperfinject-test-running >/dev/null
    rc=$(exit_code pyperfinject-test-running)
    [ "$rc" = 3 ] || die_case "the service exited $rc after podman stop, expected its own 3"
    "$W" import "$p" >"$T/import2.log" 2>&1 || { cat "$T/import2.log"; die_case "import after exit failed"; }
    expect_named "$p" "$pid" "the same recording imported after exit"
    result "exit status $rc"
}

# The image's python3.11 is another build than the host's file at that path:
# with the binaries the library keeps, names and chains; without, none.
case_other_interpreter() {
    local p q rc=0 pid s n
    [ -x /usr/bin/python3.11 ] || skip_case "the host has no /usr/bin/python3.11 to differ from"
    podman run --rm --entrypoint cat "$APP" /usr/bin/python3.11 >"$T/image-python3.11"
    if cmp -s "$T/image-python3.11" /usr/bin/python3.11; then
        skip_case "the image's /usr/bin/python3.11 is the host's build: nothing differs to test"
    fi
    result "/usr/bin/python3.11 in the image: build id $(build_id "$T/image-python3.11"), on the host: $(build_id /usr/bin/python3.11)"
    p=$(profile_dir)
    record "$p" podman run --rm -v "$p:/profile" "$APP" python3 app.py 2 || rc=$?
    [ "$rc" -eq 0 ] || { cat "$T/record.log"; die_case "record -a exited $rc"; }
    [ -n "$(find "$p" -path '*/binaries/*/python3.11' -type f)" ] || die_case "the library kept no python3.11 under $p/binaries"
    grep -q 'added [0-9]* binaries' "$T/record.log" || { cat "$T/record.log"; die_case "no binaries went to the build-id cache"; }
    pid=$(host_pids "$p" | head -n 1)
    expect_named "$p" "$pid" "kept binaries"
    # Without them (the recipe before this fix): the host's file is used.
    q=$(profile_dir)
    record "$q" podman run --rm -e PYPERFINJECT_KEEP_BINARIES=0 -v "$q:/profile" "$APP" python3 app.py 2 || rc=$?
    pid=$(host_pids "$q" | head -n 1)
    read -r s n < <(named "$q" "$pid")
    result "without kept binaries: $s of $n samples of host pid $pid show the whole chain"
}

# --read-only root: without the mount the program runs, with one warning;
# with it, names.
case_read_only() {
    local p rc=0 pid
    podman run --rm --read-only "$APP" python3 app.py 1 >"$T/out.txt" 2>"$T/err.txt" || rc=$?
    [ "$rc" -eq 0 ] || { cat "$T/err.txt"; die_case "--read-only without the mount: exit $rc"; }
    grep -qx 'done True' "$T/out.txt" || die_case "--read-only without the mount: the program's output is $(cat "$T/out.txt")"
    result "--read-only without a mount: exit 0, stderr: $(head -c 300 "$T/err.txt" | tr '\n' ' ')"
    p=$(profile_dir)
    record "$p" podman run --rm --read-only -v "$p:/profile" "$APP" python3 app.py 2 || rc=$?
    [ "$rc" -eq 0 ] || { cat "$T/record.log"; die_case "--read-only with the mount: record exited $rc"; }
    pid=$(host_pids "$p" | head -n 1)
    expect_named "$p" "$pid" "--read-only with the mount"
}

# A non-root user: names where it may write the mount; where it may not,
# the program runs all the same.
case_non_root() {
    local p rc=0 pid closed
    p=$(profile_dir)
    record "$p" podman run --rm --user 65534:65534 -v "$p:/profile" "$APP" python3 app.py 2 || rc=$?
    [ "$rc" -eq 0 ] || { cat "$T/record.log"; die_case "--user 65534: record exited $rc"; }
    pid=$(host_pids "$p" | head -n 1)
    expect_named "$p" "$pid" "--user 65534"
    closed=$(mktemp -d "$T/closed.XXXXXX")
    chmod 755 "$closed"
    rc=0
    podman run --rm --user 65534:65534 -v "$closed:/profile" "$APP" python3 app.py 1 >"$T/out.txt" 2>"$T/err.txt" || rc=$?
    if [ "$rc" -ne 0 ] || ! grep -qx 'done True' "$T/out.txt"; then
        cat "$T/err.txt"
        die_case "--user 65534 with an unwritable mount: exit $rc"
    fi
    result "--user 65534, mount not writable: exit 0, stderr: $(head -c 300 "$T/err.txt" | tr '\n' ' ')"
}

# Two containers share one host directory: at once, then one after the other.
case_shared_dir() {
    local p rc=0 pid pids a b
    p=$(profile_dir)
    record "$p" sh -c "podman run -d --name pyperfinject-test-a -v '$p:/profile' '$APP' python3 app.py 2 >/dev/null &&
        podman run -d --name pyperfinject-test-b -v '$p:/profile' '$APP' python3 app.py 2 >/dev/null &&
        podman wait pyperfinject-test-a pyperfinject-test-b" || rc=$?
    started+=(pyperfinject-test-a pyperfinject-test-b)
    [ "$rc" -eq 0 ] || { cat "$T/record.log"; die_case "record of two containers at once exited $rc"; }
    mapfile -t pids < <(host_pids "$p")
    [ "${#pids[@]}" -eq 2 ] || { cat "$T/record.log"; die_case "at once: ${#pids[@]} host pids paired, expected 2"; }
    for pid in "${pids[@]}"; do expect_named "$p" "$pid" "at once"; done
    a=$(find "$p" -maxdepth 1 -name 'pidns-*' | wc -l)
    [ "$a" -eq 2 ] || die_case "at once: $a run directories, expected 2"
    p=$(profile_dir)
    record "$p" sh -c "podman run --rm -v '$p:/profile' '$APP' python3 app.py 1.5 &&
        podman run --rm -v '$p:/profile' '$APP' python3 app.py 1.5" || rc=$?
    [ "$rc" -eq 0 ] || { cat "$T/record.log"; die_case "record of two successive containers exited $rc"; }
    mapfile -t pids < <(host_pids "$p")
    [ "${#pids[@]}" -eq 2 ] || { cat "$T/record.log"; die_case "one after the other: ${#pids[@]} host pids paired, expected 2"; }
    for pid in "${pids[@]}"; do expect_named "$p" "$pid" "one after the other"; done
    b=$(find "$p" -maxdepth 1 -name 'pidns-*' | wc -l)
    result "run directories: $a at once, $b one after the other; binaries kept once: $(find "$p/binaries" -type f | wc -l) files"
}

# podman stop: SIGTERM reaches the program (pid 1, or catatonit's child with
# --init) and its own exit status comes back.
case_stop() {
    local init name rc
    for init in "" --init; do
        name=pyperfinject-test-stop${init:+-init}
        start_container "$name" ${init:+"$init"} "$APP" python3 app.py 60
        sleep 2
        podman stop -t 20 "$name" >/dev/null
        rc=$(exit_code "$name")
        podman logs "$name" >"$T/logs.txt" 2>&1
        if [ "$rc" != 3 ] || ! grep -qx terminated "$T/logs.txt"; then
            cat "$T/logs.txt"
            die_case "podman stop ${init:-without --init}: exit $rc, expected 3 after \"terminated\""
        fi
        result "podman stop ${init:-without --init}: the program printed \"terminated\", exit status $rc"
    done
}

# A container started without the library, attached from the host: the
# library is copied into its /tmp (it does not see the host's file), its
# files go to the mounted /profile, and import pairs them with a host
# recording as for a preloaded container. Functions called after the
# attach (bar, foo) are named; main was already running.
case_attach() {
    local p pid nspid s n rc
    p=$(profile_dir)
    start_container pyperfinject-test-attach -v "$p:/profile" --entrypoint python3 "$APP" app.py 120
    sleep 2
    pid=$(podman inspect -f '{{.State.Pid}}' pyperfinject-test-attach)
    "$W" attach "$pid" --dir /profile >"$T/attach.log" 2>&1 || { cat "$T/attach.log"; die_case "attach failed"; }
    grep -q "copied it to /tmp/libpyperfinject-" "$T/attach.log" ||
        { cat "$T/attach.log"; die_case "attach did not say it copied the library into the container"; }
    nspid=$(sed -n 's/^NSpid:.*[[:space:]]\([0-9]*\)$/\1/p' "/proc/$pid/status")
    for _ in $(seq 50); do grep -q 'py::foo' "$p/perf-$nspid.map" 2>/dev/null && break; sleep 0.1; done
    grep -q 'py::foo' "$p/perf-$nspid.map" || die_case "no py::foo in /profile/perf-$nspid.map after attaching"
    perf record -q -F 999 -k CLOCK_MONOTONIC --call-graph dwarf,65528 -e cpu-clock -a \
        --buildid-mmap -o "$p/perf.data" -- sleep 3 >"$T/perf.log" 2>&1 ||
        { cat "$T/perf.log"; die_case "perf record -a failed"; }
    "$W" import "$p" >"$T/import.log" 2>&1 || { cat "$T/import.log"; die_case "import failed"; }
    chains "$p" "$pid" >"$T/chains.txt"
    n=$(wc -l <"$T/chains.txt")
    s=$(grep -c '|py::foo:[^|]*|.*|py::bar:' "$T/chains.txt" || true)
    result "attached from the host (container pid $nspid): $s of $n samples of host pid $pid show py::bar -> py::foo"
    [ "$s" -gt 0 ] || { head -n 3 "$T/chains.txt"; die_case "no py::bar -> py::foo after import"; }
    podman stop -t 20 pyperfinject-test-attach >/dev/null
    rc=$(exit_code pyperfinject-test-attach)
    [ "$rc" = 3 ] || die_case "the service exited $rc after podman stop, expected its own 3"
    result "exit status $rc, its own"
}

# ------------------------------------------------------------ driver
run_case() {
    local name=$1 rc=0 log start=$SECONDS
    [ -z "$only" ] || [[ $name == *"$only"* ]] || return 0
    log=$ART/$name.log
    (
        set -e
        T=$(mktemp -d "$ART/tmp.$name.XXXXXX")
        trap cleanup_containers EXIT
        "case_$name"
    ) >"$log" 2>&1 || rc=$?
    local res
    res=$(sed -n 's/^RESULT: //p' "$log" | paste -sd '|' | sed 's/|/ | /g')
    if [ "$rc" -eq 0 ]; then
        pass "$name ($((SECONDS - start)) s): $res"
        rm -rf "$ART"/tmp."$name".*
    elif [ "$rc" -eq "$SKIP_RC" ]; then
        skip "$name: $(sed -n 's/^SKIP-REASON: //p' "$log" | tail -n 1)"
    else
        fail "$name (exit $rc; log $log):"
        tail -n 15 "$log" | sed 's/^/    /'
    fi
}

skip_all() {
    local c
    for c in after_exit while_running other_interpreter read_only non_root shared_dir stop attach; do
        skip "$c: $*"
    done
    tally_total containers
    exit 0
}

rm -rf "$ART"
mkdir -p "$ART"
suite_start=$SECONDS
[ "$(id -u)" -eq 0 ] || skip_all "needs root (rootful podman; perf record -a)"
bash "$ROOT/tests/provision/deps.sh" containers
command -v podman >/dev/null || skip_all "podman is not installed"
command -v perf >/dev/null || skip_all "perf is not installed"
make -s -C "$ROOT" lib attacher >/dev/null || skip_all "the library does not build"

# The documented Containerfile, as written, with the test program as the
# application (build-app-image.sh).
step=$SECONDS
rc=0
why=$(bash "$HERE/build-app-image.sh" "$HERE/service.py" "$APP" 2>"$ART/build.log") || rc=$?
case "$rc" in
0) pass "the Containerfile of docs/containers.md builds on the local base image ($((SECONDS - step)) s)" ;;
77) skip_all "$why" ;;
*)
    fail "the Containerfile of docs/containers.md does not build:"
    sed 's/^/    /' "$ART/build.log"
    tally_total containers
    exit 1
    ;;
esac

run_case after_exit
run_case while_running
run_case other_interpreter
run_case read_only
run_case non_root
run_case shared_dir
run_case stop
run_case attach
echo "suite time: $((SECONDS - suite_start)) s"
tally_total containers
