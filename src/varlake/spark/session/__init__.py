"""Spark sessions: local and cluster masters, Spark Connect, confs, quiet logs."""
