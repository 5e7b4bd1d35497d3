# renderers: the offline viewers pyperf-run uses (docs/usage.md), pinned by
# renderers/package.json and its lock file, from the npm registry into
# $(BUILD)/renderers/ (`make` builds them; `make install` copies them to
# $(DATADIR)/pyperfinject/). Without npm or without the registry the build
# goes on with a note: pyperf-run then says how to get a renderer.
NPM ?= npm
DATADIR ?= $(PREFIX)/share
RENDERERS_DIR := $(BUILD)/renderers
RENDERERS_STAMP := $(RENDERERS_DIR)/.installed
D3_TEMPLATE_FILE := node_modules/d3-flame-graph/dist/templates/d3-flamegraph-base.html
SPEEDSCOPE_DIR := node_modules/speedscope/dist/release

.PHONY: renderers
renderers: $(RENDERERS_STAMP)

$(RENDERERS_STAMP): renderers/package.json renderers/package-lock.json
	@mkdir -p $(RENDERERS_DIR)
	@cp renderers/package.json renderers/package-lock.json $(RENDERERS_DIR)/
	@if ! command -v $(NPM) >/dev/null 2>&1; then \
	    echo "note: npm is not installed: no offline flame-graph template and speedscope (docs/usage.md)"; \
	elif $(NPM) ci --prefix $(RENDERERS_DIR) --no-audit --no-fund --ignore-scripts \
	        --loglevel=error >$(RENDERERS_DIR)/npm.log 2>&1 && \
	     test -f $(RENDERERS_DIR)/$(D3_TEMPLATE_FILE) && test -f $(RENDERERS_DIR)/$(SPEEDSCOPE_DIR)/index.html; then \
	    touch $@; \
	else \
	    echo "note: npm ci failed (see $(RENDERERS_DIR)/npm.log): no offline flame-graph template and speedscope"; \
	fi

.PHONY: install-renderers uninstall-renderers
install: install-renderers
install-renderers:
	@if [ -f $(RENDERERS_STAMP) ]; then \
	    $(INSTALL) -d '$(DESTDIR)$(DATADIR)/pyperfinject' && \
	    $(INSTALL) -m 0644 $(RENDERERS_DIR)/$(D3_TEMPLATE_FILE) '$(DESTDIR)$(DATADIR)/pyperfinject/' && \
	    rm -rf '$(DESTDIR)$(DATADIR)/pyperfinject/speedscope' && \
	    cp -R $(RENDERERS_DIR)/$(SPEEDSCOPE_DIR) '$(DESTDIR)$(DATADIR)/pyperfinject/speedscope' && \
	    chmod -R u=rwX,go=rX '$(DESTDIR)$(DATADIR)/pyperfinject'; \
	else \
	    echo "note: no renderers in $(RENDERERS_DIR) (make renderers): installed without them"; \
	fi

uninstall: uninstall-renderers
uninstall-renderers:
	rm -rf '$(DESTDIR)$(DATADIR)/pyperfinject'
