"""Approval policies, as YAML data; installed as goodput_agent.policies."""
