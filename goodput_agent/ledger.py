"""The evidence ledger: a DuckDB file every investigation appends to and never rewrites.

Each row is committed as it is written (autocommit), so a crash mid-investigation loses
nothing already recorded; a re-run is a new investigation. Rows are only ever INSERTed.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
from pydantic import BaseModel, computed_field

from goodput_agent.errors import BadInput

SCHEMA_VERSION = 1
# an investigation with no conclusion row: the run stopped (killed, crashed) before recording
# one. A run still going holds the file for writing, so `goodput ledger` cannot open the file
# until it ends (the web pages, which read a snapshot then, say "not concluded" instead).
CONCLUDED, INTERRUPTED = "concluded", "interrupted"

_DDL = """
CREATE SEQUENCE IF NOT EXISTS row_ids START 1;
CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE IF NOT EXISTS investigations (
    id VARCHAR PRIMARY KEY, created_at TIMESTAMPTZ, question VARCHAR, kind VARCHAR,
    target VARCHAR, planner VARCHAR, goodput_version VARCHAR, prompt_hash VARCHAR);
CREATE TABLE IF NOT EXISTS tool_calls (
    id BIGINT PRIMARY KEY, investigation_id VARCHAR, seq INTEGER, tool VARCHAR, read_only BOOLEAN,
    args_json VARCHAR, output_digest VARCHAR, output_summary VARCHAR, duration_ms DOUBLE,
    error VARCHAR, started_at TIMESTAMPTZ);
CREATE TABLE IF NOT EXISTS evidence (
    id BIGINT PRIMARY KEY, investigation_id VARCHAR, tool_call_id BIGINT, source VARCHAR,
    locator VARCHAR, excerpt VARCHAR, event_time TIMESTAMPTZ, digest VARCHAR,
    created_at TIMESTAMPTZ);
CREATE TABLE IF NOT EXISTS claims (
    id BIGINT PRIMARY KEY, investigation_id VARCHAR, statement VARCHAR, category VARCHAR,
    confidence DOUBLE, status VARCHAR, node VARCHAR, rank INTEGER, gpu VARCHAR,
    supporting VARCHAR, contradicting VARCHAR, created_at TIMESTAMPTZ);
CREATE TABLE IF NOT EXISTS actions (
    id BIGINT PRIMARY KEY, investigation_id VARCHAR, tool VARCHAR, args_json VARCHAR,
    mutating BOOLEAN, status VARCHAR, rationale VARCHAR, claim_ids VARCHAR,
    created_at TIMESTAMPTZ);
CREATE TABLE IF NOT EXISTS conclusions (
    investigation_id VARCHAR PRIMARY KEY, finished_at TIMESTAMPTZ, category VARCHAR,
    confidence DOUBLE, exit_code INTEGER, report_json VARCHAR);
-- what happened to a proposed action, in order (approval, rejection, refusal,
-- execution_started, execution, verification); the action's status is derived from these rows
CREATE TABLE IF NOT EXISTS action_events (
    id BIGINT PRIMARY KEY, action_id BIGINT, investigation_id VARCHAR, kind VARCHAR,
    actor VARCHAR, occurred_at TIMESTAMPTZ, tool VARCHAR, args_hash VARCHAR,
    evidence_digest VARCHAR, approval_id BIGINT, expires_at TIMESTAMPTZ, ok BOOLEAN,
    reason VARCHAR, detail_json VARCHAR);
