"""`goodput collect --slurm-job ID`: the job's scheduler record, its output files and the kernel
logs of its nodes (those that are this host) written as a bundle in the contract's layout:

    slurm/scontrol_job.txt  slurm/sacct.txt (or .json)  slurm/scontrol_nodes.txt  slurm/sinfo_R.txt
    slurm/batch_script-<job>.sh (scontrol write batch_script <job> -: what a config change edits)
    logs/<the job's StdOut/StdErr file names>
    nodes/<node>/kern.log (journalctl) or nodes/<node>/dmesg.txt
    incident.yaml (job id, window, the zone Slurm printed its times in)   manifest.json

What cannot be collected (a node that is another machine, an output file this host cannot read,
a command that failed) is an error in the manifest, and so missing evidence in the report.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Callable
from contextlib import suppress
from datetime import datetime
from functools import cache
from pathlib import Path, PurePosixPath

from pydantic import BaseModel

from goodput_agent.collect.base import BundleWriter, Manifest
from goodput_agent.metrics.source import TimeWindow
from goodput_agent.sources.errors import SourceError
from goodput_agent.sources.kernel_log import KernelLog, KernelLogOutput, job_window
from goodput_agent.sources.slurm import SlurmCLI, SlurmJob, SlurmSource, local_zone_name

_NODE_ADDR = re.compile(r"NodeName=(\S+).*?\bNodeAddr=(\S+)(?:.*?\bNodeHostName=(\S+))?", re.S)


@cache
def _local_names() -> frozenset[str]:
    names = {"localhost", socket.gethostname(), socket.getfqdn()}
    names |= {n.split(".")[0] for n in list(names)}
    with suppress(OSError):
        names |= set(socket.gethostbyname_ex(socket.gethostname())[2])
    return frozenset(names)


def _is_local(addr: str) -> bool:
    return addr in _local_names() or addr.startswith("127.") or addr == "::1"


def node_addresses(job: SlurmJob) -> dict[str, list[str]]:
    """Each node's address and host name, from `scontrol show node` (text or JSON)."""
    found: dict[str, list[str]] = {}
    for out in job.outputs:
        if out.name == "scontrol_nodes.txt":
            for record in re.split(r"\n(?=NodeName=)", out.text):
                if m := _NODE_ADDR.search(record):
                    found[m.group(1)] = [x for x in m.groups()[1:] if x]
        elif out.name == "nodes.json":  # scontrol show node --json (23.02+): name, address
            with suppress(ValueError, AttributeError, TypeError):
                for node in json.loads(out.text).get("nodes") or []:
                    found[str(node["name"])] = [str(node[k]) for k in ("address", "hostname")
                                                if isinstance(node.get(k), str)]
    return found


def local_nodes(job: SlurmJob) -> list[str]:
    """The job's nodes whose kernel log is this host's (the node is this machine)."""
    addrs = node_addresses(job)
    return [n for n in job.nodes if _is_local(n) or any(_is_local(a) for a in addrs.get(n, []))]


