#!/usr/bin/env bash
# bench/run.sh - the benchmark harness (bench/run.py) under the system python3.
#
# Usage: run.sh [--smoke] [--quick] [--only LABEL[,LABEL]] [run.py options]
#   --smoke   what `make check` runs (tests/run-all.sh): tiny sizes, one round,
#             two interpreters, no callgrind; checks that every configuration
#             runs and that the harness parses its numbers, never timings.
#             Last line: "bench: N passed, N failed, N skipped".
# Without --smoke: the full benchmark (`make bench`), see docs/benchmarks.md.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
driver=
if [ -x /usr/bin/python3 ]; then
    driver=/usr/bin/python3
else
    driver=$(command -v python3 || true)
fi
if [ -z "$driver" ]; then
    echo "SKIP bench: no python3 to drive the harness"
    echo "bench: 0 passed, 0 failed, 1 skipped"
    exit 0
fi
exec "$driver" "$HERE/run.py" "$@"
