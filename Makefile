# Every workflow of the book. Each target bootstraps .venv from the lock,
# requirements.txt, when it is missing or older than the lock, so one command
# is enough on a fresh machine. `make lock` regenerates the lock from
# requirements.in.
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
# With ATTNBOOK_TIMES set to a folder (.ci/run sets it), every recipe line runs
# through tools/timed_shell, which files its wall and CPU seconds under its
# target; `tools/ci_times.py` prints the table.
ifdef ATTNBOOK_TIMES
SHELL := $(CURDIR)/tools/timed_shell
export ATTNBOOK_TARGET = $@
endif
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# A Colab-like environment: ipywidgets 7.7.1, attnbook installed non-editable.
COLAB_VENV := .venv-colab
COLAB_STAMP := $(COLAB_VENV)/.installed
NOTEBOOKS := $(sort $(wildcard book/*.ipynb))
# The reader's edition (what Colab, GitHub and the Colab buttons open):
# generated from NOTEBOOKS by tools/readers_edition.py into book/colab/.
EDITIONS := $(patsubst book/%,book/colab/%,$(NOTEBOOKS))
# One slide notebook per chapter (slides/NAME.ipynb): `make slides` turns them
# into reveal.js decks and PDFs in _build/html/slides (tools/slides.py).
SLIDE_NOTEBOOKS := $(sort $(wildcard slides/*.ipynb))
# `make test NB=book/masked-softmax.ipynb` checks one notebook only.
NB ?=
# tests.times_report files each notebook's and test's time when ATTNBOOK_TIMES is set.
TIMES_REPORT := -p tests.times_report
NBVAL := -p no:cacheprovider --nbval --nbval-sanitize-with tests/nbval-sanitize.cfg -p tests.nbval_report \
  $(TIMES_REPORT)
# Every notebook at once: one notebook per worker, two workers (pytest-xdist).
NBVAL_ALL := $(NBVAL) -n 2 --dist loadfile
# The slowest chapters first, so that the two workers finish together (the
# notebook table that .ci/run prints, tools/ci_times.py, says which they are);
# then the other chapters and the slide notebooks.
SLOWEST_NOTEBOOKS := $(addprefix book/,causal-language-model.ipynb induction-heads.ipynb \
  attention-at-scale.ipynb vision-transformer.ipynb positions.ipynb)
NOTEBOOKS_SLOWEST_FIRST := $(SLOWEST_NOTEBOOKS) $(filter-out $(SLOWEST_NOTEBOOKS),$(NOTEBOOKS)) \
  $(SLIDE_NOTEBOOKS)
PORT ?= 8000

.PHONY: help install lock colab-env lint book site test check test-lib test-book test-browser \
        test-notebooks test-sources test-slow test-fresh-site test-site test-widgets-ipyw7 test-jupyter test-cpus pdf colab lab notebooks serve bench clean \
        slides readers-edition part-symbols dist release reopen otter-env assignments grade lms \
        lm-checkpoint seq2seq-runs positions-sweep vit-sweep live-weights test-live-js

help:
	@echo "make book       build the website into _build/html (strict)"
	@echo "make test       lint, library tests, nbval on every notebook, the site and its links"
	@echo "make check      make test, then browsers, JupyterLab, PDF, Colab-like run, CPU variants (CI)"
	@echo "make test NB=book/NAME.ipynb   check one notebook against its stored outputs"
	@echo "make colab      run every notebook alone in a Colab-like environment"
	@echo "make lab        open the chapters in JupyterLab"
	@echo "make notebooks  re-execute notebooks in place (NB=... for one) to accept changes"
	@echo "make readers-edition  regenerate book/colab/ (what Colab opens) from the chapters"
	@echo "make student-edition  every chapter without its solutions: _build/student/NAME.ipynb"
	@echo "make serve      serve _build/html on http://localhost:$(PORT)"
	@echo "make test-jupyter  drive every explorer with the keyboard in a real JupyterLab"
	@echo "make test-cpus  strict nbval again with other CPU code paths forced (NB=... for one)"
	@echo "make test-slow  the tests marked slow (they check the test machinery; make check runs them)"
	@echo "make test-sources  the book tests that read the sources, not the built site"
	@echo "make test-fresh-site  build the site as a fresh clone does (no nbval cache) and weigh every page"
	@echo "make site       the PDF, then the website linking it"
	@echo "make pdf        print the whole book to _build/pdf/attention-interactively.pdf"
	@echo "make slides     every chapter's slide deck: _build/html/slides/NAME.html and NAME.pdf"
	@echo "make assignments  graded assignments (otter-grader) in _build/assignments (EXERCISES=id,... NB=...)"
	@echo "make grade ASSIGNMENT=NAME SUBMISSIONS=DIR  grade submissions offline, each in bubblewrap: DIR/grades.csv, DIR/feedback/"
	@echo "                   (TIMEOUT=s per submission, 120; QUESTION_TIMEOUT=s per question, 30)"
	@echo "make lms LMS=canvas|moodle|moodle-gradebook SUBMISSIONS=DIR ROSTER=FILE  grades.csv in the"
	@echo "                   file that LMS imports, from its own export (COLUMN=..., WRITTEN=marks.csv)"
	@echo "make bench      slider redraw benchmark, JupyterLab key-to-picture latency, page sizes"
	@echo "make lock       regenerate requirements.txt (the lock) after editing requirements.in"
	@echo "make dist       build attnbook's wheel and sdist into dist/"
	@echo "make release VERSION=2026.12.0  the release commit (CHANGELOG.md, Versions); then tag it"
	@echo "make reopen     after tagging a release: main back to the next .dev0 version"
	@echo "make clean      remove _build"
	@echo "make lm-checkpoint  retrain chapter 10's shipped model (lib/attnbook/lm_data/tiny_lm.pt)"
	@echo "make seq2seq-runs   retrain chapter 13's seed sweeps (lib/attnbook/seq2seq_data/runs.json)"
	@echo "make positions-sweep  re-measure chapter 14's table (lib/attnbook/positions_data/sweep.json)"
	@echo "make vit-sweep  retrain chapter 15's ViT over 8 seeds (lib/attnbook/vit_data/sweep.json)"
	@echo "make live-weights  re-export the live explorers' weights (chapters 10, 11, 13, 15) and the JS test fixtures"
	@echo "make test-live-js  the live explorers' JavaScript against PyTorch's fixtures (node --test)"

# On Linux the locks' torch is the +cpu build, whose wheels live on PyTorch's
# own index: pip is told to look there too. A --find-links on pip's command
# line adds to whatever indexes and links pip is configured with (a mirror or
# a proxy in pip.conf included), where PIP_EXTRA_INDEX_URL would replace them
# (tests/test_install.py). TORCH_CPU_LINKS= (empty) adds nothing. Where pip
# already has a folder of wheels in PIP_FIND_LINKS (a machine with no route to
# PyTorch's index: pip would ask that index about every package, retrying
# each for seconds), that folder is named instead, as for `make lock`.
TORCH_CPU_LINKS ?= $(or $(PIP_FIND_LINKS),https://download.pytorch.org/whl/cpu/torch/)
PIP_LOCK_FLAGS := $(if $(and $(TORCH_CPU_LINKS),$(filter Linux,$(shell uname -s))),--find-links $(TORCH_CPU_LINKS))
# $(call install_torch,PYTHON,LOCK): the lock's torch alone, first, with those
# links and without its dependencies, so that pip asks the links about torch
# only (it asks them about every package of a run); the whole lock then
# finds torch installed.
install_torch = $(if $(PIP_LOCK_FLAGS),grep '^torch==' $(2) | $(1) -m pip install --quiet --no-deps \
  $(PIP_LOCK_FLAGS) -r /dev/stdin)

# .venv holds exactly what the lock lists (tests/test_lock.py checks it): it is
# made afresh whenever the lock changes, so nothing the lock dropped stays
# behind. pip itself is the locked one.
$(STAMP): requirements.txt lib/pyproject.toml
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet $$(grep -m1 '^pip==' requirements.txt)
	$(call install_torch,$(BIN)/python,requirements.txt)
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $(STAMP)

install: $(STAMP)

$(COLAB_STAMP): tools/requirements-colab.txt
	rm -rf $(COLAB_VENV)
	$(PYTHON) -m venv $(COLAB_VENV)
	$(COLAB_VENV)/bin/python -m pip install --quiet $$(grep -m1 '^pip==' tools/requirements-colab.txt)
	$(call install_torch,$(COLAB_VENV)/bin/python,tools/requirements-colab.txt)
	$(COLAB_VENV)/bin/python -m pip install --quiet -r tools/requirements-colab.txt
	touch $(COLAB_STAMP)

# The locks: every package at one exact version, for every platform and
# Python from 3.11 on (uv's universal resolution), generated from the short
# *.in files. Run after editing requirements.in or tools/requirements-colab.in;
# versions already locked are kept unless LOCK_FLAGS=--upgrade (what the weekly
# drift workflow runs). torch's +cpu wheels are looked up in TORCH_FIND_LINKS:
# PyTorch's CPU index page for torch, or a folder of wheels.
TORCH_FIND_LINKS ?= $(or $(PIP_FIND_LINKS),https://download.pytorch.org/whl/cpu/torch/)
LOCK_FLAGS ?=
UV_COMPILE = $(BIN)/uv pip compile --quiet --universal --python-version 3.11 \
  --custom-compile-command "make lock" \
  --find-links $(TORCH_FIND_LINKS) $(LOCK_FLAGS)
# Each lock is rewritten only when its content changes, so an unchanged lock
# does not make the next command rebuild .venv.
lock: $(STAMP)
	@for source in requirements.in tools/requirements-colab.in tools/requirements-otter.in; do \
	  lock="$${source%.in}.txt"; draft="$(VENV)/lock-draft.txt"; cp "$$lock" "$$draft"; \
	  $(UV_COMPILE) "$$source" -o "$$draft"; \
	  if cmp -s "$$draft" "$$lock"; then echo "$$lock: unchanged"; \
	  else mv "$$draft" "$$lock"; echo "$$lock: updated"; fi; \
	  rm -f "$$draft"; \
	done

# The live explorers' package files (attnbook/widgets/live: modules, weights).
LIVE_FILES := $(wildcard $(addprefix lib/attnbook/widgets/live/*.,py js f16 json))

# attnbook is reinstalled (non-editable) whenever lib/ changes.
COLAB_LIB := $(COLAB_VENV)/.attnbook
$(COLAB_LIB): $(COLAB_STAMP) lib/pyproject.toml $(wildcard lib/attnbook/*.py lib/attnbook/*/*.py lib/attnbook/*_data/* $(LIVE_FILES))
	$(COLAB_VENV)/bin/python -m pip install --quiet --no-deps --force-reinstall ./lib
	touch $(COLAB_LIB)

colab-env: $(COLAB_LIB)

# The grading environment (`make assignments`, `make grade`): otter-grader at
# the version tools/requirements-otter.txt locks, beside the readers' lock, and
# attnbook installed (non-editable) from lib/, reinstalled whenever lib/ changes.
OTTER_VENV := .venv-otter
OTTER_STAMP := $(OTTER_VENV)/.installed
$(OTTER_STAMP): tools/requirements-otter.txt
	rm -rf $(OTTER_VENV)
	$(PYTHON) -m venv $(OTTER_VENV)
	$(OTTER_VENV)/bin/python -m pip install --quiet $$(grep -m1 '^pip==' tools/requirements-otter.txt)
	$(call install_torch,$(OTTER_VENV)/bin/python,tools/requirements-otter.txt)
	$(OTTER_VENV)/bin/python -m pip install --quiet -r tools/requirements-otter.txt
	touch $(OTTER_STAMP)
OTTER_LIB := $(OTTER_VENV)/.attnbook
$(OTTER_LIB): $(OTTER_STAMP) lib/pyproject.toml $(wildcard lib/attnbook/*.py lib/attnbook/*/*.py lib/attnbook/*_data/* lib/attnbook/questions/*.toml $(LIVE_FILES))
	$(OTTER_VENV)/bin/python -m pip install --quiet --no-deps --force-reinstall ./lib
	touch $(OTTER_LIB)

otter-env: $(OTTER_LIB)

# Graded assignments (tools/assignments.py): an otter master notebook per chapter
# with checked exercises, or for the exercises named (EXERCISES=id,id,...), then
# `otter assign` into _build/assignments/NAME/{student,autograder}. NB=book/NAME.ipynb
# builds one chapter; SEED= fixes the hidden seed (drawn per build otherwise). The masters are written in .venv (the reader's-edition
# converter), otter runs in .venv-otter. The instructor guide, "Assignments and grading", says how to use them.
EXERCISES ?=
SEED ?=
assignments: $(STAMP) $(OTTER_LIB)
	$(BIN)/python -m tools.assignments --otter $(OTTER_VENV)/bin/otter \
	  $(if $(EXERCISES),--exercises $(EXERCISES)) $(if $(SEED),--seed $(SEED)) $(NB)

# Grade a folder of submissions offline, without Docker (tools/grade.py):
# SUBMISSIONS/grades.csv (a status per submission: graded, or error with the
# reason) and SUBMISSIONS/feedback/NAME.txt. Each notebook runs in bubblewrap
# (Debian's bubblewrap), its own scratch folder and nothing else; the grade is
# decided in this process, which never runs a student's code. UNSANDBOXED=1
# grades without bubblewrap (each notebook then runs with your rights).
# ASSIGNMENT= a name under _build/assignments or a folder; SUBMISSIONS= a plain
# folder, or Moodle's or Canvas's download; ONLY=name,name re-grades those;
# TIMEOUT= seconds per submission (120, past it an error); QUESTION_TIMEOUT=
# seconds per question (30, past it that question alone gets zero). With LMS=
# and ROSTER= (see `make lms`) it then writes the LMS's import file.
ASSIGNMENT ?=
SUBMISSIONS ?=
TIMEOUT ?=
QUESTION_TIMEOUT ?=
ONLY ?=
UNSANDBOXED ?=
grade: $(OTTER_LIB)
	@test -n "$(ASSIGNMENT)" -a -n "$(SUBMISSIONS)" || { echo "usage: make grade ASSIGNMENT=masked-softmax SUBMISSIONS=DIR"; exit 2; }
	$(OTTER_VENV)/bin/python -m tools.grade $(ASSIGNMENT) $(SUBMISSIONS) $(if $(TIMEOUT),--timeout $(TIMEOUT)) \
	  $(if $(QUESTION_TIMEOUT),--question-timeout $(QUESTION_TIMEOUT)) $(if $(ONLY),--only $(ONLY)) \
	  $(if $(UNSANDBOXED),--unsandboxed); status=$$?; \
	$(if $(and $(LMS),$(ROSTER)),[ $$status -eq 2 ] || $(OTTER_VENV)/bin/python -m tools.lms $(LMS) $(SUBMISSIONS) \
	  --roster $(ROSTER) $(if $(COLUMN),--column "$(COLUMN)") $(if $(WRITTEN),--written $(WRITTEN)) || exit $$?;) \
	exit $$status

# DIR's grades.csv in the file an LMS imports as it is (tools/lms.py): LMS=canvas
# (ROSTER= the gradebook export, COLUMN= the assignment's header in it),
# LMS=moodle (ROSTER= the assignment's grading worksheet) or LMS=moodle-gradebook
# (the same worksheet, COLUMN= the grade column's header). WRITTEN= the written
# marks (submission, one column per written question). Submissions are matched to
# students by the names that the LMS's "download all submissions" gives them.
LMS ?=
ROSTER ?=
COLUMN ?=
WRITTEN ?=
lms: $(STAMP)
	@test -n "$(LMS)" -a -n "$(SUBMISSIONS)" -a -n "$(ROSTER)" || { echo "usage: make lms LMS=canvas SUBMISSIONS=DIR ROSTER=gradebook.csv [COLUMN=...] [WRITTEN=marks.csv]"; exit 2; }
	$(BIN)/python -m tools.lms $(LMS) $(SUBMISSIONS) --roster $(ROSTER) \
	  $(if $(COLUMN),--column "$(COLUMN)") $(if $(WRITTEN),--written $(WRITTEN))

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
# Sphinx, too, rebuilds only the pages whose source changed, so its saved
# environment (.doctrees) goes with it: every page is read again.
LIB_STAMP := _build/.attnbook-sources
$(LIB_STAMP): $(wildcard lib/attnbook/*.py lib/attnbook/*/*.py lib/attnbook/*_data/* $(LIVE_FILES))
	rm -rf _build/.jupyter_cache _build/.doctrees
	mkdir -p _build
	touch $@

book: $(STAMP) $(LIB_STAMP) $(KERNEL_PROFILE)
	$(BUILD_BOOK)

# The whole book on paper: one HTML page (Jupyter Book's singlehtml builder,
# same executed notebooks as `make book`), printed by headless Chromium with
# each explorer as small multiples (tools/print_book.py), then checked.
pdf: book
	$(BUILD_BOOK) --builder custom --custom-builder singlehtml
	$(BIN)/python -m tools.print_book
	$(BIN)/python -m pytest -p no:cacheprovider $(TIMES_REPORT) -q tests/test_pdf.py

# The website with the PDF and the slide decks: print the book and build the
# decks first, then build the site, which links "Download the book as PDF" from
# every page when the PDF is there, and each chapter's deck when it is there.
site: pdf slides
	$(BUILD_BOOK)

# The slide decks (tools/slides.py): each slide notebook executed afresh with
# the explorers in their website form, written as reveal.js HTML, printed to
# PDF by headless Chromium, then checked offline in the browser
# (tests/test_slides_browser.py). reveal.js comes from the npm registry at the version
# slides/package-lock.json pins, into the ignored slides/node_modules.
REVEAL_STAMP := slides/node_modules/.installed
$(REVEAL_STAMP): slides/package.json slides/package-lock.json
	cd slides && npm ci --ignore-scripts --no-audit --no-fund
	touch $@

# SLIDES_EXECUTED=DIR (make check: `make test` has just filled it) takes each
# deck's notebook from nbval's executed copy in DIR instead of executing it.
SLIDES_EXECUTED ?=
slides: $(STAMP) $(KERNEL_PROFILE) $(REVEAL_STAMP)
	IPYTHONDIR=$(KERNEL_IPYTHONDIR) $(BIN)/python -m tools.slides \
	  $(if $(SLIDES_EXECUTED),--executed $(SLIDES_EXECUTED))
	$(BIN)/python -m pytest -p no:cacheprovider $(TIMES_REPORT) -q tests/test_slides_browser.py

# Two tiers. `make test` (the README's test command, a few minutes): lint, the
# library's tests, strict nbval on every notebook, the website build and its
# link and hygiene checks; two jobs at a time on two cores. It runs every test
# that an edit of a chapter, the library or the tools can break, but for the
# few library tests that train a model for seconds. `make check` (what
# .ci/run runs): `make test`, then the widget tests under ipywidgets 7.7.1
# (Colab's), the browser suites, the real JupyterLab, the PDF, the decks, the
# Colab-like run, nbval on other CPU code paths, the website as a fresh clone
# builds it, and the tests marked `slow` (test-slow): those that check the
# test machinery itself and start kernels, and those training library tests.
# No test runs in neither tier (CONTRIBUTING.md, "What each check guarantees").
TEST_PARTS := test-book lint test-lib test-live-js test-sources
ifeq ($(NB),)
test: $(STAMP) $(KERNEL_PROFILE)
	$(MAKE) --no-print-directory -j2 --output-sync=target $(TEST_PARTS) SOURCES_AFTER=test-lib
else
test: $(STAMP) $(KERNEL_PROFILE)
	IPYTHONDIR=$(KERNEL_IPYTHONDIR) $(BIN)/python -m pytest $(NBVAL) $(NB)
endif

lint: $(STAMP)
	$(BIN)/ruff check --config lib/pyproject.toml lib tests tools book slides
	$(BIN)/ruff format --config lib/pyproject.toml --check lib tests tools book slides
	$(BIN)/check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml
	$(BIN)/zizmor --offline --no-progress .github/workflows

# One thread per worker: two workers, each with PyTorch's default of a thread
# per core, oversubscribe the cores (and more so beside nbval), and the
# library's many small operations then spend their time waiting on each
# other's threads (measured: 53 s and 91 CPU-seconds instead of 96 s and 160).
test-lib: $(STAMP)
# The library tests that train a model for seconds (marked `slow`) wait for
# `make check` (test-slow).
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -p no:cacheprovider $(TIMES_REPORT) -q -n 2 \
	  -m "not slow" lib/tests

# The live explorers' JavaScript (runtime and forward passes) against fixtures
# exported from PyTorch: Node's own test runner, no npm package (a second or two).
NODE ?= node
test-live-js:
	$(NODE) --test tests/live/

# The website built from nbval's run (test-notebooks), then its checks that
# need no browser (links, alt text, sizes, notebook hygiene); the browser
# suites are `make test-browser`.
BROWSER_TESTS := tests/test_browser.py tests/test_reading.py tests/test_subpath.py \
  tests/test_live_browser.py tests/test_live_browser_dates.py tests/test_live_browser_lm.py \
  tests/test_live_browser_digits.py tests/test_concept_questions_browser.py
# The decks' browser test runs in `make slides`, which builds them.
BOOK_TESTS := tests --ignore=tests/test_jupyter.py --ignore=tests/test_live_jupyter.py \
  --ignore=tests/test_pdf.py --ignore=tests/test_slides_browser.py --ignore=tests/test_fresh_site.py \
  $(addprefix --ignore=,$(BROWSER_TESTS))
# The book tests that read the sources, not the site (notebook hygiene, the
# reader's edition, the locks, the tools): test-sources runs them beside nbval,
# so that only the checks of the built site wait for the build. A new test
# file waits for the build unless it is listed here.
SOURCE_TESTS := tests/test_notebooks.py tests/test_solution_pointers.py tests/test_concept_questions.py tests/test_lighter_figures.py tests/test_readers_edition.py tests/test_lock.py \
  tests/test_nbtools.py tests/test_browser_lookup.py tests/test_nbval_executed.py \
  tests/test_regression_bites.py tests/test_release.py tests/test_readme.py \
  tests/test_instructor_guide.py tests/test_slides.py tests/test_exercise_metadata.py tests/test_grade.py tests/test_lms.py \
  tests/test_student_edition.py tests/test_cpu_paths.py \
  tests/test_install.py tests/test_mutants.py tests/test_part_symbols.py
test-book: test-notebooks
	$(BUILD_BOOK)
	$(BIN)/python -m pytest -p no:cacheprovider $(TIMES_REPORT) -q -m "not slow" $(BOOK_TESTS) \
	  $(addprefix --ignore=,$(SOURCE_TESTS))

# Inside `make test` it waits for the library tests (SOURCES_AFTER), so that
# it never takes the second job slot before nbval has started.
SOURCES_AFTER ?=
test-sources: $(STAMP) | $(SOURCES_AFTER)
	$(BIN)/python -m pytest -p no:cacheprovider $(TIMES_REPORT) -q -m "not slow" $(SOURCE_TESTS)

# `make check`'s share of the book tests (marked `slow`, see tests/conftest.py):
# proofs that the test machinery bites (a changed stored digit fails strict
# nbval on every chapter; nbval's executed notebooks are what the build files).
# They need no built site. Then the library tests marked `slow`
# (lib/tests/conftest.py): the few that train a model for seconds.
test-slow: $(STAMP) $(OTTER_LIB)
	$(BIN)/python -m pytest -p no:cacheprovider $(TIMES_REPORT) -q -m slow $(BOOK_TESTS)
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -p no:cacheprovider $(TIMES_REPORT) -q -m slow lib/tests

# Every static explorer driven offline, axe-core in light and dark mode, the
# phone and dark-mode layouts, the site under a sub-path: one browser each.
test-browser: $(STAMP) book
	$(BIN)/python -m pytest -p no:cacheprovider $(TIMES_REPORT) -q $(BROWSER_TESTS)

# After `make test`, the rest two at a time: the browser suites spend much of
# their time waiting on pages and kernels, so they share the cores with the
# nbval and Colab-like runs. The website is built once, before either needs it.
CHECK_PARTS := test-cpus test-browser test-jupyter colab pdf slides test-widgets-ipyw7 test-slow \
  test-fresh-site test-site
check: test
	$(MAKE) --no-print-directory -j2 --output-sync=target $(CHECK_PARTS) \
	  SLIDES_EXECUTED=$(EXECUTED)/slides CHAPTERS_IN_COLAB=1

# The website as a fresh clone (and the Pages workflow) builds it: `make test`
# files nbval's executed notebooks in the book's execution cache, which keep
# no widget state, so its site cannot show what Jupyter Book's own execution
# writes into a page. This build has its own output folder and an empty
# execution cache of its own (_build/fresh/_build/.jupyter_cache); then every
# page is weighed against the budget (tests/test_fresh_site.py).
FRESH := _build/fresh
test-fresh-site: $(STAMP) $(KERNEL_PROFILE)
	rm -rf $(FRESH)
	$(BUILD_BOOK) --path-output $(FRESH)
	ATTNBOOK_FRESH_BUILD=$(CURDIR)/$(FRESH)/_build $(BIN)/python -m pytest -p no:cacheprovider $(TIMES_REPORT) -q \
	  tests/test_fresh_site.py

# The website as `make site` builds it: after the PDF and the decks, which
# every page (and the instructor guide's table) then links, strictly (a link
# the book cannot resolve once the decks exist fails here, as an xref_missing
# in the instructor guide once did, unseen by any test), then the site's
# checks again. After the browser suites, which read the same _build/html.
test-site: $(STAMP) pdf slides test-browser
	$(BUILD_BOOK)
	$(BIN)/python -m pytest -p no:cacheprovider $(TIMES_REPORT) -q tests/test_site.py \
	  tests/test_instructor_guide_site.py

test-jupyter: $(STAMP)
	$(BIN)/python -m pytest -p no:cacheprovider $(TIMES_REPORT) -q tests/test_jupyter.py tests/test_live_jupyter.py

# Strict nbval on every notebook, chapters and slide notebooks in one run (two
# workers, the slowest notebooks first), run as the book build and `make
# slides` run them (ATTNBOOK_STATIC=1: explorers in their website form, whose
# HTML alone is left out of the comparison; make test-cpus runs them live, as
# `make test NB=...` does): each notebook is executed once, and the notebooks
# nbval executed are filed in the book's execution cache for test-book
# (tests/nbval_executed.py, tools/book_cache.py) and kept for `make check`'s
# decks (SLIDES_EXECUTED).
EXECUTED := _build/nbval-executed
test-notebooks: $(STAMP) $(KERNEL_PROFILE) $(LIB_STAMP)
	rm -rf $(EXECUTED)
	ATTNBOOK_STATIC=1 IPYTHONDIR=$(KERNEL_IPYTHONDIR) $(BIN)/python -m pytest $(NBVAL_ALL) \
	  -p tests.nbval_executed --nbval-executed-into $(EXECUTED) $(NOTEBOOKS_SLOWEST_FIRST)
	$(BIN)/python -m tools.book_cache $(EXECUTED)/book

# Strict nbval again with other CPU code paths forced, so that a stored output
# which holds only on this machine's kernels fails here and not on a reader's
# Intel or AMD machine. The notebooks' kernels inherit these variables.
# NB=... checks one notebook. AVX-512 is tried only where the CPU has it, and
# a variant that is this machine's own path (its capability and thread count
# are what PyTorch picks unforced: AVX-512 with 2 threads on a 2-core AVX-512
# machine) is skipped, said why: `make test`'s nbval ran that path
# (tools/cpu_paths.py).
CPU_VARIANTS := \
  "ATEN_CPU_CAPABILITY=default MKL_ENABLE_INSTRUCTIONS=SSE4_2 OMP_NUM_THREADS=1" \
  "ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 OMP_NUM_THREADS=4"
AVX512_VARIANT := "ATEN_CPU_CAPABILITY=avx512 MKL_ENABLE_INSTRUCTIONS=AVX512 OMP_NUM_THREADS=2"
HAS_AVX512 := $(shell grep -qw avx512f /proc/cpuinfo 2>/dev/null && echo yes)
# `make colab` runs the chapters' reader's edition under strict nbval with the
# first variant forced, so that run is also this path's strict nbval of every
# chapter: with CHAPTERS_IN_COLAB=1 (what `make check` passes), test-cpus runs
# only the slide notebooks on it. Alone, `make test-cpus` runs everything.
COLAB_CPU_PATH := ATEN_CPU_CAPABILITY=default MKL_ENABLE_INSTRUCTIONS=SSE4_2 OMP_NUM_THREADS=1
CHAPTERS_IN_COLAB ?=
test-cpus: $(STAMP) $(KERNEL_PROFILE)
	@failed=""; for variant in $(CPU_VARIANTS) $(if $(HAS_AVX512),$(AVX512_VARIANT)); do \
	  if why=$$($(BIN)/python -m tools.cpu_paths is-native "$$variant"); then \
	    echo "== strict nbval with $$variant skipped: $$why"; continue; fi; \
	  notebooks="$(or $(NB),$(NOTEBOOKS) $(SLIDE_NOTEBOOKS))"; \
	  if [ -z "$(NB)" ] && [ -n "$(CHAPTERS_IN_COLAB)" ] && [ "$$variant" = "$(COLAB_CPU_PATH)" ]; then \
	    notebooks="$(SLIDE_NOTEBOOKS)"; \
	    echo "== strict nbval with $$variant: the slide notebooks (make colab runs the chapters on it)"; \
	  else echo "== strict nbval with $$variant"; fi; \
	  env $$variant IPYTHONDIR=$(KERNEL_IPYTHONDIR) $(BIN)/python -m pytest $(NBVAL_ALL) \
	    $$notebooks || failed="$$failed\n   $$variant"; \
	done; \
	$(if $(HAS_AVX512),true,echo "== AVX-512 variant skipped: this CPU has no avx512f"); \
	if [ -n "$$failed" ]; then printf "== strict nbval failed with:$$failed\n"; exit 1; fi

test-widgets-ipyw7: colab-env
	$(COLAB_VENV)/bin/python -m pytest -p no:cacheprovider $(TIMES_REPORT) -q lib/tests/test_widgets.py lib/tests/test_live.py \
	  lib/tests/test_live_dates.py lib/tests/test_live_lm.py lib/tests/test_live_digits.py

# Colab opens the reader's edition, so that is what runs here: each chapter
# alone in an empty folder, live widgets, under strict nbval with
# COLAB_CPU_PATH forced (tools/colab_run.py).
colab: colab-env $(KERNEL_PROFILE)
	env $(COLAB_CPU_PATH) IPYTHONDIR=$(KERNEL_IPYTHONDIR) $(COLAB_VENV)/bin/python tools/colab_run.py \
	  $(EDITIONS)

lab: $(STAMP)
	$(BIN)/jupyter lab book/

notebooks: $(STAMP) $(KERNEL_PROFILE)
	IPYTHONDIR=$(KERNEL_IPYTHONDIR) $(BIN)/python tools/nbtools.py execute $(or $(NB),$(NOTEBOOKS))
	$(BIN)/python tools/readers_edition.py

# The reader's edition of every chapter (book/colab/, a second or two): run it
# after editing a chapter's text; `make test` fails while it is out of date.
readers-edition: $(STAMP)
	$(BIN)/python tools/readers_edition.py

# Each Part's symbols, from book/notation.md, at the start of the Part's first
# chapter (tools/part_symbols.py); then run make readers-edition.
part-symbols: $(STAMP)
	$(BIN)/python -m tools.part_symbols

# The student edition of every chapter (_build/student/NAME.ipynb, a few
# seconds): the reader's edition without the solutions, for handouts and lab
# machines (tools/student_edition.py).
.PHONY: student-edition
student-edition: $(STAMP)
	$(BIN)/python tools/student_edition.py

serve:
	@test -f _build/html/index.html || { echo "run 'make book' first"; exit 1; }
	$(PYTHON) -m http.server --directory _build/html --bind 127.0.0.1 $(PORT)

# Chapter 10's shipped checkpoint: a few minutes on one core (one thread is
# the fastest for a model this small). The corpus beside it is frozen; see
# tools/tiny_lm.py to rebuild it on purpose.
lm-checkpoint: $(STAMP)
	OMP_NUM_THREADS=1 $(BIN)/python tools/tiny_lm.py checkpoint

seq2seq-runs: $(STAMP)
	OMP_NUM_THREADS=1 $(BIN)/python tools/seq2seq_runs.py

# Chapter 14's length-generalisation table: five position schemes x three
# seeds on two tasks, plus the ablations (depth, vocabulary, RoPE base,
# interpolation and NTK-aware scaling): 60 small runs, about 9 minutes of CPU
# time, two at a time on one thread each. The chapter loads the result and
# re-runs seed 0 of two schemes live, asserting that they match it.
positions-sweep: $(STAMP)
	OMP_NUM_THREADS=1 $(BIN)/python tools/positions_sweep.py

# Chapter 15 prints its ranges over seeds from this stored record (about half a
# minute of CPU per seed, eight seeds, plus the baselines); the notebook re-runs
# seed 0 and checks it against the record.
vit-sweep: $(STAMP)
	OMP_NUM_THREADS=1 $(BIN)/python tools/vit_sweep.py

# The live explorers' weights and the fixtures of their JavaScript tests,
# computed by PyTorch on those weights: chapter 11's model and chapter 15's
# ViT trained as the chapters train seed 0 (a few seconds each on one thread),
# chapter 13's two GRU date models (seed 0, as the chapter and
# `make seq2seq-runs` train them, about 35 s), chapter 10's packed from the
# shipped checkpoint.
live-weights: $(STAMP)
	OMP_NUM_THREADS=1 $(BIN)/python -m tools.live_export weights fixtures dates-weights dates-fixtures
	OMP_NUM_THREADS=1 $(BIN)/python -m tools.live_export lm-weights lm-fixtures
	OMP_NUM_THREADS=1 $(BIN)/python -m tools.live_export digits-weights digits-fixtures

# Releases (tools/release.py; CHANGELOG.md, "Versions", says the scheme).
# `make dist`: attnbook's wheel and sdist, built offline with the setuptools in
# .venv from a clean copy of lib/ (tests/test_release.py installs the wheel in
# a fresh environment). `make release VERSION=...`: the release commit, on a
# clean tree; tag it yourself (git tag -a vVERSION), then `make reopen`.
dist: $(STAMP)
	$(BIN)/python -m tools.release dist dist

VERSION ?=
release: $(STAMP)
	@test -n "$(VERSION)" || { echo "usage: make release VERSION=2026.12.0 (CHANGELOG.md, Versions)"; exit 2; }
	$(BIN)/python -m tools.release prepare "$(VERSION)"

reopen: $(STAMP)
	$(BIN)/python -m tools.release reopen

bench: $(STAMP) book
	$(BIN)/python -m tools.bench
	$(BIN)/python -m tools.bench_jupyter

clean:
	rm -rf _build dist
