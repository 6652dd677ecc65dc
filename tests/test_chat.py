"""ChatSession in-process against the scripted Messages API (fixture): a stream that fails
mid-way is retried without repeating text, history is persisted and resumable, and a
tool_use left unanswered by a crash is dropped on resume."""

from __future__ import annotations

import time
from pathlib import Path

from goodput_agent.bundle import open_bundle
from goodput_agent.chat import ChatSession, resumable
from goodput_agent.ledger import Ledger
from goodput_agent.planner.claude_client import MessagesClient
from goodput_agent.planner.model_store import chat_messages
from goodput_agent.toolkit import ToolContext
from tests.planner.claude_fixtures import settings_for
from tests.servers.messages_api import FixtureReply, scripted_messages_api, text, tool_use


def test_midstream_overload_is_retried_and_text_not_repeated(tmp_path: Path,
                                                             demo_bundle: Path) -> None:
    script = [FixtureReply([text("Xid 79 came first.")], fail_midstream=True),
              FixtureReply([text("Xid 79 came first.")])]
    pieces: list[str] = []
    with scripted_messages_api(script) as api, open_bundle(demo_bundle) as b, \
            Ledger(tmp_path / "l.duckdb") as lg:
        inv = lg.start_investigation("chat", "failure", str(demo_bundle), "claude-chat", "0")
        settings = settings_for(api.url)
        session = ChatSession(settings, lg, inv, ToolContext(bundle=b), "failure",
                              client=MessagesClient(settings, sleep=lambda s: None))
        answer, spent = session.ask("why?", pieces.append, lambda *a: None)
        stored = chat_messages(lg, inv)
        calls = lg.rows("SELECT request_id FROM llm_calls WHERE investigation_id = ?", [inv])
        sent = len(api.requests)
    assert (answer, spent) == ("Xid 79 came first.", None)
    assert "".join(pieces) == "Xid 79 came first."
    assert sent == 2 and [c["request_id"] for c in calls] == ["req_fixture_0002"]
    assert [m["role"] for m in stored] == ["user", "assistant"]
    assert stored[0]["content"].endswith("why?") and "untrusted-tool-output" in \
        stored[0]["content"]  # the investigation's context, labeled as data


def test_per_answer_tool_budget_refuses_extra_calls(tmp_path: Path, demo_bundle: Path) -> None:
    many = FixtureReply([tool_use("log_activity", {}) for _ in range(4)])
    script = [many, FixtureReply([text("unused")])]
    tools: list[tuple[str, bool]] = []
    with scripted_messages_api(script) as api, open_bundle(demo_bundle) as b, \
            Ledger(tmp_path / "l.duckdb") as lg:
        inv = lg.start_investigation("chat", "failure", str(demo_bundle), "claude-chat", "0")
        settings = settings_for(api.url, budgets={"max_tool_calls": 2})
        session = ChatSession(settings, lg, inv, ToolContext(bundle=b), "failure")
        _, spent = session.ask("go", lambda s: None,
                               lambda name, args, ms, err: tools.append((name, err)))
        ran = lg.rows("SELECT count(*) AS n FROM tool_calls WHERE investigation_id = ?", [inv])
        sent = len(api.requests)
    assert tools == [("log_activity", False)] * 2 + [("log_activity", True)] * 2
    assert ran[0]["n"] == 2 and spent and "max_tool_calls" in spent
    assert sent == 1  # the budget ended the answer before another request


def test_a_slow_streamed_answer_ends_at_the_wall_time_budget(tmp_path: Path,
                                                             demo_bundle: Path) -> None:
    script = [FixtureReply([text("too late")], delay_s=30.0)]
    with scripted_messages_api(script) as api, open_bundle(demo_bundle) as b, \
            Ledger(tmp_path / "l.duckdb") as lg:
        inv = lg.start_investigation("chat", "failure", str(demo_bundle), "claude-chat", "0")
        settings = settings_for(api.url, budgets={"max_wall_s": 2.0})
        session = ChatSession(settings, lg, inv, ToolContext(bundle=b), "failure")
        t0 = time.monotonic()
        answer, spent = session.ask("why?", lambda s: None, lambda *a: None)
        took = time.monotonic() - t0
        sent = len(api.requests)
    assert took < 15 and answer == "" and sent == 1
    assert spent and "max_wall_s" in spent and "Messages API" in spent
    assert api.requests[0].body.get("stream") is True


def test_resume_drops_an_unanswered_tool_use() -> None:
    history = [{"role": "user", "content": "q"},
               {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
               {"role": "user", "content": "q2"},
               {"role": "assistant", "content": [tool_use("log_activity", {})]}]
    assert resumable(history) == history[:3]


def test_chat_shows_model_and_bundle_text_with_visible_escapes(tmp_path: Path,
                                                                demo_bundle: Path) -> None:
    """Streamed words, a tool call's name and arguments, and /evidence text: nothing the model
    or the bundle says reaches the terminal as an escape sequence or as rich markup."""
    import io

    from goodput_agent.cli.chat_repl import run_chat
    from tests.terminal_text import raw_controls

    hostile = "\x1b]0;pwned\x07 \x9b2J \u202e [link=http://x]click[/link]"
    script = [FixtureReply([text(f"the log says {hostile}"),
                            tool_use("log_activity", {"pattern": hostile})]),
              FixtureReply([text("done")])]
    out = io.StringIO()
    with scripted_messages_api(script) as api, open_bundle(demo_bundle) as b, \
            Ledger(tmp_path / "l.duckdb") as lg:
        inv = lg.start_investigation("chat", "failure", str(demo_bundle), "claude-chat", "0")
        ev = lg.record_evidence(inv, None, "kern.log", "kern.log:1", f"Xid 79 {hostile}", None)
        session = ChatSession(settings_for(api.url), lg, inv, ToolContext(bundle=b), "failure")
        run_chat(session, stdin=io.StringIO(f"why?\n/evidence {ev}\n/quit\n"), out=out)
    shown = out.getvalue()
    assert not raw_controls(shown)
    assert "the log says \\x1b]0;pwned\\x07 \\x9b2J \\u202e [link=http://x]click[/link]" in shown
    assert '-> log_activity {"pattern":"\\u001b]0;pwned' in shown  # the tool line, as JSON
    assert "Xid 79 \\x1b]0;pwned" in shown  # /evidence: the ledger's excerpt
