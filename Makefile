# libpyperfinject — see README.md.
#   make            build build/libpyperfinject.so
#   make demo       build, run the bundled example under the library, show what perf sees
#   make deps       what the tests need: Debian packages, interpreters, viewers
#   make check      make deps, then every test
#   make CC=clang   any C11 compiler; CC=aarch64-linux-gnu-gcc cross-builds

CC ?= cc
ifeq ($(origin CC),default)
CC := gcc
endif
TARGET_ARCH_NAME := $(shell $(CC) -dumpmachine 2>/dev/null | cut -d- -f1)
BUILD ?= build$(if $(filter-out $(shell uname -m),$(TARGET_ARCH_NAME)),-$(TARGET_ARCH_NAME))

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
SANITIZE ?=
SAN_FLAGS := $(if $(SANITIZE),-fsanitize=$(SANITIZE) -fno-omit-frame-pointer)
CFLAGS ?= -O2 -g
# The version's one home: the build, pyperf-run and the man page read it.
VERSION := $(shell cat VERSION)
ALL_CFLAGS := -std=c11 -D_GNU_SOURCE -DPI_VERSION='"$(VERSION)"' -fPIC -fvisibility=hidden -fno-strict-aliasing $(WARN) $(SAN_FLAGS) \
              -Iinclude -Ilibpyperfinject $(CFLAGS)
LDLIBS := -ldl -lpthread -lgcc_s
# The library's SONAME: its major version.
SONAME := libpyperfinject.so.$(firstword $(subst ., ,$(VERSION)))

# What the objects were built with. A changed CC, CFLAGS or SANITIZE
# rewrites the file, and everything that depends on it is rebuilt.
BUILD_FLAGS := $(CC) $(ALL_CFLAGS) $(LDLIBS)
FLAGS_FILE := $(BUILD)/.build-flags
ifneq ($(file <$(FLAGS_FILE)),$(BUILD_FLAGS))
$(shell mkdir -p $(BUILD))
$(file >$(FLAGS_FILE),$(BUILD_FLAGS))
endif

LIB_SRC := $(filter-out %_main.c,$(wildcard libpyperfinject/*.c))
LIB_ASM := libpyperfinject/tramp_$(TARGET_ARCH_NAME).S
LIB_OBJ := $(patsubst libpyperfinject/%.c,$(BUILD)/obj/%.o,$(LIB_SRC)) \
           $(patsubst libpyperfinject/%.S,$(BUILD)/obj/%.o,$(LIB_ASM))
TOOL_OBJ := $(patsubst tests/tools/%.c,$(BUILD)/obj/tools/%.o,$(filter-out %_main.c,$(wildcard tests/tools/*.c)))
# pyperf-attach: loads the library into a running process (attach/).
ATTACH_OBJ := $(patsubst attach/%.c,$(BUILD)/obj/attach/%.o,$(filter-out attach/attach.c,$(wildcard attach/*.c)))
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))

.PHONY: all lib attacher unit-tests tools check demo clean deps man
all: lib attacher tools renderers man

lib: $(BUILD)/libpyperfinject.so

$(BUILD)/obj/%.o: libpyperfinject/%.c $(wildcard libpyperfinject/*.h) $(FLAGS_FILE) | $(BUILD)/obj
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/obj/%.o: libpyperfinject/%.S $(FLAGS_FILE) | $(BUILD)/obj
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/obj/tools/%.o: tests/tools/%.c $(wildcard tests/tools/*.h) $(wildcard libpyperfinject/*.h) $(FLAGS_FILE)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itests/tools -c -o $@ $<

$(BUILD)/libpyperfinject.so: $(LIB_OBJ) libpyperfinject/exports.map
	$(CC) $(ALL_CFLAGS) -shared -Wl,--version-script=libpyperfinject/exports.map \
	    -Wl,-soname,$(SONAME) -Wl,-z,defs -Wl,-z,noexecstack -o $@ $(LIB_OBJ) $(LDLIBS)

$(BUILD)/obj/attach/%.o: attach/%.c $(wildcard attach/*.h) $(FLAGS_FILE)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

attacher: $(BUILD)/pyperf-attach
$(BUILD)/pyperf-attach: $(BUILD)/obj/attach/attach.o $(ATTACH_OBJ)
	$(CC) $(ALL_CFLAGS) -o $@ $^

$(BUILD)/pyperf-attach.a: $(ATTACH_OBJ)
	rm -f $@ && ar rcs $@ $^

# Unit tests link the objects through an archive, so each test pulls in only
# the components it exercises.
$(BUILD)/libpyperfinject.a: $(LIB_OBJ)
	rm -f $@ && ar rcs $@ $^

tools: $(BUILD)/jitdump-check
$(BUILD)/jitdump-check: tests/tools/jitdump_check_main.c $(TOOL_OBJ) $(BUILD)/libpyperfinject.a
	$(CC) $(ALL_CFLAGS) -Itests/tools -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: tests/unit/%.c $(wildcard tests/tools/*.h) $(TOOL_OBJ) $(BUILD)/libpyperfinject.a $(BUILD)/pyperf-attach.a | $(BUILD)/tests
	$(CC) $(ALL_CFLAGS) -Itests/tools -Itests/unit -Iattach -o $@ $< $(TOOL_OBJ) $(BUILD)/libpyperfinject.a \
	    $(BUILD)/pyperf-attach.a -lcmocka $(LDLIBS)

unit-tests: $(UNIT_BIN)

# The man page with the version in it: `man -l build/pyperf-run.1`.
man: $(BUILD)/pyperf-run.1
$(BUILD)/pyperf-run.1: pyperf-run.1.in VERSION | $(BUILD)/obj
	sed -e 's|@VERSION@|$(VERSION)|g' $< >$@

$(BUILD)/obj $(BUILD)/tests:
	mkdir -p $@

# Provisioning, apart from testing: Debian packages (as root), the Debian
# interpreters of the matrix (cached in ~/.cache/pyperfinject), the offline
# viewers. Idempotent and quick once done.
deps:
	@bash tests/provision/deps.sh all
	@bash tests/provision/interpreters.sh --provision >/dev/null || \
	    echo "deps: provisioning interpreters failed; their tests will skip"
	@$(MAKE) -s renderers

check: deps
	@bash tests/run-all.sh

demo:
	@bash examples/demo.sh

clean:
	rm -rf build build-*

# Further targets, one file per concern: install, aarch64, bench, hardening.
-include $(wildcard mk/*.mk)
