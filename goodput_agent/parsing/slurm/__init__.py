"""Slurm scheduler artifacts: sacct (pipe, table, JSON), scontrol show job/node, sinfo.

Every format becomes the same two records, jobs (and steps) and nodes, and the same events:
one job_state / step_state event per job or step row, one node event per node in trouble.
What a state means is decided once, in `classify_job_state` and `classify_node`.

Times: sacct and scontrol print local wall-clock time without a zone (ctx.clock's zone is
assumed, Clock.local); slurmrestd/slurmdbd JSON carries epoch seconds (Clock.absolute).

Modules, one per command: sacct_text (--parsable2 and the table), rest_json (sacct --json,
slurmrestd), scontrol (show job / show node), sinfo (-R and the table); records holds the two
records and their field readers, outcomes what a state means and the events made of records.
"""

from goodput_agent.parsing.slurm.records import (
    JobRecord,
    NodeRecord,
    nodes_of,
    normalize_state,
    parse_local_time,
)
from goodput_agent.parsing.slurm.rest_json import SacctJsonParser, SlurmNodesJsonParser
from goodput_agent.parsing.slurm.sacct_text import SacctPipeParser, SacctTableParser
from goodput_agent.parsing.slurm.scontrol import ScontrolJobParser, ScontrolNodeParser
from goodput_agent.parsing.slurm.sinfo import SinfoParser, SinfoReasonsParser

SACCT_JSON = SacctJsonParser()
SLURM_NODES_JSON = SlurmNodesJsonParser()
SACCT_PIPE = SacctPipeParser()
SACCT_TABLE = SacctTableParser()
SCONTROL_JOB = ScontrolJobParser()
SCONTROL_NODE = ScontrolNodeParser()
SINFO_REASONS = SinfoReasonsParser()
SINFO = SinfoParser()

PARSERS = (SACCT_JSON, SLURM_NODES_JSON, SACCT_PIPE, SACCT_TABLE, SCONTROL_JOB, SCONTROL_NODE,
           SINFO_REASONS, SINFO)

__all__ = ["PARSERS", "SACCT_JSON", "SACCT_PIPE", "SACCT_TABLE", "SCONTROL_JOB", "SCONTROL_NODE",
           "SINFO", "SINFO_REASONS", "SLURM_NODES_JSON", "JobRecord", "NodeRecord", "nodes_of",
           "normalize_state", "parse_local_time"]
