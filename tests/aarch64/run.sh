#!/usr/bin/env bash
# run.sh - the aarch64 tests: the cross-built library, its unit tests and the
# arm64 Debian interpreters, all under qemu-user (see docs/aarch64.md).
#
# Usage: tests/aarch64/run.sh [--smoke] [--no-install] [--deps-only]
#   --smoke       the quick subset `make check` runs (well under 4 minutes
#                 once the packages are cached)
#   --no-install  never install Debian packages or provision interpreters
#   --deps-only   only install/fetch what the tests need, then stop
#
# What it does:
#   1. as root: tests/provision/deps.sh aarch64 provision (cross gcc, arm64
#      libc headers, qemu-user, the archive keyring)
#   2. arm64 libcmocka and libunwind: `apt-get download` with the private apt
#      configuration of tests/provision/debian-python.sh (created by its
#      --list), unpacked with dpkg-deb into CACHE/aarch64/SUITE/root: bookworm
#      (cmocka, libunwind 1.6) and, for a sid interpreter, sid's libunwind.
#      The host's dpkg database and multiarch setup are not touched.
#   3. make CC=aarch64-linux-gnu-gcc lib tools unit-tests (mk/aarch64.mk adds
#      the cmocka paths), every build-aarch64/tests/test_* under
#      qemu-aarch64 -L /usr/aarch64-linux-gnu; the cmocka counts are added up
#   4. per arm64 interpreter (python3.11-bookworm-arm64, newest sid one;
#      provisioned with tests/provision/interpreters.sh --provision if
#      missing): foo_bar_baz.py output unchanged by the library, its jitdump
#      valid for elf_mach 183 (host and aarch64 jitdump-check), in-process
#      unwinding (libunwind of the interpreter's suite, glibc backtrace)
#      through foo, bar, baz, <module>, also from a later arena
#   5. branch protection: the template's instructions with and without
#      -mbranch-protection=standard, and its object's GNU property note
#   full run only: the whole library built with -mbranch-protection=standard
#   and run like step 4
#
# Prints PASS/FAIL/SKIP lines; the last line is
#   aarch64: N passed, N failed, N skipped
# Exit status 0 unless something failed. CACHE is PYPERFINJECT_CACHE, else
# ${XDG_CACHE_HOME:-~/.cache}/pyperfinject, as for the interpreters.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
ROOT=$(pwd)
CACHE=${PYPERFINJECT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pyperfinject}
CROSS_CC=aarch64-linux-gnu-gcc
QEMU_ROOT=/usr/aarch64-linux-gnu
BUILD=build-aarch64
LIB=$ROOT/$BUILD/libpyperfinject.so
WORK=$ROOT/$BUILD/aarch64-tests
SCRIPTS=$ROOT/tests/integration/scripts
HERE=$ROOT/tests/aarch64
QEMU_TIMEOUT=300

smoke=0
install=1
deps_only=0
for arg in "$@"; do
    case "$arg" in
    --smoke) smoke=1 ;;
    --no-install) install=0 ;;
    --deps-only) deps_only=1 ;;
    -h | --help) sed -n '2,38s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument '$arg'" >&2; exit 2 ;;
    esac
done

# shellcheck source=tests/tools/tally.sh
. "$ROOT/tests/tools/tally.sh"
stage() { printf '\n== aarch64: %s\n' "$*"; }
finish() {
    echo
    tally_total aarch64
    exit
}
# Indented tail of a log, for a failure's context.
show() { tail -n "${2:-5}" "$1" 2>/dev/null | sed 's/^/    /'; }

# ------------------------------------------------------------------ tools
stage "tools"
if [ "$(uname -m)" = aarch64 ]; then
    skip "all aarch64 tests: the host is aarch64, the main suite runs natively"
    finish
fi
if [ "$install" -eq 1 ] && [ "$(id -u)" -eq 0 ]; then
    bash tests/provision/deps.sh aarch64 provision
fi
missing=()
for tool in "$CROSS_CC" aarch64-linux-gnu-objdump aarch64-linux-gnu-readelf qemu-aarch64 dpkg-deb apt-get; do
    command -v "$tool" >/dev/null || missing+=("$tool")
