"""The ledger's tables: each a list of (column, type), from which the DDL is made and by which
staged rows are inserted. Investigation rows are only ever INSERTed; the watch's queue, its
cursors and its health are updated in place (they are the queue, not evidence)."""

from __future__ import annotations

import duckdb

SCHEMA_VERSION = 2  # 2: action_runs, approver tokens, the watch's tables in the ledger package

Columns = tuple[tuple[str, str], ...]

TABLES: dict[str, Columns] = {
    "investigations": (
        ("id", "VARCHAR PRIMARY KEY"), ("created_at", "TIMESTAMPTZ"), ("question", "VARCHAR"),
        ("kind", "VARCHAR"), ("target", "VARCHAR"), ("planner", "VARCHAR"),
        ("goodput_version", "VARCHAR"), ("prompt_hash", "VARCHAR")),
    "tool_calls": (
        ("id", "BIGINT PRIMARY KEY"), ("investigation_id", "VARCHAR"), ("seq", "INTEGER"),
        ("tool", "VARCHAR"), ("read_only", "BOOLEAN"), ("args_json", "VARCHAR"),
        ("output_digest", "VARCHAR"), ("output_summary", "VARCHAR"), ("duration_ms", "DOUBLE"),
        ("error", "VARCHAR"), ("started_at", "TIMESTAMPTZ")),
    "evidence": (
        ("id", "BIGINT PRIMARY KEY"), ("investigation_id", "VARCHAR"),
        ("tool_call_id", "BIGINT"), ("source", "VARCHAR"), ("locator", "VARCHAR"),
        ("excerpt", "VARCHAR"), ("event_time", "TIMESTAMPTZ"), ("digest", "VARCHAR"),
        ("created_at", "TIMESTAMPTZ")),
    "claims": (
        ("id", "BIGINT PRIMARY KEY"), ("investigation_id", "VARCHAR"), ("statement", "VARCHAR"),
        ("category", "VARCHAR"), ("confidence", "DOUBLE"), ("status", "VARCHAR"),
        ("node", "VARCHAR"), ("rank", "INTEGER"), ("gpu", "VARCHAR"), ("supporting", "VARCHAR"),
        ("contradicting", "VARCHAR"), ("created_at", "TIMESTAMPTZ")),
    "actions": (
        ("id", "BIGINT PRIMARY KEY"), ("investigation_id", "VARCHAR"), ("tool", "VARCHAR"),
        ("args_json", "VARCHAR"), ("mutating", "BOOLEAN"), ("status", "VARCHAR"),
        ("rationale", "VARCHAR"), ("claim_ids", "VARCHAR"), ("created_at", "TIMESTAMPTZ")),
    "conclusions": (
        ("investigation_id", "VARCHAR PRIMARY KEY"), ("finished_at", "TIMESTAMPTZ"),
        ("category", "VARCHAR"), ("confidence", "DOUBLE"), ("exit_code", "INTEGER"),
        ("report_json", "VARCHAR")),
    # what happened to a proposed action, in order (approval, rejection, refusal,
    # execution_started, execution, verification); the action's status is derived from these
    "action_events": (
        ("id", "BIGINT PRIMARY KEY"), ("action_id", "BIGINT"), ("investigation_id", "VARCHAR"),
        ("kind", "VARCHAR"), ("actor", "VARCHAR"), ("occurred_at", "TIMESTAMPTZ"),
        ("tool", "VARCHAR"), ("args_hash", "VARCHAR"), ("evidence_digest", "VARCHAR"),
        ("approval_id", "BIGINT"), ("expires_at", "TIMESTAMPTZ"), ("ok", "BOOLEAN"),
        ("reason", "VARCHAR"), ("detail_json", "VARCHAR")),
    # one row per action whose execution started: the primary key makes a second execution of
    # the same action impossible, whatever the process or the approvals (written in one
    # transaction with the action's execution_started row)
    "action_runs": (
        ("action_id", "BIGINT PRIMARY KEY"), ("approval_id", "BIGINT"),
        ("started_event", "BIGINT"), ("started_at", "TIMESTAMPTZ")),
    # the model planners: one row per model call, each tool output the model saw, the chat
    "llm_calls": (
        ("id", "BIGINT PRIMARY KEY"), ("investigation_id", "VARCHAR"), ("seq", "INTEGER"),
        ("model", "VARCHAR"), ("request_id", "VARCHAR"), ("input_tokens", "BIGINT"),
        ("output_tokens", "BIGINT"), ("cache_creation_tokens", "BIGINT"),
        ("cache_read_tokens", "BIGINT"), ("cost_usd", "DOUBLE"), ("stop_reason", "VARCHAR"),
        ("duration_ms", "DOUBLE"), ("created_at", "TIMESTAMPTZ")),
    "tool_outputs": (
        ("id", "BIGINT PRIMARY KEY"), ("investigation_id", "VARCHAR"),
        ("tool_call_id", "BIGINT"), ("evidence_id", "BIGINT"), ("line_count", "INTEGER"),
        ("full_text", "VARCHAR"), ("created_at", "TIMESTAMPTZ")),
    "chat_messages": (
        ("id", "BIGINT PRIMARY KEY"), ("investigation_id", "VARCHAR"), ("seq", "INTEGER"),
        ("role", "VARCHAR"), ("content_json", "VARCHAR"), ("created_at", "TIMESTAMPTZ")),
    # people who approve through the pages or the API: per-person tokens, stored hashed
    "approver_tokens": (
        ("id", "VARCHAR PRIMARY KEY"), ("person", "VARCHAR"), ("token_hash", "VARCHAR"),
        ("created_at", "TIMESTAMPTZ"), ("expires_at", "TIMESTAMPTZ"), ("created_by", "VARCHAR"),
        ("revoked_at", "TIMESTAMPTZ")),
    # the watch (goodput_agent/watch/): one row per incident, key unique (exactly once)
    "watch_triggers": (
        ("key", "VARCHAR PRIMARY KEY"), ("source", "VARCHAR"), ("question", "VARCHAR"),
        ("subject", "VARCHAR"), ("state", "VARCHAR"), ("occurred_at", "TIMESTAMPTZ"),
        ("detected_at", "TIMESTAMPTZ"), ("trigger_json", "VARCHAR"), ("status", "VARCHAR"),
        ("attempts", "INTEGER"), ("group_key", "VARCHAR"), ("investigation_id", "VARCHAR"),
        ("error", "VARCHAR"), ("updated_at", "TIMESTAMPTZ")),
    "watch_runs": (
        ("trigger_key", "VARCHAR"), ("attempt", "INTEGER"), ("investigation_id", "VARCHAR"),
        ("started_at", "TIMESTAMPTZ")),
    "watch_cursors": (
        ("source", "VARCHAR PRIMARY KEY"), ("cursor", "VARCHAR"), ("updated_at", "TIMESTAMPTZ")),
    "watch_health": (
        ("source", "VARCHAR PRIMARY KEY"), ("ok", "BOOLEAN"), ("last_poll_at", "TIMESTAMPTZ"),
        ("last_ok_at", "TIMESTAMPTZ"), ("last_error", "VARCHAR"),
        ("consecutive_failures", "INTEGER"), ("newest_event_at", "TIMESTAMPTZ")),
    "watch_groups": (
        ("group_key", "VARCHAR PRIMARY KEY"), ("representative_key", "VARCHAR"),
        ("signals", "VARCHAR"), ("first_at", "TIMESTAMPTZ"), ("created_at", "TIMESTAMPTZ")),
    "watch_notifications": (
        ("trigger_key", "VARCHAR"), ("investigation_id", "VARCHAR"), ("ok", "BOOLEAN"),
        ("attempts", "INTEGER"), ("error", "VARCHAR"), ("sent_at", "TIMESTAMPTZ")),
}

