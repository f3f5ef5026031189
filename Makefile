# Two entry points for a fresh machine: `make demo` and `make test`.
# Both create the virtual environment on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
DEMO_OUT ?= demo_out

.PHONY: demo test venv bench clean
.PHONY: chromium
# The browser test renders the network page in headless Chromium from the system packages.
CHROMIUM := $(shell command -v chromium || command -v chromium-browser || command -v google-chrome)
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch is pinned: the local CPU wheel satisfies it without downloading CUDA packages.
	$(PY) -m pip install --quiet "torch==2.13.0"
	# [all] includes [results] (DuckDB) and [ray], which the test suite uses (a real local Ray), and [docs] (MkDocs).
	$(PY) -m pip install --quiet -e ".[all]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/expressivity demo --out $(DEMO_OUT)
	@echo "expressivity is installed in $(CURDIR)/$(VENV)/bin: run 'source $(VENV)/bin/activate' to put it on your PATH"

test: $(STAMP) chromium
	# the guide (docs/, mkdocs.yml): a broken link or anchor, or a page missing from the nav, fails the build
	$(VENV)/bin/mkdocs build --strict --quiet
	EXPRESSIVITY_REQUIRE_BROWSER=1 EXPRESSIVITY_REQUIRE_INTERP=1 $(PY) -m pytest -q -n 2 --dist loadfile

bench: $(STAMP)
	for b in benchmarks/bench_*.py; do $(PY) $$b || exit 1; done

chromium:
	@test -n "$(CHROMIUM)" || { echo "installing chromium from the system packages (the browser test needs it)"; \
	  $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium; }

clean:
	rm -rf $(VENV) $(DEMO_OUT) site .pytest_cache .hypothesis
