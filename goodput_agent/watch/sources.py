"""Which sources a `goodput watch` runs, from its flags: the one place a new source plugs in.

`SourceOptions` holds what the flags say; `build_sources(options)` returns the pull sources
(polled by the runner on their interval); `start_receivers(options, sink)` starts the push
sources (a webhook receiver) that hand their triggers to `sink` — it returns once they are
stored durably — and returns how to stop each. A source for Kubernetes (`--k8s`), Prometheus
alerts (`--prometheus URL`) or an Alertmanager receiver (`--alertmanager-listen HOST:PORT`)
adds its fields to SourceOptions, its flags to `cli/watch.py`'s `source_options`, and its
construction below.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from pydantic import BaseModel, Field

from goodput_agent.watch.slurm_source import SlurmFilters
from goodput_agent.watch.trigger import TriggerSink, WatchSource


class SourceOptions(BaseModel):
    slurm: bool = False
    slurm_filters: SlurmFilters = Field(default_factory=SlurmFilters)
    since: datetime | None = None  # the first poll starts here (default: now)
    timeout_s: float = 30.0

    @property
    def any(self) -> bool:
        return self.slurm


def build_sources(options: SourceOptions) -> list[WatchSource]:
    sources: list[WatchSource] = []
    if options.slurm:
        from goodput_agent.sources.slurm import SlurmCLI
        from goodput_agent.watch.slurm_source import SlurmWatchSource

        sources.append(SlurmWatchSource(SlurmCLI(timeout_s=options.timeout_s),
                                        options.slurm_filters, options.since))
    return sources


def start_receivers(options: SourceOptions, sink: Callable[[str], TriggerSink]
                    ) -> list[Callable[[], None]]:
    """Push sources; `sink(source_name)` stores what that source receives. None yet here."""
    return []
