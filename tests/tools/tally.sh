# tests/tools/tally.sh - PASS/FAIL/SKIP lines and their counts, shared by the
# test scripts (sourced by bash; sets passed, failed, skipped).
# shellcheck shell=bash
passed=0 failed=0 skipped=0

# tally STATUS TEXT: prints "STATUS TEXT" and counts it.
tally() {
    case "$1" in
    PASS) passed=$((passed + 1)) ;;
    FAIL) failed=$((failed + 1)) ;;
    SKIP) skipped=$((skipped + 1)) ;;
    esac
    printf '%s %s\n' "$1" "$2"
}
pass() { tally PASS "$*"; }
fail() { tally FAIL "$*"; }
skip() { tally SKIP "$*"; }

# add_counts LINE: adds a sub-run's "...: N passed, N failed, N skipped".
add_counts() {
    local line=$1 p f s
    p=$(sed -n 's/.* \([0-9]\+\) passed.*/\1/p' <<<"$line")
    f=$(sed -n 's/.* \([0-9]\+\) failed.*/\1/p' <<<"$line")
    s=$(sed -n 's/.* \([0-9]\+\) skipped.*/\1/p' <<<"$line")
    passed=$((passed + ${p:-0}))
    failed=$((failed + ${f:-0}))
    skipped=$((skipped + ${s:-0}))
}

# add_cmocka NAME RC OUTPUT: adds a cmocka program's own counts (each test
# counts once) and shows its failed and skipped tests; a program that exits
# non-zero without a failed test (a crash) counts one failure.
add_cmocka() {
    local name=$1 rc=$2 out=$3 p f s
    printf '%s\n' "$out" | grep -E '^\[  (FAILED|SKIPPED) \]|^\[ *(FAILED|ERROR) *\]' || true
    p=$(sed -n 's/^\[  PASSED  \] \([0-9]\+\) test.*/\1/p' <<<"$out")
    f=$(sed -n 's/^\[  FAILED  \] \([0-9]\+\) test.*/\1/p' <<<"$out")
    s=$(sed -n 's/^\[  SKIPPED \] \([0-9]\+\) test.*/\1/p' <<<"$out")
    printf '%-40s %s passed, %s failed, %s skipped\n' "$name" "${p:-0}" "${f:-0}" "${s:-0}"
    passed=$((passed + ${p:-0}))
    failed=$((failed + ${f:-0}))
    skipped=$((skipped + ${s:-0}))
    if [ "$rc" -ne 0 ] && [ -z "$f" ]; then
        fail "$name exited $rc"
    fi
}

# sanitizer_reports WHAT DIR LINES: shows the first LINES lines of every
# report a sanitizer left in DIR; one PASS if there is none, one FAIL if any
# (whatever the exit statuses said).
sanitizer_reports() {
    local what=$1 dir=$2 lines=$3 f n=0
    for f in "$dir"/*; do
        [ -s "$f" ] || continue
        n=$((n + 1))
        echo "---- $f"
        head -n "$lines" "$f"
    done
    if [ "$n" -eq 0 ]; then
        tally PASS "$what: no sanitizer report from any process"
    else
        tally FAIL "$what: $n sanitizer report(s) in $dir"
    fi
}

# tally_total NAME: the summary line; returns 1 if anything failed.
tally_total() {
    echo "$1: $passed passed, $failed failed, $skipped skipped"
    [ "$failed" -eq 0 ]
}
