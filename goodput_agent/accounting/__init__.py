"""Goodput accounting: where a job's (and a fleet's) GPU-hours went, by diagnosed cause."""
