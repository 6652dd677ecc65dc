"""The evidence ledger: a DuckDB file that every goodput process shares, in short sessions.

Investigation rows are only ever INSERTed. An investigation's own rows are staged in memory
while it runs (staging.py) and inserted with its conclusion in one transaction, so a reader
never sees half of one; its first row is written when it starts, so a run killed midway lists
as `interrupted`. Everything else (an approval, a queue update) is its own short transaction.
No method keeps the file open: see files.py for how processes take turns.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
from pydantic import BaseModel, computed_field

import goodput_agent.ledger.schema as schema
from goodput_agent.core.errors import BadInput
from goodput_agent.ledger.files import LedgerFile
from goodput_agent.ledger.staging import Staging

# an investigation with no conclusion row: the run stopped (killed, crashed) before recording
# one, or is still running (its rows are staged until it concludes)
CONCLUDED, INTERRUPTED = "concluded", "interrupted"
# a conversation (`goodput chat`): no verdict to conclude, so never "interrupted"
CHAT, CHAT_PLANNER_SUFFIX = "chat", "-chat"


def default_ledger_path() -> Path:
    env = os.environ.get("GOODPUT_LEDGER")
    if env:
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "goodput" / "ledger.duckdb"


def _now() -> datetime:
    return datetime.now(UTC)


def digest(data: str | bytes) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return "sha256:" + hashlib.sha256(raw).hexdigest()[:32]


def new_investigation_id() -> str:
    return "inv-" + _now().strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(4)


def _types(table: str) -> list[str]:
    return [kind.split()[0] for _, kind in schema.TABLES[table]]


def insert_rows(con: duckdb.DuckDBPyConnection, table: str, rows: list[tuple[Any, ...]]) -> None:
    """Many rows in one statement (DuckDB's executemany costs ~2 ms a row)."""
    if not rows:
        return
    cols = [list(c) for c in zip(*rows, strict=True)]
    select = ", ".join(f"unnest(${i + 1}::{t}[])" for i, t in enumerate(_types(table)))
    con.execute(f"INSERT INTO {table} SELECT {select}", cols)


class Ledger:
    """A handle on the ledger at `path`; holds no connection between calls."""

    def __init__(self, path: Path, read_only: bool = False, one_turn: bool = False):
        """`one_turn`: a command's sessions, from the schema's check to its close, in one
        turn at the file (files.py `kept`), not one each."""
        self.path = Path(path)
        self.read_only = read_only
        self._turn = ExitStack()
        self._staged: dict[str, Staging] = {}
        self._planners: dict[str, str] = {}
        try:
            if read_only:
                if not self.path.is_file():
                    raise BadInput(f"{self.path}: no ledger here (run `goodput investigate` "
                                   "first, or --ledger)")
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self.file = LedgerFile.of(self.path)
            if one_turn:
                self._turn.enter_context(self.file.kept(write=not read_only))
            if not read_only:
                self.file.ensure_schema(schema.current, schema.ensure)
        except duckdb.Error as exc:
            self._turn.close()
            raise BadInput(f"{self.path}: cannot open the ledger: "
                           f"{str(exc).splitlines()[0]}") from None
        except OSError as exc:
            self._turn.close()
            raise BadInput(f"{self.path}: cannot open the ledger: {exc.strerror}") from None
        except BaseException:
            self._turn.close()
            raise

    def close(self) -> None:
        """Staged rows of investigations that never concluded are kept (they list as
        interrupted, with what they recorded). The file may stay open a moment longer for
        the next session of this process (files.py); `release()` lets go of it now."""
        try:
            for inv_id in list(self._staged):
                self.abandon(inv_id)
        finally:
            self._turn.close()

    def release(self) -> None:
        """Close the file now, checkpointed (before copying it, say)."""
        self.file.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- sessions ------------------------------------------------------------------------

    @contextmanager
    def reading(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with self.file.session(write=False) as con:
            yield con

    @contextmanager
    def writing(self) -> Iterator[duckdb.DuckDBPyConnection]:
        if self.read_only:
            raise BadInput(f"{self.path}: opened read-only")
        with self.file.session(write=True) as con:
            yield con

    def rows(self, sql: str, params: list[Any] | dict[str, Any] | None = None
             ) -> list[dict[str, Any]]:
        """Rows of a query, in a read session (or the open session of this thread)."""
        with self.reading() as con:
            return fetch(con, sql, params)

    # --- writes (INSERT only) -------------------------------------------------------------

    def start_investigation(self, question: str, kind: str, target: str, planner: str,
                            version: str, prompt_hash: str | None = None) -> str:
        inv_id = new_investigation_id()
        with self.writing() as con:
            con.execute(schema.insert_sql("investigations"),
                        [inv_id, _now(), question, kind, target, planner, version, prompt_hash])
        self._staged[inv_id] = Staging(inv_id, self._reserve)
        self._planners[inv_id] = planner
        return inv_id

    def planner_of(self, inv_id: str) -> str | None:
        """The planner an investigation this handle started was recorded with."""
        return self._planners.get(inv_id)

    @contextmanager
    def staging(self, inv_id: str) -> Iterator[None]:
        """Writes to an investigation (a chat turn) staged and inserted together at the end of
        the block; one this handle is still recording keeps staging after it."""
        if inv_id not in self._staged:
            self._staged[inv_id] = Staging(inv_id, self._reserve)
        try:
            yield
        finally:
            self._flush(inv_id, None, keep=True)

    def _reserve(self, n: int) -> tuple[int, int]:
        with self.writing() as con:
            last = int(con.execute("SELECT max(nextval('row_ids')) FROM range(?)",
                                   [n]).fetchone()[0])
        return last - n + 1, last

    def _write(self, inv_id: str, table: str, make: Any) -> int:
        """Stage the row (an investigation in progress) or insert it at once."""
        staged = self._staged.get(inv_id)
        if staged is not None:
            row_id = staged.next_id()
            staged.add(table, make(row_id))
            return row_id
        with self.writing() as con:
            row_id = int(con.execute("SELECT nextval('row_ids')").fetchone()[0])
            con.execute(schema.insert_sql(table), list(make(row_id)))
        return row_id

    def record_tool_call(self, inv_id: str, seq: int, tool: str, read_only: bool,
                         args: dict[str, Any], output_json: str | None, summary: Any,
                         duration_ms: float, error: str | None, started_at: datetime) -> int:
        return self._write(inv_id, "tool_calls", lambda i: (
            i, inv_id, seq, tool, read_only, json.dumps(args, sort_keys=True, default=str),
            digest(output_json) if output_json is not None else None,
            json.dumps(summary, default=str), duration_ms, error, started_at))

    def record_evidence(self, inv_id: str, tool_call_id: int | None, source: str, locator: str,
                        excerpt: str, event_time: datetime | None) -> int:
        return self._write(inv_id, "evidence", lambda i: (
            i, inv_id, tool_call_id, source, locator, excerpt, event_time,
            digest(f"{source}|{locator}|{excerpt}"), _now()))

    def evidence_exists(self, inv_id: str, evidence_id: int) -> bool:
        staged = self._staged.get(inv_id)
        if staged is not None and evidence_id in staged.ids("evidence"):
            return True
        return bool(self.rows("SELECT 1 FROM evidence WHERE id = ? AND investigation_id = ?",
                              [evidence_id, inv_id]))

    def record_claim(self, inv_id: str, statement: str, category: str, confidence: float,
                     status: str, supporting: list[int], contradicting: list[int],
                     node: str | None = None, rank: int | None = None,
                     gpu: str | None = None) -> int:
        unknown = [e for e in supporting + contradicting if not self.evidence_exists(inv_id, e)]
        if unknown:
            raise ValueError(f"claim cites evidence the ledger does not hold: {unknown}")
        return self._write(inv_id, "claims", lambda i: (
            i, inv_id, statement, category, confidence, status, node, rank, gpu,
            json.dumps(supporting), json.dumps(contradicting), _now()))

    def record_action(self, inv_id: str, tool: str, args: dict[str, Any], mutating: bool,
                      rationale: str, claim_ids: list[int]) -> int:
        return self._write(inv_id, "actions", lambda i: (
            i, inv_id, tool, json.dumps(args, sort_keys=True), mutating, "proposed", rationale,
            json.dumps(claim_ids), _now()))

    def record_row(self, inv_id: str, table: str, make: Any) -> int:
        """A staged table's row made from its id (model calls, tool outputs, chat)."""
        return self._write(inv_id, table, make)

    def record_conclusion(self, inv_id: str, category: str, confidence: float, exit_code: int,
                          report_json: str) -> None:
        self._flush(inv_id, (inv_id, _now(), category, confidence, exit_code, report_json))

    def abandon(self, inv_id: str) -> None:
        """What an investigation that will not conclude recorded, kept (it lists as
        interrupted)."""
        self._flush(inv_id, None)

    def _flush(self, inv_id: str, conclusion: tuple[Any, ...] | None,
               keep: bool = False) -> None:
        """The staged rows (and the conclusion) in one transaction; `keep`: the investigation
        stays open for more (a chat's next turn)."""
        staged = self._staged.get(inv_id) if keep else self._staged.pop(inv_id, None)
        if not keep:
            self._planners.pop(inv_id, None)
        if conclusion is None and (staged is None or not staged.count):
            return
        with self.writing() as con:
            for table, rows in (staged.tables.items() if staged else ()):
                insert_rows(con, table, rows)
            if conclusion is not None:
                con.execute(schema.insert_sql("conclusions"), list(conclusion))
        if staged is not None and keep:
            staged.clear()

    def staged_rows(self, inv_id: str, table: str) -> list[dict[str, Any]]:
        """Rows an investigation in progress recorded and has not inserted yet."""
        staged = self._staged.get(inv_id)
        return staged.rows(table) if staged and table in staged.tables else []

    # --- reads ---------------------------------------------------------------------------

    def investigations(self, limit: int = 50) -> list[dict[str, Any]]:
        """The newest first; the newest are chosen before the join (joining every
        investigation first cost ~110 ms of the list page on 100,000)."""
        return self.rows(
            "WITH i AS (SELECT * FROM investigations ORDER BY created_at DESC LIMIT ?) "
            "SELECT i.id, i.created_at, i.kind, i.question, i.target, i.planner, "
            f"CASE WHEN c.investigation_id IS NOT NULL THEN '{CONCLUDED}' "
            f"WHEN ends_with(i.planner, '{CHAT_PLANNER_SUFFIX}') THEN '{CHAT}' "
            f"ELSE '{INTERRUPTED}' END "
            "AS status, c.category, c.confidence, c.exit_code "
            "FROM i LEFT JOIN conclusions c "
            "ON c.investigation_id = i.id ORDER BY i.created_at DESC", [limit])

    def investigation(self, inv_id: str) -> InvestigationRecord | None:
        """The investigation's rows; one this handle is still recording includes what it
        staged (a planner reads its own record)."""
        by = "WHERE investigation_id = ? ORDER BY id"
        with self.reading() as con:
            inv = fetch(con, "SELECT * FROM investigations WHERE id = ?", [inv_id])
            if not inv:
                return None
            tables = {t: fetch(con, f"SELECT * FROM {t} {by}", [inv_id]) +
                      self.staged_rows(inv_id, t)
                      for t in ("tool_calls", "evidence", "claims", "actions", "action_events")}
            conclusion = fetch(con, "SELECT * FROM conclusions WHERE investigation_id = ?",
                               [inv_id])
        return InvestigationRecord(investigation=inv[0], conclusion=(conclusion or [None])[0],
                                   **tables)

    def latest_investigation_id(self) -> str | None:
        rows = self.rows("SELECT id FROM investigations ORDER BY created_at DESC LIMIT 1")
        return rows[0]["id"] if rows else None

    def has_investigation(self, inv_id: str) -> bool:
        return bool(self.rows("SELECT 1 FROM investigations WHERE id = ?", [inv_id]))


def fetch(con: duckdb.DuckDBPyConnection, sql: str,
          params: list[Any] | dict[str, Any] | None = None) -> list[dict[str, Any]]:
    cur = con.execute(sql, params or [])
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


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
        if self.conclusion is not None:
            return CONCLUDED
        chat = str(self.investigation.get("planner") or "").endswith(CHAT_PLANNER_SUFFIX)
        return CHAT if chat else INTERRUPTED


@contextmanager
def open_ledger(path: Path | None, read_only: bool = False,
                one_turn: bool = False) -> Iterator[Ledger]:
    ledger = Ledger(path or default_ledger_path(), read_only=read_only, one_turn=one_turn)
    try:
        yield ledger
    finally:
        ledger.close()
