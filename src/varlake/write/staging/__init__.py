"""The one write path: stage data files for a snapshot (constraints, shredding policy, file facts) and commit them."""
