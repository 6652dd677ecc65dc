"""Live Slurm source: the CLI as installed (sacct, scontrol, sinfo), run with a timeout and an
environment carrying SLURM_CONF, failures turned into typed errors (sources/errors.py).

What is read about a job is the command output itself (`SlurmOutput`): the collector writes it
into a bundle as it is, and the job's facts (`SlurmJob`) are read from that same text by the
bundle's parsers (parsing/slurm/, in sources/slurm_job.py), so the live and the bundle view
cannot disagree.

Versions: `sacct --json` exists since 21.08, but 22.05 reports every exit code as 0 there, and
`scontrol --json` / `sinfo --json` shapes changed up to 23.02; so JSON is asked for on 23.02 and
later only, and the text forms (`sacct -P`, `scontrol show job|node`, `sinfo -R`) otherwise.
Without slurmdbd ("accounting storage is disabled") sacct falls back to `sacct -c`, the
jobcomp/filetxt record (no job steps there).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import time
from functools import cached_property
from pathlib import Path
from typing import Any

from goodput_agent.parsing.nodelist import expand_nodelist
from goodput_agent.parsing.timefmt import ClockPolicy
from goodput_agent.sources.errors import (
    Forbidden,
    NotFound,
    NotInstalled,
    SourceError,
    TimedOut,
    Unreachable,
)
from goodput_agent.sources.slurm_job import (
    SOURCE,
    SlurmJob,
    SlurmOutput,
    SourceProblem,
    job_from_outputs,
)

__all__ = ["SOURCE", "SlurmCLI", "SlurmJob", "SlurmOutput", "SlurmSource", "classify_failure",
           "local_zone_name"]

DEFAULT_TIMEOUT_S = 30.0
JSON_SINCE = (23, 2)
SACCT_FIELDS = ("JobID,JobName,State,ExitCode,DerivedExitCode,NodeList,Start,End,Elapsed,"
                "Timelimit,Reason,Partition,User,AllocTRES")
# sacct -c (jobcomp) knows fewer fields
SACCT_JOBCOMP_FIELDS = "JobID,JobName,State,ExitCode,DerivedExitCode,NodeList,Start,End,Elapsed"
_UNREACHABLE = re.compile(r"unable to contact slurm controller|connection refused|"
                          r"socket timed out|zero bytes were transmitted|unable to connect|"
                          r"slurmdbd.*(?:not|unable|refused|connect)|"
                          r"communication connection failure|cannot contact", re.I)
_NOT_FOUND = re.compile(r"invalid job id|invalid node name|job .*does not exist|"
                        r"node .*not found|unknown job", re.I)
_FORBIDDEN = re.compile(r"access denied|permission denied|not authorized|"
                        r"invalid user|protocol authentication error|"
                        r"invalid credential|munge.*(?:fail|error|invalid)", re.I)
_NO_ACCOUNTING = re.compile(r"accounting storage is disabled", re.I)
# configless Slurm found neither slurm.conf nor a DNS SRV record for the controller
_NO_CONFIG = re.compile(r"could not establish a configuration source|fetch_config: .*failed|"
                        r"unable to (?:open|process) configuration file", re.I)
_CONTROLLER_COMMANDS = {"scontrol", "sinfo", "squeue"}
_JOB_ID = re.compile(r"^\d+(?:_\d+)?(?:\+\d+)?$")


def local_zone_name(env: dict[str, str] | None = None) -> str:
    """The zone Slurm's commands print their times in: TZ, else the machine's zone."""
    tz = (env or os.environ).get("TZ", "").lstrip(":")
    if tz and "/" in tz or tz.upper() == "UTC":
        return tz
    try:
        target = os.readlink("/etc/localtime")
        if "zoneinfo/" in target:
            return target.split("zoneinfo/", 1)[1]
    except OSError:
        pass
    try:
        return Path("/etc/timezone").read_text().strip() or "UTC"
    except OSError:
        return "UTC"


def _check_job_id(job_id: str) -> str:
    job_id = str(job_id).strip()
    if not _JOB_ID.match(job_id):
        raise NotFound(SOURCE, f"{job_id!r} is not a Slurm job id (digits, or 123_4 for an "
                       "array task)")
    return job_id


class SlurmCLI:
    """Runs Slurm's commands. `env` is the environment (SLURM_CONF, PATH); errors are typed."""

    def __init__(self, env: dict[str, str] | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
                 slurm_conf: str | None = None):
        self.env = dict(os.environ if env is None else env)
        if slurm_conf:
            self.env["SLURM_CONF"] = slurm_conf
        self.timeout_s = timeout_s
        self._controller_down: Unreachable | TimedOut | None = None

    def _exec(self, argv: list[str]) -> subprocess.CompletedProcess[str]:
        command = shlex.join(argv)
        try:
            return subprocess.run(argv, capture_output=True, text=True, env=self.env,
                                  timeout=self.timeout_s, check=False)
        except FileNotFoundError:
            raise NotInstalled(SOURCE, f"{argv[0]}: not installed here (is this a Slurm login "
                               "node? PATH?)", command) from None
        except PermissionError:
            raise Forbidden(SOURCE, f"{argv[0]}: permission denied", command) from None
        except subprocess.TimeoutExpired:
            raise TimedOut(SOURCE, f"`{command}` did not answer in {self.timeout_s:g} s",
                           command) from None

    def run(self, argv: list[str]) -> Any:
        """The approval runner's protocol (.run(argv) -> CommandResult), for mutating tools:
        a failing command is a result (rc, stderr), a missing one an error."""
        from goodput_agent.sources.command import CommandResult

        try:
            p = self._exec(argv)
        except TimedOut as exc:
            return CommandResult(argv=argv, rc=124, stderr=exc.message)
        return CommandResult(argv=argv, rc=p.returncode, stdout=p.stdout, stderr=p.stderr)

    def call(self, argv: list[str]) -> tuple[str, float]:
        """stdout of a read-only command, and how long it took; a failure as a typed error."""
        command = shlex.join(argv)
        talks_to_controller = argv[0] in _CONTROLLER_COMMANDS
        if talks_to_controller and self._controller_down is not None:
            # once found down, at once: a dead controller costs one timeout, not one per command
            down = self._controller_down
            raise type(down)(SOURCE, f"{argv[0]}: not asked: {down.message}", command)
        t0 = time.perf_counter()
        try:
            p = self._exec(argv)
            if p.returncode != 0:
                raise classify_failure(argv, p.returncode, p.stderr or p.stdout)
        except (Unreachable, TimedOut) as exc:
            if talks_to_controller:
                self._controller_down = exc
            raise
        return p.stdout, time.perf_counter() - t0

    @cached_property
    def version(self) -> tuple[int, int]:
        """(major, minor) of the installed Slurm, e.g. (22, 5); (0, 0) when unknown."""
        try:
            text, _ = self.call(["sinfo", "--version"])
        except SourceError as exc:
            if isinstance(exc, NotInstalled):
                raise
            return (0, 0)
        m = re.search(r"(\d+)\.(\d+)", text)
        return (int(m.group(1)), int(m.group(2))) if m else (0, 0)

    @property
    def json_ok(self) -> bool:
        return self.version >= JSON_SINCE

    def output(self, name: str, what: str, argv: list[str]) -> SlurmOutput:
        text, seconds = self.call(argv)
        return SlurmOutput(name=name, what=what, argv=argv, text=text, seconds=seconds)

    def sacct(self, job_id: str) -> SlurmOutput:
        """The job and its steps from accounting (JSON on new versions, else `sacct -P`);
        `sacct -c` (jobcomp) where there is no accounting storage."""
        job_id = _check_job_id(job_id)
        what = f"sacct of job {job_id}"
        try:
            return self._json_or_text(
                ("sacct.json", what, ["sacct", "-j", job_id, "--json"]),
                ("sacct.txt", what, ["sacct", "-j", job_id, "-P", f"--format={SACCT_FIELDS}"]))
        except SourceError as exc:
            if not _NO_ACCOUNTING.search(exc.message):
                raise
        return self.output("sacct.txt", what + " (jobcomp record: no accounting storage)",
                           ["sacct", "-c", "-j", job_id, "-P",
                            f"--format={SACCT_JOBCOMP_FIELDS}"])

    def show_job(self, job_id: str) -> SlurmOutput:
        job_id = _check_job_id(job_id)
        return self.output("scontrol_job.txt", f"scontrol show job {job_id}",
                           ["scontrol", "show", "job", job_id])

    def show_nodes(self, nodes: list[str]) -> SlurmOutput:
        what = "node states and reasons"
        return self._json_or_text(
            ("nodes.json", what, ["scontrol", "show", "node", ",".join(nodes), "--json"]),
            ("scontrol_nodes.txt", what, ["scontrol", "show", "node", ",".join(nodes)]))

    def _json_or_text(self, as_json: tuple[str, str, list[str]],
                      as_text: tuple[str, str, list[str]]) -> SlurmOutput:
        """JSON where this version has it; the text form where it has not, or where this
        build lacks the JSON plugin (the command then fails with a plain error)."""
        if self.json_ok:
            try:
                return self.output(*as_json)
            except (NotInstalled, NotFound, Unreachable, TimedOut, Forbidden):
                raise
            except SourceError as exc:
                if _NO_ACCOUNTING.search(exc.message):
                    raise
        return self.output(*as_text)

    def node_reasons(self) -> SlurmOutput:
        """Every node that is down, drained or failing, with its reason (`sinfo -R`)."""
        return self.output("sinfo_R.txt", "nodes with reasons (sinfo -R)",
                           ["sinfo", "-R", "-o", "%50E %9u %19H %N"])


