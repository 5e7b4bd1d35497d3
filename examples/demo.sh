#!/usr/bin/env bash
# make demo: build the library, profile the bundled example (examples/app.py)
# with `pyperf-run record` under the python3 your PATH gives (or PYTHON=...),
# and show the Python call chain perf sees in it. The recording stays in
# build/demo for `./pyperf-run.sh report build/demo`. Exits 0 when the chain
# py::checksum -> ... -> py::<module> is there, 1 when it really is not.
# Without a usable perf it shows the names the library wrote instead.
set -euo pipefail
cd "$(dirname "$0")/.."
# `make check SANITIZE=...` leaves build/ instrumented (its flags are in
# build/.build-flags): the demo shows the library users get, built apart then.
build=build
case "$(cat build/.build-flags 2>/dev/null)" in
*-fsanitize=*) build="build-plain" ;;
esac
# SANITIZE= : not the one a surrounding `make check SANITIZE=...` passes down.
make -s BUILD="$build" SANITIZE= lib
# The flame-graph template the report's next step uses (a note, not a
# failure, without npm).
make -s renderers
lib=$PWD/$build/libpyperfinject.so

python=${PYTHON:-$(command -v python3 || true)}
if [ -z "$python" ]; then
    echo "demo: no python3 on PATH; run: make demo PYTHON=/path/to/python3" >&2
    exit 1
fi
# A pyenv shim (or another script that execs Python) is not the program to
# profile: sys.executable names the interpreter behind it. A launcher that is
# its own sys.executable (a venv's python, an interpreter run through its
# loader) stays as it is.
real=$("$python" -c 'import sys; print(sys.executable)' 2>/dev/null || true)
if [ -n "$real" ] && [ "$real" != "$python" ] && [ -x "$real" ] && "$real" -c '' 2>/dev/null; then
    echo "== $python starts $real: profiling that"
    python=$real
fi
if ! version=$("$python" -c 'import platform, sys
assert platform.python_implementation() == "CPython" and sys.version_info >= (3, 6)
print("CPython " + platform.python_version())' 2>/dev/null); then
    echo "demo: $python is not CPython 3.6 or newer, which the library serves; run: make demo PYTHON=/path/to/python3" >&2
    exit 1
fi
echo "== profiling examples/app.py with $python ($version)"

out=$PWD/build/demo
rm -rf "$out"
if ! { command -v perf >/dev/null && perf record -q -e cpu-clock -o /dev/null true 2>/dev/null; }; then
    echo "(perf is missing or not permitted here: showing the names the library wrote)"
    mkdir -p "$out"
    PYPERFINJECT_DIR="$out" LD_PRELOAD="$lib" "$python" examples/app.py
    grep -F "$PWD/examples/app.py" "$out"/perf-*.map
    exit 0
fi

PYPERFINJECT_LIB="$lib" ./pyperf-run.sh record -o "$out" -- "$python" examples/app.py

echo
echo "== Python functions by the share of samples inside them (perf report --children)"
perf report -i "$out/perf.jit.data" --stdio --children --sort sym -g none --no-inline \
    --percent-limit 1 2>/dev/null | grep -F 'py::' | head -12 || true

perf script -i "$out/perf.jit.data" -F ip,sym --no-inline 2>/dev/null |
    awk -f examples/python_chains.awk >"$out/python-chains.txt"
total=$(awk -F '\t' '$1 == "TOTAL" { print $2 }' "$out/python-chains.txt")
chain=$(awk -F '\t' '$2 ~ /^py::checksum( |$)/ && $2 ~ /py::<module>$/ { print; exit }' \
    "$out/python-chains.txt")
echo
if [ -z "$chain" ]; then
    echo "demo: no sample shows the example's Python call chain (py::checksum ... py::<module>);" \
        "the chains perf saw are in $out/python-chains.txt" >&2
    exit 1
fi
echo "== the Python call chain perf sees in ${chain%%$'\t'*} of ${total} samples with Python frames:"
echo "   ${chain#*$'\t'}"
echo
echo "More: ./pyperf-run.sh report build/demo   (docs/usage.md)"
