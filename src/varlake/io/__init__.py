"""I/O: storage access (``storage``) and Parquet files (``parquet``)."""

from varlake.io.storage import FileInfo, LocalStorage, Storage

__all__ = ["FileInfo", "LocalStorage", "Storage"]
