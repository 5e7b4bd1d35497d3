#!/usr/bin/env bash
# make demo: build the library, profile the bundled example with perf under
# the machine's default python3, and show the Python frames perf now sees.
# Without a usable perf it still shows the names the library wrote.
set -euo pipefail
cd "$(dirname "$0")/.."
# `make check SANITIZE=...` leaves build/ instrumented (tests/run-all.sh,
# build/.flags): the demo shows the library users get, built apart then.
build=build
case "$(cat build/.flags 2>/dev/null)" in
*SANITIZE=?*) build="build-plain" ;;
esac
make -s BUILD="$build" lib
lib=$PWD/$build/libpyperfinject.so
python=$(command -v python3)
out=$(mktemp -d /tmp/pyperfinject-demo.XXXXXX)
trap 'rm -rf "$out"' EXIT
echo "== profiling examples/app.py with $python ($("$python" -V 2>&1)) under the library"

if command -v perf >/dev/null && perf record -q -e cpu-clock -o /dev/null true 2>/dev/null; then
    # DWARF call graphs: works whether or not the interpreter keeps frame
    # pointers. -k 1: jitdump timestamps are CLOCK_MONOTONIC.
    perf record -q -F 999 -k 1 --call-graph dwarf,65528 -e cpu-clock -o "$out/perf.data" -- \
        env LD_PRELOAD="$lib" PYPERFINJECT_DIR="$out" "$python" examples/app.py
    (cd "$out" && perf inject -i perf.data --jit -o perf.jit.data)
    echo
    echo "== perf report (callers of the hottest symbols; py:: lines are Python functions)"
    perf report -i "$out/perf.jit.data" --stdio --no-children --sort sym \
        -g caller,0.5,callee --percent-limit 10 2>/dev/null |
        grep -v -e '^#' -e '^$' | head -60
    echo
    echo "== the Python call chain of the hottest path, innermost first:"
    perf report -i "$out/perf.jit.data" --stdio --no-children --sort sym \
        -g caller,0.5,callee --percent-limit 10 2>/dev/null |
        grep -o 'py::[^ ]*' | awk '!seen[$0]++' | head -10
else
    echo "(perf is missing or not permitted here: showing the names the library wrote)"
    PYPERFINJECT_DIR="$out" LD_PRELOAD="$lib" "$python" examples/app.py
    grep -F "$PWD/examples/app.py" "$out"/perf-*.map
fi
