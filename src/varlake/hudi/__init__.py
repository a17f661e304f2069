"""Reading Apache Hudi tables (``.hoodie/``): properties, timeline, file groups and
slices, snapshots (latest, time travel, read-optimized), incremental reads, and the
merge-on-read log files (``log_format``, ``log_blocks``, ``log_merge``).

The storage and root always come from the caller (``varlake.table.locate``); nothing here
chooses a storage. Entry points: ``open_snapshot``, ``read_snapshot``, ``read_incremental``.
"""

from varlake.hudi.properties import HudiProperties, load_properties
from varlake.hudi.reads import read_incremental, read_slices, read_snapshot
from varlake.hudi.snapshot import HudiSnapshot, open_snapshot
from varlake.hudi.timeline import Instant, Timeline, load_timeline

__all__ = [
    "HudiProperties",
    "HudiSnapshot",
    "Instant",
    "Timeline",
    "load_properties",
    "load_timeline",
    "open_snapshot",
    "read_incremental",
    "read_slices",
    "read_snapshot",
]
