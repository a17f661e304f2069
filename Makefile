# varlake: two set-up commands, `make demo` and `make test`, on a machine with Java 17.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install test demo bench bench-components clean

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

# The workload benchmarks of issue 6 (JSON strings vs Variant vs shredded vs varlake vs
# relational vs DuckDB); scale with VARLAKE_BENCH_SCALE. Writes bench/RESULTS.md and results.json.
bench: $(STAMP)
	$(PY) bench/run.py

# One benchmark per layer, each printing ratios against a baseline measured in the same run.
bench-components: $(STAMP)
	$(PY) bench/codec.py
	$(PY) bench/shredding.py
	$(PY) bench/table.py
	$(PY) bench/skipping.py
	$(PY) bench/spark_paths.py
	$(PY) bench/checksums.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache
