"""Which parser reads which file: formats are identified by content, in a fixed order.

Adding a format means adding a parser module and listing it here; nothing else changes.
"""

from __future__ import annotations

from functools import cache

from goodput_agent.parsing.base import Parser

# Format groups that tools and the planner select by (one list, next to the parsers).
SLURM_FORMATS = frozenset({"sacct_pipe", "sacct_table", "sacct_json", "slurm_nodes_json",
                           "scontrol_job", "scontrol_node", "sinfo_reasons", "sinfo"})
KUBERNETES_FORMATS = frozenset({"k8s_list", "k8s_describe"})
SCHEDULER_FORMATS = SLURM_FORMATS | KUBERNETES_FORMATS
JOB_LOG_FORMATS = frozenset({"job_log", "torchelastic_error", "flight_recorder"})
METRICS_FORMATS = frozenset({"openmetrics", "prom_api_json"})
# a serving engine's own log: its periodic stats answer the latency question without metrics
SERVING_LOG_FORMATS = frozenset({"vllm_log"})
FAILURE_FORMATS = SCHEDULER_FORMATS | JOB_LOG_FORMATS | {"kernel_log"}


@cache
def parsers() -> tuple[Parser, ...]:
    from goodput_agent.parsing import (
        engine_config,
        flight_recorder,
        job_log,
        job_script,
        k8s,
        k8s_describe,
        k8s_manifest,
        kernel_log,
        kineto,
        openmetrics,
        slurm,
        torchelastic,
        vllm_log,
    )

    # Structured formats first (they are unambiguous), free-text logs last.
    return (
        *slurm.PARSERS,
        k8s.PARSER,
        torchelastic.PARSER,
        flight_recorder.PARSER,
        kineto.PARSER,
        *openmetrics.PARSERS,
        vllm_log.PARSER,  # before engine_config: a server log quotes its command line
        job_script.PARSER,  # before the logs: a script's echo lines are not output
        k8s_manifest.PARSER,
        engine_config.PARSER,  # before the logs: a command line is configuration, not output
        k8s_describe.PARSER,  # before the logs: describe's "State: Terminated" is not output
        kernel_log.PARSER,
        job_log.PARSER,
    )


def identify(head: str, name: str) -> Parser | None:
    for parser in parsers():
        try:
            if parser.sniff(head, name):
                return parser
        except Exception:  # a sniffer must never take the scan down  # noqa: BLE001
            continue
    return None
