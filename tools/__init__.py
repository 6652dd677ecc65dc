"""Typed tools, one module per evidence source; installed as goodput_agent.tools."""
