# Two commands on a fresh machine with Python 3.11: `make demo` and `make test`.
# Both create .venv if missing. torch is pinned through constraints.txt (torch==2.13.0, the
# CPU wheel this machine carries); to use your own (GPU) torch, install it into .venv first and
# run `make demo TORCH_CONSTRAINT=` so pip keeps it.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
TORCH_CONSTRAINT ?= -c constraints.txt
PYTEST_ARGS ?= -n 2 -m "not slow"

.PHONY: demo demo-results test test-slow install install-test lint clean docs wheel wheel-smoke

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

# The tests marked slow (subprocesses, kill-and-resume, DDP, the demo): CI runs them too.
test-slow: install-test
	@$(BIN)/python -m pytest -n 2 -m slow; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test-slow: no slow tests collected (exit 5)"; exit 0; fi; \
	exit $$rc

lint: install-test
	$(BIN)/ruff check src tests experiments benchmarks docs/hooks examples

clean:
	rm -rf $(VENV) runs .pytest_cache

# The documentation site (mkdocs.yml, pages in docs/site/) into site/, in strict mode: a broken
# link, anchor or docstring reference fails the build. `mkdocs serve` previews it.
docs: install
	@$(BIN)/python -c 'import mkdocs, material, mkdocstrings_handlers.python' 2>/dev/null || \
	$(BIN)/python -m pip install --quiet $(TORCH_CONSTRAINT) -e '.[docs]'
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The release files: the sdist and the wheel (built from the sdist) into $(DIST), checked by
# `twine check --strict`. build and twine are installed into .venv the first time.
DIST ?= dist
wheel: $(BIN)/python
	@$(BIN)/python -c 'import build, twine' 2>/dev/null || \
	$(BIN)/python -m pip install --quiet $(TORCH_CONSTRAINT) build twine
	rm -f $(DIST)/tnpx-*.whl $(DIST)/tnpx-*.tar.gz
	$(BIN)/python -m build --outdir $(DIST)
	$(BIN)/python -m twine check --strict $(DIST)/tnpx-*

# What `pip install tnpx` promises (.ci/wheel_smoke.sh): the wheel into a fresh environment in a
# temporary folder, without extras; import, the README's zoo prediction, a tiny train and eval,
# run outside the repository. About a minute, most of it pip; leaves nothing behind.
wheel-smoke: $(BIN)/python
	PYTHON=$(PYTHON) bash .ci/wheel_smoke.sh
