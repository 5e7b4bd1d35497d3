# Hardening: hostile environments, crash safety, concurrency, sanitizers,
# fuzzing and CPython's own regression tests (docs/reliability.md).
#
#   make hardening         tests/hardening/run.sh --smoke (what `make check` runs)
#   make hardening-full    every test on every interpreter, the long regrtest set,
#                          the sanitizer run and 60 s per fuzz target
#   make sanitize          ASan+UBSan library, unit tests, hardening subset and the
#                          integration harness on two interpreters; TSan on 3.11
#   make fuzz              FUZZ_SECONDS (default 300) per libFuzzer target
#   make fuzz-smoke        FUZZ_SMOKE_SECONDS (default 15) per target
#   make fuzz-build        only build the targets (clang) into build-fuzz/
#
# The fuzz targets compile the library's pure parts and the dump checker
# straight from source with clang -fsanitize=fuzzer,address,undefined.

FUZZ_CC ?= clang
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 300
FUZZ_SMOKE_SECONDS ?= 15
FUZZ_TARGETS := names config records ehframe checker
FUZZ_FLAGS := -std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer \
              -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
              -Wall -Wextra -Werror -Ilibpyperfinject -Iinclude -Itests/tools
FUZZ_LIB_SRC := libpyperfinject/names.c libpyperfinject/config.c libpyperfinject/ehframe.c \
                libpyperfinject/jitdump_records.c \
                $(filter-out %_main.c,$(wildcard tests/tools/*.c))
FUZZ_BIN := $(patsubst %,$(FUZZ_BUILD)/fuzz_%,$(FUZZ_TARGETS))

$(FUZZ_BUILD)/fuzz_%: fuzz/fuzz_%.c fuzz/fuzz_common.h $(FUZZ_LIB_SRC) \
                      $(wildcard libpyperfinject/*.h) $(wildcard tests/tools/*.h)
	@mkdir -p $(FUZZ_BUILD)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< $(FUZZ_LIB_SRC)

.PHONY: fuzz-build fuzz fuzz-smoke hardening hardening-full sanitize
fuzz-build: $(FUZZ_BIN)

fuzz: fuzz-build
	@bash fuzz/run.sh --seconds $(FUZZ_SECONDS)

fuzz-smoke: fuzz-build
	@bash fuzz/run.sh --seconds $(FUZZ_SMOKE_SECONDS)

hardening:
	@bash tests/hardening/run.sh --smoke

hardening-full:
	@bash tests/hardening/run.sh --full

sanitize:
	@bash tests/hardening/sanitize.sh --full
