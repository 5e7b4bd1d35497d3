"""pyperf-run's HTML flame graph step: perf's own flamegraph.py, run with a
recursion limit deep enough for whole Python call chains.

    perf script -i DATA -s flamegraph.py -- FLAMEGRAPH_PY [ITS OPTIONS]

flamegraph.py encodes the call tree as nested JSON, about three recursion
levels per native frame: at Python's default limit (1000) it fails on chains
deeper than about 280 native frames, which whole Python chains often are
(pyperf-run reads recordings with --max-stack 8192). 10000 levels stay well
inside the 8 MiB C stack the JSON encoder recurses on."""
import runpy
import sys

sys.setrecursionlimit(10000)
target = sys.argv[1]
sys.argv = [target] + sys.argv[2:]
# perf calls the script's process_event and trace_end: flamegraph.py's own.
_script = runpy.run_path(target, run_name="__main__")
process_event = _script["process_event"]
trace_end = _script["trace_end"]
