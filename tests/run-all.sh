#!/usr/bin/env bash
# run-all.sh - what `make check` runs: on a fresh machine it installs what the
# tests need (Debian packages when root, interpreters into a cache dir), then
# runs every stage and ends with one line "check: N passed, N failed, N skipped".
#
# Stages: deps, build (gcc, and clang for warnings), exported symbols, unit
# tests (cmocka), shellcheck, interpreter provisioning, integration tests.
# A stage that cannot run for a missing tool says so and counts as skipped.
#
# Environment: PYPERFINJECT_CACHE (interpreters cache), CHECK_ONLY=SUBSTRING
# (integration tests for matching interpreters only), SANITIZE=... (build the
# library with sanitizers).
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
passed=0
failed=0
skipped=0

stage() { printf '\n== %s\n' "$*"; }
pass() { passed=$((passed + 1)); printf 'PASS %s\n' "$*"; }
fail() { failed=$((failed + 1)); printf 'FAIL %s\n' "$*"; }
skip() { skipped=$((skipped + 1)); printf 'SKIP %s\n' "$*"; }

# Adds the counts from a line "...: N passed, N failed, N skipped".
add_counts() {
    local line=$1 p f s
    p=$(sed -n 's/.* \([0-9]\+\) passed.*/\1/p' <<<"$line")
    f=$(sed -n 's/.* \([0-9]\+\) failed.*/\1/p' <<<"$line")
    s=$(sed -n 's/.* \([0-9]\+\) skipped.*/\1/p' <<<"$line")
    passed=$((passed + ${p:-0}))
    failed=$((failed + ${f:-0}))
    skipped=$((skipped + ${s:-0}))
}

stage "dependencies"
bash tests/provision/deps.sh core aarch64 provision

stage "build (gcc)"
if make -s CC=gcc lib tools unit-tests; then
    pass "build with gcc -Wall -Wextra -Werror"
else
    fail "build with gcc"
fi

stage "build (clang, warnings only)"
if command -v clang >/dev/null; then
    if make -s CC=clang BUILD=build-clang lib tools unit-tests >/dev/null; then
        pass "build with clang -Wall -Wextra -Werror"
    else
        make -s CC=clang BUILD=build-clang lib tools unit-tests 2>&1 | tail -20
        fail "build with clang"
    fi
else
    skip "build with clang: clang is not installed"
fi

stage "build (aarch64 cross)"
if command -v aarch64-linux-gnu-gcc >/dev/null; then
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
    extra=$(nm -D --defined-only build/libpyperfinject.so | awk '{print $3}' |
        grep -v -e '^pyperfinject_' -e '^dlopen$' -e '^dl_iterate_phdr$' -e '^_dl_find_object$' || true)
    if [ -z "$extra" ]; then
        pass "only pyperfinject_* and the dlopen/dl_iterate_phdr/_dl_find_object interpositions are exported"
    else
        fail "unexpected exports: $extra"
    fi
fi

stage "unit tests (cmocka)"
for t in build/tests/test_*; do
    [ -x "$t" ] || continue
    out=$("$t" 2>&1)
    rc=$?
    printf '%s\n' "$out" | grep -E '^\[  (FAILED|SKIPPED) \]|^\[ *(FAILED|ERROR) *\]' || true
    n_pass=$(sed -n 's/^\[  PASSED  \] \([0-9]\+\) test.*/\1/p' <<<"$out")
    n_fail=$(sed -n 's/^\[  FAILED  \] \([0-9]\+\) test.*/\1/p' <<<"$out")
    n_skip=$(sed -n 's/^\[  SKIPPED \] \([0-9]\+\) test.*/\1/p' <<<"$out")
    printf '%-40s %s passed, %s failed, %s skipped\n' "$(basename "$t")" \
        "${n_pass:-0}" "${n_fail:-0}" "${n_skip:-0}"
    passed=$((passed + ${n_pass:-0}))
    failed=$((failed + ${n_fail:-0}))
    skipped=$((skipped + ${n_skip:-0}))
    if [ "$rc" -ne 0 ] && [ -z "$n_fail" ]; then
        fail "$(basename "$t") exited $rc"
    fi
done

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
bash tests/provision/interpreters.sh --provision >build/interpreters.txt
cut -f1,3 build/interpreters.txt | column -t

stage "integration tests (real interpreters)"
driver=$(command -v python3 || true)
if [ -x /usr/bin/python3 ]; then driver=/usr/bin/python3; fi
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
# N skipped" (tests/wrapper: pyperf-run and containers; tests/aarch64: the
# cross build under qemu; bench: the benchmark in smoke mode; tests/hardening).
# The hardening suite runs every stage: harden, regrtest, fuzz (12 s per
# libFuzzer target) and sanitize (the short ASan+UBSan and TSan run).
for suite in tests/wrapper tests/aarch64 bench tests/hardening; do
    [ -f "$suite/run.sh" ] || continue
    stage "$suite"
    log=build/$(basename "$suite").log
    args=(--smoke)
    [ "$suite" = tests/hardening ] && args+=(--stage harden --stage regrtest --stage fuzz)
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

echo
echo "check: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
