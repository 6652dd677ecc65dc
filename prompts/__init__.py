"""Prompts and tool descriptions, as data; installed as goodput_agent.prompts."""
