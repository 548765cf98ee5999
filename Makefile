# Two commands on a fresh machine with Python 3.11: `make demo` and `make test`.
# Both create .venv if missing. torch is pinned through constraints.txt (torch==2.13.0, the
# CPU wheel this machine carries); to use your own (GPU) torch, install it into .venv first and
# run `make demo TORCH_CONSTRAINT=` so pip keeps it.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
TORCH_CONSTRAINT ?= -c constraints.txt
PYTEST_ARGS ?= -n 2

.PHONY: demo demo-results test install install-test lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml constraints.txt
	$(BIN)/python -m pip install --quiet $(TORCH_CONSTRAINT) -e '.[plot]'
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet $(TORCH_CONSTRAINT) -e '.[test]'
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

# `make demo` writes runs/demo/ only (ignored by git): a fresh clone stays clean.
demo: install
	$(BIN)/tnpx demo

# The committed copy in results/demo/ is rebuilt only here (its training runs stay in runs/).
demo-results: install
	$(BIN)/tnpx demo --out results/demo --runs runs/demo-results

# pytest exits 5 when it collects no tests: say so loudly, but do not call that a crash.
test: install-test
	@$(BIN)/python -m pytest $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests (exit 5)"; exit 0; fi; \
	exit $$rc

lint: install-test
	$(BIN)/ruff check src tests benchmarks

clean:
	rm -rf $(VENV) runs .pytest_cache
