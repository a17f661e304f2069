# varlake: two set-up commands, `make demo` and `make test`, on a machine with Java 17.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install tools test test-oracles demo bench bench-quick bench-scaling bench-components bench-objectstore clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,bench]'
	touch $(STAMP)

install: $(STAMP)

# The test S3 server (MinIO, built from source with Go), the Azure Blob server (Azurite, from npm),
# Spark's S3A connector (from Maven Central) and the delta-spark oracle (a side virtualenv with PySpark 4.2 and delta-spark 4.4, its
# JARs from Maven Central), cached in ~/.cache/varlake: the first run takes a few minutes, later ones nothing.
tools:
	bash tools/minio.sh
	bash tools/azurite.sh
	bash tools/s3a.sh
	bash tools/delta_oracle.sh

test: $(STAMP) tools
	$(PY) -m pytest -q

# The longer oracle checks (delta-spark reading clustered, id-mapped and checkpointed varlake
# tables, and writing onto them), outside `make test` for its time; .ci/run runs both.
test-oracles: $(STAMP) tools
	$(PY) -m pytest -q -m slow_oracle

demo: $(STAMP)
	$(PY) -m varlake.demo

# The workload benchmarks of issues 6 and 16 (JSON strings vs Variant vs shredded vs varlake vs
# relational vs DuckDB) and 31 (vs delta-spark 4.4 on Spark 4.2, in its own process: the oracle's side
# virtualenv, built here once) at scale 5: 1M events, 150k orders, 5 timed runs (~20 min on 2 cores;
# generated JSON is kept in bench/.cache). Writes bench/RESULTS.md, results.json and the charts.
VARLAKE_BENCH_SCALE ?= 5
bench: $(STAMP)
	bash tools/delta_oracle.sh
	VARLAKE_BENCH_SCALE=$(VARLAKE_BENCH_SCALE) $(PY) bench/run.py --runs 5

# The same at scale 1 (200k events, 30k orders; a few minutes), into bench/out/quick/.
bench-quick: $(STAMP)
	bash tools/delta_oracle.sh
	VARLAKE_BENCH_SCALE=1 $(PY) bench/run.py --out bench/out/quick

# Time against rows for every storage (events at 0.25M..5M; SIZES=0.25,0.5,1 to choose), into
# bench/SCALING.md, scaling.json and scaling_<workload>.png.
SIZES ?= 0.25,0.5,1,2,5
bench-scaling: $(STAMP)
	$(PY) bench/scaling.py --sizes $(SIZES)

# One benchmark per layer, each printing ratios against a baseline measured in the same run.
bench-components: $(STAMP)
	$(PY) bench/codec.py
	$(PY) bench/shredding.py
	$(PY) bench/table.py
	$(PY) bench/skipping.py
	$(PY) bench/spark_paths.py
	$(PY) bench/checksums.py

# Cost on an object store against delta-rs (issue 30, item 5): its own MinIO and a counting proxy;
# the shared table (1,000 commits, 10,000 files) is built once into bench/.cache/objectstore.
# Writes bench/OBJECTSTORE.md and objectstore.json; QUICK=1 for the 1,000-file table
# (bench/OBJECTSTORE_QUICK.md).
bench-objectstore: $(STAMP)
	bash tools/minio.sh
	$(PY) bench/objectstore.py $(if $(QUICK),--quick --runs 7,)

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache
