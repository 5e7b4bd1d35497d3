#!/usr/bin/env bash
# run-all.sh - what `make check` runs after `make deps` has installed what the
# tests need (Debian packages when root, interpreters into a cache dir): every
# stage, ending with one line "check: N passed, N failed, N skipped".
#
# Stages: build (gcc, and clang for warnings), exported symbols, unit tests
# (cmocka), shellcheck, the interpreter matrix, integration tests, and the
# suites with runners of their own.
# A stage that cannot run for a missing tool says so and counts as skipped.
#
# Environment: PYPERFINJECT_CACHE (interpreters cache), CHECK_ONLY=SUBSTRING
# (integration tests for matching interpreters only), SANITIZE=... (`make
# check SANITIZE=address,undefined` or `SANITIZE=thread`: every stage against
# an instrumented library, see "sanitizers" below).
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
# shellcheck source=tests/tools/tally.sh
. tests/tools/tally.sh
stage() { printf '\n== %s\n' "$*"; }

# Sanitizers (SANITIZE=...): build/ (library, tools, unit tests) is built
# instrumented and every suite runs against it. An uninstrumented program
# (python, and whatever else gets the preload) can only load the instrumented
# library after the sanitizer runtime, so each harness puts
# PYPERFINJECT_SANITIZER_RUNTIME first in LD_PRELOAD. address/undefined:
# clang with its shared runtime (GCC's instrumented frames realign the stack
# in a way perf's DWARF unwinder cannot follow); thread: GCC, only where it
# applies (interpreters 3.8+: 3.6/3.7 hook in from a watcher thread that reads
# CPython's interpreter state, published without anything TSan can see).
# Every report of every process goes to build/sanitizer-reports/: any report
# there at the end is a FAIL, whatever the exit statuses said.
make_args=(CC=gcc)
reports=""
if [ -n "${SANITIZE:-}" ]; then
    stage "sanitizers (SANITIZE=$SANITIZE)"
    reports=$PWD/build/sanitizer-reports
    rm -rf "$reports"
    mkdir -p "$reports"
    chmod 1777 "$reports" # processes running as nobody report too
    arch=$(uname -m)
    case ",$SANITIZE," in
    *,thread,*)
        runtime=$(gcc -print-file-name=libtsan.so)
        export TSAN_OPTIONS="halt_on_error=0:die_after_fork=0:report_signal_unsafe=0:suppressions=$PWD/tests/hardening/tsan.supp:log_path=$reports/tsan" ;;
    *)
        case ",$SANITIZE," in
        *,address,*) runtime=libclang_rt.asan-$arch.so ;;
        *) runtime=libclang_rt.ubsan_standalone-$arch.so ;;
        esac
        runtime=$(clang -print-file-name="$runtime" 2>/dev/null)
        make_args=(CC=clang "CFLAGS=-O2 -g -shared-libsan -Wno-unused-command-line-argument -Wl,-rpath,$(dirname "$runtime")")
        # The suites' own `make lib` calls (they inherit SANITIZE through
        # MAKEFLAGS) must see the same compiler and flags: the Makefile
        # rebuilds build/ when its flags change, and a GCC ASan library
        # under clang's runtime aborts every process.
        export CC=clang CFLAGS="${make_args[1]#CFLAGS=}"
        export ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0:halt_on_error=0:log_path=$reports/asan"
        export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=0:log_path=$reports/ubsan" ;;
    esac
    if [ -f "$runtime" ]; then
        export PYPERFINJECT_SANITIZER_RUNTIME=$runtime
        pass "sanitizer runtime $runtime; reports go to $reports"
    else
        fail "SANITIZE=$SANITIZE: no shared sanitizer runtime (${runtime:-clang is not installed})"
    fi
fi

# build/ holds one configuration: the Makefile rebuilds it when the flags
# change (a plain check after a SANITIZE one, or the reverse).
stage "build (${make_args[0]#CC=})"
if make -s "${make_args[@]}" lib tools unit-tests; then
    pass "build with ${make_args[0]#CC=} -Wall -Wextra -Werror${SANITIZE:+ -fsanitize=$SANITIZE}"
else
    fail "build with ${make_args[0]#CC=}${SANITIZE:+ -fsanitize=$SANITIZE}"
fi

stage "build (clang, warnings only)"
if command -v clang >/dev/null; then
    if make -s CC=clang BUILD=build-clang SANITIZE= lib tools unit-tests >/dev/null; then
        pass "build with clang -Wall -Wextra -Werror"
    else
        make -s CC=clang BUILD=build-clang SANITIZE= lib tools unit-tests 2>&1 | tail -20
        fail "build with clang"
    fi
else
    skip "build with clang: clang is not installed"
fi

stage "build (aarch64 cross)"
if [ -n "${SANITIZE:-}" ]; then
    skip "cross build for aarch64: not part of a SANITIZE run (tests/aarch64 is skipped too)"
elif command -v aarch64-linux-gnu-gcc >/dev/null; then
    if make -s CC=aarch64-linux-gnu-gcc lib tools; then
        pass "cross build for aarch64 (build-aarch64/libpyperfinject.so)"
    else
        fail "cross build for aarch64"
    fi
else
    skip "cross build for aarch64: aarch64-linux-gnu-gcc is not installed"
fi

stage "exported symbols"
if [ -f build/libpyperfinject.so ]; then
    # The interpositions unversioned (a versioned definition would not
    # interpose), the GDB JIT names under a hidden version (one @: nothing
    # unversioned binds to them), and the version nodes themselves.
    gdb_jit='@PYPERFINJECT_GDB_JIT_1$'
    extra=$(nm -D --defined-only build/libpyperfinject.so | awk '{print $3}' |
        grep -v -e '^pyperfinject_[a-z_]*$' -e '^dlopen$' -e '^dl_iterate_phdr$' -e '^_dl_find_object$' \
            -e "^__jit_debug_register_code$gdb_jit" -e "^__jit_debug_descriptor$gdb_jit" \
            -e '^PYPERFINJECT_GDB_JIT_[01]$' || true)
    jit_names=$(nm -D --defined-only build/libpyperfinject.so | grep -c -e "__jit_debug_register_code$gdb_jit" -e "__jit_debug_descriptor$gdb_jit")
    if [ -z "$extra" ] && [ "$jit_names" -eq 2 ]; then
        pass "only pyperfinject_*, the dlopen/dl_iterate_phdr/_dl_find_object interpositions and the GDB JIT interface (hidden version) are exported"
    else
        fail "unexpected exports: ${extra:-none}; GDB JIT names under their hidden version: $jit_names of 2"
    fi
fi

stage "hot path shape"
if [ "$(uname -m)" != x86_64 ]; then
    skip "hook shape: checked on x86-64 builds only"
else
    shape=$(bash tests/tools/hook-shape.sh build/libpyperfinject.so)
    case $? in
    0) pass "hook shape: $shape" ;;
    1) fail "hook shape: $shape (docs/design.md)" ;;
    *) skip "hook shape: $shape" ;;
    esac
fi

stage "unit tests (cmocka)"
for t in build/tests/test_*; do
    [ -x "$t" ] || continue
    # Our code only: with ASan, leaks count.
    out=$(ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:detect_leaks=1} "$t" 2>&1)
    add_cmocka "$(basename "$t")" $? "$out"
done

# pyperf-run's Python helpers (pyperf-run-helpers/): unittest, each test
# counted as cmocka's are.
# The python3 that drives the Python-written suites: the system's when
# there is one (a pyenv shim may point anywhere).
driver=$(command -v python3 || true)
if [ -x /usr/bin/python3 ]; then driver=/usr/bin/python3; fi

stage "unit tests (pyperf-run helpers)"
if [ -z "$driver" ]; then
    skip "helper unit tests: no python3"
else
    out=$("$driver" -m unittest discover -s tests/helpers -v 2>&1)
    rc=$?
    n=$(grep -cE '\.\.\. ok$' <<<"$out")
    printf '%s\n' "$out" | grep -E '\.\.\. (FAIL|ERROR)$|^(FAIL|ERROR):' || true
    bad=$(grep -cE '\.\.\. (FAIL|ERROR)$' <<<"$out")
    printf '%-40s %s passed, %s failed\n' "tests/helpers" "$n" "$bad"
    passed=$((passed + n))
    failed=$((failed + bad))
    if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then
        printf '%s\n' "$out" | tail -n 15
        fail "tests/helpers: unittest exited $rc"
    fi
fi

