"""The human-approval gate: policy, approvals and refusals as ledger rows, and execution."""
