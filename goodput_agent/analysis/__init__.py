"""Analyses: read Events (never raw files) and turn them into findings."""
