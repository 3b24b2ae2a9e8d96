# The two commands of CONTRIBUTING.md: `make install` (build the wheel and the VSIX, install it into
# VS Code) and `make test` (every test, each step within its budget; .ci/run calls it). `make bench`
# is the benchmark.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
VSIX := ai-gateway-lm.vsix
TS_SOURCES := extension tests/ts tests/e2e bench scripts eslint.config.mjs

.PHONY: install build test test-python test-node test-e2e test-e2e-oldest test-e2e-bundled test-e2e-firststart smoke-vsix screenshots lint contract lock check-lock vsix-platforms vsix-standin bench clean

install: build
	@bash scripts/install-vsix.sh $(VSIX)

# The VSIX for every platform: it sets up the sidecar's Python on first start (RFC 0001, "Shipping
# Python"). Release settings, documented in CONTRIBUTING.md: PUBLISHER (the Marketplace publisher id) and
# REPOSITORY (the public repository's URL); unset, package.json's.
build: $(VENV)/.ready node_modules/.ready
	rm -rf python dist $(VSIX)
	$(PY) -m pip wheel --quiet --no-deps --wheel-dir python .
	cp requirements.lock python/requirements.txt
	node extension/build.mjs
	PYTHON=$(PY) node scripts/package.mjs --out $(VSIX)

# A VSIX per platform, each carrying its own Python (RFC 0001, "Shipping Python"), into vsix/, each
# checked by scripts/check-vsix.mjs. Not part of `make install` or `make test`. A target's runtime is
# the pinned download (scripts/platforms.json), or RUNTIME_<target>=DIR (RUNTIME_linux_x64=…);
# NO_RUNTIME=1 packs the others without one, to check their layout where the download is not
# reachable. `make vsix-standin` makes a linux-x64 runtime from this machine's CPython 3.13.
TARGETS := linux-x64 linux-arm64 alpine-x64 alpine-arm64 darwin-x64 darwin-arm64 win32-x64 win32-arm64
vsix-platforms: build
	@command -v aarch64-linux-gnu-strip >/dev/null || apt-get install -y -q binutils-aarch64-linux-gnu >/dev/null  # strips the arm64 wheels' debug symbols
	@mkdir -p vsix
	@for t in $(TARGETS); do \
	  runtime=$$(printenv "RUNTIME_$$(echo $$t | tr - _)" || true); \
	  PYTHON=$(PY) node scripts/package.mjs --target $$t $${runtime:+--runtime $$runtime} $${NO_RUNTIME:+--no-runtime} --out vsix/ai-gateway-lm-$$t.vsix && \
	  node scripts/check-vsix.mjs vsix/ai-gateway-lm-$$t.vsix $$t || exit 1; \
	done

STANDIN ?= $(HOME)/.pyenv/versions/3.13.0
vsix-standin: build/standin-runtime.ready
build/standin-runtime.ready: scripts/standin-runtime.sh
	bash scripts/standin-runtime.sh $(STANDIN) build/standin-runtime
	touch $@

$(VENV)/.ready: requirements-dev.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.lock
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $@

node_modules/.ready: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

lint: $(VENV)/.ready node_modules/.ready
	$(VENV)/bin/ruff check server tests
	$(VENV)/bin/ruff format --check server tests
	$(VENV)/bin/mypy
	@tmp=$$(mktemp --suffix=.ts); PYTHON=$(PY) node scripts/gen-contract.mjs $$tmp && diff -u extension/contract.ts $$tmp; \
	  status=$$?; rm -f $$tmp; \
	  if [ $$status -ne 0 ]; then echo "extension/contract.ts is not what server/gateway_lm/contract.py makes: run 'make contract'" >&2; exit 1; fi
	node scripts/check-docs.mjs
	node scripts/check-commits.mjs
	npx tsc -p . --noEmit
	npx tsc -p extension/webview
	npx eslint --max-warnings 0 $(TS_SOURCES)
	npx prettier --check --log-level warn $(TS_SOURCES)
	bash scripts/lint-workflows.sh

