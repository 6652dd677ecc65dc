"""The training job's own output: per-rank logs and combined logs of many ranks.

Line shapes understood (a file can mix them):
- per-rank files: every unprefixed line belongs to `ctx.rank_hint`;
- rank prefixes: "[rank3]:" (PyTorch c10 / torchrun, global rank), "[default3]:" (torchrun
  --tee, a LOCAL rank), "3: " / "  3: " (srun --label, a task id), "[1,3]<stdout>:" (mpirun
  --tag-output, global rank), and combinations ("3: [default2]:[rank26]:...");
- timestamps: Python logging / ISO ("2024-05-01 10:00:00,123"), glog / c10 ("[E1122
  10:15:32.123456 ...]" and PyTorch's unpadded month "[E321 02:07:08.4]"); a line without a time
  takes the previous timestamped line's time (Clock.carried), or none when there is none before.

Local ranks ([default3]:) become global ranks only with evidence from the same file: a line
that carries both a local and a global rank ("[default3]:[rank11]:"), an NCCL init line of the
world communicator under a local prefix, or a torchelastic summary ("rank : 11 (local_rank:
3)"); these give an offset per srun task (node). A file whose local ranks cover the whole world
(single node) maps local == global. Otherwise `rank` stays None and detail["local_rank"] keeps
the local one. An srun label is taken as the global rank unless the file shows it names a
launcher per node (labelled lines that also carry a local-rank prefix or torchelastic agent
output); then it is kept in detail["task"].

Ranks and hosts: NCCL lines ("host:pid:tid [dev] NCCL INFO ...") give host and CUDA device of a
rank; the world communicator's init line ("comm 0x.. rank 3 nranks 64 cudaDev 3 busId 84000")
gives rank -> host and rank -> GPU as a PCI bus id ("0000:84:00", the kernel's Xid form);
only communicators with the largest nranks seen are trusted (sub-groups number ranks their way).

Events: CUDA OOM, Python tracebacks (one event per traceback, chained tracebacks marked), CUDA
errors, NCCL watchdog timeouts and progress, NCCL NET/IB and socket errors, NCCL error codes,
torchelastic agent lines and its ChildFailedError summary, srun / slurmstepd lines, segfaults
and signals. See `classify.classify_exception` for how an exception is judged.

Speed: the file is read in large binary chunks; only lines with one of MARKERS are decoded, plus
a window of lines after a traceback header or frame (exception lines carry no fixed marker).
The time of the last timestamped line before each decoded line is found by stepping back over
the undecoded lines in between (bounded), so carried times are not taken from stale lines.

Modules, by what they read: prefixes (launcher prefixes, timestamps, file names), scan (which
lines are decoded), traceback_text and tracebacks, nccl_lines, device_errors (CUDA, kernel
lines, crashes), slurm_lines, elastic_summary (torchelastic); classify judges exceptions and
errors, ranks resolves local ranks, file_parser routes each line, parser is what the registry
calls.
"""

from goodput_agent.parsing.job_log.parser import PARSER, JobLogParser
from goodput_agent.parsing.job_log.prefixes import rank_from_filename
from goodput_agent.parsing.job_log.state import FORMAT

__all__ = ["FORMAT", "PARSER", "JobLogParser", "rank_from_filename"]
