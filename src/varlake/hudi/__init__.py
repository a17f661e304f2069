"""Apache Hudi tables: timeline, file groups, merge-on-read log files."""
