"""A running job known only to Prometheus (`goodput check --prometheus URL --job-selector
'job="llama"' --step-metric NAME`): progress from a step counter the job exports, its raw
samples read back as they were scraped (an instant query of the range selector
`max(NAME{selector})[2h]` is not possible, so the series' own samples: `NAME{selector}[2h]`),
the steps' times being the samples where the counter rose. The samples' own times say when
the series stopped: a scrape gap is missing data, not a stall. The nodes, for fail-slow, are
the values of the node label on the job's series (or `--nodes`). No stacks: nothing here
reaches the ranks' processes, so a stall's culprit comes only from the metrics, or is unknown.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

from pydantic import BaseModel, Field

from goodput_agent.core.errors import BadInput
from goodput_agent.detect.assess import Observation

HISTORY = "2h"
_SELECTOR = re.compile(r'^\s*[A-Za-z_][A-Za-z0-9_]*\s*(=|!=|=~|!~)\s*"(?:[^"\\]|\\.)*"\s*'
                       r'(,\s*[A-Za-z_][A-Za-z0-9_]*\s*(=|!=|=~|!~)\s*"(?:[^"\\]|\\.)*"\s*)*$')
_NAME = re.compile(r"^[A-Za-z_:][A-Za-z0-9_:]*$")


class PromLook(BaseModel):
    target: str
    query: str
    observation: Observation
    nodes: list[str] = Field(default_factory=list)
    progress: None = None
    stacks: None = None
    missing: list[str] = Field(default_factory=list)
    last_values: list[tuple[float, float]] = Field(default_factory=list)  # evidence


def check_inputs(selector: str, metric: str) -> None:
    if not _SELECTOR.match(selector):
        raise BadInput(f"--job-selector {selector}: expected label matchers such as "
                       'job="llama" or job="llama",cluster="a"')
    if not _NAME.match(metric):
        raise BadInput(f"--step-metric {metric}: not a Prometheus metric name")


def look(source, selector: str, metric: str, node_label: str,  # noqa: ANN001
         nodes: list[str] | None = None, now: float | None = None) -> PromLook:
    """`source`: a metrics.prometheus.PrometheusSource."""
    check_inputs(selector, metric)
    now = now or time.time()
    query = f"{metric}{{{selector}}}[{HISTORY}]"
    result = source.instant(query, datetime.fromtimestamp(now, UTC))
    if not result:
        raise BadInput(f"prometheus: no series {metric}{{{selector}}} in the last {HISTORY}: "
                       "is the job exporting its step counter under that name?")
    # every rank's counter, or one: the job progressed when its most advanced counter rose
    samples: dict[float, float] = {}
    found_nodes: set[str] = set()
    for series in result:
        if node_label in series.get("metric", {}):
            found_nodes.add(series["metric"][node_label])
        for t, v in series.get("values", []):
            samples[float(t)] = max(samples.get(float(t), float("-inf")), float(v))
    times = sorted(samples)
    values = [samples[t] for t in times]
    marks = [t for i, t in enumerate(times) if i and values[i] > values[i - 1]]
    steps = [values[i] for i, t in enumerate(times) if i and values[i] > values[i - 1]]
    obs = Observation(job=f"prometheus:{selector}", now=now, progress=marks, steps=steps,
                      samples=times)
    return PromLook(target=selector, query=query, observation=obs,
                    nodes=nodes or sorted(found_nodes),
                    last_values=list(zip(times[-5:], values[-5:], strict=True)))
