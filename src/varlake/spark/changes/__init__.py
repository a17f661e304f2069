"""Changing rows and maintaining tables with Spark: DELETE/UPDATE/MERGE, row ids, OPTIMIZE, Z-order, content digests."""
