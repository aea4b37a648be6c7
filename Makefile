# hepwb — the two commands of the README are `make report` (main job) and `make test` (test suite).
# Both create or reuse the virtual environment .venv first; a second run reuses it and all cached artefacts.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.hepwb-installed
DOCS_STAMP := $(VENV)/.hepwb-docs-installed
export HF_HUB_OFFLINE ?= 1
export RAGAS_DO_NOT_TRACK ?= true
export ORT_DISABLE_TELEMETRY ?= 1
export HF_HUB_DISABLE_TELEMETRY ?= 1
export TOKENIZERS_PARALLELISM ?= false

.PHONY: help env lab tutorials report test test-slow check test-all bench docs browser-stress lint format clean-artefacts

help:  ## List the targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml requirements/constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] < (3, 11))' || { echo "hepwb needs Python >= 3.11 (set PYTHON=...)"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -c requirements/constraints.txt -e ".[dev]"
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

env: $(STAMP)  ## Create or update the virtual environment (.venv)

lab: $(STAMP)  ## JupyterLab on 127.0.0.1 in notebooks/ with the project kernel (prints the URL to open)
	$(VENV)/bin/jupyter lab --no-browser --ip=127.0.0.1 --port=$${PORT:-8888} \
		--ServerApp.root_dir="$(CURDIR)/notebooks" $(if $(filter 0,$(shell id -u)),--allow-root)

tutorials: $(STAMP)  ## Re-execute notebooks/tutorials/ in place: refreshes the outputs the tests compare
	$(VENV)/bin/jupyter nbconvert --to notebook --execute --inplace --KernelManager.transport_encryption=auto \
		notebooks/tutorials/*.ipynb

report: $(STAMP)  ## Main job: ingest + sweep notebooks + HTML report (reports/report.html)
	$(VENV)/bin/hepwb run $(ARGS)

test: $(STAMP)  ## The test suite (CI runs exactly this), in two processes (TEST_WORKERS=0: one)
	$(PY) -m pytest -n $${TEST_WORKERS:-2} $(PYTEST_ARGS)

check: $(STAMP)  ## Fast edit loop (≤ 3 min on 2 cores, 2 processes): unit tests, doctests, notebook structure; no kill points, servers, training or end-to-end runs
	$(PY) -m pytest -q -n $${CHECK_WORKERS:-2} -m "not (slow or integration or browser or notebook or heavy)" \
		tests/unit tests/notebooks hepwb bench $(PYTEST_ARGS)

test-slow: $(STAMP)  ## Only the tests marked slow (the 32-paper golden grid, the other kill points, the slowest notebooks); .ci/run runs it after make test
	$(PY) -m pytest -m slow $(PYTEST_ARGS)

test-all: $(STAMP)  ## Tests including those marked slow (deselected by `make test`)
	$(PY) -m pytest -m "" $(PYTEST_ARGS)

bench: $(STAMP)  ## Install the peers the benchmarks compare with (hepwb[bench]), then run python -m bench.bench_chunking
	$(PY) -m pip install --quiet -c requirements/constraints.txt -e ".[dev,bench]"
	$(PY) -m bench.bench_chunking $(ARGS)

$(DOCS_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -c requirements/constraints.txt -e ".[dev,docs]"
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)  ## The documentation site (hepwb[docs]) into docs/_build/html: warnings are errors; external links listed, not fetched
	rm -rf docs/reference/_generated  # the API pages are generated from the code: never a stale page of a moved module
	$(VENV)/bin/sphinx-build -b html -n -W --keep-going -q -d docs/_build/doctrees docs docs/_build/html
	$(VENV)/bin/sphinx-build -b linkcheck -n -W --keep-going -q -d docs/_build/doctrees docs docs/_build/linkcheck
	@$(PY) -c 'import json, pathlib; rows = [json.loads(l) for l in open("docs/_build/linkcheck/output.json")]; \
		ext = sorted({r["uri"] for r in rows if r["status"] == "ignored"}); \
		pathlib.Path("docs/_build/external-links.txt").write_text("".join(u + "\n" for u in ext)); \
		print(f"site: docs/_build/html/index.html; {len(ext)} external links, not fetched: docs/_build/external-links.txt")'

browser-stress: $(STAMP)  ## The browser tests RUNS (5) times in a row beside two CPU-bound processes
	bash tests/browser/stress.sh $${RUNS:-5}

lint: $(STAMP)  ## ruff (lint + format check), mypy --strict over hepwb/ and bench/, import-linter's layer contracts
	$(VENV)/bin/ruff check hepwb tests bench docs/_ext docs/conf.py
	$(VENV)/bin/ruff format --check hepwb tests bench docs/_ext docs/conf.py
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

format: $(STAMP)  ## Apply ruff formatting and fixes
	$(VENV)/bin/ruff format hepwb tests bench docs/_ext docs/conf.py
	$(VENV)/bin/ruff check --fix hepwb tests bench docs/_ext docs/conf.py

clean-artefacts:  ## Delete generated data/ and reports/ artefacts (keeps their READMEs)
	find data reports -mindepth 1 ! -name README.md -delete
