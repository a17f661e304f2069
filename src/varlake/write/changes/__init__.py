"""Row changes for every engine: DELETE, UPDATE (deletion vectors or copy-on-write) and MERGE."""
