"""varlake."""
