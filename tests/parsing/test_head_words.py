"""head_words answers `word in head` from one pass: the same answer as `in`, with or without
Hyperscan, for every listed word and for words it does not list."""

from __future__ import annotations

import pytest

from goodput_agent.parsing import head_words
from goodput_agent.parsing.head_words import SNIFF_WORDS, holds, words_in

HEADS = [
    "",
    "Name:         trainer-0\nNamespace:    ml\nStatus:       Failed\n",
    "INFO 03-17 15:38:10 Avg prompt throughput: 1.0 tokens/s\n",
    "# HELP up 1\n# TYPE up gauge\nup 1\n",
    "JobId=7 JobState=FAILED ExitCode=1:0 \ud800 état Reason=None\n",
    "{\"pg_config\": {}, \"version\": \"2.1\", \"entries\": []}",
    "ümlaut Name: at the end Capacity:",
]


@pytest.mark.parametrize("head", HEADS)
def test_same_answer_as_in(head: str) -> None:
    assert words_in(head) == frozenset(w for w in SNIFF_WORDS if w in head)
    for word in (*SNIFF_WORDS, "not listed", "Nam"):
        assert holds(head, word) == (word in head)


def test_without_hyperscan(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(head_words, "hyperscan", None)
    words_in.cache_clear()
    try:
        for head in HEADS:
            assert words_in(head) == frozenset(w for w in SNIFF_WORDS if w in head)
    finally:
        words_in.cache_clear()
