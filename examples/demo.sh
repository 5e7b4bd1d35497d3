#!/usr/bin/env bash
# make demo: build the library, run the bundled example under it with the
# machine's default python3, and show what perf gets to see.
set -euo pipefail
cd "$(dirname "$0")/.."
make -s lib
python=$(command -v python3)
out=$(mktemp -d /tmp/pyperfinject-demo.XXXXXX)
echo "== running examples/app.py with $python ($("$python" -V 2>&1)) under the library"
PYPERFINJECT_DIR="$out" LD_PRELOAD="$PWD/build/libpyperfinject.so" "$python" examples/app.py
map=$(ls "$out"/perf-*.map)
echo
echo "== $map: $(wc -l <"$map") functions named; those of the example:"
grep -F "$PWD/examples/app.py" "$map" || true
echo
echo "(each line: trampoline address, size, the name perf shows for that Python function)"
rm -rf "$out"
