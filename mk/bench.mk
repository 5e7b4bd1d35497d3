# bench: what the library costs, on every interpreter of the matrix (issue #7).
#   make bench              the full benchmark (~25 min on 2 cores): wall time and
#                           callgrind instruction counts, every configuration;
#                           writes docs/benchmarks.md and build/bench/results.json
#   make bench-quick        smaller sizes, fewer rounds (build/bench/benchmarks.md)
#   make bench-smoke        what `make check` runs: does every configuration run
#   make bench BENCH_ARGS='--only pyenv-3.12 --rounds 3'   any bench/run.py option

BENCH_ARGS ?=
BENCH_PYTHON ?= $(firstword $(wildcard /usr/bin/python3) python3)

.PHONY: bench bench-quick bench-smoke
bench: lib
	$(BENCH_PYTHON) bench/run.py --lib $(BUILD)/libpyperfinject.so $(BENCH_ARGS)

bench-quick: lib
	$(BENCH_PYTHON) bench/run.py --lib $(BUILD)/libpyperfinject.so --quick $(BENCH_ARGS)

bench-smoke: lib
	$(BENCH_PYTHON) bench/run.py --lib $(BUILD)/libpyperfinject.so --smoke $(BENCH_ARGS)
