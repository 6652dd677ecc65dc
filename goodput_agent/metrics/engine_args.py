"""A deployment's engine arguments from a bundle's config/ file, as configuration revisions."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from goodput_agent.core.errors import BadInput
from goodput_agent.metrics.vllm_names import ConfigRevision, parse_engine_args
from goodput_agent.parsing.lines import (
    plain_suffix,
    read_whole_text,
)


def _when(value: Any, rel: str) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        dt = value
    else:
        try:
            dt = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            raise BadInput(f"{rel}: {value!r} is not an ISO 8601 time") from None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def load_engine_args(path: Path, rel: str) -> list[ConfigRevision]:
    """Engine arguments of the service, per deployment revision.

    YAML/JSON: `{"revisions": [{"from": ISO time, "args": [argv...] | "vllm serve ..."}]}`
    (a bare list of revisions, or one mapping with `args`, also do); `from` is when the
    revision started serving (absent: always). Any other file is one command line
    (backslash continuations allowed) that applies to the whole bundle."""
    try:
        text = read_whole_text(path)
    except (OSError, EOFError) as exc:
        raise BadInput(f"{rel}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    if plain_suffix(path) not in (".yaml", ".yml", ".json"):
        argv = text.replace("\\\n", " ")
        return [ConfigRevision(since=None, args=parse_engine_args(argv), source=rel)]
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        raise BadInput(f"{rel}: not valid YAML/JSON") from None
    items = doc.get("revisions", [doc]) if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        raise BadInput(f"{rel}: expected a list of revisions with `args`")
    out = []
    for k, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("args"), (list, str)):
            raise BadInput(f"{rel}: revision {k + 1} has no `args` (a list or a command line)")
        args = item["args"] if isinstance(item["args"], str) else [str(a) for a in item["args"]]
        out.append(ConfigRevision(since=_when(item.get("from", item.get("since")), rel),
                                  args=parse_engine_args(args), source=rel))
    return sorted(out, key=lambda r: r.since or datetime.min.replace(tzinfo=UTC))
