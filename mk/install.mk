# install: the library, its public headers, pyperf-run, its man page and a
# pkg-config file.
#   make install   [PREFIX=/usr/local] [DESTDIR=] [BINDIR= LIBDIR= INCLUDEDIR= MANDIR= PKGCONFIGDIR=]
#   make uninstall (same variables)
# pyperf-run is installed with LIBDIR and the version written into it; it
# also finds the library at ../lib next to itself, so a DESTDIR staging tree
# runs as is.

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
INSTALL ?= install
PYPERFINJECT_VERSION ?= $(VERSION)
# The file, its SONAME link (what a program linked against it loads) and the
# development link (what -lpyperfinject and LD_PRELOAD paths name).
LIB_FILE := libpyperfinject.so.$(PYPERFINJECT_VERSION)

INSTALL_HEADERS := $(wildcard include/*.h)

.PHONY: install uninstall
PYPERF_RUN_HELPERS := $(wildcard pyperf-run-helpers/*.py)

install: $(BUILD)/libpyperfinject.so $(BUILD)/pyperf-attach pyperf-run.sh $(PYPERF_RUN_HELPERS) $(BUILD)/pyperf-run.1 pyperfinject.pc.in
	$(INSTALL) -d '$(DESTDIR)$(LIBDIR)' '$(DESTDIR)$(BINDIR)' '$(DESTDIR)$(MANDIR)/man1' \
	    '$(DESTDIR)$(PKGCONFIGDIR)' $(if $(INSTALL_HEADERS),'$(DESTDIR)$(INCLUDEDIR)')
	$(INSTALL) -m 0755 $(BUILD)/libpyperfinject.so '$(DESTDIR)$(LIBDIR)/$(LIB_FILE)'
	ln -sf '$(LIB_FILE)' '$(DESTDIR)$(LIBDIR)/$(SONAME)'
	ln -sf '$(SONAME)' '$(DESTDIR)$(LIBDIR)/libpyperfinject.so'
	$(INSTALL) -d '$(DESTDIR)$(LIBDIR)/pyperfinject'
	$(INSTALL) -m 0644 $(PYPERF_RUN_HELPERS) '$(DESTDIR)$(LIBDIR)/pyperfinject/'
	$(INSTALL) -m 0755 $(BUILD)/pyperf-attach '$(DESTDIR)$(LIBDIR)/pyperfinject/pyperf-attach'
	$(if $(INSTALL_HEADERS),$(INSTALL) -m 0644 $(INSTALL_HEADERS) '$(DESTDIR)$(INCLUDEDIR)/')
	sed -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@VERSION@|$(PYPERFINJECT_VERSION)|g' pyperf-run.sh \
	    >'$(DESTDIR)$(BINDIR)/.pyperf-run.tmp'
	chmod 0755 '$(DESTDIR)$(BINDIR)/.pyperf-run.tmp'
	mv -f '$(DESTDIR)$(BINDIR)/.pyperf-run.tmp' '$(DESTDIR)$(BINDIR)/pyperf-run'
	$(INSTALL) -m 0644 $(BUILD)/pyperf-run.1 '$(DESTDIR)$(MANDIR)/man1/pyperf-run.1'
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' \
	    -e 's|@VERSION@|$(PYPERFINJECT_VERSION)|g' pyperfinject.pc.in >'$(DESTDIR)$(PKGCONFIGDIR)/pyperfinject.pc'
	chmod 0644 '$(DESTDIR)$(PKGCONFIGDIR)/pyperfinject.pc'

uninstall:
	rm -f '$(DESTDIR)$(LIBDIR)/libpyperfinject.so' '$(DESTDIR)$(LIBDIR)/$(SONAME)' \
	    '$(DESTDIR)$(LIBDIR)/$(LIB_FILE)' '$(DESTDIR)$(BINDIR)/pyperf-run' \
	    '$(DESTDIR)$(MANDIR)/man1/pyperf-run.1' '$(DESTDIR)$(PKGCONFIGDIR)/pyperfinject.pc' \
	    $(foreach h,$(PYPERF_RUN_HELPERS),'$(DESTDIR)$(LIBDIR)/pyperfinject/$(notdir $(h))') \
	    '$(DESTDIR)$(LIBDIR)/pyperfinject/pyperf-attach' \
	    $(foreach h,$(INSTALL_HEADERS),'$(DESTDIR)$(INCLUDEDIR)/$(notdir $(h))')
	rmdir '$(DESTDIR)$(LIBDIR)/pyperfinject' 2>/dev/null || true
