"""A stream that stalls after it has answered 200: the read timeout comes from the SDK's HTTP
library, not as the SDK's APITimeoutError; it is cut at the deadline, or retried without one."""

from __future__ import annotations

import time

import pytest

from goodput_agent.planner.claude_client import TIMEOUTS, DeadlineReached, MessagesClient
from tests.planner.claude_fixtures import settings_for
from tests.servers.messages_api import FixtureReply, scripted_messages_api, text

HELLO = [{"role": "user", "content": "what failed first?"}]


def test_the_sdks_own_transport_timeout_is_caught() -> None:
    """The timeout types are the SDK's, whichever HTTP library this SDK version is built on."""
    import anthropic

    transport = {c.__module__.partition(".")[0] for c in anthropic.DefaultHttpxClient.__mro__}
    assert any(t.__module__.partition(".")[0] in transport for t in TIMEOUTS[1:])


def test_a_stream_stalled_midway_is_cut_at_the_deadline() -> None:
    script = [FixtureReply([text("the first words and then nothing more")],
                           stall_midstream_s=30.0)]
    pieces: list[str] = []
    with scripted_messages_api(script) as api:
        client = MessagesClient(settings_for(api.url, request_timeout_s=60.0),
                                sleep=lambda s: None)
        t0 = time.monotonic()
        with pytest.raises(DeadlineReached):
            client.create(messages=HELLO, on_text=pieces.append, deadline=time.monotonic() + 2)
        assert time.monotonic() - t0 < 15  # neither the 30 s stall nor the 60 s cap
    assert pieces  # it had started answering


def test_a_stream_stalled_midway_without_a_deadline_is_retried() -> None:
    script = [FixtureReply([text("stalls here and never ends")], stall_midstream_s=30.0),
              FixtureReply([text("The Xid came first.")])]
    sleeps: list[float] = []
    with scripted_messages_api(script) as api:
        client = MessagesClient(settings_for(api.url, request_timeout_s=1.5),
                                sleep=sleeps.append)
        turn = client.create(messages=HELLO, on_text=lambda piece: None)
        assert len(api.requests) == 2
    assert len(sleeps) == 1
    assert turn.content == [{"type": "text", "text": "The Xid came first."}]