done
[ -e "$QEMU_ROOT/lib/ld-linux-aarch64.so.1" ] || missing+=("$QEMU_ROOT (libc6-dev-arm64-cross)")
if [ "${#missing[@]}" -gt 0 ]; then
    skip "all aarch64 tests: missing ${missing[*]} (tests/provision/deps.sh aarch64, as root)"
    finish
fi
HOST_PY=
for p in /usr/bin/python3 "$(command -v python3 || true)"; do
    if [ -n "$p" ] && [ -x "$p" ]; then HOST_PY=$p; break; fi
done
echo "cross compiler $($CROSS_CC -dumpversion), $(qemu-aarch64 --version | head -n 1)"

# ------------------------------------------------------- arm64 packages
# Fetches and unpacks Debian arm64 packages for SUITE into CACHE/aarch64/SUITE/root
# (once per package set). Returns 1 with REASON set.
REASON=
fetch_arm64() {
    local suite=$1
    shift
    local dir=$CACHE/aarch64/$suite
    local root=$dir/root want="$*"
    if [ -f "$root/.packages" ] && [ "$(cat "$root/.packages")" = "$want" ]; then
        return 0
    fi
    if [ "$install" -eq 0 ]; then
        REASON="arm64 $want for $suite not in $dir (--no-install)"
        return 1
    fi
    mkdir -p "$dir"
    # debian-python.sh keeps a private apt configuration per suite/arch (own
    # sources from this machine's archive entry, lists, status, cache); --list
    # creates it and refreshes stale lists without provisioning anything.
    local conf=$CACHE/debian/$suite-arm64/apt.conf
    bash tests/provision/debian-python.sh --list --arch arm64 --suite "$suite" \
        >/dev/null 2>"$dir/apt-setup.log" || true
    if [ ! -f "$conf" ] || ! compgen -G "$CACHE/debian/$suite-arm64/state/lists/*_Packages*" >/dev/null; then
        REASON="no usable private apt configuration for $suite/arm64: $(tail -n 1 "$dir/apt-setup.log")"
        return 1
    fi
    rm -rf "$dir/debs.new"
    mkdir -p "$dir/debs.new"
    if ! (cd "$dir/debs.new" && apt-get -q -c "$conf" download "$@") >"$dir/download.log" 2>&1; then
        REASON="apt-get download $want ($suite/arm64) failed: $(grep -E '^(E|W):' "$dir/download.log" | head -n 1)"
        return 1
    fi
    rm -rf "$dir/debs" "$root"
    mv "$dir/debs.new" "$dir/debs"
    mkdir -p "$root"
    local deb
    for deb in "$dir"/debs/*.deb; do
        if ! dpkg-deb -x "$deb" "$root"; then
            REASON="dpkg-deb -x $deb failed"
            return 1
        fi
    done
    echo "$want" >"$root/.packages"
    echo "unpacked into $root: $(cd "$dir/debs" && echo ./*.deb | sed 's|\./||g')"
}

stage "arm64 packages"
declare -A DEPS=() # suite -> unpacked root
if fetch_arm64 bookworm libcmocka0 libcmocka-dev libunwind8 libunwind-dev; then
    DEPS[bookworm]=$CACHE/aarch64/bookworm/root
    echo "arm64 libcmocka and libunwind (bookworm): $CACHE/aarch64/bookworm/root"
else
    skip "arm64 libcmocka and libunwind (bookworm): $REASON"
fi

# ----------------------------------------------------------- interpreters
# The arm64 wrappers debian-python.sh makes: bookworm's 3.11, sid's newest.
find_interpreters() {
    INTERPS=()
    local w
    w=$CACHE/bin/python3.11-bookworm-arm64
    [ -x "$w" ] && INTERPS+=("$w")
    w=$(find "$CACHE/bin" -maxdepth 1 -name 'python3.*-sid-arm64' ! -name '*-dbg-*' 2>/dev/null | sort -V | tail -n 1)
    [ -n "$w" ] && INTERPS+=("$w")
}
find_interpreters
if [ "${#INTERPS[@]}" -lt 2 ] && [ "$install" -eq 1 ]; then
    echo "provisioning interpreters (tests/provision/interpreters.sh --provision)"
    mkdir -p "$WORK"
    bash tests/provision/interpreters.sh --provision >/dev/null 2>"$CACHE/aarch64-provision.log" || true
    find_interpreters
fi
USABLE=()
for w in "${INTERPS[@]}"; do
    if timeout "$QEMU_TIMEOUT" "$w" -c pass >/dev/null 2>&1; then
        USABLE+=("$w")
    else
        echo "interpreter $(basename "$w") does not start; left out"
    fi
done

# sid's own libunwind for a sid interpreter: its libraries are built with
# pointer authentication, which libunwind 1.6 (bookworm) cannot unwind.
for w in "${USABLE[@]}"; do
    case "$w" in *-sid-arm64)
        if fetch_arm64 sid libunwind8 libunwind-dev; then
            DEPS[sid]=$CACHE/aarch64/sid/root
            echo "arm64 libunwind (sid): $CACHE/aarch64/sid/root"
        else
            skip "arm64 libunwind (sid): $REASON"
        fi ;;
    esac
done
[ "$deps_only" -eq 0 ] || finish

# ------------------------------------------------------------- cross build
stage "cross build"
mkdir -p "$WORK"
built=0
if make -s CC="$CROSS_CC" BUILD="$BUILD" lib tools >"$WORK/build.log" 2>&1; then
    built=1
    pass "make CC=$CROSS_CC lib tools"
else
    show "$WORK/build.log" 15
    fail "make CC=$CROSS_CC lib tools"
fi

stage "unit tests under qemu-aarch64"
if [ "$built" -eq 0 ]; then
    skip "unit tests: the cross build failed"
elif [ -z "${DEPS[bookworm]:-}" ]; then
    skip "unit tests: no arm64 libcmocka (see above)"
elif ! make -s CC="$CROSS_CC" BUILD="$BUILD" AARCH64_DEPS="${DEPS[bookworm]}" unit-tests >"$WORK/unit-build.log" 2>&1; then
    show "$WORK/unit-build.log" 15
    fail "make CC=$CROSS_CC unit-tests"
else
    cmocka_lib=${DEPS[bookworm]}/usr/lib/aarch64-linux-gnu
    n_bins=0
    for t in "$BUILD"/tests/test_*; do
        [ -x "$t" ] || continue
        n_bins=$((n_bins + 1))
        out=$(timeout "$QEMU_TIMEOUT" qemu-aarch64 -L "$QEMU_ROOT" -E "LD_LIBRARY_PATH=$cmocka_lib" "$t" 2>&1)
        rc=$?
        [ "$rc" -eq 0 ] || printf '%s\n' "$out" | tail -n 5 | sed 's/^/    /'
        add_cmocka "$(basename "$t") (qemu-aarch64)" "$rc" "$out"
    done
    [ "$n_bins" -gt 0 ] || fail "no unit test binaries in $BUILD/tests"
fi

# ------------------------------------------------- per-interpreter checks
# Runs an interpreter in DIR with a clean environment: no PYPERFINJECT_* or
# LD_PRELOAD from the caller; PYPERFINJECT_DIR=DIR; with PRELOAD (a path, or
# empty) handed to the emulated python only. Extra VAR=VALUE words go before
# the command. Usage: run_py DIR PRELOAD [VAR=VALUE...] COMMAND...
run_py() {
    local dir=$1 preload=$2
    shift 2
    local envs=() v
    for v in $(compgen -e | grep -E '^(PYPERFINJECT|LD_PRELOAD$|PYTHONPERFSUPPORT$)'); do
        envs+=(-u "$v")
    done
    envs+=("PYPERFINJECT_DIR=$dir")
    [ -z "$preload" ] || envs+=("PYPERFINJECT_GUEST_PRELOAD=$preload")
    while [ $# -gt 0 ] && [[ "$1" =~ ^[A-Z_][A-Z0-9_]*= ]]; do
        envs+=("$1")
        shift
    done
    (cd "$dir" && env "${envs[@]}" timeout "$QEMU_TIMEOUT" "$@")
}

HOST_CHECK=$ROOT/build/jitdump-check
if [ ! -x "$HOST_CHECK" ]; then
    make -s BUILD=build tools >/dev/null 2>&1 || true
fi
negative_done=0

# Builds tests/integration/unwind_probe.c against SUITE's arm64 libunwind
# (rpath into CACHE/aarch64/SUITE/root; its liblzma comes from the
# interpreter's sysroot) and sets PROBE to it, or returns 1 with REASON.
probe_for() {
    local suite=$1 deps=${DEPS[$1]:-}
    PROBE=$WORK/unwind_probe-$suite.so
    [ ! -f "$PROBE" ] || return 0
    if [ -z "$deps" ]; then
        REASON="no arm64 libunwind for $suite (see above)"
        return 1
    fi
    local lib=$deps/usr/lib/aarch64-linux-gnu
    if ! "$CROSS_CC" -shared -fPIC -O2 -idirafter "$deps/usr/include" \
        -idirafter "$deps/usr/include/aarch64-linux-gnu" -o "$PROBE" \
        tests/integration/unwind_probe.c -L"$lib" -Wl,-rpath,"$lib" -lunwind >"$WORK/probe-$suite.log" 2>&1; then
        REASON="cannot build the probe: $(tail -n 1 "$WORK/probe-$suite.log")"
        rm -f "$PROBE"
        return 1
    fi
}

# Arena geometry from the source: unwind.py FILLER runs enough filler
# functions to start two more arenas before foo, bar and baz.
arena_bytes=$(sed -n 's/^#define PI_ARENA_BYTES (\(.*\))$/\1/p' libpyperfinject/arena.h)
slot_stride=$(sed -n 's/^#define PI_SLOT_STRIDE_AARCH64 \([0-9]*\)u.*$/\1/p' libpyperfinject/arena.h)
arena_bytes=${arena_bytes:-128u * 1024u}
arena_bytes=$((${arena_bytes//u/}))
FILLER=$((2 * arena_bytes / ${slot_stride:-128} + 64))

# check_unwind LABEL WRAPPER LIBRARY PROBE FUNC [FILLER]: runs unwind.py
# PROBE FUNC [FILLER] under the library, checks the trampolines it found
# (with FILLER functions run first: foo and <module> an arena apart).
check_unwind() {
    local label=$1 w=$2 lib=$3 probe=$4 fn=$5 filler=${6:-}
    local script=$SCRIPTS/unwind.py apart=() args=() how=unwind.py
    if [ -n "$filler" ]; then
        apart=(--apart "$arena_bytes")
        args=("$filler")
        how="unwind.py after $filler filler functions"
    fi
    local d=$WORK/$label/unwind-$fn${filler:+-filler}
    local what="$label: in-process unwinding, $fn from foo <- bar <- baz <- <module> ($how)"
    rm -rf "$d"
    mkdir -p "$d"
    if [ -z "$HOST_PY" ]; then skip "$what: no python3 on the host to check the result"; return; fi
    if ! run_py "$d" "$lib" "$w" "$script" "$probe" "$fn" "${args[@]}" >"$d/ips" 2>"$d/stderr"; then
        show "$d/stderr"
        fail "$what: the script failed"
        return
    fi
    local maps=("$d"/perf-*.map)
    if [ ! -f "${maps[0]}" ]; then fail "$what: no perf map written"; return; fi
    local verdict
    if verdict=$("$HOST_PY" "$HERE/check_unwind.py" "${apart[@]}" "${maps[0]}" "$d/ips" "$script"); then
        pass "$what: $verdict"
    else
        fail "$what: $verdict"
    fi
}

# check_interp LABEL WRAPPER LIBRARY [bti]: output, jitdump and unwinding.
check_interp() {
    local label=$1 w=$2 lib=$3 variant=${4:-}
    local suite
    suite=$(sed -n 's/^python3\.[0-9]*-\([a-z]*\)-arm64$/\1/p' <<<"$(basename "$w")")
    local d=$WORK/$label fbb=$SCRIPTS/foo_bar_baz.py
    rm -rf "$d"
    mkdir -p "$d/plain" "$d/pre"
    run_py "$d/plain" "" PYPERFINJECT_TEST_EXIT=3 "$w" "$fbb" 20000 >"$d/plain.out" 2>"$d/plain.err"
    echo $? >"$d/plain.rc"
    run_py "$d/pre" "$lib" PYPERFINJECT_TEST_EXIT=3 "$w" "$fbb" 20000 >"$d/pre.out" 2>"$d/pre.err"
    echo $? >"$d/pre.rc"
    local what="$label: foo_bar_baz.py output identical with and without the library"
    local maps=("$d"/pre/perf-*.map) dumps=("$d"/pre/jit-*.dump) fn missing=()
    if [ "$(cat "$d/plain.rc")" != 3 ] || [ "$(cat "$d/plain.out")" != "result 20000" ]; then
        show "$d/plain.err"
        fail "$what: the run without the library exited $(cat "$d/plain.rc")"
    elif ! cmp -s "$d/plain.out" "$d/pre.out" || ! cmp -s "$d/plain.err" "$d/pre.err" ||
        ! cmp -s "$d/plain.rc" "$d/pre.rc"; then
        show "$d/pre.err"
        fail "$what: exit $(cat "$d/pre.rc") vs $(cat "$d/plain.rc"), stdout/stderr differ"
    elif compgen -G "$d/plain/perf-*" >/dev/null; then
        fail "$what: a perf map appeared without the library"
    elif [ ! -f "${maps[0]}" ]; then
        show "$d/pre.err"
        fail "$what: no perf map written"
    else
        for fn in foo bar baz '<module>'; do
            grep -qF " py::$fn:$fbb" "${maps[0]}" || missing+=("$fn")
        done
        if [ "${#missing[@]}" -gt 0 ]; then
            fail "$what: map lacks ${missing[*]}"
        else
            pass "$what ($(wc -l <"${maps[0]}") map entries)"
        fi
    fi

    # jitdump: the host checker (knows elf_mach 183) and the aarch64 build of it
    local expect=() out
    for fn in foo bar baz '<module>'; do expect+=(--expect "py::$fn:$fbb"); done
    what="$label: jitdump valid, elf_mach 183"
    if [ ! -f "${dumps[0]}" ]; then
        fail "$what: no jit dump written"
    elif [ ! -x "$HOST_CHECK" ]; then
        skip "$what: build/jitdump-check is not built (make tools)"
    elif ! out=$("$HOST_CHECK" "${expect[@]}" "${dumps[0]}" 2>&1); then
        fail "$what: $(tail -n 3 <<<"$out" | tr '\n' ' ')"
    elif ! grep -q 'elf_mach 183,' <<<"$out"; then
        fail "$what: $(head -n 1 <<<"$out")"
    else
        pass "$what (host build/jitdump-check: $(head -n 1 <<<"$out" | sed 's/.*elf_mach 183, //'))"
    fi
    what="$label: jitdump valid under the aarch64 build of jitdump-check (qemu)"
    if [ ! -f "${dumps[0]}" ]; then
        fail "$what: no jit dump written"
    elif [ ! -x "$BUILD/jitdump-check" ]; then
        skip "$what: $BUILD/jitdump-check is not built"
    elif ! out=$(timeout "$QEMU_TIMEOUT" qemu-aarch64 -L "$QEMU_ROOT" "$BUILD/jitdump-check" \
        "${expect[@]}" "${dumps[0]}" 2>&1); then
        fail "$what: $(tail -n 3 <<<"$out" | tr '\n' ' ')"
    else
        pass "$what"
    fi
    if [ "$negative_done" -eq 0 ] && [ -f "${dumps[0]}" ] && [ -x "$HOST_CHECK" ]; then
        negative_done=1
        # The checker must not accept arm64 code under another machine's label.
        what="jitdump-check rejects an arm64 dump relabelled elf_mach 62 (x86-64)"
        cp "${dumps[0]}" "$d/relabelled.dump"
        printf '\076\000\000\000' | dd of="$d/relabelled.dump" bs=1 seek=12 conv=notrunc 2>/dev/null
        out=$("$HOST_CHECK" "$d/relabelled.dump" 2>&1)
        case "$?:$out" in
        1:*unknown-template*) pass "$what" ;;
        *) fail "$what: $(tail -n 2 <<<"$out" | tr '\n' ' ')" ;;
        esac
    fi

    # in-process unwinding
    if ! probe_for "$suite"; then
        skip "$label: in-process unwinding: $REASON"
        return
    fi
    check_unwind "$label" "$w" "$lib" "$PROBE" probe_backtrace
    check_unwind "$label" "$w" "$lib" "$PROBE" probe_libunwind
    check_unwind "$label" "$w" "$lib" "$PROBE" probe_backtrace "$FILLER"
    if [ "$smoke" -eq 0 ] && [ -z "$variant" ]; then
        check_unwind "$label" "$w" "$lib" "$PROBE" probe_libunwind "$FILLER"
    fi
}

stage "arm64 interpreters under qemu-aarch64"
if [ "$built" -eq 0 ]; then
    skip "interpreter tests: the cross build failed"
elif [ "${#USABLE[@]}" -eq 0 ]; then
    why="no arm64 interpreter in $CACHE/bin (tests/provision/interpreters.sh --provision)"
    if [ -s "$CACHE/aarch64-provision.log" ]; then
        why="$why: $(tail -n 1 "$CACHE/aarch64-provision.log")"
    fi
    skip "interpreter tests: $why"
else
    for w in "${USABLE[@]}"; do
        check_interp "$(basename "$w")" "$w" "$LIB"
    done
fi

# ------------------------------------------------------ branch protection
stage "branch protection (template and object notes)"
# Disassembles the template section of an object: one mnemonic a line.
template_insns() {
    aarch64-linux-gnu-objdump -D -j .rodata.pyperfinject_tramp "$1" |
        awk '/^ *[0-9a-f]+:\t/ { split($0, f, "\t"); print f[3] }' | awk '{ print $1 }'
}
bp=$WORK/branch-protection
mkdir -p "$bp"
if ! "$CROSS_CC" -c -o "$bp/plain.o" libpyperfinject/tramp_aarch64.S 2>"$bp/log" ||
    ! "$CROSS_CC" -mbranch-protection=standard -c -o "$bp/std.o" libpyperfinject/tramp_aarch64.S 2>>"$bp/log"; then
    show "$bp/log"
    fail "assembling tramp_aarch64.S"
else
    plain=$(template_insns "$bp/plain.o" | head -n 5 | tr '\n' ' ')
    std=$(template_insns "$bp/std.o" | head -n 6 | tr '\n' ' ')
    if [ "$plain" = "stp mov blr ldp ret " ]; then
        pass "template without branch protection: stp mov blr ldp ret (frame record, no BTI/PAC)"
    else
        fail "template without branch protection is '$plain', wanted 'stp mov blr ldp ret'"
    fi
    if [ "$std" = "bti stp mov blr ldp ret " ]; then
        pass "template with -mbranch-protection=standard: bti c first, no PAC instruction"
    else
        fail "template with -mbranch-protection=standard is '$std', wanted 'bti stp mov blr ldp ret'"
    fi
    # An object without the note clears BTI/PAC from the whole .so at link time.
    note=$(aarch64-linux-gnu-readelf -n "$bp/std.o" | grep 'AArch64 feature' || true)
    if grep -q 'BTI' <<<"$note"; then
        pass "tramp_aarch64.o built with branch protection carries the GNU property note (${note##*feature: })"
    else
        fail "tramp_aarch64.o built with -mbranch-protection=standard has no .note.gnu.property (AArch64 BTI/PAC): linking it clears the BTI marking of the whole libpyperfinject.so (docs/aarch64.md)"
    fi
fi

# ---------------------------------------------- full run: a BTI build, run
if [ "$smoke" -eq 0 ]; then
    stage "library built with -mbranch-protection=standard"
    bti_build=build-aarch64-bti
    if [ "${#USABLE[@]}" -eq 0 ]; then
        skip "branch-protected build: no arm64 interpreter"
    elif ! make -s CC="$CROSS_CC" BUILD="$bti_build" CFLAGS="-O2 -g -mbranch-protection=standard" \
        lib >"$WORK/bti-build.log" 2>&1; then
        show "$WORK/bti-build.log" 15
        fail "make BUILD=$bti_build CFLAGS=-mbranch-protection=standard lib"
    else
        pass "make BUILD=$bti_build CFLAGS=-mbranch-protection=standard lib"
        # sid's libraries are built with branch protection themselves
        w=${USABLE[$((${#USABLE[@]} - 1))]}
        check_interp "$(basename "$w")-bti" "$w" "$ROOT/$bti_build/libpyperfinject.so" bti
    fi
fi

finish
