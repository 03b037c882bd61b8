# Two commands for a fresh machine with Python 3.11+ and pip:  make demo  |  make test
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test bench clean

$(STAMP): pyproject.toml setup.py solvers/_circle_kernel.c
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "meanfield needs Python 3.11+"'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	MPLBACKEND=Agg $(BIN)/meanfield demo --out-dir meanfield-demo

test: $(STAMP)
	MPLBACKEND=Agg $(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/meanfield validate bench-circle

clean:
	rm -rf $(VENV) meanfield-demo .pytest_cache
