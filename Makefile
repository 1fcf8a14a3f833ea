# Every workflow of the book. Each target bootstraps .venv from
# requirements.txt when it is missing or older than requirements.txt, so one
# command is enough on a fresh machine.
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# A Colab-like environment: ipywidgets 7.7.1, attnbook installed non-editable.
COLAB_VENV := .venv-colab
COLAB_STAMP := $(COLAB_VENV)/.installed
NOTEBOOKS := $(sort $(wildcard book/*.ipynb))
# `make test NB=book/masked-softmax.ipynb` checks one notebook only.
NB ?=
NBVAL := -p no:cacheprovider --nbval --nbval-sanitize-with tests/nbval-sanitize.cfg -p tests.nbval_report
PORT ?= 8000

.PHONY: help install colab-env lint book test test-lib test-book test-notebooks test-widgets-ipyw7 \
        test-jupyter test-cpus pdf colab lab notebooks serve bench clean lm-checkpoint

help:
	@echo "make book       build the website into _build/html (strict)"
	@echo "make test       lint, library tests, book tests, nbval on every notebook"
	@echo "make test NB=book/NAME.ipynb   check one notebook against its stored outputs"
	@echo "make colab      run every notebook alone in a Colab-like environment"
	@echo "make lab        open the chapters in JupyterLab"
	@echo "make notebooks  re-execute notebooks in place (NB=... for one) to accept changes"
	@echo "make serve      serve _build/html on http://localhost:$(PORT)"
	@echo "make test-jupyter  drive every explorer with the keyboard in a real JupyterLab"
	@echo "make test-cpus  strict nbval again with other CPU code paths forced (NB=... for one)"
	@echo "make pdf        print the whole book to _build/pdf/attention-interactively.pdf"
	@echo "make bench      slider redraw benchmark, JupyterLab key-to-picture latency, page sizes"
	@echo "make clean      remove _build"
	@echo "make lm-checkpoint  retrain chapter 10's shipped model (lib/attnbook/lm_data/tiny_lm.pt)"

$(STAMP): requirements.txt lib/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $(STAMP)

install: $(STAMP)

$(COLAB_STAMP): tests/requirements-colab.txt
	rm -rf $(COLAB_VENV)
	$(PYTHON) -m venv $(COLAB_VENV)
	$(COLAB_VENV)/bin/python -m pip install --quiet -r tests/requirements-colab.txt
	touch $(COLAB_STAMP)

# attnbook is reinstalled (non-editable) whenever lib/ changes.
COLAB_LIB := $(COLAB_VENV)/.attnbook
$(COLAB_LIB): $(COLAB_STAMP) lib/pyproject.toml $(wildcard lib/attnbook/*.py lib/attnbook/*/*.py lib/attnbook/lm_data/*)
	$(COLAB_VENV)/bin/python -m pip install --quiet --no-deps --force-reinstall ./lib
	touch $(COLAB_LIB)

colab-env: $(COLAB_LIB)

# The chapters' kernels read book/_ext/ipython_kernel_config.py (it drops
# ipykernel's notice about local TCP, see its docstring) from a profile in _build.
KERNEL_IPYTHONDIR := $(CURDIR)/_build/ipython
KERNEL_PROFILE := $(KERNEL_IPYTHONDIR)/profile_default/ipython_kernel_config.py
$(KERNEL_PROFILE): book/_ext/ipython_kernel_config.py
	mkdir -p $(dir $@)
	cp $< $@
BUILD_BOOK := ATTNBOOK_STATIC=1 IPYTHONDIR=$(KERNEL_IPYTHONDIR) $(BIN)/jupyter-book build . -W -n --keep-going
# Jupyter Book's execution cache keys a notebook on its code cells only, so
# a change to the library would otherwise leave stale outputs (explorer
# pictures, numbers) on the site; any change under lib/attnbook empties it.
LIB_STAMP := _build/.attnbook-sources
$(LIB_STAMP): $(wildcard lib/attnbook/*.py lib/attnbook/*/*.py lib/attnbook/lm_data/*)
	rm -rf _build/.jupyter_cache
	mkdir -p _build
	touch $@

book: $(STAMP) $(LIB_STAMP) $(KERNEL_PROFILE)
	$(BUILD_BOOK)

# The whole book on paper: one HTML page (Jupyter Book's singlehtml builder,
# same executed notebooks as `make book`), printed by headless Chromium with
# each explorer as small multiples (tests/print_book.py), then checked.
pdf: $(STAMP) $(LIB_STAMP) $(KERNEL_PROFILE)
	$(BUILD_BOOK) --builder custom --custom-builder singlehtml
	$(BIN)/python -m tests.print_book
	$(BIN)/python -m pytest -p no:cacheprovider -q tests/test_pdf.py

ifeq ($(NB),)
test: $(STAMP) lint test-lib book test-book test-notebooks test-widgets-ipyw7
else
test: $(STAMP) $(KERNEL_PROFILE)
	IPYTHONDIR=$(KERNEL_IPYTHONDIR) $(BIN)/python -m pytest $(NBVAL) $(NB)
endif

lint: $(STAMP)
	$(BIN)/ruff check --config lib/pyproject.toml lib tests book
	$(BIN)/ruff format --config lib/pyproject.toml --check lib tests book
	$(BIN)/check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml
	$(BIN)/zizmor --offline --no-progress .github/workflows

test-lib: $(STAMP)
	$(BIN)/python -m pytest -p no:cacheprovider -q lib/tests

# The JupyterLab run and the PDF check have targets of their own (slower).
test-book: $(STAMP)
	$(BIN)/python -m pytest -p no:cacheprovider -q tests \
	  --ignore=tests/test_jupyter.py --ignore=tests/test_pdf.py

test-jupyter: $(STAMP)
	$(BIN)/python -m pytest -p no:cacheprovider -q tests/test_jupyter.py

test-notebooks: $(STAMP) $(KERNEL_PROFILE)
	IPYTHONDIR=$(KERNEL_IPYTHONDIR) $(BIN)/python -m pytest $(NBVAL) $(NOTEBOOKS)

# Strict nbval again with other CPU code paths forced, so that a stored output
# which holds only on this machine's kernels fails here and not on a reader's
# Intel or AMD machine. The notebooks' kernels inherit these variables.
# NB=... checks one notebook. AVX-512 is tried only where the CPU has it.
CPU_VARIANTS := \
  "ATEN_CPU_CAPABILITY=default MKL_ENABLE_INSTRUCTIONS=SSE4_2 OMP_NUM_THREADS=1" \
  "ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 OMP_NUM_THREADS=4"
AVX512_VARIANT := "ATEN_CPU_CAPABILITY=avx512 MKL_ENABLE_INSTRUCTIONS=AVX512 OMP_NUM_THREADS=2"
HAS_AVX512 := $(shell grep -qw avx512f /proc/cpuinfo 2>/dev/null && echo yes)
test-cpus: $(STAMP) $(KERNEL_PROFILE)
	@for variant in $(CPU_VARIANTS) $(if $(HAS_AVX512),$(AVX512_VARIANT)); do \
	  echo "== strict nbval with $$variant"; \
	  env $$variant IPYTHONDIR=$(KERNEL_IPYTHONDIR) $(BIN)/python -m pytest $(NBVAL) $(or $(NB),$(NOTEBOOKS)) || exit 1; \
	done
	@$(if $(HAS_AVX512),true,echo "== AVX-512 variant skipped: this CPU has no avx512f")

test-widgets-ipyw7: colab-env
	$(COLAB_VENV)/bin/python -m pytest -p no:cacheprovider -q lib/tests/test_widgets.py

colab: colab-env
	$(COLAB_VENV)/bin/python tests/colab_run.py $(NOTEBOOKS)

lab: $(STAMP)
	$(BIN)/jupyter lab book/

notebooks: $(STAMP) $(KERNEL_PROFILE)
	IPYTHONDIR=$(KERNEL_IPYTHONDIR) $(BIN)/python tests/nbtools.py execute $(or $(NB),$(NOTEBOOKS))

serve:
	@test -f _build/html/index.html || { echo "run 'make book' first"; exit 1; }
	$(PYTHON) -m http.server --directory _build/html --bind 127.0.0.1 $(PORT)

# Chapter 10's shipped checkpoint: a few minutes on one core (one thread is
# the fastest for a model this small). The corpus beside it is frozen; see
# tools/tiny_lm.py to rebuild it on purpose.
lm-checkpoint: $(STAMP)
	OMP_NUM_THREADS=1 $(BIN)/python tools/tiny_lm.py checkpoint

bench: $(STAMP) book
	$(BIN)/python -m tests.bench
	$(BIN)/python -m tests.bench_jupyter

clean:
	rm -rf _build
