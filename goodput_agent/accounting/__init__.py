"""Accounting: where a job's or a fleet's GPU-hours went, by diagnosed cause."""
