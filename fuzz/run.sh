#!/usr/bin/env bash
# fuzz/run.sh - build and run the libFuzzer targets (docs/reliability.md).
#
# Usage: fuzz/run.sh [--seconds N] [--only TARGET]
#   --seconds N   run each target N seconds (default 15; `make fuzz`: 300)
#   --only T      one target: names, config, records, ehframe, checker
#
# Targets are built by `make fuzz-build` (clang -fsanitize=fuzzer,address,
# undefined) into build-fuzz/. Each run starts from the seeds in
# fuzz/corpus/TARGET plus what earlier runs kept in build-fuzz/corpus/TARGET;
# a crash leaves its input in build-fuzz/artifacts/ and is a FAIL (reproduce:
# build-fuzz/fuzz_TARGET FILE). Prints PASS/FAIL/SKIP lines and ends with
# "fuzz: N passed, N failed, N skipped".
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
seconds=15
only=
while [ $# -gt 0 ]; do
    case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    -h | --help) sed -n '2,13s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "fuzz: unknown option $1" >&2; exit 2 ;;
    esac
done

targets=(names config records ehframe checker)
# shellcheck source=tests/tools/tally.sh
. tests/tools/tally.sh
result() { tally "$1" "$(printf 'fuzz %-10s %s' "$2" "$3")"; }

FB=${FUZZ_BUILD:-build-fuzz}
why_not=
if ! command -v "${FUZZ_CC:-clang}" >/dev/null; then
    why_not="clang is not installed"
else
    probe=$(mktemp -d)
    echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n); int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }' >"$probe/p.c"
    if ! "${FUZZ_CC:-clang}" -fsanitize=fuzzer,address "$probe/p.c" -o "$probe/p" 2>"$probe/err"; then
        why_not="${FUZZ_CC:-clang} cannot link libFuzzer ($(tail -n 1 "$probe/err"); Debian: libclang-rt-dev or clang's compiler-rt)"
    fi
    rm -rf "$probe"
fi
mkdir -p "$FB"
if [ -z "$why_not" ] && ! make -s fuzz-build >"$FB/build.log" 2>&1; then
    cat "$FB/build.log"
    result FAIL build "the fuzz targets do not compile (see above)"
    why_not="not built"
fi

for t in "${targets[@]}"; do
    [ -z "$only" ] || [ "$only" = "$t" ] || continue
    if [ -n "$why_not" ]; then
        [ "$why_not" = "not built" ] || result SKIP "$t" "$why_not"
        continue
    fi
    corpus="$FB/corpus/$t"
    arts="$FB/artifacts"
    mkdir -p "$corpus" "$arts"
    log="$FB/$t.log"
    # -max_len: names up to ~130 KB; -rss_limit_mb/-timeout: a slow or
    # growing input is a finding too. Leaks are findings (detect_leaks).
    "$FB/fuzz_$t" "$corpus" "fuzz/corpus/$t" -max_total_time="$seconds" -max_len=140000 \
        -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$arts/$t-" >"$log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -n 1)
    kept=$(find "$corpus" -type f | wc -l)
    if [ "$rc" -eq 0 ]; then
        result PASS "$t" "${runs:-?} inputs in ${seconds}s, ${cov:-cov: ?} edges, corpus $kept"
    else
        grep -E 'invariant broken|ERROR: (AddressSanitizer|libFuzzer)|runtime error|Test unit written' "$log" | head -n 5
        result FAIL "$t" "exit $rc after ${runs:-?} inputs; log $log"
    fi
done

tally_total fuzz
