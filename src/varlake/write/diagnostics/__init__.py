"""Diagnostics: the shredding doctor's report (rendered by the CLI)."""
