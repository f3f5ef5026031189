# Two entry points for a fresh machine: `make demo` and `make test`.
# Both create the virtual environment on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
DEMO_OUT ?= demo_out

.PHONY: demo test venv bench clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch is pinned: the local CPU wheel satisfies it without downloading CUDA packages.
	$(PY) -m pip install --quiet "torch==2.13.0"
	# [all] includes [results] (DuckDB) and [ray], which the test suite uses (a real local Ray).
	$(PY) -m pip install --quiet -e ".[all]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/expressivity demo --out $(DEMO_OUT)

test: $(STAMP)
	$(PY) -m pytest -q -n 2 --dist loadfile

bench: $(STAMP)
	for b in benchmarks/bench_*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) $(DEMO_OUT) .pytest_cache .hypothesis