stage "shellcheck"
if command -v shellcheck >/dev/null; then
    mapfile -t scripts < <(git ls-files '*.sh' .ci/run 2>/dev/null || ls ./*.sh tests/*.sh tests/provision/*.sh .ci/run)
    if shellcheck "${scripts[@]}"; then
        pass "shellcheck (${#scripts[@]} scripts)"
    else
        fail "shellcheck"
    fi
else
    skip "shellcheck is not installed"
fi

stage "interpreters"
bash tests/provision/interpreters.sh >build/interpreters.txt
cut -f1,3 build/interpreters.txt | column -t
# SANITIZE: every harness reads build/interpreters.txt; it keeps only the
# interpreters the instrumented library can be tested on (the whole list goes
# to build/interpreters-all.txt).
if [ -n "${SANITIZE:-}" ]; then
    mv build/interpreters.txt build/interpreters-all.txt
    : >build/interpreters.txt
    while IFS=$'\t' read -r label cmd kind; do
        case "$kind" in
        arm64*)
            skip "$label: the aarch64 build is not instrumented in a SANITIZE run"
            continue ;;
        esac
        case ",$SANITIZE," in
        *,thread,*)
            if ! "$cmd" -c 'import sys; sys.exit((3, 0) <= sys.version_info[:2] < (3, 8))' </dev/null 2>/dev/null; then
                skip "$label: TSan applies to 3.8+ (3.6/3.7: a watcher thread reads what CPython publishes unsynchronised)"
                continue
            fi ;;
        esac
        printf '%s\t%s\t%s\n' "$label" "$cmd" "$kind" >>build/interpreters.txt
    done <build/interpreters-all.txt
fi

stage "integration tests (real interpreters)"
if [ -z "$driver" ]; then
    skip "integration tests: no python3 to drive them"
else
    log=build/integration.log
    "$driver" tests/integration/run.py --interpreters build/interpreters.txt \
        ${CHECK_ONLY:+--only "$CHECK_ONLY"} | tee "$log"
    rc=${PIPESTATUS[0]}
    add_counts "$(tail -n 1 "$log")"
    if [ "$rc" -ne 0 ] && ! grep -q '[1-9][0-9]* failed' <<<"$(tail -n 1 "$log")"; then
        fail "integration harness exited $rc"
    fi
fi

# Suites with a runner of their own; each ends with "NAME: N passed, N failed,
# N skipped" (tests/wrapper: pyperf-run and PID namespaces; tests/containers:
# the container recipe on podman; tests/aarch64: the
# cross build under qemu; bench: the benchmark in smoke mode; tests/hardening).
# The hardening suite runs every stage: harden, regrtest, fuzz (12 s per
# libFuzzer target) and sanitize (the short ASan+UBSan and TSan run).
for suite in tests/wrapper tests/containers tests/aarch64 bench tests/hardening; do
    [ -f "$suite/run.sh" ] || continue
    stage "$suite"
    if [ "$suite" = tests/aarch64 ] && [ -n "${SANITIZE:-}" ]; then
        skip "tests/aarch64: the aarch64 build is not instrumented in a SANITIZE run"
        continue
    fi
    if [ "$suite" = tests/containers ] && [ -n "${SANITIZE:-}" ]; then
        skip "tests/containers: the image builds the library users get (its own uninstrumented build)"
        continue
    fi
    # GCC's TSan runtime preloaded alone is never initialised (instrumented
    # code does that): pyperf-run, a bash script, and the shells it starts crash.
    if [ "$suite" = tests/wrapper ] && [[ ,${SANITIZE:-}, == *,thread,* ]]; then
        skip "tests/wrapper: the TSan runtime cannot be preloaded into pyperf-run itself (bash crashes)"
        continue
    fi
    log=build/$(basename "$suite").log
    args=(--smoke)
    [ "$suite" = tests/hardening ] && args+=(--stage harden --stage regrtest --stage fuzz --stage sanitize)
    bash "$suite/run.sh" "${args[@]}" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    line=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    if [ -n "$line" ]; then
        add_counts "$line"
    fi
    if [ "$rc" -ne 0 ] && { [ -z "$line" ] || grep -q ' 0 failed' <<<"$line"; }; then
        fail "$suite/run.sh exited $rc"
    fi
done

# Every command README.md and docs/*.md show, taken from the files and run
# as a reader runs it (tests/docs/run.py).
stage "documented commands (README.md, docs/*.md)"
if [ -n "${SANITIZE:-}" ]; then
    skip "documented commands: they run the library users get, in the plain make check"
elif [ -z "$driver" ]; then
    skip "documented commands: no python3 to drive them"
else
    "$driver" tests/docs/run.py 2>&1 | tee build/docs.log
    rc=${PIPESTATUS[0]}
    add_counts "$(tail -n 1 build/docs.log)"
    if [ "$rc" -ne 0 ] && ! grep -q '[1-9][0-9]* failed' <<<"$(tail -n 1 build/docs.log)"; then
        fail "tests/docs/run.py exited $rc"
    fi
fi

if [ -n "$reports" ]; then
    stage "sanitizer reports"
    sanitizer_reports "all suites" "$reports" 40
fi

echo
tally_total check
