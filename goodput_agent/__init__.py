"""Goodput: investigates why GPU training and inference jobs fail or slow down, with evidence."""

__version__ = "0.1.0"
