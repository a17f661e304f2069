"""Writing tables with Spark: DataFrame writes, JSON ingest, streaming micro-batches."""
