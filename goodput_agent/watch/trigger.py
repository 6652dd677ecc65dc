"""The contract between what notices an incident (a watch source) and what investigates it.

A source turns what it saw into Triggers; the watch core stores them durably (their `key` is
unique in the ledger, so a trigger seen twice — a re-listed watch, a re-sent webhook, a restart
that re-reads a window — is queued once) and moves the source's cursor in the same transaction.
Everything a trigger carries that came from the watched system is untrusted text: it is shown
escaped and never decides what is run beyond choosing which read-only collector to call.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Literal, Protocol

from pydantic import BaseModel, Field

SourceName = Literal["slurm", "kubernetes", "prometheus", "alertmanager"]
# which question the investigation answers; "node" = a node fault with no job named yet;
# "live" = a running job found stalled or slowed (detect/, watch/live_source.py)
Question = Literal["failure", "latency", "node", "live"]


class Trigger(BaseModel):
    """One incident a source noticed. `key` names it exactly once across restarts: a job
    attempt (`slurm:<cluster>:<job id>:<restart count>`), a node event
    (`slurm-node:<cluster>:<node>:<state>:<since>`), a pod end (`k8s-pod:<uid>:<restarts>`),
    an alert (`alert:<fingerprint>:<startsAt>`)."""

    source: SourceName
    key: str
    question: Question
    subject: str  # what a person calls it: a job id, namespace/pod, a node, an alert name
    state: str  # the watched system's own word: FAILED, NODE_FAIL, OOMKilled, DOWN, firing
    occurred_at: datetime  # when it ended or fired, timezone-aware
    nodes: list[str] = Field(default_factory=list)  # hosts involved (storm grouping)
    # what the existing collectors need, e.g. {"slurm_job": "1234"}, {"k8s_job": "ns/name"},
    # {"k8s_pod": "ns/pod"}, {"node": "gpu-07"}, {"prometheus_service": "vllm",
    # "window_start": iso, "window_end": iso}
    collect: dict[str, str] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)  # partition, account, user, namespace
    detail: str = ""  # the reason the system gave (untrusted)


class Poll(BaseModel):
    """What one poll of a source returned: the new triggers and the cursor to resume from."""

    triggers: list[Trigger] = Field(default_factory=list)
    cursor: str | None = None  # opaque to the core; stored with the triggers, atomically


class SourceDown(Exception):
    """The watched system did not answer (Slurm controller, API server, Prometheus): the core
    backs off and shows it as the source's health; never a crash."""


class WatchSource(Protocol):
    """A pull source: `poll` is called again and again with the cursor it last returned (None
    the first time: start from now, or from `--since`)."""

    name: str

    def poll(self, cursor: str | None) -> Poll: ...


# a push source (the Alertmanager webhook receiver) hands triggers to this; it returns once
# they are stored durably, so the receiver answers 200 only for what survives a crash
TriggerSink = Callable[[list[Trigger]], None]