-- one row per action whose execution started: the primary key makes a second execution of the
-- same action impossible, whatever the process or the approvals (written in one transaction
-- with the action's execution_started row)
CREATE TABLE IF NOT EXISTS action_runs (
    action_id BIGINT PRIMARY KEY, approval_id BIGINT, started_event BIGINT,
    started_at TIMESTAMPTZ);
-- the Claude planner: one row per Messages API call (tokens, cost, request id), the full output
-- of each tool call the model saw summarised, and the chat conversation, message by message
CREATE TABLE IF NOT EXISTS llm_calls (
    id BIGINT PRIMARY KEY, investigation_id VARCHAR, seq INTEGER, model VARCHAR,
    request_id VARCHAR, input_tokens BIGINT, output_tokens BIGINT, cache_creation_tokens BIGINT,
    cache_read_tokens BIGINT, cost_usd DOUBLE, stop_reason VARCHAR, duration_ms DOUBLE,
    created_at TIMESTAMPTZ);
CREATE TABLE IF NOT EXISTS tool_outputs (
    id BIGINT PRIMARY KEY, investigation_id VARCHAR, tool_call_id BIGINT, evidence_id BIGINT,
    line_count INTEGER, full_text VARCHAR, created_at TIMESTAMPTZ);
CREATE TABLE IF NOT EXISTS chat_messages (
    id BIGINT PRIMARY KEY, investigation_id VARCHAR, seq INTEGER, role VARCHAR,
    content_json VARCHAR, created_at TIMESTAMPTZ);
"""


def default_ledger_path() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "goodput" / "ledger.duckdb"


LOCK_WAIT_S = 20.0  # another goodput holds the file: wait this long before giving up


def _connect(path: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    """DuckDB allows one writing process per file: wait for a concurrent run to finish."""
    deadline, delay = time.monotonic() + LOCK_WAIT_S, 0.1
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only)
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower() or time.monotonic() > deadline:
                if "lock" in str(exc).lower():
                    raise BadInput(f"{path}: the ledger is in use by another goodput process; "
                                   "retry when it finishes, or use --ledger PATH") from None
                raise
            time.sleep(delay)
            delay = min(delay * 2, 2.0)


def _now() -> datetime:
    return datetime.now(UTC)


def digest(data: str | bytes) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return "sha256:" + hashlib.sha256(raw).hexdigest()[:32]


def new_investigation_id() -> str:
    return "inv-" + _now().strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(4)


class Ledger:
    def __init__(self, path: Path, read_only: bool = False):
        self.path = path
        try:
            if not read_only:
                path.parent.mkdir(parents=True, exist_ok=True)
            self.con = _connect(path, read_only)
            if not read_only:
                self.con.execute(_DDL)
                self.con.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)",
                                 [str(SCHEMA_VERSION)])
        except duckdb.Error as exc:
            raise BadInput(f"{path}: cannot open the ledger: {str(exc).splitlines()[0]}") from None
        except OSError as exc:
            raise BadInput(f"{path}: cannot open the ledger: {exc.strerror}") from None

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Several writes that stand or fall together (autocommit otherwise)."""
        self.con.execute("BEGIN TRANSACTION")
        try:
            yield
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        self.con.execute("COMMIT")

    def _next_id(self) -> int:
        return int(self.con.execute("SELECT nextval('row_ids')").fetchone()[0])

    # --- writes (INSERT only) ---------------------------------------------------------

    def start_investigation(self, question: str, kind: str, target: str, planner: str,
                            version: str, prompt_hash: str | None = None) -> str:
        inv_id = new_investigation_id()
        self.con.execute("INSERT INTO investigations VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         [inv_id, _now(), question, kind, target, planner, version, prompt_hash])
        return inv_id

    def record_tool_call(self, inv_id: str, seq: int, tool: str, read_only: bool,
                         args: dict[str, Any], output_json: str | None, summary: Any,
                         duration_ms: float, error: str | None, started_at: datetime) -> int:
        row_id = self._next_id()
        self.con.execute(
            "INSERT INTO tool_calls VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [row_id, inv_id, seq, tool, read_only, json.dumps(args, sort_keys=True, default=str),
             digest(output_json) if output_json is not None else None,
             json.dumps(summary, default=str), duration_ms, error, started_at])
        return row_id

    def record_evidence(self, inv_id: str, tool_call_id: int | None, source: str, locator: str,
                        excerpt: str, event_time: datetime | None) -> int:
        row_id = self._next_id()
        self.con.execute("INSERT INTO evidence VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         [row_id, inv_id, tool_call_id, source, locator, excerpt, event_time,
                          digest(f"{source}|{locator}|{excerpt}"), _now()])
        return row_id

    def evidence_exists(self, inv_id: str, evidence_id: int) -> bool:
        row = self.con.execute("SELECT 1 FROM evidence WHERE id = ? AND investigation_id = ?",
                               [evidence_id, inv_id]).fetchone()
        return row is not None

    def record_claim(self, inv_id: str, statement: str, category: str, confidence: float,
                     status: str, supporting: list[int], contradicting: list[int],
                     node: str | None = None, rank: int | None = None,
                     gpu: str | None = None) -> int:
        unknown = [e for e in supporting + contradicting if not self.evidence_exists(inv_id, e)]
        if unknown:
            raise ValueError(f"claim cites evidence the ledger does not hold: {unknown}")
        row_id = self._next_id()
        self.con.execute("INSERT INTO claims VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         [row_id, inv_id, statement, category, confidence, status, node, rank,
                          gpu, json.dumps(supporting), json.dumps(contradicting), _now()])
        return row_id

    def record_action(self, inv_id: str, tool: str, args: dict[str, Any], mutating: bool,
                      rationale: str, claim_ids: list[int]) -> int:
        row_id = self._next_id()
        self.con.execute("INSERT INTO actions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         [row_id, inv_id, tool, json.dumps(args, sort_keys=True), mutating,
                          "proposed", rationale, json.dumps(claim_ids), _now()])
        return row_id

    def record_conclusion(self, inv_id: str, category: str, confidence: float, exit_code: int,
                          report_json: str) -> None:
        self.con.execute("INSERT INTO conclusions VALUES (?, ?, ?, ?, ?, ?)",
                         [inv_id, _now(), category, confidence, exit_code, report_json])

    # --- reads ------------------------------------------------------------------------

    def rows(self, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        cur = self.con.execute(sql, params or [])
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]

    def evidence_rows(self, inv_id: str, ids: list[int]) -> list[dict[str, Any]]:
        """This investigation's evidence rows with these ids, in id order."""
        if not ids:
            return []
        marks = ", ".join("?" for _ in ids)
        return self.rows(f"SELECT * FROM evidence WHERE investigation_id = ? AND id IN ({marks}) "
                         "ORDER BY id", [inv_id, *ids])

    def actions_of(self, inv_id: str) -> list[dict[str, Any]]:
        """This investigation's proposed actions, in the order they were recorded."""
        return self.rows("SELECT * FROM actions WHERE investigation_id = ? ORDER BY id",
                         [inv_id])

    def investigations(self, limit: int = 50) -> list[dict[str, Any]]:
        return self.rows(
            "SELECT i.id, i.created_at, i.kind, i.question, i.target, i.planner, "
            f"CASE WHEN c.investigation_id IS NULL THEN '{INTERRUPTED}' ELSE '{CONCLUDED}' END "
            "AS status, c.category, c.confidence, c.exit_code "
            "FROM investigations i LEFT JOIN conclusions c "
            "ON c.investigation_id = i.id ORDER BY i.created_at DESC LIMIT ?", [limit])

    def investigation(self, inv_id: str) -> InvestigationRecord | None:
        inv = self.rows("SELECT * FROM investigations WHERE id = ?", [inv_id])
        if not inv:
            return None
        by = "WHERE investigation_id = ? ORDER BY id"
        return InvestigationRecord(
            investigation=inv[0],
            tool_calls=self.rows(f"SELECT * FROM tool_calls {by}", [inv_id]),
            evidence=self.rows(f"SELECT * FROM evidence {by}", [inv_id]),
            claims=self.rows(f"SELECT * FROM claims {by}", [inv_id]),
            actions=self.rows(f"SELECT * FROM actions {by}", [inv_id]),
            action_events=self.rows(f"SELECT * FROM action_events {by}", [inv_id]),
            conclusion=(self.rows("SELECT * FROM conclusions WHERE investigation_id = ?",
                                  [inv_id]) or [None])[0],
        )

    def latest_investigation_id(self) -> str | None:
        row = self.con.execute(
            "SELECT id FROM investigations ORDER BY created_at DESC LIMIT 1").fetchone()
        return row[0] if row else None


class InvestigationRecord(BaseModel):
    investigation: dict[str, Any]
    tool_calls: list[dict[str, Any]]
    evidence: list[dict[str, Any]]
    claims: list[dict[str, Any]]
    actions: list[dict[str, Any]]
    action_events: list[dict[str, Any]] = []  # approvals, refusals, executions, verifications
    conclusion: dict[str, Any] | None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def status(self) -> str:
        return INTERRUPTED if self.conclusion is None else CONCLUDED


@contextmanager
def open_ledger(path: Path | None, read_only: bool = False) -> Iterator[Ledger]:
    ledger = Ledger(path or default_ledger_path(), read_only=read_only)
    try:
        yield ledger
    finally:
        ledger.close()
