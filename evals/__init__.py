"""Evaluation data for Goodput: synthetic but realistic incident bundles with expected verdicts.

`goodput_agent.evals.generator` writes the bundles; `cases/` holds the shipped suite.
"""
