#!/usr/bin/env bash
# tests/hardening/run.sh - issue #8: hostile environments, crash safety,
# concurrency, security (harden.py), CPython's own regression tests under the
# preload (regrtest.py), libFuzzer targets (fuzz/run.sh), ASan/UBSan/TSan
# (sanitize.sh). See docs/reliability.md.
#
# Usage: run.sh [--smoke | --full] [--stage NAME]...
#   --smoke   what `make check` runs (about 5 minutes on 2 cores):
#             representative interpreters, the short regrtest set on two of
#             them, 12 s per fuzz target, the short sanitizer run
#   --full    (`make hardening-full`) every CPython 3 of the matrix, the long
#             regrtest set, 60 s per fuzz target, the full sanitizer run
#   --stage   harden, regrtest, fuzz or sanitize only (repeatable)
# With SANITIZE set (`make check SANITIZE=...`) every stage runs against the
# instrumented build/ that tests/run-all.sh made; the sanitizer stage still
# runs its own builds (short with --smoke).
#
# As root it first installs what is missing: Debian's python3.X test package
# (libpython3.11-testsuite) and libcap2-bin (setcap). Every line of every
# stage is "PASS|FAIL|SKIP name ..."; the last line is
# "hardening: N passed, N failed, N skipped".
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
mode=smoke
stages=()
while [ $# -gt 0 ]; do
    case "$1" in
    --smoke) mode=smoke ;;
    --full) mode=full ;;
    --stage) stages+=("$2"); shift ;;
    -h | --help) sed -n '2,21s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "hardening: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
[ "${#stages[@]}" -gt 0 ] || stages=(harden regrtest fuzz sanitize)
want() { local s; for s in "${stages[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }

# shellcheck source=tests/tools/tally.sh
. tests/tools/tally.sh
count() { # counts the PASS/FAIL/SKIP lines of a stage log
    local p f s
    p=$(grep -c '^PASS ' "$1")
    f=$(grep -c '^FAIL ' "$1")
    s=$(grep -c '^SKIP ' "$1")
    passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
    printf '(stage %s counted: %d PASS, %d FAIL, %d SKIP)\n' "$2" "$p" "$f" "$s"
}
# Runs a stage, shows its output, counts it; a stage that fails without a
# FAIL line of its own counts one failure.
stage() {
    local name=$1 log rc
    shift
    log=$(mktemp)
    printf '\n== hardening: %s\n' "$name"
    "$@" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    count "$log" "$name"
    if [ "$rc" -ne 0 ] && ! grep -q '^FAIL ' "$log"; then
        tally FAIL "$name: exited $rc without reporting a failure"
    fi
    rm -f "$log"
}

PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3 || true)

# ----------------------------------------------------------------- deps
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    missing=()
    for py in /usr/bin/python3.[0-9]*; do
        v=${py#/usr/bin/python}
        case "$v" in *[!0-9.]*) continue ;; esac
        if [ -x "$py" ] && ! dpkg-query -W -f='${db:Status-Status}' \
            "libpython$v-testsuite" 2>/dev/null | grep -q '^installed$'; then
            missing+=("libpython$v-testsuite")
        fi
    done
    command -v setcap >/dev/null || missing+=(libcap2-bin)
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "hardening: installing ${missing[*]}" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
            "${missing[@]}" >/dev/null 2>&1 ||
            { apt-get update -qq >/dev/null 2>&1 &&
                DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
                    "${missing[@]}" >/dev/null 2>&1; } ||
            echo "hardening: could not install ${missing[*]}" >&2
    fi
fi

# ---------------------------------------------------------------- build
if ! make -s lib tools >/dev/null 2>&1; then
    make -s lib tools 2>&1 | tail -n 20
    tally FAIL "build: make lib tools"
fi
[ -s build/interpreters.txt ] || bash tests/provision/interpreters.sh >build/interpreters.txt 2>/dev/null

# `make check SANITIZE=...` (tests/run-all.sh) builds build/ instrumented and
# exports PYPERFINJECT_SANITIZER_RUNTIME and the sanitizer options: harden.py
# and regrtest.py put that runtime first in LD_PRELOAD.
if [ -z "$PY" ]; then
    tally SKIP "harden, regrtest: no python3 to drive them"
else
    want harden && stage harden "$PY" tests/hardening/harden.py "--$mode"
    want regrtest && stage regrtest "$PY" tests/hardening/regrtest.py "--$mode"
fi
if want fuzz; then
    if [ "$mode" = full ]; then
        stage fuzz bash fuzz/run.sh --seconds "${FUZZ_FULL_SECONDS:-60}"
    else
        stage fuzz bash fuzz/run.sh --seconds "${FUZZ_SMOKE_SECONDS:-12}"
    fi
fi
if want sanitize; then
    if [ "$mode" = full ]; then
        stage sanitize bash tests/hardening/sanitize.sh --full
    else
        stage sanitize bash tests/hardening/sanitize.sh --short
    fi
fi

echo
tally_total hardening