# requirements.lock's hashes: every wheel the index has for each pin (scripts/lock.mjs). `make lock`
# after changing a pin; `make check-lock` (in `make test`) fails when a hash is not the index's or a
# platform of scripts/platforms.json has no wheel for a pin. Both read the index's lists only.
lock: $(VENV)/.ready
	PYTHON=$(PY) node scripts/lock.mjs write

check-lock: $(VENV)/.ready
	PYTHON=$(PY) node scripts/lock.mjs check

# extension/contract.ts: the extension's types of the RPC seam, generated from the sidecar's models.
contract: $(VENV)/.ready node_modules/.ready
	PYTHON=$(PY) node scripts/gen-contract.mjs extension/contract.ts

test-python: $(VENV)/.ready
	$(PY) -m pytest -q -p no:cacheprovider

# Each test has a time limit (60 s unless it sets its own: tests/ts/register.ts); each file as a
# whole has 300 s (--test-timeout, which Node applies to a file's process as well as to its tests).
test-node: $(VENV)/.ready node_modules/.ready
	rm -rf out
	node extension/build.mjs
	npx tsc -p tests/ts
	node --require ./out/tests/ts/register.js --test --test-timeout=300000 --test-reporter=spec out/tests/ts/*.test.js

# A real VS Code (code-server) with Copilot Chat, set up once into ~/.cache/ai-gateway-lm-host;
# screenshots go to /tmp/ai-gateway-lm-e2e/newest (AI_GATEWAY_LM_ARTIFACTS/<host>).
test-e2e: build
	node tests/e2e/api.mjs
	node tests/e2e/ui.mjs

# The API tests again on the oldest VS Code that engines.vscode admits (code-server 4.133.0 =
# VS Code 1.133.0), set up once into ~/.cache/ai-gateway-lm-host-1.133.0, and the UI steps of what
# that host has too (the Thinking Effort menu, the curated picker); screenshots in …/oldest.
test-e2e-oldest: build
	AI_GATEWAY_LM_HOST=oldest node tests/e2e/api.mjs
	AI_GATEWAY_LM_HOST=oldest AI_GATEWAY_LM_UI_STEPS=manage-models,model-picker,effort-menu,effort-sent,speed-menu,tier-menu,curated-picker,curated-picker-restored,groups-update-delete node tests/e2e/ui.mjs

# The linux-x64 platform VSIX (runtime: RUNTIME_linux_x64, else this machine's stand-in) in the real
# host with no Python the host can find and loopback-only networking (tests/e2e/bundled.mjs). Needs
# root (private mount and network namespaces). Not part of `make test`: it packs a 25 MB VSIX.
test-e2e-bundled: build build/standin-runtime.ready
	PYTHON=$(PY) node scripts/package.mjs --target linux-x64 --runtime $(or $(RUNTIME_linux_x64),build/standin-runtime) --out vsix/ai-gateway-lm-linux-x64.vsix
	node tests/e2e/bundled.mjs vsix/ai-gateway-lm-linux-x64.vsix

# The linux-x64 platform VSIX (runtime: RUNTIME_linux_x64, else this machine's stand-in), its Python
# started by the extension's own code and taken through initialize, the model list, a streamed chat,
# a cancelled chat and a shutdown against the fake gateway, each step within its limit
# (tests/ts/smoke.ts). CI does the same on each runner with that runner's VSIX. Not part of `make
# test`: it packs a 25 MB VSIX (tests/ts/smoke.test.ts, in test-node, runs the steps on the venv).
smoke-vsix: build build/standin-runtime.ready
	PYTHON=$(PY) node scripts/package.mjs --target linux-x64 --runtime $(or $(RUNTIME_linux_x64),build/standin-runtime) --out vsix/ai-gateway-lm-linux-x64.vsix
	node scripts/check-vsix.mjs vsix/ai-gateway-lm-linux-x64.vsix linux-x64
	rm -rf out && npx tsc -p tests/ts
	node --require ./out/tests/ts/register.js out/tests/ts/smoke.js vsix/ai-gateway-lm-linux-x64.vsix

# The untargeted VSIX's first start in the real workbench, with screenshots: offline (loopback-only
# network: the message, Retry, shown once) and with only a Python 3.9 on PATH (the message, Choose
# Interpreter, a good Python typed into the file dialog, the models listed and a chat answered,
# without a reload). Root.
test-e2e-firststart: build
	node tests/e2e/firststart-ui.mjs offline
	node tests/e2e/firststart-ui.mjs old-python

# Regenerates the README's screenshots (docs/*.png) from a UI run.
screenshots: build
	node tests/e2e/ui.mjs
	cp $${AI_GATEWAY_LM_ARTIFACTS:-/tmp/ai-gateway-lm-e2e}/newest/ui-*-model-picker.png docs/model-picker.png
	cp $${AI_GATEWAY_LM_ARTIFACTS:-/tmp/ai-gateway-lm-e2e}/newest/ui-*-effort-menu.png docs/effort-menu.png
	cp $${AI_GATEWAY_LM_ARTIFACTS:-/tmp/ai-gateway-lm-e2e}/newest/ui-speed-menu-open.png docs/speed-menu.png
	cp $${AI_GATEWAY_LM_ARTIFACTS:-/tmp/ai-gateway-lm-e2e}/newest/ui-context-size-menu.png docs/context-size-menu.png
	cp $${AI_GATEWAY_LM_ARTIFACTS:-/tmp/ai-gateway-lm-e2e}/newest/ui-*-tool-round-trip.png docs/answer-and-status-bar.png
	cp $${AI_GATEWAY_LM_ARTIFACTS:-/tmp/ai-gateway-lm-e2e}/newest/ui-*-chat-title.png docs/small-tasks-chat-title.png
	cp $${AI_GATEWAY_LM_ARTIFACTS:-/tmp/ai-gateway-lm-e2e}/newest/ui-*-commit-message.png docs/small-tasks-commit-message.png
	cp $${AI_GATEWAY_LM_ARTIFACTS:-/tmp/ai-gateway-lm-e2e}/newest/ui-groups.png docs/provider-groups.png
	cp $${AI_GATEWAY_LM_ARTIFACTS:-/tmp/ai-gateway-lm-e2e}/newest/ui-*-usage-dashboard.png docs/usage-dashboard.png
	cp $${AI_GATEWAY_LM_ARTIFACTS:-/tmp/ai-gateway-lm-e2e}/newest/ui-cache-saved.png docs/cache-saved.png
	cp $${AI_GATEWAY_LM_ARTIFACTS:-/tmp/ai-gateway-lm-e2e}/newest/ui-model-metrics-hover.png docs/model-metrics.png
	cp $${AI_GATEWAY_LM_ARTIFACTS:-/tmp/ai-gateway-lm-e2e}/newest/ui-tier-menu-open.png docs/service-tiers.png

# `make test` (what .ci/run runs): these steps in this order, each within its own budget in seconds
# (scripts/within-budget.sh), so a step that hangs is stopped and named ("step test-e2e ran past its
# budget of 1500 s") instead of eating CI's 90 minutes. The budgets allow for a cold machine (lint
# sets up the venv and node_modules; each e2e step sets up its code-server, ~10 and ~7 min cold) and
# add up to 79 minutes (check-lock reads the package index's lists: 2 minutes).
TEST_STEPS := lint:600 check-lock:120 test-python:1080 test-e2e:1500 test-e2e-oldest:960 test-node:480

test:
	@for step in $(TEST_STEPS); do \
	  bash scripts/within-budget.sh $${step%%:*} $${step##*:} $(MAKE) --no-print-directory $${step%%:*} || exit 1; \
	done

# Not part of `make test`: prints the benchmark table (rfcs/0005-performance.md explains it).
# Its first-start rows run the VSIXs as users get them: the untargeted one and linux-x64's, whose
# runtime is RUNTIME_linux_x64, else this machine's stand-in (make vsix-standin).
bench: build build/standin-runtime.ready
	PYTHON=$(PY) node scripts/package.mjs --target linux-x64 --runtime $(or $(RUNTIME_linux_x64),build/standin-runtime) --out vsix/ai-gateway-lm-linux-x64.vsix
	rm -rf out && npx tsc -p tests/ts
	node bench/bench.mjs

clean:
	rm -rf $(VENV) node_modules out dist python vsix $(VSIX)