def classify_failure(argv: list[str], rc: int, text: str) -> SourceError:
    line = " ".join((text or f"exit status {rc}").split())[:300]
    command = shlex.join(argv)
    if _NO_CONFIG.search(line):
        return Unreachable(SOURCE, f"{argv[0]}: no Slurm configuration here (no slurm.conf, no "
                           "DNS SRV record for the controller); set SLURM_CONF or run on a "
                           "cluster node", command)
    if _NOT_FOUND.search(line):
        return NotFound(SOURCE, f"{argv[0]}: {line}", command)
    if _UNREACHABLE.search(line):
        return Unreachable(SOURCE, f"{argv[0]}: {line}", command)
    if _FORBIDDEN.search(line):
        return Forbidden(SOURCE, f"{argv[0]}: {line}", command)
    return SourceError(SOURCE, f"`{command}` failed (exit {rc}): {line}", command)


class SlurmSource:
    """Reads one job: scontrol (while the controller still holds it), sacct, the job's nodes
    and every node reason. A command that fails is a problem noted (with its typed error), not
    the end, unless nothing at all could be read about the job."""

    def __init__(self, cli: SlurmCLI | None = None):
        self.cli = cli or SlurmCLI()

    @property
    def clock(self) -> ClockPolicy:
        return ClockPolicy(tz_name=local_zone_name(self.cli.env))

    def job(self, job_id: str) -> SlurmJob:
        job_id = _check_job_id(job_id)
        outputs: list[SlurmOutput] = []
        problems: list[SourceProblem] = []
        for what, read in ((f"scontrol show job {job_id}", self.cli.show_job),
                           (f"sacct of job {job_id}", self.cli.sacct)):
            try:
                outputs.append(read(job_id))
            except NotInstalled:
                raise
            except SourceError as exc:  # the other may still know it
                problems.append(SourceProblem.of(what, exc))
        try:
            job = job_from_outputs(job_id, outputs, self.clock)
        except NotFound as exc:
            # nothing known: the most telling error (an unreachable controller over 'unknown')
            worst = next((p.exc for p in problems if not isinstance(p.exc, NotFound)), None)
            raise worst or exc from None
        for what, read in (("states of the job's nodes", lambda: self.cli.show_nodes(
                                expand_nodelist(",".join(job.nodes))) if job.nodes else None),
                           ("node reasons (sinfo -R)", self.cli.node_reasons)):
            try:
                out = read()
            except SourceError as exc:
                problems.append(SourceProblem.of(what, exc))
                continue
            if out is not None:
                outputs.append(out)
        full = job_from_outputs(job_id, outputs, self.clock)
        full.problems = [p for p in problems if not (isinstance(p.exc, NotFound)
                                                     and p.what.startswith("scontrol"))]
        return full