def _when(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def collect_slurm_job(job_id: str, out_dir: Path, cli: SlurmCLI | None = None,
                      kernel: KernelLog | None = None, on_node: OnNode | None = None) -> Manifest:
    """Collect one job into `out_dir` (new or empty). Raises the typed source error when
    nothing at all can be read about the job (unknown job, no Slurm, controller and
    accounting both unreachable); anything less is a partial bundle. `on_node`: runs a
    function on another node of the job (a Ray cluster's), for the kernel logs there."""
    source = SlurmSource(cli)
    job = source.job(job_id)
    window = job_window(_when(job.start), _when(job.end))
    with BundleWriter(out_dir, {"slurm_job": job.job_id}, window) as w:
        for out in job.outputs:
            w.write_text(f"slurm/{out.name}", out.text, source="slurm", what=out.what,
                         command=out.argv)
        for p in job.problems:
            w.error("slurm", p.what, p.kind, p.error, p.command)
        _batch_script(w, job, source.cli)
        _job_logs(w, job)
        _kernel_logs(w, job, window, kernel or KernelLog(env=source.cli.env), on_node)
        w.write_incident({"question": f"why did job {job.job_id} fail?", "job": job.job_id,
                          "window": {"start": window.start.isoformat(),
                                     "end": window.end.isoformat()},
                          "timezone": local_zone_name(source.cli.env)})
    return w.manifest


def _batch_script(w: BundleWriter, job: SlurmJob, cli: SlurmCLI) -> None:
    """The script Slurm stored at submission (what a config change edits), while the
    controller still holds the job; the path it was submitted from, where scontrol names it."""
    m = next((m for o in job.outputs if o.name == "scontrol_job.txt"
              and (m := re.search(r"^\s*Command=(/\S.*)$", o.text, re.M))), None)
    submitted = f" (submitted from {m.group(1).strip()})" if m else ""
    what = f"batch script of job {job.job_id}{submitted}"
    try:
        out = cli.output(f"batch_script-{job.job_id}.sh", what,
                         ["scontrol", "write", "batch_script", job.job_id, "-"])
    except SourceError as exc:
        w.source_error(what, exc)
        return
    w.write_text(f"slurm/{out.name}", out.text, source="slurm", what=what, command=out.argv)


def _job_logs(w: BundleWriter, job: SlurmJob) -> None:
    seen: set[str] = set()
    for label, path in (("stdout", job.std_out), ("stderr", job.std_err)):
        what = f"{label} of job {job.job_id}"
        if path == "/dev/null":
            w.error("slurm", what, "not_found", "the job sent it to /dev/null")
            continue
        if not path:
            w.error("slurm", what, "not_found", "its path is unknown (scontrol no longer holds "
                    "the job, and sacct before 23.02 does not name it)")
            continue
        if path in seen:
            continue
        seen.add(path)
        name = PurePosixPath(path).name or f"job-{job.job_id}.{label}"
        w.copy_file(f"logs/{name}", Path(path), source="slurm", what=f"{what} ({path})",
                    origin=socket.gethostname())


class NodeKernelLog(BaseModel):
    """A node's kernel log read on that node (a Ray task there), or why it could not be."""

    host: str
    log: KernelLogOutput | None = None
    error: str | None = None
    command: str | None = None


def kernel_log_here(window: TimeWindow) -> NodeKernelLog:
    """This machine's kernel log over the window; runs on the node it is about."""
    try:
        return NodeKernelLog(host=socket.gethostname(), log=KernelLog().read(window))
    except SourceError as exc:
        return NodeKernelLog(host=socket.gethostname(), error=exc.message, command=exc.command)


# runs a function on the cluster node named by any of the names; None: no such node
OnNode = Callable[..., NodeKernelLog | None]


def _remote_kernel_log(w: BundleWriter, node: str, names: list[str], window: TimeWindow,
                       on_node: OnNode | None) -> None:
    what = f"kernel log of {node}"
    got = on_node(names, kernel_log_here, window) if on_node else None
    if got is None:
        w.error("kernel_log", what, "unreachable",
                f"{node} is another machine: run `goodput collect` there (or collect with "
                f"--ray on a Ray cluster that has the node), or copy `journalctl -k -o "
                f"short-iso` of {node} into nodes/{node}/")
    elif got.log is None or not got.log.text.strip():
        w.error("kernel_log", what, "unreadable" if got.log is None else "empty",
                got.error or "no kernel lines in the window", got.command, origin=got.host)
    else:
        w.write_text(f"nodes/{node}/{got.log.name}", got.log.text, source="kernel_log",
                     what=what, command=got.log.argv, origin=got.host)


def _kernel_logs(w: BundleWriter, job: SlurmJob, window: TimeWindow, kernel: KernelLog,
                 on_node: OnNode | None = None) -> None:
    here = set(local_nodes(job))
    addrs = node_addresses(job) if on_node else {}
    log: KernelLogOutput | SourceError | None = None
    for node in job.nodes:
        what = f"kernel log of {node}"
        if node not in here:
            _remote_kernel_log(w, node, [node, *addrs.get(node, [])], window, on_node)
            continue
        if log is None:
            try:
                log = kernel.read(window)
            except SourceError as exc:
                log = exc
        if isinstance(log, SourceError):
            w.source_error(what, log)
            continue
        if not log.text.strip():
            w.error("kernel_log", what, "empty",
                    f"no kernel lines in {window.start:%Y-%m-%dT%H:%M:%SZ} .. "
                    f"{window.end:%Y-%m-%dT%H:%M:%SZ}", log.command)
            continue
        w.write_text(f"nodes/{node}/{log.name}", log.text, source="kernel_log", what=what,
                     command=log.argv, origin=socket.gethostname())
