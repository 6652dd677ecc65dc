"""Parsers: one module per artifact format. Each turns a file into typed records (mostly Events).

Parsing lives apart from analysis (goodput_agent.analysis): nothing here decides a verdict.
"""
