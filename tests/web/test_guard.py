"""The guard in front of every page (web/app.py): a person it names is asked for once, and
their request is answered in the turn at the ledger the check took."""

from __future__ import annotations

import pytest

from goodput_agent.ledger import Ledger, files
from tests.ledger.test_turns import someone_waiting
from tests.web.conftest import Reviewed, token_for
from tests.web.test_app import _client


def test_a_persons_check_and_their_page_take_one_turn_at_the_ledger(
        reviewed: Reviewed, monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard's token check (a read) and the page's reads: one opening of the file, even
    with another process waiting for it, which would get it between two turns."""
    client, _ = _client(reviewed, token="shared-token-" + "x" * 20)
    client.headers["Authorization"] = f"Bearer {token_for(reviewed, 'alice')}"
    Ledger(reviewed.ledger).release()
    opened: list[bool] = []
    real = files.LedgerFile._open

    def counted(self: files.LedgerFile, write: bool, deadline: float) -> None:
        opened.append(write)
        real(self, write, deadline)
    monkeypatch.setattr(files.LedgerFile, "_open", counted)
    monkeypatch.setattr(files, "HOLD_S", 0.0)
    with someone_waiting(reviewed.ledger):
        page = client.get(f"/actions/{reviewed.config_action}")
    assert page.status_code == 200 and "You act as <b>alice</b> (token" in page.text
    assert opened == [False]
