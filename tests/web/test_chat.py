"""Chat from the investigation page, against the scripted Messages API server (a fixture):
one question per post, the answer and its tool calls shown from the ledger, CSRF required,
and without a configured key the page says so instead of offering the form."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from goodput_agent.ledger import Ledger
from goodput_agent.web.app import ServeConfig, create_app
from tests.planner.claude_fixtures import FIXTURE_KEY, cite
from tests.servers.messages_api import FixtureReply, scripted_messages_api, text, tool_use
from tests.web.conftest import BASE, Reviewed


@pytest.fixture
def no_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("claude:\n  retry: {attempts: 2, initial_s: 0.01, max_s: 0.02, "
                      "jitter_s: 0}\n  budgets: {max_wall_s: 60}\n")
    monkeypatch.setenv("GOODPUT_CONFIG", str(config))
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "GOODPUT_MODEL"):
        monkeypatch.delenv(var, raising=False)


def _csrf(html: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


def _rows(r: Reviewed) -> int:
    with Ledger(r.ledger, read_only=True) as lg:
        return lg.rows("SELECT count(*) AS n FROM chat_messages")[0]["n"]


def test_without_a_key_the_page_says_so(no_claude: None, reviewed: Reviewed) -> None:
    client = TestClient(create_app(ServeConfig(ledger=reviewed.ledger)), base_url=BASE)
    page = client.get(f"/inv/{reviewed.inv_id}").text
    assert 'id="no-chat"' in page and "ANTHROPIC_API_KEY" in page and 'id="ask"' not in page
    csrf = _csrf(client.get("/login").text)  # a form elsewhere
    res = client.post(f"/inv/{reviewed.inv_id}/chat", data={"csrf": csrf, "question": "why?"})
    assert res.status_code == 409


def test_ask_from_the_page(no_claude: None, reviewed: Reviewed,
                           monkeypatch: pytest.MonkeyPatch) -> None:
    def answer(body: dict) -> FixtureReply:
        return FixtureReply([text(f"Xid 79 on gpu-node-03 came first [E{cite(body, 'Xid')}].")])

    script = [FixtureReply([tool_use("kernel_log_events", {"node": "gpu-node-03"})]), answer]
    with scripted_messages_api(script) as api:
        monkeypatch.setenv("ANTHROPIC_API_KEY", FIXTURE_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        client = TestClient(create_app(ServeConfig(ledger=reviewed.ledger)), base_url=BASE,
                            follow_redirects=False)
        page = client.get(f"/inv/{reviewed.inv_id}").text
        assert 'id="ask"' in page
        url = f"/inv/{reviewed.inv_id}/chat"
        assert client.post(url, data={"question": "why did it fail?"}).status_code == 403
        assert _rows(reviewed) == 0 and not api.requests
        res = client.post(url, data={"csrf": _csrf(page), "question": "why did it fail?"})
        assert res.status_code == 303 and res.headers["location"].endswith("#chat")
        requests = list(api.requests)
    page = client.get(f"/inv/{reviewed.inv_id}").text
    convo = page[page.index('id="conversation"'):]
    assert re.search(r'class="msg user text">why did it fail\?</p>', convo)
    assert 'class="msg assistant tool">&rarr; kernel_log_events {&#34;node&#34;:' \
           '&#34;gpu-node-03&#34;}' in convo
    assert re.search(r"Xid 79 on gpu-node-03 came first \[E\d+\]\.", convo)
    assert "untrusted-tool-output" not in convo  # the ledger context given to the model
    # only read-only tools were offered to the model
    assert "slurm_drain_node" not in {t["name"] for t in requests[0].body["tools"]}
    assert _rows(reviewed) >= 4
