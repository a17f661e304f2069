"""Reading tables with Spark: read plans, SQL analysis and rewrites, explain, export."""
