"""Table maintenance for every engine: OPTIMIZE (bin-packing, re-shredding, clustering) and its content check."""