# written by an investigation as it goes: staged in memory, inserted at its end in one go
STAGED = ("tool_calls", "evidence", "claims", "actions", "llm_calls", "tool_outputs",
          "chat_messages")


def columns(table: str) -> list[str]:
    return [name for name, _ in TABLES[table]]


def insert_sql(table: str) -> str:
    return f"INSERT INTO {table} VALUES ({', '.join('?' for _ in TABLES[table])})"


def ddl() -> str:
    parts = ["CREATE SEQUENCE IF NOT EXISTS row_ids START 1;",
             "CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR);"]
    for table, cols in TABLES.items():
        body = ", ".join(f"{name} {kind}" for name, kind in cols)
        parts.append(f"CREATE TABLE IF NOT EXISTS {table} ({body});")
    # the review pages and the queue look rows up by investigation and by status
    parts += ["CREATE INDEX IF NOT EXISTS evidence_inv ON evidence (investigation_id);",
              "CREATE INDEX IF NOT EXISTS claims_inv ON claims (investigation_id);",
              "CREATE INDEX IF NOT EXISTS actions_inv ON actions (investigation_id);",
              "CREATE INDEX IF NOT EXISTS events_action ON action_events (action_id);",
              "CREATE INDEX IF NOT EXISTS triggers_status ON watch_triggers (status);"]
    return "\n".join(parts)


def ensure(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(ddl())
    con.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])


def current(con: duckdb.DuckDBPyConnection) -> bool:
    """The file already has this version's tables (nothing to create)."""
    row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return bool(row) and row[0] == str(SCHEMA_VERSION)
