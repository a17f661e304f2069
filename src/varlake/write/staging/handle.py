"""``TableHandle``: what the table-level jobs of ``write`` need of a table.

Row changes (``changes.rows``), MERGE (``changes.merge``), OPTIMIZE and layout checks
(``maintenance``) and the doctor (``diagnostics``) take a handle, never ``varlake.Table``
itself (``write`` sits below ``table``); ``varlake.Table`` is the handle every caller passes.
The contract:

- where: ``path`` (the table root as ``storage`` names it) and ``storage`` (chosen once,
  by the table, from its URI or path);
- the log: ``log`` (versions, snapshots, ``log.store`` that a transaction commits through,
  ``log.root_location`` that logged paths resolve against) and ``snapshot(version)``;
- configuration: ``properties`` (the latest ``metaData.configuration``);
- files: ``open_file`` (a relative path inside the root, link policy applied),
  ``read_source`` (what pyarrow reads that file from: a local path or a ranged file object),
  ``data_file`` (an ``add``'s file) and ``deleted_rows`` (a scan task's deletion vector);
- staging: ``stage`` writes new data files in the table's layout without committing them
  (``staging.stage``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np

from varlake.delta.actions import AddFile
from varlake.delta.snapshot import Snapshot
from varlake.delta.table_log import DeltaLog
from varlake.io.storage import Storage
from varlake.read import ScanTask
from varlake.write.staging.commit import PendingWrite

__all__ = ["TableHandle"]


class TableHandle(Protocol):
    """What row changes, MERGE, OPTIMIZE and the doctor need of a table (module doc)."""

    path: str
    storage: Storage
    log: DeltaLog

    @property
    def properties(self) -> Mapping[str, str]: ...

    def snapshot(self, version: int | None = None, timestamp: Any = None) -> Snapshot: ...

    def open_file(self, relative_path: str) -> str: ...

    def read_source(self, relative_path: str, size: int | None = None) -> Any: ...

    def data_file(self, add: AddFile) -> str: ...

    def deleted_rows(self, task: ScanTask) -> np.ndarray: ...

    def stage(
        self, data: Any, mode: Any = "append", snapshot: Snapshot | None = None, *, evolve: bool = True
    ) -> PendingWrite: ...
