"""Writing tables, for every engine, in sub-packages by job:

- ``staging``: the one write path -- the shredding policy (``shredding``), data files ->
  ``add`` actions (``files``), checks on what a write declares (``conform``), the rows'
  constraints (``constraints``), the staging skeleton every engine runs (``stage``; engines
  only produce the Parquet files), the commit of staged files (``commit``), the ingest's
  bookkeeping (``ingest_log``), the table contract the jobs below take (``handle``) and
  the table format behind ``varlake.Table`` (``formats``: ``DeltaCore``);
- ``changes``: DELETE and UPDATE (``rows``), MERGE (``merge``), SET expressions;
- ``maintenance``: OPTIMIZE, clustering, the content check of a rewrite, layout drift;
- ``diagnostics``: the shredding doctor's report.

Partition values (names, text, directories) live in ``varlake.semantics.partition_values``.
"""

from varlake.write.staging.commit import MODES, Committed, PendingWrite, commit_actions, commit_write
from varlake.write.staging.constraints import Constraint, check_arrow, table_constraints
from varlake.write.staging.conform import check_partition_columns, fits_nullability, partition_types, same_shape
from varlake.write.staging.files import add_action, file_facts, new_data_file, num_indexed_cols
from varlake.write.staging.shredding import (
    ENABLE_SHREDDING,
    SAMPLE_ROWS,
    SHREDDING_PROPERTY,
    ShreddingPlan,
    evolve_metadata,
    evolve_stable_ddl,
    needs_samples,
    new_table_properties,
    plan_shredding,
    stable_widths,
    stored_schemas,
    unshreddable_reason,
    variant_columns,
)

__all__ = [
    "ENABLE_SHREDDING",
    "MODES",
    "SAMPLE_ROWS",
    "SHREDDING_PROPERTY",
    "Committed",
    "Constraint",
    "PendingWrite",
    "ShreddingPlan",
    "add_action",
    "check_arrow",
    "check_partition_columns",
    "commit_actions",
    "commit_write",
    "evolve_metadata",
    "evolve_stable_ddl",
    "file_facts",
    "fits_nullability",
    "needs_samples",
    "new_data_file",
    "new_table_properties",
    "num_indexed_cols",
    "partition_types",
    "plan_shredding",
    "same_shape",
    "stable_widths",
    "stored_schemas",
    "table_constraints",
    "unshreddable_reason",
    "variant_columns",
]
