# aarch64: the cross build tested under qemu-user (docs/aarch64.md).
#   make aarch64-check        every aarch64 test (tests/aarch64/run.sh; installs what it needs as root)
#   make aarch64-smoke        the subset `make check` runs (tests/aarch64/run.sh --smoke)
#   make aarch64-deps         only fetch the arm64 libcmocka/libunwind packages into the cache
#   make aarch64-unit-tests   cross-build the library, tools and cmocka tests
#
# The arm64 cmocka and libunwind come from Debian's packages, unpacked (not
# installed) under AARCH64_DEPS by tests/aarch64/run.sh. When that directory
# has cmocka.h, `make CC=aarch64-linux-gnu-gcc unit-tests` finds it: the unit
# test binaries (only they: `private` keeps the flags off the library objects
# they depend on) get its include and library directories and an rpath, so
# `qemu-aarch64 -L /usr/aarch64-linux-gnu build-aarch64/tests/test_x` runs.

AARCH64_CC ?= aarch64-linux-gnu-gcc
PYPERFINJECT_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/pyperfinject
AARCH64_SUITE ?= bookworm
AARCH64_DEPS ?= $(PYPERFINJECT_CACHE)/aarch64/$(AARCH64_SUITE)/root
AARCH64_DEPS_LIB = $(AARCH64_DEPS)/usr/lib/aarch64-linux-gnu

ifeq ($(TARGET_ARCH_NAME),aarch64)
ifneq ($(wildcard $(AARCH64_DEPS)/usr/include/cmocka.h),)
$(UNIT_BIN): private ALL_CFLAGS += -idirafter $(AARCH64_DEPS)/usr/include \
    -L$(AARCH64_DEPS_LIB) -Wl,-rpath,$(AARCH64_DEPS_LIB)
endif
endif

.PHONY: aarch64-check aarch64-smoke aarch64-deps aarch64-unit-tests
aarch64-check:
	@bash tests/aarch64/run.sh

aarch64-smoke:
	@bash tests/aarch64/run.sh --smoke

aarch64-deps:
	@bash tests/aarch64/run.sh --deps-only

aarch64-unit-tests:
	$(MAKE) CC=$(AARCH64_CC) AARCH64_DEPS=$(AARCH64_DEPS) lib tools unit-tests
