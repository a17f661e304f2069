# varlake: two set-up commands, `make demo` and `make test`, on a machine with Java 17.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install test demo bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,bench]'
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q

demo: $(STAMP)
	$(PY) -m varlake.demo

bench: $(STAMP)
	$(PY) bench/codec.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache
