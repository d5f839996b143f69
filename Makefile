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

.PHONY: demo test lint typecheck js-test py-test build bench screenshots clean

$(VENV)/.torch:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	touch $@

node_modules/.stamp: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

$(VENV)/.runtime: $(VENV)/.torch node_modules/.stamp pyproject.toml
	$(PIP) install -q -c $(CONSTRAINTS) -e .
	touch $@

$(VENV)/.demo: $(VENV)/.runtime pyproject.toml
	$(PIP) install -q -c $(CONSTRAINTS) -e ".[demo]"
	touch $@

$(VENV)/.test: $(VENV)/.runtime pyproject.toml
	$(PIP) install -q -c $(CONSTRAINTS) -e ".[test]"
	touch $@

$(VENV)/.bench: $(VENV)/.test pyproject.toml
	$(PIP) install -q -c $(CONSTRAINTS) -e ".[test,bench]"
	touch $@

build: node_modules/.stamp
	npm run --silent build

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

py-test: $(VENV)/.test build
	$(PY) -m pytest

test: lint typecheck js-test py-test

bench: $(VENV)/.bench build
	$(PY) benchmarks/compare_peers.py

screenshots: $(VENV)/.test build
	$(PY) -m pytest tests/browser -k screenshot --screenshots=docs/images

clean:
	rm -rf $(VENV) node_modules src/attnscope/static
