"""The shared mechanics every layer may use: errors, events on one clock, time specs, limits and
arenas, untrusted text and redaction, logging, the failure-class table, the incident file, SVG,
and running work in parallel (threads, processes or Ray)."""
