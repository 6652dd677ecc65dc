"""Planners choose the next tool call; the loop executes and records it. Planners are pluggable."""
