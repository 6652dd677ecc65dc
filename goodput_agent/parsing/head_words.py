"""Which of the sniffers' literal words a file's head holds, found in one pass over the head.

Every file of a bundle is offered to every sniffer in turn, and a `word in head` over a 64 KiB
head costs 20-90 µs: a sniffer asking a dozen of them (k8s describe's top-level keys) spent more
than half a millisecond per file. Hyperscan finds all the words below at once (~20 µs); where it
cannot be imported each word is looked for with `in`, which gives the same answer.
"""

from __future__ import annotations

import threading
from functools import cache, lru_cache

from goodput_agent.parsing.prefilter import hyperscan

# Grouped by the sniffer that asks; a word asked of holds() that is not listed here is still
# answered, by `in`.
SNIFF_WORDS: tuple[str, ...] = (
    # k8s describe: its events header, container states, top-level keys
    "Reason", "State:", "Name:", "Namespace:", "Node:", "Roles:", "Taints:", "Conditions:",
    "Containers:", "Events:", "Status:", "Controlled By:", "Allocatable:", "Capacity:",
    # flight recorder dumps
    "pg_config", "pg_status", "nccl_comm_state", "entries", "collective_seq_id", "version",
    # OpenMetrics text
    "# TYPE ", "# HELP ",
    # scontrol show job / node
    "JobState=", "JobId=", "ExitCode=", "State=",
    # sacct / sinfo tables a job log must not be taken for (job_log's _SACCT)
    "JobID", "------ ------", "PARTITION", "JobId=",
    # vLLM's engine log
    "Avg prompt throughput: ", "is preempted by PreemptionMode.",
    # tool reports (tool_reports.py): a benchmark, nccl-tests' data types, the profiler's
    # table, NCCL RAS, dcgmi diag, py-spy, DNS lookups
    "Benchmark Result", "float", "half", "bfloat16", "double", "int8", "int32", "int64",
    "fp8_e", "Self CPU %", "Job summary", "Diagnostic", "Thread ", "Address", "in-addr.arpa",
    " has address ",
)


@cache
def _database():  # noqa: ANN202 - hyperscan.Database
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(expressions=[w.encode() for w in SNIFF_WORDS], ids=list(range(len(SNIFF_WORDS))),
               elements=len(SNIFF_WORDS), flags=hyperscan.HS_FLAG_SINGLEMATCH, literal=True)
    return db


_local = threading.local()  # a Hyperscan scratch space is one thread's at a time


@lru_cache(maxsize=1)
def words_in(head: str) -> frozenset[str]:
    """The SNIFF_WORDS that occur in `head` (cached for the last head: the sniffers that read
    one file's head run one after the other)."""
    if hyperscan is None:
        return frozenset(w for w in SNIFF_WORDS if w in head)
    found: set[str] = set()

    def on_match(word_id: int, _start: int, _end: int, _flags: int, _ctx: object) -> None:
        found.add(SNIFF_WORDS[word_id])

    db = _database()
    scratch = getattr(_local, "scratch", None)
    if scratch is None:
        scratch = _local.scratch = hyperscan.Scratch(db)
    # UTF-8 keeps substrings: a word is in the text exactly when its bytes are in the bytes
    db.scan(head.encode("utf-8", "surrogatepass"), match_event_handler=on_match,
            scratch=scratch)
    return frozenset(found)


def holds(head: str, word: str) -> bool:
    """`word in head`, answered from the one pass over the head when the word is listed."""
    if word in _LISTED:
        return word in words_in(head)
    return word in head


_LISTED = frozenset(SNIFF_WORDS)
