"""The evidence ledger: one DuckDB file shared by every goodput process, in short sessions.
Only this package speaks SQL to it (tests/test_architecture.py checks); everything else uses
its vocabulary: core (investigations), actions (the gate's rows), watch (the queue), chat
(model calls and conversations), fleet (aggregates), tokens (approvers' tokens)."""

from goodput_agent.ledger.core import (
    CHAT,
    CONCLUDED,
    INTERRUPTED,
    InvestigationRecord,
    Ledger,
    default_ledger_path,
    digest,
    new_investigation_id,
    open_ledger,
)
from goodput_agent.ledger.files import LedgerBusy, LedgerError
from goodput_agent.ledger.schema import SCHEMA_VERSION

__all__ = ["CHAT", "CONCLUDED", "INTERRUPTED", "SCHEMA_VERSION", "InvestigationRecord", "Ledger",
           "LedgerBusy", "LedgerError", "default_ledger_path", "digest", "new_investigation_id",
           "open_ledger"]
