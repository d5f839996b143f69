# The README's two commands are `make demo` and `make test`; both set up
# .venv themselves (idempotent: a second run only re-checks stamps).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
CONSTRAINTS := .ci/constraints.txt
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# Editable installs skip the npm build hook: it reruns `npm install`, which rewrites
# package-lock.json after node_modules/.stamp and made every later make reinstall
# everything. The `build` target below builds the bundle instead.
EDITABLE := SKIP_JUPYTER_BUILDER=1 $(PIP) install -q -c $(CONSTRAINTS) -e
BUNDLE := src/attnscope/static/widget.js

.PHONY: demo test lint typecheck js-test py-test build bench screenshots clean chromium

$(VENV)/.torch:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	touch $@

node_modules/.stamp: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

$(VENV)/.runtime: $(VENV)/.torch node_modules/.stamp pyproject.toml
	$(EDITABLE) .
	touch $@

$(VENV)/.demo: $(VENV)/.runtime pyproject.toml
	$(EDITABLE) ".[demo]"
	touch $@

$(VENV)/.test: $(VENV)/.runtime pyproject.toml
	$(EDITABLE) ".[test]"
	touch $@

$(VENV)/.bench: $(VENV)/.test pyproject.toml
	$(EDITABLE) ".[test,bench]"
	touch $@

$(BUNDLE): node_modules/.stamp $(wildcard js/*.ts js/*/*.ts js/*.css js/*.mjs)
	npm run --silent build

build: $(BUNDLE)

# The browser tests drive Debian's chromium: installed here when make may (root with
# apt-get, as .ci/run does); otherwise make stops before the tests with the command.
chromium:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
	  && apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null; } \
	  || { echo "make test: the browser tests need chromium; install it: sudo apt-get install -y chromium" >&2; exit 1; }

demo: $(VENV)/.demo build
	$(PY) -m attnscope demo

lint: $(VENV)/.test
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks

typecheck: $(VENV)/.test node_modules/.stamp
	$(VENV)/bin/mypy
	npm run --silent typecheck

js-test: node_modules/.stamp
	npm test --silent

py-test: $(VENV)/.test build chromium
	$(PY) -m pytest

test: lint typecheck js-test py-test

bench: $(VENV)/.bench build
	$(PY) benchmarks/compare_peers.py

screenshots: $(VENV)/.test build chromium
	$(PY) -m pytest tests/browser -k screenshot --screenshots=docs/images

clean:
	rm -rf $(VENV) node_modules src/attnscope/static
