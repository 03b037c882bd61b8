# Two commands for a fresh machine with Python 3.11+ and pip:  make demo  |  make test
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test bench docs clean

$(STAMP): pyproject.toml setup.py solvers/_circle_kernel.c meanfield/_circle_clusters.c
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "meanfield needs Python 3.11+"'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	MPLBACKEND=Agg $(BIN)/meanfield demo --out-dir meanfield-demo

test: $(STAMP)
	MPLBACKEND=Agg $(BIN)/python -m pytest -q -n 2

# The documentation site: Sphinx (warnings are errors), the gallery executed, then every internal link checked.
DOCS_STAMP := $(VENV)/.installed-docs
$(DOCS_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,docs]'
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	MPLBACKEND=Agg $(BIN)/python -m sphinx -E -W --keep-going -b html -q docs docs/_build/html
	$(BIN)/python docs/check_links.py docs/_build/html

bench: $(STAMP)
	$(BIN)/meanfield validate bench-circle

clean:
	rm -rf $(VENV) meanfield-demo .pytest_cache docs/_build docs/auto_examples docs/generated docs/sg_execution_times.rst
