"""Metric series from files or a live Prometheus, behind one interface."""
