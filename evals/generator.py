"""Generate realistic incident bundles for the "why did job X fail?" question, with verdicts.

Every bundle looks like what the systems print: Slurm (sacct text/JSON, scontrol, sinfo -R) or
Kubernetes (`kubectl get ... -o json` Lists), kernel logs in the formats journalctl, rsyslog and
dmesg use, and per-rank training logs (PyTorch, NCCL, torchelastic, srun). Each case also has
`expected.json` (the answer key). Several cases are built so that the naive heuristic "blame the
node with the most error lines" is wrong: the victims of a failure are louder than its cause.

Deterministic: the same seed and count give byte-identical trees (fixed dates, seeded RNGs).

    python -m goodput_agent.evals.generator --out evals/cases --seed 7 --count 48
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo

from pydantic import BaseModel, Field

CATEGORIES = (
    "gpu_hardware",
    "gpu_oom",
    "host_oom",
    "application_error",
    "network_fault",
    "node_failure",
    "hang",
    "time_limit",
    "preempted",
)
GPU_CATEGORIES = ("gpu_hardware", "gpu_oom")
EXPECTED_FILE = "expected.json"

Platform = Literal["slurm", "k8s"]
LayoutName = Literal["srun_per_rank", "srun_l", "torchrun_node", "torchrun_rankfiles", "k8s"]
KERNEL_STYLES = (
    "short",
    "short-iso",
    "short-precise",
    "syslog",
    "rfc3339",
    "dmesg-T",
    "dmesg-iso",
    "dmesg-raw",
)
JOURNAL_STYLES = ("short", "short-iso", "short-precise", "syslog", "rfc3339")
TorchStyle = Literal["2.1", "2.3", "2.5", "2.6"]


# --------------------------------------------------------------------------- models


class CaseSpec(BaseModel):
    """Everything that decides one bundle; rendering adds only seeded detail (pids, numbers)."""

    case_id: str
    category: str
    variant: str
    platform: Platform = "slurm"
    seed: int = 7
    job_id: str = "48213"
    job_name: str = "pretrain"
    user: str = "mlops"
    partition: str = "gpu"
    node_names: list[str]
    node_order: list[int] | None = None  # node index per torchrun group rank (None: in order)
    gpus_per_node: int = 8
    gpu_bus: list[str] | None = None  # PCI bus ids by local GPU index
    culprit_node: int | None = None  # index into node_names
    culprit_local: int | None = None  # local rank / GPU index on the culprit node
    start: datetime  # job start, UTC
    fail_after_s: int = 900
    tz: str = "UTC"
    layout: LayoutName = "torchrun_node"
    rank_file: str = "rank{r}.log"
    kernel: dict[str, str | None] = Field(default_factory=dict)  # node -> style (None: absent)
    sched: Literal["sacct_txt", "sacct_json"] = "sacct_txt"
    sacct_columns: list[str] = Field(default_factory=lambda: list(SACCT_COLUMN_SETS[0]))
    torch: TorchStyle = "2.5"
    timeout_ms: int = 600_000
    kill_on_bad_exit: bool = False
    k8s_kind: Literal["pytorchjob", "indexed_job"] = "pytorchjob"
    k8s_timestamps: bool = False
    extras: list[str] = Field(default_factory=list)  # scontrol_job, sinfo_R, error_files, ...
    decoys: list[str] = Field(default_factory=list)
    misleading: bool = False
    retry_useful: bool | None = None
    notes: str = ""


class Expected(BaseModel):
    case_id: str
    category: str
    node: str | None
    rank: int | None
    gpu: str | None
    retry_useful: bool | None
    misleading: bool
    notes: str
    gpu_index: str | None = None
    variant: str = ""
    platform: str = "slurm"
    decoys: list[str] = Field(default_factory=list)


class Case(BaseModel):
    case_id: str
    path: Path
    expected: Expected
    files: list[str]
    total_bytes: int


# --------------------------------------------------------------------------- constants

SACCT_COLUMN_SETS: tuple[tuple[str, ...], ...] = (
    ("JobID", "JobName", "State", "ExitCode", "NodeList", "Start", "End", "Elapsed"),
    (
        "JobID",
        "JobName",
        "Partition",
        "Account",
        "AllocTRES",
        "State",
        "ExitCode",
        "DerivedExitCode",
        "Start",
        "End",
        "NodeList",
    ),
    (
        "JobIDRaw",
        "JobName",
        "User",
        "NNodes",
        "Elapsed",
        "Start",
        "End",
        "State",
        "ExitCode",
        "NodeList",
    ),
    ("JobID", "State", "ExitCode", "Start", "End", "Elapsed", "NodeList", "Reason"),
)
BUS_SETS: tuple[tuple[str, ...], ...] = (
    ("19", "2b", "3b", "4c", "5d", "9b", "bb", "db"),  # HGX H100 (Supermicro)
    ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db"),  # DGX H100
    ("07", "0f", "47", "4e", "87", "90", "b7", "bd"),  # DGX A100
    ("1b", "43", "52", "61", "9d", "c3", "d1", "d6"),  # cloud H100 VM
)
HCA_BUS = ("1a", "3c", "4d", "5e", "9c", "bc", "cc", "dc")
ZONES = ("America/Chicago", "America/Los_Angeles", "Europe/Berlin", "Asia/Seoul")
BASE_DATES = (
    date(2024, 3, 19),
    date(2024, 5, 14),
    date(2024, 6, 18),
    date(2024, 8, 7),
    date(2024, 9, 24),
    date(2024, 10, 15),
    date(2025, 2, 11),
    date(2025, 4, 22),
    date(2025, 6, 5),
    date(2025, 7, 16),
    date(2025, 9, 9),
    date(2025, 10, 21),
)
SLURM_SCHEMES = ("gpu-{:02d}", "gpu-node-{:02d}", "dgx-a100-{:02d}", "nid{:05d}", "hgx-h100-{:03d}")
MODELS = ("llama3-8b", "llama3-70b", "mixtral-8x7b", "gpt-neox-20b", "qwen2-72b", "vit-h14")
DRIVERS = ("535.183.06", "550.90.07", "550.127.05", "560.35.03", "570.124.06")
NCCL_VERSIONS = ("2.18.6", "2.20.5", "2.21.5", "2.23.4")
PY_SITE = "/usr/local/lib/python3.10/dist-packages"
CUDA_ASYNC_NOTE = (
    "CUDA kernel errors might be asynchronously reported at some other API call, so the "
    "stacktrace below might be incorrect.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
)


# --------------------------------------------------------------------------- small helpers


def _tz(name: str) -> tzinfo:
    return UTC if name.upper() == "UTC" else ZoneInfo(name)


def _iso_z(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _offset_colon(t: datetime) -> str:
    z = t.strftime("%z")
    return f"{z[:3]}:{z[3:]}"


def _uptime(seconds: float) -> str:
    whole = int(seconds)
    micro = int(round((seconds - whole) * 1_000_000)) % 1_000_000
    return f"[{whole:5d}.{micro:06d}]"


def _hms_frac(t: datetime, digits: int) -> str:
    base = t.strftime("%H:%M:%S")
    if digits == 0:
        return base
    micro = f"{t.microsecond:06d}"
    if digits <= 6:
        return f"{base}.{micro[:digits]}"
    return f"{base}.{micro}{(t.microsecond * 7 + 311) % 1000:03d}"


def _py_ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S,") + f"{t.microsecond // 1000:03d}"


def _hex(rng: random.Random, digits: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(digits))


def _uuid(rng: random.Random) -> str:
    return f"{_hex(rng, 8)}-{_hex(rng, 4)}-{_hex(rng, 4)}-{_hex(rng, 4)}-{_hex(rng, 12)}"


def compress_hostlist(names: Iterable[str]) -> str:
    """Slurm's compressed host list: gpu-[01-03,07],dgx-a100-12."""
    groups: dict[tuple[str, int], list[int]] = {}
    plain: list[str] = []
    for name in names:
        head = name.rstrip("0123456789")
        digits = name[len(head) :]
        if not digits:
            plain.append(name)
            continue
        groups.setdefault((head, len(digits)), []).append(int(digits))
    parts: list[str] = []
    for (head, width), nums in groups.items():
        nums = sorted(set(nums))
        if len(nums) == 1:
            parts.append(f"{head}{nums[0]:0{width}d}")
            continue
        ranges: list[str] = []
        lo = prev = nums[0]
        for n in [*nums[1:], None]:
            if n is not None and n == prev + 1:
                prev = n
                continue
            ranges.append(f"{lo:0{width}d}" if lo == prev else f"{lo:0{width}d}-{prev:0{width}d}")
            if n is not None:
                lo = prev = n
        parts.append(f"{head}[{','.join(ranges)}]")
    return ",".join(parts + plain)


def _elapsed(seconds: float) -> str:
    s = int(seconds)
    days, rem = divmod(s, 86400)
    hms = f"{rem // 3600:02d}:{rem % 3600 // 60:02d}:{rem % 60:02d}"
    return f"{days}-{hms}" if days else hms


# --------------------------------------------------------------------------- sinks


@dataclass
class Sink:
    """One output file: lines with the true (UTC) time they were printed, written in order."""

    lines: list[tuple[datetime, int, str, int]] = field(default_factory=list)
    raw: str | None = None  # whole-document files (JSON, YAML)

    def add(self, t: datetime, seq: int, text: str, owner: int = -1) -> None:
        self.lines.append((t, seq, text, owner))

    def truncate(self, owner: int, after: datetime) -> None:
        """Drop what `owner` (a node index) printed after `after`: that node is gone."""
        self.lines = [x for x in self.lines if x[3] != owner or x[0] <= after]

    def render(self) -> str:
        if self.raw is not None:
            return self.raw
        ordered = sorted(self.lines, key=lambda x: (x[0], x[1]))
        return "".join(f"{text}\n" for _, _, text, _ in ordered)


@dataclass
class NodeRT:
    """A node as the job saw it while running."""

    name: str  # scheduler name (Slurm node / Kubernetes node)
    host: str  # hostname inside the job (Slurm: the node; Kubernetes: the pod's hostname)
    ip: str
    skew: float
    boot: datetime
    group: int  # torchrun node rank
    pid0: int
    agent_pid: int
    kstyle: str | None
    pod: str | None = None
    hcas: list[str] = field(default_factory=list)
    uuids: list[str] = field(default_factory=list)


@dataclass
class Outcome:
    """How the job ended, for the scheduler's records."""

    t_end: datetime
    job_state: str = "FAILED"
    job_exit: str = "1:0"
    step_state: str = "FAILED"
    step_exit: str = "1:0"
    batch_state: str = "FAILED"
    batch_exit: str = "1:0"
    reason: str = "NonZeroExitCode"
    failed_node: str = ""
    sinfo: list[tuple[str, str, datetime, str]] = field(default_factory=list)
    node_state: dict[str, str] = field(default_factory=dict)
    # kubernetes: pod index -> termination {exit, reason, finished, restarts, state}
    pods: dict[int, dict[str, Any]] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    k8s_nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    exp_rank: int | None | str = "auto"
    exp_gpu: str | None = "auto"


# --------------------------------------------------------------------------- render context


def kernel_line(style: str, lt: datetime, host: str, ident: str, up: str, msg: str) -> str:
    """One kernel-log line as journalctl / rsyslog / dmesg print it (lt: local time)."""
    if style == "short":
        return f"{lt:%b %d %H:%M:%S} {host} {ident}: {msg}"
    if style == "short-iso":
        return f"{lt:%Y-%m-%dT%H:%M:%S%z} {host} {ident}: {msg}"
    if style == "short-precise":
        return f"{lt:%b %d %H:%M:%S.%f} {host} {ident}: {msg}"
    if style == "syslog":
        body = f"{up} {msg}" if ident == "kernel" else msg
        return f"{lt:%b} {lt.day:2d} {lt:%H:%M:%S} {host} {ident}: {body}"
    if style == "rfc3339":
        return f"{lt.isoformat(timespec='microseconds')} {host} {ident}: {msg}"
    if style == "dmesg-T":
        return f"[{lt:%a %b} {lt.day:2d} {lt:%H:%M:%S %Y}] {msg}"
    if style == "dmesg-iso":
        return f"{lt:%Y-%m-%dT%H:%M:%S},{lt.microsecond:06d}{_offset_colon(lt)} {msg}"
    if style == "dmesg-raw":
        return f"{up} {msg}"
    raise ValueError(f"unknown kernel style {style}")


class Ctx:
    """Per-case state while rendering: nodes, ranks, clocks, and the files being written."""

    def __init__(self, spec: CaseSpec) -> None:
        self.spec = spec
        self.rng = random.Random(f"render:{spec.seed}:{spec.case_id}")
        self.tz = _tz(spec.tz)
        self.gpn = spec.gpus_per_node
        self.bus = list(spec.gpu_bus or [f"0000:{b}:00" for b in BUS_SETS[0]])[: self.gpn]
        self.order = list(spec.node_order or range(len(spec.node_names)))
        self.world = len(self.order) * self.gpn
        self.files: dict[str, Sink] = {}
        self._seq = 0
        self.nccl = self.rng.choice(NCCL_VERSIONS)
        self.driver = self.rng.choice(DRIVERS)
        self.py_style = self.rng.randrange(3)
        self.node_end: dict[int, datetime] = {}
        self.node_exit: dict[int, int] = {}
        rng = self.rng
        net = f"10.{rng.randint(1, 60)}.{rng.randint(0, 7)}."
        self.nodes: list[NodeRT] = []
        for i, name in enumerate(spec.node_names):
            group = self.order.index(i) if i in self.order else -1
            pid0 = rng.randint(2000, 90000)
            pod = self._pod_name(group) if spec.platform == "k8s" else None
            host = name
            if pod is not None:
                host = pod if spec.k8s_kind == "pytorchjob" else f"{spec.job_name}-{group}"
            node = NodeRT(
                name=name,
                host=host,
                ip=f"{net}{11 + i * 2}",
                skew=round(rng.uniform(-1.6, 1.6), 3),
                boot=spec.start
                - timedelta(
                    days=rng.randint(2, 40),
                    seconds=rng.randint(0, 86000),
                    microseconds=rng.randint(0, 999999),
                ),
                group=group,
                pid0=pid0,
                agent_pid=pid0 - rng.randint(8, 60),
                kstyle=spec.kernel.get(name),
                pod=pod,
                hcas=[f"mlx5_{k}" for k in range(self.gpn)],
                uuids=[f"GPU-{_uuid(rng)}" for _ in range(self.gpn)],
            )
            self.nodes.append(node)
        self.rank_node = [self.order[r // self.gpn] for r in range(self.world)]
        self.master = self.nodes[self.order[0]]
        self.time_limit = timedelta(hours=rng.choice((12, 24, 48)))
        self.one_gpu_per_task = spec.layout in ("srun_per_rank", "srun_l")
        self.socket_net = False

    def truncate_node(self, node_idx: int, after: datetime) -> None:
        for sink in self.files.values():
            sink.truncate(node_idx, after)

    # ---- identity
    def _pod_name(self, group: int) -> str:
        job = self.spec.job_name
        if self.spec.k8s_kind == "indexed_job":
            suffix = "".join(self.rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))
            return f"{job}-{group}-{suffix}"
        return f"{job}-worker-{group}"

    def seq(self) -> int:
        self._seq += 1
        return self._seq

    def sink(self, path: str) -> Sink:
        return self.files.setdefault(path, Sink())

    def node_of(self, rank: int) -> NodeRT:
        return self.nodes[self.rank_node[rank]]

    def node_idx(self, rank: int) -> int:
        return self.rank_node[rank]

    def local(self, rank: int) -> int:
        return rank % self.gpn

    def ranks_on(self, node_idx: int) -> list[int]:
        return [r for r in range(self.world) if self.rank_node[r] == node_idx]

    def rank_at(self, node_idx: int, local: int) -> int:
        return self.nodes[node_idx].group * self.gpn + local

    def pid(self, rank: int) -> int:
        return self.node_of(rank).pid0 + self.local(rank)

    def lt(self, node: NodeRT, t: datetime) -> datetime:
        return (t + timedelta(seconds=node.skew)).astimezone(self.tz)

    @property
    def has_agent(self) -> bool:
        return self.spec.layout in ("torchrun_node", "torchrun_rankfiles", "k8s")

    # ---- kernel logs
    def kernel_path(self, node: NodeRT) -> str:
        style = node.kstyle or "short"
        return f"nodes/{node.name}/{'dmesg.txt' if style.startswith('dmesg') else 'kern.log'}"

    def kern(
        self,
        node: NodeRT,
        t: datetime,
        msg: str,
        ident: str = "kernel",
        boot: datetime | None = None,
    ) -> None:
        style = node.kstyle
        if style is None or (ident != "kernel" and style not in JOURNAL_STYLES):
            return
        up = _uptime((t - (boot or node.boot)).total_seconds())
        text = kernel_line(style, self.lt(node, t), node.name.split(".")[0], ident, up, msg)
        self.sink(self.kernel_path(node)).add(t, self.seq(), text, self.nodes.index(node))

    def kern_block(self, node: NodeRT, t: datetime, msgs: Iterable[str], step_us: int = 90) -> None:
        for i, msg in enumerate(msgs):
            self.kern(node, t + timedelta(microseconds=i * step_us), msg)

    # ---- process output
    def _rank_target(self, rank: int) -> tuple[str, str]:
        layout, node, local = self.spec.layout, self.node_of(rank), self.local(rank)
        if layout in ("srun_per_rank", "torchrun_rankfiles"):
            return f"logs/{self.spec.rank_file.format(r=rank)}", ""
        if layout == "srun_l":
            return "logs/train.log", f"{rank:>{len(str(self.world - 1))}}: "
        if layout == "torchrun_node":
            return f"nodes/{node.name}/train.log", f"[default{local}]:"
        return f"logs/{node.pod}.log", f"[default{local}]:"

    def _emit(
        self,
        path: str,
        prefix: str,
        t: datetime,
        lines: Iterable[str],
        step_us: int,
        owner: int = -1,
    ) -> None:
        sink = self.sink(path)
        for i, line in enumerate(lines):
            tt = t + timedelta(microseconds=i * step_us)
            text = prefix + line
            if self.spec.platform == "k8s" and self.spec.k8s_timestamps:
                skew = self.nodes[owner].skew if owner >= 0 else 0.0
                stamp = (tt + timedelta(seconds=skew, microseconds=31)).astimezone(UTC)
                nanos = f"{stamp.microsecond:06d}{self._seq % 1000:03d}"
                text = f"{stamp:%Y-%m-%dT%H:%M:%S}.{nanos}Z {text}"
            sink.add(tt, self.seq(), text, owner)

    def out(self, rank: int, t: datetime, lines: str | Iterable[str], step_us: int = 40) -> None:
        """What rank `rank` printed (stdout+stderr), routed by the case's log layout."""
        path, prefix = self._rank_target(rank)
        self._emit(
            path,
            prefix,
            t,
            [lines] if isinstance(lines, str) else lines,
            step_us,
            self.node_idx(rank),
        )

    def agent(self, node: NodeRT, t: datetime, lines: str | Iterable[str]) -> None:
        """What the torchelastic agent on `node` printed (nothing when there is no agent)."""
        layout = self.spec.layout
        if layout == "torchrun_node":
            path = f"nodes/{node.name}/train.log"
        elif layout == "torchrun_rankfiles":
            path = f"logs/slurm-{self.spec.job_id}.out"
        elif layout == "k8s":
            path = f"logs/{node.pod}.log"
        else:
            return
        self._emit(
            path, "", t, [lines] if isinstance(lines, str) else lines, 50, self.nodes.index(node)
        )

    def jobout(self, t: datetime, lines: str | Iterable[str]) -> None:
        """The Slurm job's own stdout (srun / slurmstepd messages)."""
        if self.spec.platform != "slurm":
            return
        path = (
            "logs/train.log"
            if self.spec.layout == "srun_l"
            else f"logs/slurm-{self.spec.job_id}.out"
        )
        self._emit(path, "", t, [lines] if isinstance(lines, str) else lines, 50)

    # ---- line formats
    def c10(self, rank: int, t: datetime, level: str, src: str, msg: str) -> str:
        """A c10/ProcessGroupNCCL log line as the case's PyTorch version prints it."""
        node = self.node_of(rank)
        lt = self.lt(node, t)
        style = self.spec.torch
        if style == "2.1":
            return f"[{level} {src}] {msg}"
        md = lt.strftime("%m%d")
        if style == "2.3":
            return f"[rank{rank}]:[{level}{md} {_hms_frac(lt, 6)} {src}] {msg}"
        if style == "2.5":
            return f"[rank{rank}]:[{level}{md} {_hms_frac(lt, 9)} {src}] {msg}"
        tid = self.pid(rank) + 211 + self.local(rank)
        return f"[rank{rank}]:[{level}{md} {_hms_frac(lt, 9)} {tid} {src}] {msg}"

    def pg(self, rank: int) -> str:
        return {"2.1": f"[Rank {rank}]", "2.3": f"[PG 0 Rank {rank}]"}.get(
            self.spec.torch, f"[PG ID 0 PG GUID 0(default_pg) Rank {rank}]"
        )

    def tb_prefix(self, rank: int) -> str:
        return "" if self.spec.torch == "2.1" else f"[rank{rank}]: "

    def pylog(self, rank: int, t: datetime, level: str, logger: str, msg: str) -> str:
        ts = _py_ts(self.lt(self.node_of(rank), t))
        if self.py_style == 0:
            return f"[{ts}][{level}][{logger}] {msg}"
        if self.py_style == 1:
            return f"{ts} - {level} - {logger} - {msg}"
        return f"{ts} {level:<7} {logger.split('.')[-1]}.py:{110 + len(msg) % 300} {msg}"

    def elog(self, node: NodeRT, t: datetime, level: str, where: str, line: int, msg: str) -> str:
        """A torchelastic agent log line (level W/E/I)."""
        lt = self.lt(node, t)
        if self.spec.torch == "2.1":
            names = {"W": "WARNING", "E": "ERROR", "I": "INFO"}
            module = "torch.distributed.elastic." + where.replace("/", ".").removesuffix(".py")
            return f"[{_py_ts(lt)}] {module}: [{names[level]}] {msg}"
        return (
            f"{level}{lt:%m%d} {_hms_frac(lt, 3)}000 {node.agent_pid} "
            f"torch/distributed/elastic/{where}:{line}] {msg}"
        )

    def nccl_prefix(self, rank: int, thread: int = 0) -> str:
        node, pid = self.node_of(rank), self.pid(rank)
        return f"{node.host}:{pid}:{pid + thread} [{self.local(rank)}]"

    def bus_id(self, local: int) -> str:
        return f"{self.bus[local].split(':')[1]}000"

    def netif(self) -> str:
        if self.socket_net:
            return "bond0"
        return "eth0" if self.spec.platform == "k8s" else "ib0"


# --------------------------------------------------------------------------- training run


@dataclass
class Run:
    t_init: datetime
    step_s: float
    coll_per_step: int
    seq0: int
    step0: int
    op: str
    numel_in: int
    numel_out: int
    frames: bool

    def step_at(self, t: datetime) -> int:
        return self.step0 + int(max(0.0, (t - self.t_init).total_seconds()) / self.step_s)

    def seq_at(self, t: datetime) -> int:
        return self.seq0 + (self.step_at(t) - self.step0) * self.coll_per_step


@dataclass
class Death:
    t: datetime
    exitcode: int
    error_file: bool = False
    tb: list[str] | None = None  # traceback text for the torchelastic summary


SIGNALS = {-6: "SIGABRT", -9: "SIGKILL", -11: "SIGSEGV", -15: "SIGTERM"}
CPP_FRAMES_TIMEOUT = (
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x{a}f86 in "
    "{site}/torch/lib/libc10.so)",
    "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration"
    "<long, std::ratio<1l, 1000l> > >) + 0x1d2 (0x{b}a8d2 in {site}/torch/lib/libtorch_cuda.so)",
    "frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 (0x{b}21333 in "
    "{site}/torch/lib/libtorch_cuda.so)",
    "frame #3: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x10c (0x{b}236fc in "
    "{site}/torch/lib/libtorch_cuda.so)",
    "frame #4: <unknown function> + 0xdc253 (0x{c}dc253 in /lib/x86_64-linux-gnu/libstdc++.so.6)",
    "frame #5: <unknown function> + 0x94ac3 (0x{d}94ac3 in /lib/x86_64-linux-gnu/libc.so.6)",
    "frame #6: <unknown function> + 0x126850 (0x{d}126850 in /lib/x86_64-linux-gnu/libc.so.6)",
)
OPS = (
    ("ALLREDUCE", 1, 1),
    ("_ALLGATHER_BASE", 1, 0),
    ("_REDUCE_SCATTER_BASE", 0, 1),
    ("BROADCAST", 1, 1),
)


def _frames(ctx: Ctx, rank: int) -> list[str]:
    r = random.Random(f"frames:{ctx.spec.case_id}:{ctx.node_idx(rank)}")
    a, b, c, d = (f"7f{_hex(r, 6)}" for _ in range(4))
    return [f.format(a=a[:9], b=b[:7], c=c[:7], d=d[:7], site=PY_SITE) for f in CPP_FRAMES_TIMEOUT]


def traceback_lines(frames: Iterable[tuple[str, int, str, str]], exc: Iterable[str]) -> list[str]:
    out = ["Traceback (most recent call last):"]
    for path, line, func, code in frames:
        out.append(f'  File "{path}", line {line}, in {func}')
        if code:
            out.append(f"    {code}")
    out.extend(exc)
    return out


def train_frames(ctx: Ctx, tail: str = "forward") -> list[tuple[str, int, str, str]]:
    """The outer frames of a training step for the case's code base."""
    if ctx.spec.seed % 2 == 0 or "megatron" in ctx.spec.job_name:
        base = [
            ("/opt/megatron-lm/pretrain_gpt.py", 246, "<module>", "pretrain("),
            (
                "/opt/megatron-lm/megatron/training/training.py",
                358,
                "pretrain",
                "iteration, num_floating_point_operations_so_far = train(",
            ),
            (
                "/opt/megatron-lm/megatron/training/training.py",
                1287,
                "train",
                "train_step(forward_step_func,",
            ),
            (
                "/opt/megatron-lm/megatron/training/training.py",
                742,
                "train_step",
                "losses_reduced = forward_backward_func(",
            ),
        ]
    else:
        base = [
            ("/workspace/train.py", 412, "<module>", "main()"),
            ("/workspace/train.py", 398, "main", "trainer.fit(model, datamodule)"),
            ("/workspace/llm/trainer.py", 233, "fit", "metrics = self.train_step(batch)"),
        ]
    if tail == "backward":
        base += [
            ("/workspace/llm/trainer.py", 176, "train_step", "self.scaler.scale(loss).backward()"),
            (f"{PY_SITE}/torch/_tensor.py", 581, "backward", "torch.autograd.backward("),
            (f"{PY_SITE}/torch/autograd/__init__.py", 347, "backward", "_engine_run_backward("),
            (
                f"{PY_SITE}/torch/autograd/graph.py",
                825,
                "_engine_run_backward",
                "return Variable._execution_engine.run_backward(  # Calls into the C++ engine to "
                "run the backward pass",
            ),
        ]
    elif tail == "forward":
        base += [
            ("/workspace/llm/trainer.py", 171, "train_step", "loss = self.model(**batch).loss"),
            (
                f"{PY_SITE}/torch/nn/modules/module.py",
                1736,
                "_wrapped_call_impl",
                "return self._call_impl(*args, **kwargs)",
            ),
            (
                f"{PY_SITE}/torch/nn/modules/module.py",
                1747,
                "_call_impl",
                "return forward_call(*args, **kwargs)",
            ),
        ]
    return base


def prologue(ctx: Ctx, *, benign: bool = True, init: bool = True) -> Run:
    """Start of the job: kernel noise, NCCL init on every rank, early benign warnings."""
    rng, spec = ctx.rng, ctx.spec
    t_init = spec.start + timedelta(
        seconds=rng.randint(25, 80), microseconds=rng.randint(0, 999999)
    )
    op, fin, fout = OPS[rng.randrange(3)]
    base = rng.choice((262144, 1048576, 4194304, 16777216, 25165824))
    numel_in = base * (ctx.world if fin == 0 else 1)
    numel_out = base * (ctx.world if fout == 0 else 1)
    run = Run(
        t_init=t_init,
        step_s=round(rng.uniform(0.7, 4.5), 3),
        coll_per_step=rng.choice((2, 4, 6)),
        seq0=rng.randint(3, 40),
        step0=rng.choice((0, 0, 1000, 12000, 48000)),
        op=op,
        numel_in=numel_in,
        numel_out=numel_out,
        frames=ctx.world <= 48 and rng.random() < 0.5,
    )
    if "frames" in spec.extras or "no_frames" in spec.extras:
        run.frames = "frames" in spec.extras
    t_end_hint = spec.start + timedelta(seconds=spec.fail_after_s + spec.timeout_ms / 1000 + 300)
    for node in ctx.nodes:
        kernel_noise(
            ctx,
            node,
            spec.start - timedelta(minutes=rng.randint(20, 90)),
            t_end_hint,
            rng.randint(4, 9),
        )
    if init:
        nccl_init(ctx, t_init)
    if benign:
        benign_warnings(ctx, t_init)
    ctx.out(
        0,
        t_init - timedelta(seconds=6),
        ctx.pylog(
            0,
            t_init - timedelta(seconds=6),
            "INFO",
            "trainer",
            f"world_size={ctx.world} nodes={len(ctx.order)} model={spec.job_name} "
            f"global_batch={ctx.world * rng.choice((4, 8, 16))} "
            f"seq_len={rng.choice((2048, 4096, 8192))}",
        ),
    )
    return run


def nccl_init(ctx: Ctx, t: datetime) -> None:
    rng = ctx.rng
    comm = f"0x{_hex(rng, 16)}"
    cuda = {"2.18.6": "12.2", "2.20.5": "12.4", "2.21.5": "12.4", "2.23.4": "12.6"}[ctx.nccl]
    new = ctx.nccl >= "2.20"
    transport = "RoCE" if ctx.spec.platform == "k8s" else "IB"
    for rank in range(ctx.world):
        node, local = ctx.node_of(rank), ctx.local(rank)
        tt = t + timedelta(milliseconds=rng.randint(0, 1800))
        pre, pre_t = ctx.nccl_prefix(rank), ctx.nccl_prefix(rank, 64 + local)
        nics = " ".join(f"[{k}]{h}:1/{transport}" for k, h in enumerate(node.hcas))
        lines = []
        if rank == 0:
            lines.append(f"{pre} NCCL INFO NCCL version {ctx.nccl}+cuda{cuda}")
        lines.append(f"{pre} NCCL INFO Bootstrap : Using {ctx.netif()}:{node.ip}<0>")
        if ctx.socket_net:
            lines.append(f"{pre_t} NCCL INFO NET/Socket : Using [0]bond0:{node.ip}<0>")
            lines.append(f"{pre_t} NCCL INFO Using network Socket")
        else:
            lines.append(
                f"{pre_t} NCCL INFO NET/IB : Using {nics} [RO]; OOB {ctx.netif()}:{node.ip}<0>"
            )
        cdev = 0 if ctx.one_gpu_per_task else local
        dev = (
            f"cudaDev {cdev} nvmlDev {local} busId {ctx.bus_id(local)}"
            if new
            else f"cudaDev {cdev} busId {ctx.bus_id(local)}"
        )
        tail = f" commId {comm} - Init COMPLETE" if new else " - Init COMPLETE"
        lines.append(
            f"{pre_t} NCCL INFO comm 0x{_hex(rng, 12)} rank {rank} nranks {ctx.world} {dev}{tail}"
        )
        ctx.out(rank, tt, lines, step_us=900)


def benign_warnings(ctx: Ctx, t_init: datetime) -> None:
    rng = ctx.rng
    kinds = rng.sample(("socket", "dataloader", "barrier", "gradscaler"), k=2)
    if "socket" in kinds and ctx.spec.torch != "2.1":
        # early rendezvous retries: one per node, before the master's store is up
        for node in ctx.nodes:
            if node is ctx.master:
                continue
            rank = ctx.rank_at(ctx.nodes.index(node), 0)
            tt = ctx.spec.start + timedelta(seconds=rng.uniform(3, 12))
            lt = ctx.lt(node, tt)
            ctx.out(
                rank,
                tt,
                f"[W{lt:%m%d} {_hms_frac(lt, 9)} socket.cpp:697] [c10d] The client socket "
                f"has failed to connect to [{ctx.master.host}]:29500 (errno: 111 - "
                "Connection refused).",
            )
    if "dataloader" in kinds:
        for node_idx in range(len(ctx.nodes)):
            rank = ctx.rank_at(node_idx, 0)
            ctx.out(
                rank,
                t_init + timedelta(seconds=rng.uniform(2, 5)),
                [
                    f"{PY_SITE}/torch/utils/data/dataloader.py:617: UserWarning: This DataLoader "
                    "will "
                    "create 12 worker processes in total. Our suggested max number of worker in "
                    "current "
                    "system is 10, which is smaller than what this DataLoader is going to create. "
                    "Please "
                    "be aware that excessive worker creation might get DataLoader running slow or "
                    "even "
                    "freeze, lower the worker number to avoid potential slowness/freeze if "
                    "necessary.",
                    "  warnings.warn(_create_warning_msg(",
                ],
            )
    if "barrier" in kinds and ctx.spec.torch in ("2.5", "2.6"):
        tt = t_init - timedelta(seconds=2)
        ctx.out(
            0,
            tt,
            ctx.c10(
                0,
                tt,
                "W",
                "ProcessGroupNCCL.cpp:4561",
                f"{ctx.pg(0)} using GPU 0 "
                "to perform barrier as devices used by this process are currently unknown. This "
                "can "
                "potentially cause a hang if this rank to GPU mapping is incorrect. Specify "
                "device_ids "
                "in barrier() to force use of a particular device, or call init_process_group() "
                "with "
                "a device_id.",
            ),
        )
    if "gradscaler" in kinds:
        ctx.out(
            0,
            t_init + timedelta(seconds=3),
            [
                "/workspace/llm/trainer.py:88: FutureWarning: "
                "`torch.cuda.amp.GradScaler(args...)` is "
                "deprecated. Please use `torch.amp.GradScaler('cuda', args...)` instead.",
                "  self.scaler = torch.cuda.amp.GradScaler(enabled=cfg.fp16)",
            ],
        )


def progress(ctx: Ctx, run: Run, t_until: datetime, *, checkpoint_every: int = 0) -> int:
    """Rank 0's training log from init until `t_until`; returns the last step printed."""
    rng = random.Random(f"progress:{ctx.spec.case_id}")
    dur = (t_until - run.t_init).total_seconds()
    every = max(10, int(dur / run.step_s / 36) // 10 * 10 or 10)
    total = run.step0 + int(dur / run.step_s) + rng.randint(2000, 90000)
    step, last = run.step0 + every, run.step0
    loss = rng.uniform(2.2, 3.4) if run.step0 else rng.uniform(6.0, 9.0)
    lr = rng.choice((1.5e-4, 3.0e-4, 6.0e-4))
    while True:
        t = run.t_init + timedelta(seconds=(step - run.step0) * run.step_s + rng.uniform(0, 0.3))
        if t >= t_until:
            break
        loss = max(1.2, loss * rng.uniform(0.985, 1.002))
        tflops = rng.uniform(380, 460) if ctx.gpn == 8 else rng.uniform(160, 210)
        msg = (
            f"step {step}/{total} | loss {loss:.4f} | lr {lr:.3e} | grad_norm "
            f"{rng.uniform(0.3, 1.4):.3f} | {run.step_s * rng.uniform(0.97, 1.04):.3f} s/it | "
            f"{tflops:.1f} TFLOP/s/GPU"
        )
        ctx.out(0, t, ctx.pylog(0, t, "INFO", "trainer", msg))
        if checkpoint_every and step % checkpoint_every == 0:
            ctx.out(
                0,
                t + timedelta(seconds=1),
                ctx.pylog(
                    0,
                    t + timedelta(seconds=1),
                    "INFO",
                    "checkpoint",
                    f"saved checkpoint to /checkpoints/{ctx.spec.job_name}/step_{step:08d}",
                ),
            )
        last = step
        step += every
    return last


BENIGN_KERNEL = (
    "perf: interrupt took too long (2517 > 2500), lowering kernel.perf_event_max_sample_rate to "
    "79250",
    "hrtimer: interrupt took 31542 ns",
    "kauditd_printk_skb: 14 callbacks suppressed",
    'audit: type=1400 audit({epoch}.412:3391): apparmor="DENIED" operation="open" class="file" '
    'profile="snap.lxd.lxc" name="/proc/sys/kernel/osrelease" pid=3321 comm="lxc" '
    'requested_mask="r" '
    'denied_mask="r" fsuid=0 ouid=0',
    "Lustre: lustre-OST0007-osc-ffff8a0b9a82c000: Connection restored to 10.16.0.27@o2ib "
    "(at 10.16.0.27@o2ib)",
    "NVRM: GPU at PCI:{bus}: {uuid}",
    "nvidia-nvswitch2: open (major=508)",
)
SYSTEMD_NOISE = (
    ("systemd[1]", "Started session-{n}.scope - Session {n} of User mlops."),
    ("systemd-logind[1874]", "New session {n} of user mlops."),
    ("systemd[1]", "sysstat-collect.service: Deactivated successfully."),
    ("systemd[1]", "Finished sysstat-collect.service - system activity accounting tool."),
    ("CRON[98231]", "(root) CMD (command -v debian-sa1 > /dev/null && debian-sa1 1 1)"),
)


def kernel_noise(ctx: Ctx, node: NodeRT, t0: datetime, t1: datetime, count: int) -> None:
    if node.kstyle is None:
        return
    rng = random.Random(f"knoise:{ctx.spec.case_id}:{node.name}")
    span = (t1 - t0).total_seconds()
    for _ in range(count):
        t = t0 + timedelta(seconds=rng.uniform(0, span))
        k = rng.randrange(len(node.hcas))
        msg = rng.choice(BENIGN_KERNEL).format(
            epoch=int(t.timestamp()),
            hca=HCA_BUS[k],
            k=k,
            bus=ctx.bus[k % ctx.gpn],
            uuid=node.uuids[k % ctx.gpn],
        )
        ctx.kern(node, t, msg)
    k = rng.randrange(len(node.hcas))
    ctx.kern(
        node,
        node.boot + timedelta(seconds=rng.uniform(20, 40)),
        f"mlx5_core 0000:{HCA_BUS[k]}:00.0: mlx5_port_module_event:1151:(pid 0): Port module "
        f"event: module {k}, Cable plugged",
    )
    if node.kstyle in JOURNAL_STYLES:
        for _ in range(rng.randint(2, 5)):
            ident, msg = rng.choice(SYSTEMD_NOISE)
            ctx.kern(
                node,
                t0 + timedelta(seconds=rng.uniform(0, span)),
                msg.format(n=rng.randint(1000, 9999)),
                ident=ident,
            )


def edac_ce(ctx: Ctx, node: NodeRT, t: datetime) -> None:
    """A corrected DIMM error: loud word 'error', harmless."""
    ctx.kern(
        node,
        t,
        "EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#1_Chan#0_DIMM#0 "
        "(channel:0 slot:0 page:0x5a2f31 offset:0x0 grain:32 syndrome:0x0 - "
        "err_code:0x0000:0x009f socket:0 imc:1 rank:1 bg:2 ba:1 row:0x1b4c col:0x2e8)",
    )


# --------------------------------------------------------------------------- failure blocks


def watchdog_lines(
    ctx: Ctx,
    rank: int,
    t: datetime,
    run: Run,
    seq: int,
    ran_ms: int,
    last_enq: int,
    last_comp: int,
    frames: bool,
) -> list[str]:
    timeout = ctx.spec.timeout_ms
    work = (
        f"WorkNCCL(SeqNum={seq}, OpType={run.op}, NumelIn={run.numel_in}, "
        f"NumelOut={run.numel_out}, Timeout(ms)={timeout})"
    )
    caught = (
        f"[Rank {rank}] Watchdog caught collective operation timeout: {work} ran for {ran_ms} "
        "milliseconds before timing out."
    )
    us = timedelta(microseconds=170)
    style = ctx.spec.torch
    pg = ctx.pg(rank)
    if style == "2.1":
        lines = [
            ctx.c10(rank, t, "E", "ProcessGroupNCCL.cpp:475", caught),
            ctx.c10(
                rank,
                t,
                "E",
                "ProcessGroupNCCL.cpp:489",
                "Some NCCL operations have failed or "
                "timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU "
                "operations might run on corrupted/incomplete data.",
            ),
            ctx.c10(
                rank,
                t,
                "E",
                "ProcessGroupNCCL.cpp:495",
                "To avoid data inconsistency, we are taking the entire process down.",
            ),
            ctx.c10(
                rank,
                t,
                "E",
                "ProcessGroupNCCL.cpp:916",
                f"[Rank {rank}] NCCL watchdog thread terminated with exception: {caught}",
            ),
            "terminate called after throwing an instance of 'std::runtime_error'",
            f"  what():  [Rank {rank}] NCCL watchdog thread terminated with exception: {caught}",
        ]
        return lines
    ln = {"2.3": (563, 1537, 577, 583, 1414, 565)}.get(style, (616, 1834, 630, 636, 1595, 618))
    lines = [ctx.c10(rank, t, "E", f"ProcessGroupNCCL.cpp:{ln[0]}", caught)]
    if style in ("2.5", "2.6"):
        lines.append(
            ctx.c10(
                rank,
                t + us,
                "E",
                "ProcessGroupNCCL.cpp:1785",
                f"{pg} Exception (either an error or timeout) detected by watchdog at "
                f"work: {seq}, last enqueued NCCL work: {last_enq}, last completed NCCL "
                f"work: {last_comp}.",
            )
        )
    lines += [
        ctx.c10(
            rank,
            t + 2 * us,
            "E",
            f"ProcessGroupNCCL.cpp:{ln[1]}",
            f"{pg} Timeout at NCCL "
            f"work: {seq}, last enqueued NCCL work: {last_enq}, last completed NCCL work: "
            f"{last_comp}.",
        ),
        ctx.c10(
            rank,
            t + 3 * us,
            "E",
            f"ProcessGroupNCCL.cpp:{ln[2]}",
            f"[Rank {rank}] Some NCCL "
            "operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, "
            "subsequent GPU operations might run on corrupted/incomplete data.",
        ),
        ctx.c10(
            rank,
            t + 4 * us,
            "E",
            f"ProcessGroupNCCL.cpp:{ln[3]}",
            f"[Rank {rank}] To avoid data inconsistency, we are taking the entire process down.",
        ),
        ctx.c10(
            rank,
            t + 5 * us,
            "E",
            f"ProcessGroupNCCL.cpp:{ln[4]}",
            f"{pg} Process group watchdog thread terminated with exception: {caught}",
        ),
    ]
    raised = (
        f"Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/"
        f"ProcessGroupNCCL.cpp:{ln[5]} (most recent call first):"
    )
    if frames:
        lines += [raised, *_frames(ctx, rank), ""]
    lines += [
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        f"  what():  {pg} Process group watchdog thread terminated with exception: {caught}",
    ]
    return lines


def ib_completion_lines(
    ctx: Ctx,
    rank: int,
    peer: NodeRT,
    *,
    status: int = 12,
    vendor: int = 129,
    hca: str | None = None,
    channel: int = 0,
) -> list[str]:
    """NCCL's NET/IB completion error as seen by `rank` talking to `peer` (one QP)."""
    node = ctx.node_of(rank)
    pre = ctx.nccl_prefix(rank, 91 + ctx.local(rank))
    hca = hca or node.hcas[ctx.local(rank) % len(node.hcas)]
    port = 40000 + (rank * 7919 + channel * 131) % 25000
    if ctx.nccl >= "2.21":
        first = (
            f"{pre} transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer "
            f"{peer.ip}<{port}> with status={status} opcode=0 len=0 vendor err {vendor} (Recv) "
            f"localGid ::ffff:{node.ip} remoteGids::ffff:{peer.ip} hca {hca}"
        )
    else:
        first = (
            f"{pre} transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer "
            f"{peer.ip}<{port}> with error {status}, opcode 0, len 0, vendor err {vendor} (Recv)"
        )
    return [
        first,
        f"{pre} NCCL INFO transport/net.cc:1302 -> 6",
        f"{pre} NCCL INFO proxy.cc:698 -> 6",
        f"{pre} NCCL INFO proxy.cc:878 -> 6 [Progress Thread]",
    ]


def remote_error_lines(ctx: Ctx, rank: int, t: datetime, last_error: str) -> list[str]:
    """The watchdog tearing a rank down on ncclRemoteError (a symptom: the peer is gone)."""
    pg = ctx.pg(rank)
    msg = (
        f"{pg} Process group watchdog thread terminated with exception: NCCL error: remote "
        f"process exited or there was a network error, NCCL version {ctx.nccl}"
    )
    what = "terminate called after throwing an instance of 'c10::DistBackendError'"
    return [
        ctx.c10(rank, t, "E", "ProcessGroupNCCL.cpp:1595", msg),
        "ncclRemoteError: A call failed possibly due to a network error or a remote process "
        "exiting "
        "prematurely.",
        "Last error:",
        last_error,
        "Exception raised from checkForNCCLErrorsInternal at /pytorch/torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:2027 (most recent call first):",
        what,
        f"  what():  {msg}",
    ]


def store_reset_lines(ctx: Ctx, rank: int, t: datetime) -> list[str]:
    """TCPStore on rank 0 is gone: the heartbeat monitor's complaints (symptom)."""
    node = ctx.node_of(rank)
    port = 30000 + (rank * 104729) % 30000
    return [
        ctx.c10(
            rank,
            t,
            "W",
            "TCPStore.cpp:131",
            f"[c10d] recvValue failed on SocketImpl(fd="
            f"{60 + rank % 40}, addr=[{node.host}]:{port}, remote=[{ctx.master.host}]:29500): "
            "Connection reset by peer",
        ),
        "Exception raised from recvBytes at /pytorch/torch/csrc/distributed/c10d/Utils.hpp:670 "
        "(most recent call first):",
        ctx.c10(
            rank,
            t + timedelta(microseconds=400),
            "W",
            "ProcessGroupNCCL.cpp:1659",
            f'{ctx.pg(rank)} Failed to check the "should dump" flag on TCPStore, (maybe TCPStore '
            "server has shut down too early), with error: Connection reset by peer",
        ),
    ]


ELASTIC_TB = (
    ("/usr/local/bin/torchrun", 8, "<module>", "sys.exit(main())"),
    (
        f"{PY_SITE}/torch/distributed/elastic/multiprocessing/errors/__init__.py",
        355,
        "wrapper",
        "return f(*args, **kwargs)",
    ),
    (f"{PY_SITE}/torch/distributed/run.py", 919, "main", "run(args)"),
    (f"{PY_SITE}/torch/distributed/run.py", 910, "run", "elastic_launch("),
    (
        f"{PY_SITE}/torch/distributed/launcher/api.py",
        138,
        "__call__",
        "return launch_agent(self._config, self._entrypoint, list(args))",
    ),
    (
        f"{PY_SITE}/torch/distributed/launcher/api.py",
        269,
        "launch_agent",
        "raise ChildFailedError(",
    ),
)


def _failure_entry(ctx: Ctx, idx: int, node: NodeRT, rank: int, death: Death) -> list[str]:
    when = ctx.lt(node, death.t).strftime("%Y-%m-%d_%H:%M:%S")
    pid = ctx.pid(rank)
    if death.exitcode < 0:
        sig = SIGNALS.get(death.exitcode, "SIGABRT")
        tb = [f"  traceback : Signal {-death.exitcode} ({sig}) received by PID {pid}"]
    elif death.error_file and death.tb:
        tb = ["  traceback : " + death.tb[0], *(f"    {x}" for x in death.tb[1:])]
    else:
        tb = [
            "  traceback : To enable traceback see: "
            "https://pytorch.org/docs/stable/elastic/errors.html"
        ]
    efile = (
        f"/tmp/torchelastic_{_hex(random.Random(node.name), 8)}/{ctx.spec.job_id}_"
        f"{_hex(random.Random(rank), 6)}/attempt_0/{ctx.local(rank)}/error.json"
        if death.error_file
        else "<N/A>"
    )
    return [
        f"[{idx}]:",
        f"  time      : {when}",
        f"  host      : {node.host}",
        f"  rank      : {rank} (local_rank: {ctx.local(rank)})",
        f"  exitcode  : {death.exitcode} (pid: {pid})",
        f"  error_file: {efile}",
        *tb,
    ]


def agent_report(
    ctx: Ctx, node_idx: int, deaths: dict[int, Death], *, sigterm_at: datetime | None = None
) -> datetime:
    """torchelastic on one node: reports the first failed worker, kills the rest, summarizes."""
    node = ctx.nodes[node_idx]
    ranks = sorted(deaths, key=lambda r: (deaths[r].t, r))
    root = ranks[0]
    t_root = deaths[root].t + timedelta(milliseconds=300 + (root * 37) % 500)
    lines_at: list[tuple[datetime, str]] = []
    if sigterm_at is not None:
        lines_at.append(
            (
                sigterm_at,
                ctx.elog(
                    node,
                    sigterm_at,
                    "W",
                    "agent/server/api.py",
                    704,
                    "Received Signals.SIGTERM death signal, shutting down workers",
                ),
            )
        )
        for r in ctx.ranks_on(node_idx):
            lines_at.append(
                (
                    sigterm_at,
                    ctx.elog(
                        node,
                        sigterm_at,
                        "W",
                        "multiprocessing/api.py",
                        897,
                        f"Sending process {ctx.pid(r)} closing signal SIGTERM",
                    ),
                )
            )
    else:
        lines_at.append(
            (
                t_root,
                ctx.elog(
                    node,
                    t_root,
                    "E",
                    "multiprocessing/api.py",
                    869,
                    f"failed (exitcode: {deaths[root].exitcode}) local_rank: "
                    f"{ctx.local(root)} (pid: {ctx.pid(root)}) of binary: "
                    "/usr/bin/python3",
                ),
            )
        )
        for r in ctx.ranks_on(node_idx):
            if r != root and deaths[r].t > deaths[root].t:
                lines_at.append(
                    (
                        t_root,
                        ctx.elog(
                            node,
                            t_root,
                            "W",
                            "multiprocessing/api.py",
                            897,
                            f"Sending process {ctx.pid(r)} closing signal SIGTERM",
                        ),
                    )
                )
    t_sum = max(d.t for d in deaths.values()) + timedelta(milliseconds=700 + (node_idx * 131) % 600)
    for tt, line in lines_at:
        ctx.agent(node, tt, line)
    if sigterm_at is not None:
        block = traceback_lines(
            ELASTIC_TB[:5]
            + (
                (
                    f"{PY_SITE}/torch/distributed/elastic/multiprocessing/api.py",
                    84,
                    "_terminate_process_handler",
                    'raise SignalException(f"Process {os.getpid()} got signal: {sigval}", '
                    "sigval=sigval)",
                ),
            ),
            [
                "torch.distributed.elastic.multiprocessing.api.SignalException: Process "
                f"{node.agent_pid} "
                "got signal: 15"
            ],
        )
        ctx.agent(node, t_sum, block)
        ctx.node_end[node_idx], ctx.node_exit[node_idx] = t_sum + timedelta(milliseconds=200), 1
        return t_sum
    others = ranks[1:]
    block = traceback_lines(
        ELASTIC_TB,
        [
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
            "=" * 60,
            f"{'/opt/megatron-lm/pretrain_gpt.py' if ctx.spec.seed % 2 == 0 else 'train.py'} "
            "FAILED",
            "-" * 60,
            "Failures:",
        ],
    )
    if not others:
        block.append("  <NO_OTHER_FAILURES>")
    for i, r in enumerate(others, 1):
        block += _failure_entry(ctx, i, node, r, deaths[r])
    block += [
        "-" * 60,
        "Root Cause (first observed failure):",
        *_failure_entry(ctx, 0, node, root, deaths[root]),
        "=" * 60,
    ]
    ctx.agent(node, t_sum, block)
    ctx.node_end[node_idx], ctx.node_exit[node_idx] = t_sum + timedelta(milliseconds=250), 1
    return t_sum


def _task_ranges(ranks: list[int]) -> str:
    """srun's task list: 'task 5' or 'tasks 8-15,17'."""
    if len(ranks) == 1:
        return f"task {ranks[0]}"
    spans: list[str] = []
    nums = sorted(ranks)
    lo = prev = nums[0]
    for n in [*nums[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        spans.append(str(lo) if lo == prev else f"{lo}-{prev}")
        if n is not None:
            lo = prev = n
    return f"tasks {','.join(spans)}"


def srun_exit_line(ctx: Ctx, node_idx: int, ranks: list[int], exitcode: int) -> str:
    node = ctx.nodes[node_idx]
    if ctx.has_agent:
        task = sorted(n.name for n in ctx.nodes).index(node.name)
        what = "Exited with exit code 1" if exitcode >= 0 else "Terminated"
        return f"srun: error: {node.name}: task {task}: {what}"
    what = {-6: "Aborted (core dumped)", -9: "Out Of Memory", -15: "Terminated"}.get(
        exitcode, f"Exited with exit code {exitcode}"
    )
    return f"srun: error: {node.name}: {_task_ranges(ranks)}: {what}"


def collateral(
    ctx: Ctx,
    run: Run,
    *,
    t_fail: datetime,
    dead: dict[int, Death],
    lost: Iterable[int] = (),
    mode: Literal["watchdog", "kill"] = "watchdog",
    kill_at: datetime | None = None,
    deadline: datetime | None = None,
    remote: dict[int, tuple[datetime, str, list[str]]] | None = None,
    skip_watchdog: Iterable[int] = (),
    seq_for: Callable[[int], int] | None = None,
    enq_for: Callable[[int], int] | None = None,
    peermem: bool = True,
    sigterm_nodes: dict[int, datetime] | None = None,
) -> datetime:
    """Everything that happens to the other ranks after the primary failure; returns the job end.

    dead: ranks that failed on their own (already printed). lost: node indexes that vanished.
    mode "watchdog": the others block until their NCCL watchdog fires (or a remote error, or the
    `deadline` when the scheduler kills the job first). mode "kill": the others are terminated at
    `kill_at` (srun --kill-on-bad-exit, a Kubernetes failure policy, a cancel).
    """
    rng = random.Random(f"collateral:{ctx.spec.case_id}")
    lost = set(lost)
    seq = run.seq_at(t_fail)
    t_coll = t_fail - timedelta(seconds=rng.uniform(0.05, min(run.step_s, 2.0)))
    remote = remote or {}
    skip = set(skip_watchdog)
    # nodes time out at slightly different moments; rank 0's node (the TCPStore host) first
    node_jitter = {i: rng.randint(650, 2600) for i in range(len(ctx.nodes))}
    node_jitter[ctx.order[0]] = rng.randint(5, 120)
    # candidate deaths: (time, exitcode, lines to print at `time` or None)
    cand: dict[int, tuple[datetime, int, list[tuple[datetime, list[str]]]]] = {}
    for r in range(ctx.world):
        if r in dead or ctx.node_idx(r) in lost:
            continue
        if mode == "kill":
            cand[r] = (
                (kill_at or t_fail) + timedelta(milliseconds=rng.randint(100, 1900)),
                -15,
                [],
            )
            continue
        t_to = t_coll + timedelta(
            milliseconds=ctx.spec.timeout_ms + node_jitter[ctx.node_idx(r)] + rng.randint(0, 350)
        )
        if r in remote and remote[r][0] < t_to:
            t_err, last_error, warn = remote[r]
            t_abort = t_err + timedelta(milliseconds=rng.randint(30, 900))
            cand[r] = (
                t_abort + timedelta(milliseconds=rng.randint(50, 400)),
                -6,
                [(t_err, warn), (t_abort, remote_error_lines(ctx, r, t_abort, last_error))],
            )
            continue
        if r in skip:
            cand[r] = (datetime.max.replace(tzinfo=UTC), -15, [])
            continue
        ran = int((t_to - t_coll).total_seconds() * 1000)
        s = seq_for(r) if seq_for else seq
        enq = enq_for(r) if enq_for else s + (1 if run.coll_per_step > 2 else 0)
        cand[r] = (
            t_to + timedelta(milliseconds=rng.randint(80, 600)),
            -6,
            [(t_to, watchdog_lines(ctx, r, t_to, run, s, ran, enq, s - 1, run.frames))],
        )
    # the scheduler may end it all first
    if deadline is not None:
        for r, (t, _code, _lines) in list(cand.items()):
            if t > deadline:
                cand[r] = (deadline + timedelta(milliseconds=rng.randint(100, 1500)), -15, [])
    # a local agent tears down the siblings of the first worker that dies on its node
    if ctx.has_agent:
        for node_idx in range(len(ctx.nodes)):
            on = [r for r in ctx.ranks_on(node_idx) if r in cand or r in dead]
            if not on:
                continue
            first = min(dead[r].t if r in dead else cand[r][0] for r in on)
            for r in on:
                if r in cand and cand[r][0] > first + timedelta(milliseconds=900):
                    killed = first + timedelta(milliseconds=rng.randint(350, 850))
                    if not (cand[r][1] == -15 and cand[r][0] < killed):
                        cand[r] = (killed, -15, [])
    deaths: dict[int, Death] = dict(dead)
    for r, (t, code, lines) in cand.items():
        for tt, block in lines:
            ctx.out(r, tt, block, step_us=200)
        deaths[r] = Death(t, code)
    # rank 0 hosted the TCPStore: survivors complain when it goes
    if ctx.spec.torch != "2.1" and 0 in deaths and ctx.node_idx(0) not in lost:
        t0 = deaths[0].t
        for r in cand:
            if (
                deaths[r].t > t0 + timedelta(milliseconds=600)
                and r % 3 != 1
                and ctx.node_idx(r) != ctx.node_idx(0)
            ):
                tt = t0 + timedelta(milliseconds=rng.randint(200, 500))
                ctx.out(r, tt, store_reset_lines(ctx, r, tt))
    # kernel side effects of killed GPU processes (harmless)
    for node_idx, node in enumerate(ctx.nodes):
        times = [d.t for r, d in deaths.items() if ctx.node_idx(r) == node_idx]
        if node_idx not in lost and peermem and times and rng.random() < 0.5:
            ctx.kern(
                node,
                min(times) + timedelta(milliseconds=80),
                "nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context, "
                "skipping further processing",
            )
    # launchers report
    t_end = t_fail
    for node_idx in range(len(ctx.nodes)):
        node_deaths = {r: d for r, d in deaths.items() if ctx.node_idx(r) == node_idx}
        if node_idx in lost or not node_deaths:
            continue
        if ctx.has_agent:
            own = any(r in dead or d.exitcode != -15 for r, d in node_deaths.items())
            sig = None if own else (kill_at if mode == "kill" else deadline)
            if sigterm_nodes and node_idx in sigterm_nodes:
                sig = sigterm_nodes[node_idx]
            t_node = agent_report(ctx, node_idx, node_deaths, sigterm_at=sig)
        else:
            t_node = max(d.t for d in node_deaths.values())
            ctx.node_end[node_idx], ctx.node_exit[node_idx] = t_node, 1
        t_end = max(t_end, t_node)
    srun_report(ctx, deaths, lost)
    return max([t_end, *ctx.node_end.values()]) + timedelta(seconds=rng.uniform(1.0, 3.0))


def srun_report(ctx: Ctx, deaths: dict[int, Death], lost: set[int]) -> None:
    if ctx.spec.platform != "slurm":
        return
    rows: list[tuple[datetime, str]] = []
    for node_idx in range(len(ctx.nodes)):
        if node_idx in lost or node_idx not in ctx.node_end:
            continue
        ranks = sorted(r for r in deaths if ctx.node_idx(r) == node_idx)
        if ctx.has_agent:
            rows.append((ctx.node_end[node_idx], srun_exit_line(ctx, node_idx, ranks, 1)))
            continue
        by_code: dict[int, list[int]] = {}
        for r in ranks:
            by_code.setdefault(deaths[r].exitcode, []).append(r)
        for code, rs in by_code.items():
            rows.append(
                (
                    max(deaths[r].t for r in rs) + timedelta(milliseconds=150),
                    srun_exit_line(ctx, node_idx, rs, code),
                )
            )
    for t, line in sorted(rows):
        ctx.jobout(t, line)


# --------------------------------------------------------------------------- slurm artifacts


def _slurm_time(ctx: Ctx, t: datetime) -> str:
    return t.astimezone(ctx.tz).strftime("%Y-%m-%dT%H:%M:%S")


def _sizes(ctx: Ctx) -> tuple[int, int]:
    cpn = {8: 192, 4: 96}.get(ctx.gpn, 24 * ctx.gpn)
    return cpn, {8: 1600, 4: 800}.get(ctx.gpn, 200 * ctx.gpn)


def write_sacct_txt(ctx: Ctx, oc: Outcome) -> None:
    spec = ctx.spec
    n = len(ctx.nodes)
    cpn, mem = _sizes(ctx)
    names = sorted(node.name for node in ctx.nodes)
    allnodes = compress_hostlist(names)
    t0, t_step = spec.start, spec.start + timedelta(seconds=2)
    step_name = "torchrun" if ctx.has_agent else "python"
    tres_all = f"cpu={cpn * n},gres/gpu={ctx.gpn * n},mem={mem * n}G,node={n}"
    rows = [
        dict(
            JobID=spec.job_id,
            JobName=spec.job_name,
            Partition=spec.partition,
            Account="ml-research",
            AllocTRES=f"billing={cpn * n},{tres_all}",
            State=oc.job_state,
            ExitCode=oc.job_exit,
            DerivedExitCode=oc.job_exit if oc.job_state == "FAILED" else "0:0",
            start=t0,
            end=oc.t_end,
            NodeList=allnodes,
            User=spec.user,
            NNodes=str(n),
            Reason="None",
        ),
        dict(
            JobID=f"{spec.job_id}.batch",
            JobName="batch",
            Partition="",
            Account="ml-research",
            AllocTRES=f"cpu={cpn},gres/gpu={ctx.gpn},mem={mem}G,node=1",
            State=oc.batch_state,
            ExitCode=oc.batch_exit,
            DerivedExitCode="",
            start=t0,
            end=oc.t_end,
            NodeList=names[0],
            User="",
            NNodes="1",
            Reason="",
        ),
        dict(
            JobID=f"{spec.job_id}.extern",
            JobName="extern",
            Partition="",
            Account="ml-research",
            AllocTRES=tres_all,
            State="COMPLETED",
            ExitCode="0:0",
            DerivedExitCode="",
            start=t0,
            end=oc.t_end + timedelta(seconds=1),
            NodeList=allnodes,
            User="",
            NNodes=str(n),
            Reason="",
        ),
        dict(
            JobID=f"{spec.job_id}.0",
            JobName=step_name,
            Partition="",
            Account="ml-research",
            AllocTRES=tres_all,
            State=oc.step_state,
            ExitCode=oc.step_exit,
            DerivedExitCode="",
            start=t_step,
            end=oc.t_end,
            NodeList=allnodes,
            User="",
            NNodes=str(n),
            Reason="",
        ),
    ]
    if spec.variant == "requeued":
        rows.append(
            dict(
                JobID=spec.job_id,
                JobName=spec.job_name,
                Partition=spec.partition,
                Account="ml-research",
                AllocTRES="",
                State="PENDING",
                ExitCode="0:0",
                DerivedExitCode="0:0",
                start=None,
                end=None,
                NodeList="None assigned",
                User=spec.user,
                NNodes=str(n),
                Reason="BeginTime",
            )
        )
    out = ["|".join(spec.sacct_columns)]
    for row in rows:
        vals = []
        for col in spec.sacct_columns:
            if col in ("Start", "End"):
                t = row["start" if col == "Start" else "end"]
                vals.append(_slurm_time(ctx, t) if t else "Unknown")
            elif col == "Elapsed":
                vals.append(
                    _elapsed((row["end"] - row["start"]).total_seconds())
                    if row["start"] and row["end"]
                    else "00:00:00"
                )
            elif col == "JobIDRaw":
                vals.append(row["JobID"])
            else:
                vals.append(str(row[col]))
        out.append("|".join(vals))
    ctx.sink("slurm/sacct.txt").raw = "\n".join(out) + "\n"


def _num(n: int | None, *, infinite: bool = False) -> dict[str, Any]:
    return {"set": n is not None, "infinite": infinite, "number": n or 0}


def _exit_json(code: str) -> dict[str, Any]:
    rc, sig = (int(x) for x in code.split(":"))
    names = {9: "KILL", 15: "TERM", 6: "ABRT", 125: ""}
    if sig:
        return {
            "status": ["SIGNALED"],
            "return_code": _num(None),
            "signal": {"id": _num(sig), "name": names.get(sig, "")},
        }
    return {
        "status": ["SUCCESS" if rc == 0 else "ERROR"],
        "return_code": _num(rc),
        "signal": {"id": _num(None), "name": ""},
    }


def write_sacct_json(ctx: Ctx, oc: Outcome) -> None:
    spec = ctx.spec
    rng = random.Random(f"sacctjson:{spec.case_id}")
    parser, (major, minor, micro) = rng.choice(
        (
            ("v0.0.40", ("23", "11", "6")),
            ("v0.0.41", ("24", "05", "4")),
            ("v0.0.41", ("24", "11", "5")),
        )
    )
    n = len(ctx.nodes)
    cpn, mem = _sizes(ctx)
    names = sorted(node.name for node in ctx.nodes)
    start, end = int(spec.start.timestamp()), int(oc.t_end.timestamp())
    limit_min = int(ctx.time_limit.total_seconds() // 60)

    def tres(nodes: int, *, billing: bool) -> list[dict[str, Any]]:
        items = [
            {"type": "cpu", "name": "", "id": 1, "count": cpn * nodes},
            {"type": "mem", "name": "", "id": 2, "count": mem * 1024 * nodes},
            {"type": "node", "name": "", "id": 4, "count": nodes},
        ]
        if billing:
            items.append({"type": "billing", "name": "", "id": 5, "count": cpn * nodes})
        items.append({"type": "gres", "name": "gpu", "id": 1001, "count": ctx.gpn * nodes})
        return items

    def step(
        step_id: str,
        name: str,
        state: str,
        code: str,
        nodes: list[str],
        t0: int,
        t1: int,
        tasks: int,
    ) -> dict[str, Any]:
        return {
            "time": {
                "elapsed": t1 - t0,
                "end": _num(t1),
                "start": _num(t0),
                "suspended": 0,
                "system": {"seconds": 1 + (t1 - t0) // 40, "microseconds": 0},
                "total": {"seconds": (t1 - t0) * 3, "microseconds": 0},
                "user": {"seconds": (t1 - t0) * 3, "microseconds": 0},
            },
            "exit_code": _exit_json(code),
            "nodes": {"count": len(nodes), "range": compress_hostlist(nodes), "list": nodes},
            "tasks": {"count": tasks},
            "pid": "",
            "CPU": {"requested_frequency": {"min": _num(0), "max": _num(0)}, "governor": ""},
            "kill_request_user": "",
            "state": [state],
            "statistics": {"CPU": {"actual_frequency": 0}, "energy": {"consumed": _num(0)}},
            "step": {"id": step_id, "name": name},
            "task": {"distribution": "Block"},
            "tres": {
                "requested": {"max": [], "min": [], "average": [], "total": []},
                "consumed": {"max": [], "min": [], "average": [], "total": []},
                "allocated": tres(len(nodes), billing=False),
            },
        }

    tasks = n if ctx.has_agent else ctx.world
    job = {
        "account": "ml-research",
        "comment": {"administrator": "", "job": "", "system": ""},
        "allocation_nodes": n,
        "array": {
            "job_id": 0,
            "limits": {"max": {"running": {"tasks": 0}}},
            "task_id": _num(None),
            "task": "",
        },
        "association": {
            "account": "ml-research",
            "cluster": "hpc",
            "partition": "",
            "user": spec.user,
            "id": 42,
        },
        "block": "",
        "cluster": "hpc",
        "constraints": "h100",
        "container": "",
        "derived_exit_code": _exit_json(oc.job_exit if oc.job_state == "FAILED" else "0:0"),
        "time": {
            "elapsed": end - start,
            "eligible": start - 95,
            "end": end,
            "planned": _num(95),
            "start": start,
            "submission": start - 95,
            "suspended": 0,
            "system": {"seconds": 0, "microseconds": 0},
            "limit": _num(limit_min),
            "total": {"seconds": 0, "microseconds": 0},
            "user": {"seconds": 0, "microseconds": 0},
        },
        "exit_code": _exit_json(oc.job_exit),
        "extra": "",
        "failed_node": oc.failed_node,
        "flags": ["STARTED_ON_SCHEDULE", "START_RECEIVED"],
        "group": spec.user,
        "het": {"job_id": 0, "job_offset": _num(None)},
        "job_id": int(spec.job_id),
        "name": spec.job_name,
        "licenses": "",
        "mcs": {"label": ""},
        "nodes": compress_hostlist(names),
        "partition": spec.partition,
        "hold": False,
        "priority": _num(rng.randint(1000, 90000)),
        "qos": "normal",
        "required": {
            "CPUs": cpn * n,
            "memory_per_cpu": _num(None),
            "memory_per_node": _num(mem * 1024),
        },
        "kill_request_user": "",
        "reservation": {"id": 0, "name": ""},
        "script": "",
        "stdin_expanded": "/dev/null",
        "stdout_expanded": f"/home/{spec.user}/jobs/logs/slurm-{spec.job_id}.out",
        "stderr_expanded": "",
        "stdout": f"/home/{spec.user}/jobs/logs/slurm-%j.out",
        "stderr": "",
        "stdin": "/dev/null",
        "state": {"current": [oc.job_state], "reason": "None"},
        "steps": [
            step(
                f"{spec.job_id}.batch",
                "batch",
                oc.batch_state,
                oc.batch_exit,
                names[:1],
                start,
                end,
                1,
            ),
            step(f"{spec.job_id}.extern", "extern", "COMPLETED", "0:0", names, start, end + 1, n),
            step(
                f"{spec.job_id}.0",
                "torchrun" if ctx.has_agent else "python",
                oc.step_state,
                oc.step_exit,
                names,
                start + 2,
                end,
                tasks,
            ),
        ],
        "submit_line": f"sbatch --nodes={n} --gres=gpu:{ctx.gpn} pretrain.sbatch",
        "tres": {"allocated": tres(n, billing=True), "requested": tres(n, billing=True)},
        "used_gres": "",
        "user": spec.user,
        "wckey": {"wckey": "", "flags": []},
        "working_directory": f"/home/{spec.user}/jobs",
    }
    doc = {
        "jobs": [job],
        "meta": {
            "plugin": {
                "type": "openapi/slurmdbd",
                "name": "Slurm OpenAPI slurmdbd",
                "data_parser": f"data_parser/{parser}",
                "accounting_storage": "accounting_storage/slurmdbd",
            },
            "client": {"source": "/dev/pts/3", "user": spec.user, "group": spec.user},
            "command": ["sacct", "--json", "-j", spec.job_id],
            "slurm": {
                "version": {"major": major, "micro": micro, "minor": minor},
                "release": f"{major}.{minor}.{micro}",
                "cluster": "hpc",
            },
        },
        "errors": [],
        "warnings": [],
    }
    ctx.sink("slurm/sacct.json").raw = json.dumps(doc, indent=2) + "\n"


def write_scontrol_job(ctx: Ctx, oc: Outcome) -> None:
    spec = ctx.spec
    n = len(ctx.nodes)
    cpn, mem = _sizes(ctx)
    names = sorted(node.name for node in ctx.nodes)
    st = lambda t: _slurm_time(ctx, t)  # noqa: E731
    state, reason, restarts = oc.job_state, oc.reason, 0
    if spec.variant == "requeued":
        state, reason, restarts = "PENDING", "BeginTime", 1
    tl = ctx.time_limit
    tl_txt = (
        _elapsed(tl.total_seconds())
        if tl < timedelta(days=1)
        else f"{tl.days}-{_elapsed(tl.total_seconds() % 86400)}"
    )
    tres = f"cpu={cpn * n},mem={mem * n}G,node={n},billing={cpn * n},gres/gpu={ctx.gpn * n}"
    lines = [
        f"JobId={spec.job_id} JobName={spec.job_name}",
        f"   UserId={spec.user}(1001) GroupId={spec.user}(1001) MCS_label=N/A",
        "   Priority=11207 Nice=0 Account=ml-research QOS=normal",
        f"   JobState={state} Reason={reason} Dependency=(null)",
        f"   Requeue=1 Restarts={restarts} BatchFlag=1 Reboot=0 ExitCode={oc.job_exit}",
        f"   RunTime={_elapsed((oc.t_end - spec.start).total_seconds())} TimeLimit={tl_txt} "
        "TimeMin=N/A",
        f"   SubmitTime={st(spec.start - timedelta(seconds=95))} "
        f"EligibleTime={st(spec.start - timedelta(seconds=95))}",
        f"   AccrueTime={st(spec.start - timedelta(seconds=95))}",
        f"   StartTime={st(spec.start)} EndTime={st(oc.t_end)} Deadline=N/A",
        f"   SuspendTime=None SecsPreSuspend=0 LastSchedEval={st(spec.start)} Scheduler=Main",
        f"   Partition={spec.partition} AllocNode:Sid=login-01:2212",
        "   ReqNodeList=(null) ExcNodeList=(null)",
        f"   NodeList={compress_hostlist(names)}",
        f"   BatchHost={names[0]}",
        f"   NumNodes={n} NumCPUs={cpn * n} NumTasks={n} CPUs/Task={cpn} ReqB:S:C:T=0:0:*:*",
        f"   ReqTRES={tres}",
        f"   AllocTRES={tres}",
        "   Socks/Node=* NtasksPerN:B:S:C=1:0:*:* CoreSpec=*",
        f"   MinCPUsNode={cpn} MinMemoryNode={mem}G MinTmpDiskNode=0",
        "   Features=h100 DelayBoot=00:00:00",
        "   OverSubscribe=NO Contiguous=0 Licenses=(null) Network=(null)",
        f"   Command=/home/{spec.user}/jobs/pretrain.sbatch",
        f"   WorkDir=/home/{spec.user}/jobs",
        f"   StdErr=/home/{spec.user}/jobs/logs/slurm-{spec.job_id}.out",
        "   StdIn=/dev/null",
        f"   StdOut=/home/{spec.user}/jobs/logs/slurm-{spec.job_id}.out",
        f"   TresPerNode=gres/gpu:{ctx.gpn}",
    ]
    ctx.sink("slurm/scontrol_job.txt").raw = "\n".join(lines) + "\n\n"


def write_sinfo(ctx: Ctx, oc: Outcome) -> None:
    rows = ["REASON               USER      TIMESTAMP           NODELIST"]
    for reason, user, t, node in sorted(oc.sinfo, key=lambda x: x[2]):
        rows.append(f"{reason:<20} {user:<9} {_slurm_time(ctx, t)} {node}")
    ctx.sink("slurm/sinfo_R.txt").raw = "\n".join(rows) + "\n"


def write_scontrol_node(ctx: Ctx, name: str, state: str, reason: str, t: datetime) -> None:
    node = next(x for x in ctx.nodes if x.name == name)
    cpn, mem = _sizes(ctx)
    lines = [
        f"NodeName={name} Arch=x86_64 CoresPerSocket={cpn // 4}",
        f"   CPUAlloc=0 CPUEfctv={cpn} CPUTot={cpn} CPULoad=N/A",
        "   AvailableFeatures=h100,ib",
        "   ActiveFeatures=h100,ib",
        f"   Gres=gpu:h100:{ctx.gpn}(S:0-1)",
        f"   NodeAddr={name} NodeHostName={name} Version=23.11.4",
        "   OS=Linux 5.15.0-105-generic #115-Ubuntu SMP Mon Apr 15 09:52:04 UTC 2024",
        f"   RealMemory={mem * 1024} AllocMem=0 FreeMem=N/A Sockets=2 Boards=1",
        f"   State={state} ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A",
        f"   Partitions={ctx.spec.partition}",
        f"   BootTime={_slurm_time(ctx, node.boot)} "
        f"SlurmdStartTime={_slurm_time(ctx, node.boot + timedelta(seconds=95))}",
        f"   LastBusyTime={_slurm_time(ctx, t)} ResumeAfterTime=None",
        f"   CfgTRES=cpu={cpn},mem={mem * 1024}M,billing={cpn},gres/gpu={ctx.gpn}",
        "   AllocTRES=",
        "   CapWatts=n/a",
        "   CurrentWatts=0 AveWatts=0",
        "   ExtSensorsJoules=n/a ExtSensorsWatts=0 ExtSensorsTemp=n/a",
        f"   Reason={reason} [slurm@{_slurm_time(ctx, t)}]",
    ]
    ctx.sink(f"slurm/scontrol_node_{name}.txt").raw = "\n".join(lines) + "\n\n"


def write_slurm(ctx: Ctx, oc: Outcome) -> None:
    if ctx.spec.sched == "sacct_json":
        write_sacct_json(ctx, oc)
    else:
        write_sacct_txt(ctx, oc)
    if "scontrol_job" in ctx.spec.extras:
        write_scontrol_job(ctx, oc)
    if oc.sinfo or "sinfo_R" in ctx.spec.extras:
        write_sinfo(ctx, oc)
    for name, (state, reason, t) in oc.node_state.items():
        write_scontrol_node(ctx, name, state, reason, t)


# --------------------------------------------------------------------------- kubernetes artifacts


def _kt(t: datetime) -> str:
    return _iso_z(t)


def _flavor(name: str) -> dict[str, str]:
    if name.startswith("gke-"):
        return {
            "cloud.google.com/gke-nodepool": "a3-pool",
            "node.kubernetes.io/instance-type": "a3-highgpu-8g",
            "cloud.google.com/gke-accelerator": "nvidia-h100-80gb",
            "topology.kubernetes.io/zone": "us-central1-a",
            "_kubelet": "v1.29.6-gke.1254000",
            "_provider": f"gce://ml-prod/us-central1-a/{name}",
            "_kernel": "6.1.85+",
            "_os": "Container-Optimized OS from Google",
        }
    if name.startswith("ip-"):
        return {
            "eks.amazonaws.com/nodegroup": "p5-train",
            "node.kubernetes.io/instance-type": "p5.48xlarge",
            "topology.kubernetes.io/zone": "us-east-2b",
            "_kubelet": "v1.30.2-eks-1552ad0",
            "_provider": "aws:///us-east-2b/i-0" + _hex(random.Random(name), 16),
            "_kernel": "5.10.220-209.869.amzn2.x86_64",
            "_os": "Amazon Linux 2",
        }
    return {
        "kubernetes.azure.com/agentpool": "ndh100",
        "node.kubernetes.io/instance-type": "Standard_ND96isr_H100_v5",
        "topology.kubernetes.io/zone": "0",
        "_kubelet": "v1.29.7",
        "_provider": "azure:///subscriptions/x/resourceGroups/mc_ml/"
        f"providers/Microsoft.Compute/virtualMachineScaleSets/aks-ndh100/virtualMachines/{name[-1]}",
        "_kernel": "5.15.0-1071-azure",
        "_os": "Ubuntu 22.04.4 LTS",
    }


def _k8s_list(items: list[dict[str, Any]]) -> str:
    doc = {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}
    return json.dumps(doc, indent=4, sort_keys=True) + "\n"


def k8s_event(
    ctx: Ctx,
    oc: Outcome,
    t: datetime,
    obj: dict[str, Any],
    reason: str,
    message: str,
    *,
    warning: bool = False,
    component: str = "kubelet",
    host: str | None = None,
    count: int = 1,
    last: datetime | None = None,
) -> None:
    rng = random.Random(f"event:{ctx.spec.case_id}:{len(oc.events)}")
    ev = {
        "apiVersion": "v1",
        "count": count,
        "eventTime": None,
        "firstTimestamp": _kt(t),
        "involvedObject": obj,
        "kind": "Event",
        "lastTimestamp": _kt(last or t),
        "message": message,
        "metadata": {
            "creationTimestamp": _kt(t),
            "name": f"{obj['name']}.{_hex(rng, 16)}",
            "namespace": "ml-train",
            "resourceVersion": str(rng.randint(10**7, 10**8)),
            "uid": _uuid(rng),
        },
        "reason": reason,
        "reportingComponent": component if component != "kubelet" else "kubelet",
        "reportingInstance": host or "",
        "source": {"component": component},
        "type": "Warning" if warning else "Normal",
    }
    if host:
        ev["source"]["host"] = host
    oc.events.append(ev)


def pod_ref(ctx: Ctx, node: NodeRT) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "fieldPath": "spec.containers{pytorch}",
        "kind": "Pod",
        "name": node.pod,
        "namespace": "ml-train",
        "uid": _uuid(random.Random(node.pod or "")),
    }


def node_ref(name: str) -> dict[str, Any]:
    return {"kind": "Node", "name": name, "uid": name}


def job_ref(ctx: Ctx) -> dict[str, Any]:
    if ctx.spec.k8s_kind == "pytorchjob":
        return {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "name": ctx.spec.job_name,
            "namespace": "ml-train",
            "uid": _uuid(random.Random(ctx.spec.job_name)),
        }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": ctx.spec.job_name,
        "namespace": "ml-train",
        "uid": _uuid(random.Random(ctx.spec.job_name)),
    }


def default_k8s_events(ctx: Ctx, oc: Outcome) -> None:
    spec = ctx.spec
    for node in ctx.nodes:
        t = spec.start - timedelta(seconds=40 + node.group)
        k8s_event(
            ctx,
            oc,
            t,
            pod_ref(ctx, node),
            "Scheduled",
            f"Successfully assigned ml-train/{node.pod} to {node.name}",
            component="default-scheduler",
        )
        k8s_event(
            ctx,
            oc,
            spec.start - timedelta(seconds=3),
            pod_ref(ctx, node),
            "Started",
            "Started container pytorch",
            host=node.name,
        )


def write_k8s(ctx: Ctx, oc: Outcome) -> None:
    spec = ctx.spec
    img = "nvcr.io/nvidia/pytorch:24.05-py3"
    pods, nodes = [], []
    for i, node in enumerate(ctx.nodes):
        info = dict(oc.pods.get(i, {}))
        end = info.get("finished", ctx.node_end.get(i))
        started = spec.start - timedelta(seconds=2 + node.group % 3)
        term = {
            "containerID": f"containerd://{_hex(random.Random(node.pod), 64)}",
            "exitCode": info.get("exit", ctx.node_exit.get(i, 1)),
            "finishedAt": _kt(end) if end else None,
            "reason": info.get("reason", "Error"),
            "startedAt": _kt(started),
        }
        restarts = info.get("restarts", 0)
        state_kind = info.get("state", "terminated" if end else "running")
        if state_kind == "terminated" and restarts == 0:
            state, last = {"terminated": term}, {}
        elif state_kind == "running":
            state, last = {"running": {"startedAt": _kt(info.get("running_since", started))}}, {}
            if restarts:
                last = {"terminated": term}
        else:  # waiting after a restart
            state = {
                "waiting": {
                    "message": f"back-off 10s restarting failed container=pytorch "
                    f"pod={node.pod}_ml-train",
                    "reason": "CrashLoopBackOff",
                }
            }
            last = {"terminated": term}
        ready = state_kind == "running" and not info.get("not_ready", False)
        phase = info.get("phase", "Running" if state_kind != "terminated" else "Failed")
        labels: dict[str, str]
        if spec.k8s_kind == "pytorchjob":
            labels = {
                "training.kubeflow.org/job-name": spec.job_name,
                "training.kubeflow.org/operator-name": "pytorchjob-controller",
                "training.kubeflow.org/replica-index": str(node.group),
                "training.kubeflow.org/replica-type": "worker",
            }
            if node.group == 0:
                labels["training.kubeflow.org/job-role"] = "master"
            owner = {
                "apiVersion": "kubeflow.org/v1",
                "blockOwnerDeletion": True,
                "controller": True,
                "kind": "PyTorchJob",
                "name": spec.job_name,
                "uid": job_ref(ctx)["uid"],
            }
        else:
            labels = {
                "batch.kubernetes.io/controller-uid": job_ref(ctx)["uid"],
                "batch.kubernetes.io/job-completion-index": str(node.group),
                "batch.kubernetes.io/job-name": spec.job_name,
                "job-name": spec.job_name,
            }
            owner = {
                "apiVersion": "batch/v1",
                "blockOwnerDeletion": True,
                "controller": True,
                "kind": "Job",
                "name": spec.job_name,
                "uid": job_ref(ctx)["uid"],
            }
        pod_spec: dict[str, Any] = {
            "containers": [
                {
                    "command": [
                        "torchrun",
                        f"--nnodes={len(ctx.nodes)}",
                        f"--nproc-per-node={ctx.gpn}",
                        "--rdzv-backend=c10d",
                        f"--rdzv-endpoint={ctx.master.host}:29500",
                        "/workspace/train.py",
                        "--config",
                        "/config/train.yaml",
                    ],
                    "image": img,
                    "imagePullPolicy": "IfNotPresent",
                    "name": "pytorch",
                    "resources": {
                        "limits": {
                            "memory": "1600Gi",
                            "nvidia.com/gpu": str(ctx.gpn),
                            "rdma/ib": "8",
                        },
                        "requests": {
                            "cpu": "180",
                            "memory": "1600Gi",
                            "nvidia.com/gpu": str(ctx.gpn),
                            "rdma/ib": "8",
                        },
                    },
                }
            ],
            "nodeName": node.name,
            "priority": 0,
            "restartPolicy": "OnFailure" if restarts else "Never",
            "schedulerName": "default-scheduler",
            "tolerations": [
                {"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"}
            ],
        }
        if spec.k8s_kind == "indexed_job":
            pod_spec["hostname"] = node.host
            pod_spec["subdomain"] = spec.job_name
        conds = [
            {
                "lastProbeTime": None,
                "lastTransitionTime": _kt(started),
                "status": "True",
                "type": "PodScheduled",
            },
            {
                "lastProbeTime": None,
                "lastTransitionTime": _kt(started),
                "status": "True",
                "type": "Initialized",
            },
            {
                "lastProbeTime": None,
                "lastTransitionTime": _kt(info.get("ready_changed", end or started)),
                "status": "True" if ready else "False",
                "type": "Ready",
            },
        ]
        pods.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "creationTimestamp": _kt(spec.start - timedelta(seconds=45)),
                    "labels": labels,
                    "name": node.pod,
                    "namespace": "ml-train",
                    "ownerReferences": [owner],
                    "uid": pod_ref(ctx, node)["uid"],
                },
                "spec": pod_spec,
                "status": {
                    "conditions": conds,
                    "containerStatuses": [
                        {
                            "containerID": term["containerID"],
                            "image": img,
                            "imageID": "nvcr.io/nvidia/pytorch@sha256:"
                            + _hex(random.Random(img), 64),
                            "lastState": last,
                            "name": "pytorch",
                            "ready": ready,
                            "restartCount": restarts,
                            "started": state_kind == "running",
                            "state": state,
                        }
                    ],
                    "hostIP": node.ip,
                    "phase": phase,
                    "podIP": f"10.96.{i}.{10 + i * 3}",
                    "qosClass": "Guaranteed",
                    "startTime": _kt(spec.start - timedelta(seconds=40)),
                },
            }
        )
        fl = _flavor(node.name)
        over = oc.k8s_nodes.get(node.name, {})
        hb = over.get("heartbeat", oc.t_end + timedelta(seconds=9))
        ready_cond = {
            "lastHeartbeatTime": _kt(hb),
            "lastTransitionTime": _kt(node.boot + timedelta(seconds=80)),
            "message": "kubelet is posting ready status",
            "reason": "KubeletReady",
            "status": "True",
            "type": "Ready",
        }
        ready_cond.update(over.get("ready", {}))
        pressure = [
            {
                "lastHeartbeatTime": _kt(hb),
                "lastTransitionTime": _kt(node.boot + timedelta(seconds=80)),
                "message": f"kubelet has {m}",
                "reason": f"KubeletHas{r}",
                "status": "False",
                "type": k,
            }
            for k, r, m in (
                ("MemoryPressure", "SufficientMemory", "sufficient memory available"),
                ("DiskPressure", "NoDiskPressure", "no disk pressure"),
                ("PIDPressure", "SufficientPID", "sufficient PID available"),
            )
        ]
        for cond in pressure:
            cond.update(over.get(cond["type"], {}))
        alloc_gpu = over.get("alloc_gpu", ctx.gpn)
        node_spec: dict[str, Any] = {"providerID": fl["_provider"]}
        if over.get("taints"):
            node_spec["taints"] = over["taints"]
        nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "creationTimestamp": _kt(node.boot - timedelta(days=3)),
                    "labels": {
                        **{k: v for k, v in fl.items() if not k.startswith("_")},
                        "kubernetes.io/hostname": node.name.split(".")[0],
                        "nvidia.com/gpu.count": str(ctx.gpn),
                        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                    },
                    "name": node.name,
                    "uid": _uuid(random.Random(node.name)),
                },
                "spec": node_spec,
                "status": {
                    "addresses": [
                        {"address": node.ip, "type": "InternalIP"},
                        {"address": node.name.split(".")[0], "type": "Hostname"},
                    ],
                    "allocatable": {
                        "cpu": "190",
                        "ephemeral-storage": "1800Gi",
                        "memory": "1900Gi",
                        "nvidia.com/gpu": str(alloc_gpu),
                        "pods": "110",
                        "rdma/ib": "8",
                    },
                    "capacity": {
                        "cpu": "192",
                        "ephemeral-storage": "1900Gi",
                        "memory": "2003Gi",
                        "nvidia.com/gpu": str(ctx.gpn),
                        "pods": "110",
                        "rdma/ib": "8",
                    },
                    "conditions": [*pressure, ready_cond],
                    "nodeInfo": {
                        "architecture": "amd64",
                        "containerRuntimeVersion": "containerd://1.7.15",
                        "kernelVersion": fl["_kernel"],
                        "kubeletVersion": fl["_kubelet"],
                        "operatingSystem": "linux",
                        "osImage": fl["_os"],
                    },
                },
            }
        )
    ctx.sink("k8s/pods.json").raw = _k8s_list(pods)
    ctx.sink("k8s/nodes.json").raw = _k8s_list(nodes)
    events = sorted(oc.events, key=lambda e: (e["firstTimestamp"], e["metadata"]["name"]))
    ctx.sink("k8s/events.json").raw = _k8s_list(events)


def job_failed_event(ctx: Ctx, oc: Outcome, t: datetime, failed: int = 1) -> None:
    if ctx.spec.k8s_kind == "pytorchjob":
        k8s_event(
            ctx,
            oc,
            t,
            job_ref(ctx),
            "PyTorchJobFailed",
            f"PyTorchJob ml-train/{ctx.spec.job_name} is failed because {failed} Worker "
            "replica(s) failed.",
            warning=True,
            component="pytorchjob-controller",
        )
    else:
        k8s_event(
            ctx,
            oc,
            t,
            job_ref(ctx),
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit",
            warning=True,
            component="job-controller",
        )


# --------------------------------------------------------------------------- culprit behaviour


def _t_fail(ctx: Ctx) -> datetime:
    return ctx.spec.start + timedelta(
        seconds=ctx.spec.fail_after_s, microseconds=ctx.rng.randint(0, 999999)
    )


def xid_line(
    ctx: Ctx, local: int, code: int, text: str, pid: int | None = None, name: str = "python"
) -> str:
    who = f"pid={pid}, name={name}, " if pid else "pid='<unknown>', name=<unknown>, "
    return f"NVRM: Xid (PCI:{ctx.bus[local]}): {code}, {who}{text}"


def write_error_file(ctx: Ctx, rank: int, t: datetime, tb: list[str]) -> None:
    exc = next((x for x in reversed(tb) if x and not x.startswith(" ")), tb[-1])
    doc = {
        "message": {
            "message": exc,
            "extraInfo": {
                "py_callstack": "\n".join(tb) + "\n",
                "timestamp": str(int(t.timestamp())),
            },
        }
    }
    ctx.sink(f"errors/error-{rank}.json").raw = json.dumps(doc, indent=2) + "\n"


def py_exception(
    ctx: Ctx, rank: int, t: datetime, frames: list[tuple[str, int, str, str]], exc: list[str]
) -> Death:
    """An uncaught Python exception on `rank` (a primary failure of its own)."""
    tb = traceback_lines(frames, exc)
    prefix = ctx.tb_prefix(rank)
    ctx.out(rank, t, [prefix + line for line in tb])
    efile = "error_files" in ctx.spec.extras and ctx.has_agent
    if efile:
        write_error_file(ctx, rank, t, tb)
    return Death(t + timedelta(milliseconds=ctx.rng.randint(300, 900)), 1, efile, tb)


def cuda_error(ctx: Ctx, rank: int, t: datetime, err: str, tail: str = "backward") -> Death:
    return py_exception(
        ctx,
        rank,
        t,
        train_frames(ctx, tail),
        [f"RuntimeError: CUDA error: {err}", *CUDA_ASYNC_NOTE],
    )


def watchdog_cuda_abort(ctx: Ctx, rank: int, t: datetime, err: str) -> Death:
    """The NCCL watchdog thread hits a CUDA error on its own GPU and aborts the process."""
    pg = ctx.pg(rank)
    what = (
        "NCCL watchdog thread terminated"
        if ctx.spec.torch == "2.1"
        else "Process group watchdog thread terminated"
    )
    msg = f"{pg} {what} with exception: CUDA error: {err}"
    lines = [
        f"{ctx.nccl_prefix(rank, 97)} NCCL WARN Cuda failure '{err}'",
        ctx.c10(rank, t, "E", "ProcessGroupNCCL.cpp:1595", msg),
        *CUDA_ASYNC_NOTE,
        "",
        "Exception raised from c10_cuda_check_implementation at "
        "/pytorch/c10/cuda/CUDAException.cpp:43 "
        "(most recent call first):",
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        f"  what():  {msg}",
        *CUDA_ASYNC_NOTE,
    ]
    ctx.out(rank, t, lines)
    return Death(t + timedelta(milliseconds=ctx.rng.randint(150, 500)), -6)


def heartbeat_abort(ctx: Ctx, rank: int, t: datetime) -> Death:
    """PyTorch's heartbeat monitor killing a rank whose watchdog is stuck inside a CUDA call."""
    pg = ctx.pg(rank)
    ms = timedelta(milliseconds=1)
    ctx.out(
        rank,
        t,
        [
            ctx.c10(
                rank,
                t,
                "E",
                "ProcessGroupNCCL.cpp:1423",
                f"{pg} Heartbeat monitor timed out! Process "
                "will be terminated after dumping debug info. workMetaList_.size()=2",
            ),
            ctx.c10(
                rank,
                t + ms,
                "E",
                "ProcessGroupNCCL.cpp:1468",
                f"{pg} ProcessGroupNCCL preparing to dump debug info.",
            ),
            ctx.c10(
                rank,
                t + 2 * ms,
                "F",
                "ProcessGroupNCCL.cpp:1299",
                f"{pg} ProcessGroupNCCL's "
                "watchdog got stuck for 480 seconds without making progress in monitoring enqueued "
                "collectives. This typically indicates a NCCL/CUDA API (e.g., CudaEventDestroy) "
                "hang "
                "blocking the watchdog, and could be triggered by another thread holding the GIL "
                "inside "
                "a CUDA api (for example, CudaEventDestroy), or other deadlock-prone behaviors.If "
                "you "
                "suspect the watchdog is not actually stuck and a longer timeout would help, you "
                "can "
                "either increase the timeout (TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC) to a larger value "
                "or "
                "disable the heartbeat monitor (TORCH_NCCL_ENABLE_MONITORING=0).If either of "
                "aforementioned helps, feel free to file an issue to PyTorch about the short "
                "timeout or "
                "false positive abort; otherwise, please attempt to debug the hang. ",
            ),
        ],
    )
    return Death(t + timedelta(milliseconds=600), -6)


def oom_text(ctx: Ctx, local: int, legacy: bool = False) -> str:
    rng = ctx.rng
    cap = 79.11 if ctx.gpn == 8 else 39.39
    tried = rng.choice((1.25, 2.5, 3.91, 7.82, 12.0))
    free = rng.uniform(0.08, min(tried * 0.9, 3.0))
    in_use = cap - free - 0.41
    alloc = in_use - rng.uniform(1.2, 4.0)
    unalloc = rng.uniform(0.05, 1.4)
    idx = 0 if ctx.one_gpu_per_task else local

    def size(gib: float) -> str:
        return f"{gib * 1024:.2f} MiB" if gib < 1 else f"{gib:.2f} GiB"

    if legacy:
        return (
            f"RuntimeError: CUDA out of memory. Tried to allocate {size(tried)} (GPU {idx}; "
            f"{cap + 0.04:.2f} GiB total capacity; {alloc:.2f} GiB already allocated; {size(free)} "
            f"free; {alloc + unalloc:.2f} GiB reserved in total by PyTorch) If reserved memory is "
            ">> "
            "allocated memory try setting max_split_size_mb to avoid fragmentation.  See "
            "documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF"
        )
    cls = (
        "torch.cuda.OutOfMemoryError"
        if ctx.spec.torch in ("2.1", "2.3")
        else "torch.OutOfMemoryError"
    )
    return (
        f"{cls}: CUDA out of memory. Tried to allocate {size(tried)}. GPU {idx} has a total "
        "capacity "
        f"of {cap:.2f} GiB of which {size(free)} is free. Including non-PyTorch memory, this "
        "process "
        f"has {in_use:.2f} GiB memory in use. Of the allocated memory {alloc:.2f} GiB is "
        "allocated by "
        f"PyTorch, and {size(unalloc)} is reserved by PyTorch but unallocated. If reserved but "
        "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
        "to avoid fragmentation.  See documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
    )


def oom_kill_block(
    ctx: Ctx,
    node: NodeRT,
    *,
    victim_pid: int,
    victim: str,
    invoker: str,
    memcg: str | None,
    rss_gb: float,
) -> list[str]:
    rng = ctx.rng
    rss = int(rss_gb * 1024 * 1024)
    task_cg = memcg or f"/system.slice/slurmstepd.scope/job_{ctx.spec.job_id}/step_0/user/task_0"
    lines = [
        f"{invoker} invoked oom-killer: "
        "gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO), "
        "order=0, oom_score_adj=0",
        f"CPU: {rng.randint(0, 191)} PID: {victim_pid + rng.randint(1, 40)} Comm: {invoker} "
        "Tainted: P"
        "           OE      5.15.0-105-generic #115-Ubuntu",
        "Hardware name: Supermicro SYS-821GE-TNHR/X13DEG-OAD, BIOS 2.1 01/12/2024",
        "Call Trace:",
        " <TASK>",
        " dump_stack_lvl+0x4a/0x63",
        " dump_header+0x4a/0x211",
        " oom_kill_process.cold+0xb/0x10",
        " out_of_memory+0x106/0x2e0",
    ]
    if memcg:
        lines += [
            " mem_cgroup_out_of_memory+0x13f/0x160",
            " try_charge_memcg+0x687/0x740",
            " </TASK>",
            f"memory: usage {rss + 9_000_000}kB, limit {rss + 9_000_000}kB, failcnt "
            f"{rng.randint(10, 900)}",
        ]
        head = (
            f"oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0-1,"
            f"oom_memcg={memcg},task_memcg={task_cg},task={victim},pid={victim_pid},uid=1001"
        )
        kill = "Memory cgroup out of memory"
    else:
        lines += [
            " __alloc_pages_slowpath.constprop.0+0xd0a/0xe30",
            " __alloc_pages+0x311/0x330",
            " </TASK>",
        ]
        head = (
            f"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,"
            f"global_oom,task_memcg={task_cg},task={victim},pid={victim_pid},uid=1001"
        )
        kill = "Out of memory"
    lines += [
        head,
        f"{kill}: Killed process {victim_pid} ({victim}) "
        f"total-vm:{rss + rng.randint(10**7, 9 * 10**7)}kB, "
        f"anon-rss:{rss}kB, file-rss:{rng.randint(10**4, 10**6)}kB, "
        f"shmem-rss:{rng.randint(0, 10**5)}kB, "
        f"UID:1001 pgtables:{rss // 500}kB oom_score_adj:0",
        f"oom_reaper: reaped process {victim_pid} ({victim}), now anon-rss:0kB, file-rss:0kB, "
        "shmem-rss:0kB",
    ]
    return lines


# --------------------------------------------------------------------------- decoys


def decoy_node(ctx: Ctx, *avoid: int) -> int:
    choices = [i for i in range(len(ctx.nodes)) if i not in avoid and ctx.nodes[i].kstyle]
    choices = choices or [i for i in range(len(ctx.nodes)) if i not in avoid]
    return random.Random(f"decoy:{ctx.spec.case_id}").choice(choices)


def pre_decoys(ctx: Ctx) -> None:
    """Decoys that must exist before anything else is printed (they move a node's boot time)."""
    if "old_xid" not in ctx.spec.decoys:
        return
    ni = decoy_node(ctx, *(x for x in (ctx.spec.culprit_node,) if x is not None))
    node = ctx.nodes[ni]
    if node.kstyle not in JOURNAL_STYLES:
        node.kstyle = "short"
    t_old = ctx.spec.start - timedelta(
        hours=ctx.rng.randint(20, 40),
        minutes=ctx.rng.randint(0, 59),
        microseconds=ctx.rng.randint(0, 999999),
    )
    old_boot = t_old - timedelta(
        days=6, seconds=ctx.rng.randint(0, 80000), microseconds=ctx.rng.randint(0, 999999)
    )
    local = ctx.rng.randrange(ctx.gpn)
    bus = ctx.bus[local]
    for i, msg in enumerate(
        (
            f"NVRM: GPU at PCI:{bus}: {node.uuids[local]}",
            xid_line(ctx, local, 79, "GPU has fallen off the bus.", ctx.rng.randint(3000, 9000)),
            f"NVRM: GPU {bus}.0: GPU has fallen off the bus.",
        )
    ):
        ctx.kern(node, t_old + timedelta(microseconds=i * 80), msg, boot=old_boot)
    node.boot = t_old + timedelta(minutes=ctx.rng.randint(30, 90))
    for i, msg in enumerate(
        (
            "Linux version 5.15.0-105-generic (buildd@lcy02-amd64-007) (gcc (Ubuntu "
            "11.4.0-1ubuntu1~22.04) "
            "11.4.0, GNU ld (GNU Binutils for Ubuntu) 2.38) #115-Ubuntu SMP Mon Apr 15 09:52:04 "
            "UTC 2024",
            "Command line: BOOT_IMAGE=/vmlinuz-5.15.0-105-generic "
            "root=UUID=3f1c2a9e-7d44-4b1f-9a0e-"
            "2c5d8e1f6a70 ro pci=realloc=off iommu=pt",
            "nvidia: loading out-of-tree module taints kernel.",
            f"NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {ctx.driver}  Release Build  "
            "(dvs-builder@U16-I3-B03-4-3)  Tue Jun  4 09:44:28 UTC 2024",
        )
    ):
        ctx.kern(
            node,
            node.boot + timedelta(seconds=0.4 + i * 3.1, microseconds=ctx.rng.randint(0, 99999)),
            msg,
        )
    ctx.kern(
        node,
        node.boot + timedelta(minutes=5, microseconds=ctx.rng.randint(0, 999999)),
        "New session 1 of user root.",
        ident="systemd-logind[1874]",
    )


def post_decoys(ctx: Ctx, t_fail: datetime) -> None:
    spec = ctx.spec
    avoid = tuple(x for x in (spec.culprit_node,) if x is not None)
    if "xid45" in spec.decoys:
        ni = decoy_node(ctx, *avoid)
        node = ctx.nodes[ni]
        t = ctx.node_end.get(ni, t_fail + timedelta(seconds=30)) - timedelta(milliseconds=300)
        for local in sorted(ctx.rng.sample(range(ctx.gpn), k=min(3, ctx.gpn))):
            rank = ctx.rank_at(ni, local)
            ctx.kern(
                node,
                t + timedelta(microseconds=local * 211),
                xid_line(ctx, local, 45, f"Ch 000000{8 + local:02x}", ctx.pid(rank)),
            )
        if "xid43" in spec.decoys:
            rank = ctx.rank_at(ni, 0)
            ctx.kern(
                node,
                t + timedelta(milliseconds=5),
                xid_line(ctx, 0, 43, "Ch 00000010", ctx.pid(rank)),
            )
    if "edac" in spec.decoys:
        edac_ce(
            ctx,
            ctx.nodes[decoy_node(ctx, *avoid)],
            t_fail - timedelta(seconds=ctx.rng.randint(60, 400)),
        )


# --------------------------------------------------------------------------- outcomes


def outcome_failed(ctx: Ctx, t_end: datetime, *, step_exit: str = "1:0") -> Outcome:
    return Outcome(t_end=t_end, step_exit=step_exit)


def k8s_failed(ctx: Ctx, oc: Outcome, failed: int = 1) -> None:
    default_k8s_events(ctx, oc)
    ends = sorted(t for t in ctx.node_end.values())
    if ends:
        job_failed_event(ctx, oc, ends[0] + timedelta(seconds=2), failed)


def _culprit(ctx: Ctx) -> tuple[int, NodeRT, int, int]:
    ni, local = ctx.spec.culprit_node, ctx.spec.culprit_local or 0
    assert ni is not None
    return ni, ctx.nodes[ni], local, ctx.rank_at(ni, local)


def _finish_crash(
    ctx: Ctx, run: Run, t_fail: datetime, rank: int, death: Death, **kw: Any
) -> Outcome:
    """One rank died on its own; the rest is collateral (watchdog timeouts, or killed)."""
    spec = ctx.spec
    if spec.kill_on_bad_exit or kw.pop("kill", False):
        delay = 0.3 if not ctx.has_agent else 2.0
        kill_at = death.t + timedelta(seconds=delay + ctx.rng.uniform(0, 1.5))
        if spec.platform == "slurm":
            batch = sorted(n.name for n in ctx.nodes)[0]
            ctx.jobout(
                kill_at - timedelta(milliseconds=50),
                [
                    f"srun: Terminating StepId={spec.job_id}.0",
                    f"slurmstepd: error: *** STEP {spec.job_id}.0 ON {batch} CANCELLED AT "
                    f"{_slurm_time(ctx, kill_at)} ***",
                ],
            )
        t_end = collateral(
            ctx, run, t_fail=t_fail, dead={rank: death}, mode="kill", kill_at=kill_at, **kw
        )
    else:
        t_end = collateral(ctx, run, t_fail=t_fail, dead={rank: death}, **kw)
    post_decoys(ctx, t_fail)
    step_exit = f"0:{-death.exitcode}" if death.exitcode < 0 and not ctx.has_agent else "1:0"
    oc = outcome_failed(ctx, t_end, step_exit=step_exit)
    if spec.platform == "k8s":
        k8s_failed(ctx, oc)
    return oc


# --------------------------------------------------------------------------- scenarios


def sc_gpu_hardware(ctx: Ctx) -> Outcome:
    spec, rng = ctx.spec, ctx.rng
    ni, node, local, rank = _culprit(ctx)
    pre_decoys(ctx)
    run = prologue(ctx)
    t_fail = _t_fail(ctx)
    progress(ctx, run, t_fail)
    pid, bus, v = ctx.pid(rank), ctx.bus[local], spec.variant
    head = [
        f"NVRM: GPU at PCI:{bus}: {node.uuids[local]}",
        f"NVRM: GPU Board Serial Number: 16528{rng.randint(10**7, 10**8 - 1)}",
    ]
    fell = [
        xid_line(ctx, local, 79, "GPU has fallen off the bus.", pid),
        f"NVRM: GPU {bus}.0: GPU has fallen off the bus.",
        "NVRM: A GPU crash dump has been created. If possible, please run",
        "NVRM: nvidia-bug-report.sh as root to collect this data before",
        "NVRM: the NVIDIA kernel module is unloaded.",
    ]
    dbe = xid_line(
        ctx,
        local,
        48,
        "An uncorrectable double bit error (DBE) has been detected on GPU in "
        f"the framebuffer at physAddr 0x{_hex(rng, 9)} partition {rng.randint(0, 11)}, "
        f"subpartition {rng.randint(0, 1)}.",
        pid,
    )
    t_err = t_fail + timedelta(seconds=rng.uniform(0.4, 6.0))
    kill: dict[str, Any] = {}
    if v.startswith("xid79"):
        kmsgs = head + fell
        if v == "xid79-154" or "k8s" in v:
            kmsgs.append(
                xid_line(
                    ctx,
                    local,
                    154,
                    "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)",
                    pid,
                )
            )
        death = watchdog_cuda_abort(ctx, rank, t_err, "unspecified launch failure")
    elif v == "xid48-dbe":
        kmsgs = head + [
            dbe,
            xid_line(
                ctx,
                local,
                63,
                f"Row Remapper: New row (0x{_hex(rng, 16)}) marked "
                "for remapping, reset gpu to activate.",
            ),
        ]
        death = cuda_error(ctx, rank, t_err, "uncorrectable ECC error encountered")
    elif v == "xid64-row-remap":
        kmsgs = head + [
            dbe,
            xid_line(
                ctx,
                local,
                64,
                f"Row Remapper Error: (0x{_hex(rng, 16)}) - All "
                "reserved rows for bank are remapped",
            ),
            xid_line(
                ctx,
                local,
                154,
                "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)",
                pid,
            ),
        ]
        death = cuda_error(ctx, rank, t_err, "uncorrectable ECC error encountered", "forward")
    elif v == "xid74-nvlink":
        link = rng.randint(0, 17)
        kmsgs = head + [
            xid_line(
                ctx,
                local,
                74,
                f"NVLink: fatal error detected on link {link}(0x0, 0x0, "
                "0x10000, 0x0, 0x0, 0x0, 0x0)",
                pid,
            )
        ]
        ctx.out(
            rank,
            t_err - timedelta(milliseconds=3),
            [
                f"{ctx.nccl_prefix(rank, 97)} transport/p2p.cc:275 NCCL WARN Cuda failure "
                "'unspecified launch failure'",
                f"{ctx.nccl_prefix(rank, 97)} NCCL INFO transport/p2p.cc:436 -> 1",
            ],
        )
        frames = train_frames(ctx, "backward")[:-1] + [
            (
                f"{PY_SITE}/torch/distributed/fsdp/_runtime_utils.py",
                1093,
                "_reduce_grad",
                "dist.reduce_scatter_tensor(",
            ),
            (
                f"{PY_SITE}/torch/distributed/distributed_c10d.py",
                4102,
                "reduce_scatter_tensor",
                "work = group._reduce_scatter_base(output, input, opts)",
            ),
        ]
        death = py_exception(
            ctx,
            rank,
            t_err,
            frames,
            [
                "torch.distributed.DistBackendError: NCCL error in: "
                "/pytorch/torch/csrc/distributed/c10d/"
                "ProcessGroupNCCL.cpp:3012, unhandled cuda error (run with NCCL_DEBUG=INFO for "
                "details), "
                f"NCCL version {ctx.nccl}",
                "ncclUnhandledCudaError: Call to CUDA function failed.",
                "Last error:",
                "Cuda failure 'unspecified launch failure'",
            ],
        )
    elif v == "xid95-drain":
        kmsgs = head + [
            xid_line(ctx, local, 95, "Uncontained: FBHUB. RST: Yes, D-RST: No", pid),
            xid_line(
                ctx,
                local,
                154,
                "GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)",
                pid,
            ),
        ]
        death = cuda_error(ctx, rank, t_err, "uncorrectable ECC error encountered")
    elif v == "xid119-gsp":
        banner = "NVRM: _kgspLogXid119: "
        kmsgs = [
            f"{banner}{'*' * 33} GSP Timeout {'*' * 34}",
            f"{banner}Note: Please also check logs above.",
            xid_line(
                ctx,
                local,
                119,
                f"Timeout after 45s of waiting for RPC response from GPU{local} "
                f"GSP! Expected function 76 (GSP_RM_CONTROL) sequence {rng.randint(9000, 40000)} "
                "(0x20801702 0x4).",
                pid,
            ),
            f"{banner}{'*' * 80}",
        ]
        ctx.kern_block(
            node,
            t_fail + timedelta(seconds=45),
            [
                xid_line(
                    ctx,
                    local,
                    119,
                    f"Timeout after 45s of waiting for RPC response from GPU{local} GSP! "
                    "Expected function 10 (FREE) (0x5c000001 0x0).",
                    pid,
                )
            ],
        )
        death = heartbeat_abort(ctx, rank, t_fail + timedelta(seconds=480 + rng.uniform(0.2, 3)))
    elif v == "xid94-contained":
        kmsgs = head + [xid_line(ctx, local, 94, "Contained: SM (0x1). RST: No, D-RST: No", pid)]
        death = cuda_error(ctx, rank, t_err, "uncorrectable ECC error encountered", "forward")
    else:
        raise ValueError(v)
    ctx.kern_block(node, t_fail, kmsgs)
    oc = _finish_crash(ctx, run, t_fail, rank, death, **kill)
    if v == "xid79-k8s-nokern":
        oc.k8s_nodes[node.name] = {"alloc_gpu": ctx.gpn - 1}
    return oc


def sc_gpu_oom(ctx: Ctx) -> Outcome:
    v = ctx.spec.variant
    ni, node, local, rank = _culprit(ctx)
    pre_decoys(ctx)
    run = prologue(ctx)
    t_fail = _t_fail(ctx)
    progress(ctx, run, t_fail, checkpoint_every=1000 if v == "rank0-checkpoint-gather" else 0)
    if v == "forward-long-seq":
        frames = train_frames(ctx, "forward") + [
            (
                "/workspace/llm/model/attention.py",
                214,
                "forward",
                "attn = torch.softmax(scores.float(), dim=-1).to(q.dtype)",
            )
        ]
        death = py_exception(ctx, rank, t_fail, frames, [oom_text(ctx, local)])
    elif v == "rank0-checkpoint-gather":
        frames = train_frames(ctx, "none") + [
            (
                "/workspace/llm/trainer.py",
                241,
                "fit",
                "self.checkpointer.save(step, self.model, self.optim)",
            ),
            (
                "/workspace/llm/checkpoint.py",
                77,
                "save",
                "state = get_model_state_dict(self.model, "
                "options=StateDictOptions(full_state_dict=True, cpu_offload=False))",
            ),
            (
                f"{PY_SITE}/torch/distributed/checkpoint/state_dict.py",
                1051,
                "get_model_state_dict",
                "model_state_dict = _get_model_state_dict(model, info)",
            ),
            (
                f"{PY_SITE}/torch/distributed/fsdp/_state_dict_utils.py",
                333,
                "_full_post_state_dict_hook",
                "return _common_unshard_post_state_dict_hook(",
            ),
            (
                f"{PY_SITE}/torch/distributed/fsdp/_unshard_param_utils.py",
                236,
                "_unshard_fsdp_state_params",
                "_unshard(state, handles, computation_stream, pre_unshard_stream)",
            ),
            (
                f"{PY_SITE}/torch/distributed/fsdp/_flat_param.py",
                1338,
                "alloc_padded_unsharded_flat_param",
                "_alloc_storage(unsharded_flat_param, flat_param._padded_unsharded_size)",
            ),
            (
                f"{PY_SITE}/torch/distributed/utils.py",
                186,
                "_alloc_storage",
                "tensor._typed_storage()._resize_(size.numel())",
            ),
        ]
        ctx.out(
            rank,
            t_fail - timedelta(seconds=2),
            ctx.pylog(
                rank,
                t_fail - timedelta(seconds=2),
                "INFO",
                "checkpoint",
                "gathering full state dict on rank 0",
            ),
        )
        death = py_exception(ctx, rank, t_fail, frames, [oom_text(ctx, local)])
    elif v == "k8s-worker-oom":
        death = py_exception(
            ctx, rank, t_fail, train_frames(ctx, "backward"), [oom_text(ctx, local)]
        )
    elif v == "nccl-cuda-oom":
        pre = ctx.nccl_prefix(rank)
        ctx.out(
            rank,
            t_fail - timedelta(milliseconds=4),
            [
                f"{pre} include/alloc.h:124 NCCL WARN Cuda failure 2 'out of memory'",
                f"{pre} NCCL INFO include/alloc.h:132 -> 1",
                f"{pre} NCCL INFO transport/p2p.cc:216 -> 1",
            ],
        )
        frames = train_frames(ctx, "forward") + [
            (
                f"{PY_SITE}/torch/distributed/fsdp/_flat_param.py",
                1464,
                "_all_gather_flat_param",
                "dist.all_gather_into_tensor(",
            ),
            (
                f"{PY_SITE}/torch/distributed/c10d_logger.py",
                83,
                "wrapper",
                "return func(*args, **kwargs)",
            ),
            (
                f"{PY_SITE}/torch/distributed/distributed_c10d.py",
                3713,
                "all_gather_into_tensor",
                "work = group._allgather_base(output_tensor, input_tensor, opts)",
            ),
        ]
        death = py_exception(
            ctx,
            rank,
            t_fail,
            frames,
            [
                "torch.distributed.DistBackendError: NCCL error in: "
                "/pytorch/torch/csrc/distributed/c10d/"
                "ProcessGroupNCCL.cpp:3012, unhandled cuda error (run with NCCL_DEBUG=INFO for "
                "details), "
                f"NCCL version {ctx.nccl}",
                "ncclUnhandledCudaError: Call to CUDA function failed.",
                "Last error:",
                "Cuda failure 2 'out of memory'",
            ],
        )
    elif v == "legacy-srun-l":
        death = py_exception(
            ctx, rank, t_fail, train_frames(ctx, "forward"), [oom_text(ctx, local, True)]
        )
    else:
        raise ValueError(v)
    return _finish_crash(ctx, run, t_fail, rank, death)


def sc_host_oom(ctx: Ctx) -> Outcome:
    handlers: dict[str, Callable[[Ctx, Run], Outcome]] = {
        "slurm-memcg": _oom_slurm_memcg,
        "dataloader-global-oom": _oom_dataloader_worker,
        "k8s-oomkilled": _oom_k8s_container,
        "k8s-silent-oomkill": _oom_k8s_container,
        "checkpoint-load-oom": _oom_checkpoint_load,
    }
    handler = handlers[ctx.spec.variant]
    pre_decoys(ctx)
    return handler(ctx, prologue(ctx))


def _oom_slurm_memcg(ctx: Ctx, run: Run) -> Outcome:
    """The job's cgroup on one node hits its limit; the kernel kills one rank (SIGKILL)."""
    spec, rng = ctx.spec, ctx.rng
    ni, node, local, rank = _culprit(ctx)
    t_fail = _t_fail(ctx)
    progress(ctx, run, t_fail)
    block = oom_kill_block(
        ctx,
        node,
        victim_pid=ctx.pid(rank),
        victim="python",
        invoker="python",
        memcg=f"/system.slice/slurmstepd.scope/job_{spec.job_id}",
        rss_gb=rng.uniform(180, 240),
    )
    ctx.kern_block(node, t_fail, block)
    ctx.jobout(
        t_fail + timedelta(seconds=1),
        f"slurmstepd: error: Detected 1 oom_kill event in StepId={spec.job_id}.0. Some of the "
        "step tasks have been OOM Killed.",
    )
    oc = _finish_crash(ctx, run, t_fail, rank, Death(t_fail + timedelta(milliseconds=40), -9))
    oc.step_state, oc.step_exit = "OUT_OF_MEMORY", "0:125"
    return oc


def _oom_dataloader_worker(ctx: Ctx, run: Run) -> Outcome:
    """The global OOM killer takes a DataLoader worker; its rank raises (a primary of its own)."""
    rng = ctx.rng
    ni, node, local, rank = _culprit(ctx)
    t_fail = _t_fail(ctx)
    progress(ctx, run, t_fail)
    wpid = ctx.pid(rank) + rng.randint(300, 900)
    ctx.kern_block(
        node,
        t_fail,
        oom_kill_block(
            ctx,
            node,
            victim_pid=wpid,
            victim="pt_data_worker",
            invoker="pt_data_worker",
            memcg=None,
            rss_gb=rng.uniform(300, 900),
        ),
    )
    dl = f"{PY_SITE}/torch/utils/data/dataloader.py"
    first = traceback_lines(
        [
            (dl, 1243, "_try_get_data", "data = self._data_queue.get(timeout=timeout)"),
            (
                "/usr/lib/python3.10/multiprocessing/queues.py",
                113,
                "get",
                "if not self._poll(timeout):",
            ),
            (
                f"{PY_SITE}/torch/utils/data/_utils/signal_handling.py",
                73,
                "handler",
                "_error_if_any_worker_fails()",
            ),
        ],
        [
            f"RuntimeError: DataLoader worker (pid {wpid}) is killed by signal: Killed. ",
            "",
            "The above exception was the direct cause of the following exception:",
            "",
        ],
    )
    frames = train_frames(ctx, "none") + [
        ("/workspace/llm/trainer.py", 229, "fit", "batch = next(self.train_iter)"),
        (dl, 701, "__next__", "data = self._next_data()"),
        (dl, 1448, "_next_data", "idx, data = self._get_data()"),
        (dl, 1412, "_get_data", "success, data = self._try_get_data()"),
        (
            dl,
            1256,
            "_try_get_data",
            'raise RuntimeError(f"DataLoader worker (pid(s) {pids_str}) exited unexpectedly") '
            "from e",
        ),
    ]
    tb = first + traceback_lines(
        frames, [f"RuntimeError: DataLoader worker (pid(s) {wpid}) exited unexpectedly"]
    )
    t_exc = t_fail + timedelta(seconds=1)
    ctx.out(rank, t_exc, [ctx.tb_prefix(rank) + x for x in tb])
    # memory.events counts every kill inside the step's cgroup, global OOM included
    ctx.jobout(
        t_fail + timedelta(seconds=1.5),
        f"slurmstepd: error: Detected 1 oom_kill event in StepId={ctx.spec.job_id}.0. Some "
        "of the step tasks have been OOM Killed.",
    )
    oc = _finish_crash(ctx, run, t_fail, rank, Death(t_exc + timedelta(milliseconds=600), 1))
    if ctx.spec.platform == "slurm":
        oc.step_state, oc.step_exit = "OUT_OF_MEMORY", "0:125"
    return oc


def _oom_k8s_container(ctx: Ctx, run: Run) -> Outcome:
    """A pod's memory limit: the cgroup OOM killer takes a worker, then the launcher (exit 137)."""
    rng, v = ctx.rng, ctx.spec.variant
    ni, node, local, rank = _culprit(ctx)
    t_fail = _t_fail(ctx)
    progress(ctx, run, t_fail)
    pid = ctx.pid(rank)
    cgroup = (
        f"/kubepods.slice/kubepods-pod{_hex(rng, 8)}_{_hex(rng, 4)}.slice/"
        f"cri-containerd-{_hex(rng, 64)}.scope"
    )
    block = oom_kill_block(
        ctx,
        node,
        victim_pid=pid,
        victim="python",
        invoker="python",
        memcg=cgroup,
        rss_gb=rng.uniform(200, 260),
    )
    ctx.kern_block(node, t_fail, block)
    if v == "k8s-oomkilled":
        t = t_fail + timedelta(milliseconds=500)
        ctx.agent(
            node,
            t,
            ctx.elog(
                node,
                t,
                "E",
                "multiprocessing/api.py",
                869,
                f"failed (exitcode: -9) local_rank: {local} (pid: {pid}) of "
                "binary: /usr/bin/python3",
            ),
        )
    t_gone = t_fail + timedelta(milliseconds=rng.randint(700, 1500))
    dead = {r: Death(t_gone, -9) for r in ctx.ranks_on(ni)}
    dead[rank] = Death(t_fail + timedelta(milliseconds=40), -9)
    t_end = collateral(ctx, run, t_fail=t_fail, dead=dead, lost=[ni])  # no summary from it
    ctx.node_end[ni], ctx.node_exit[ni] = t_gone, 137
    post_decoys(ctx, t_fail)
    oc = Outcome(t_end=t_end)
    oc.pods[ni] = {"exit": 137, "reason": "OOMKilled", "finished": t_gone}
    if v == "k8s-oomkilled":
        killed = next(x for x in block if "Killed process" in x)
        k8s_event(
            ctx,
            oc,
            t_fail + timedelta(seconds=2),
            node_ref(node.name),
            "OOMKilling",
            killed,
            warning=True,
            component="kernel-monitor",
            host=node.name,
        )
    k8s_failed(ctx, oc)
    return oc


def _oom_checkpoint_load(ctx: Ctx, run: Run) -> Outcome:
    """Every rank of one node loads a checkpoint into host RAM; the OOM killer takes two."""
    spec, rng = ctx.spec, ctx.rng
    ni, node, local, rank = _culprit(ctx)
    t_fail = run.t_init + timedelta(seconds=rng.uniform(40, 90))
    for r in range(ctx.world):
        t = run.t_init + timedelta(seconds=2 + r % 5)
        ctx.out(
            r,
            t,
            ctx.pylog(
                r,
                t,
                "INFO",
                "checkpoint",
                f"loading checkpoint /checkpoints/{spec.job_name}/"
                f"step_{run.step0:08d} (map_location=cpu)",
            ),
        )
    killed = [rank, ctx.rank_at(ni, (local + 3) % ctx.gpn)]
    for i, r in enumerate(killed):
        ctx.kern_block(
            node,
            t_fail + timedelta(milliseconds=i * 380),
            oom_kill_block(
                ctx,
                node,
                victim_pid=ctx.pid(r),
                victim="python",
                invoker="python",
                memcg=None,
                rss_gb=rng.uniform(140, 170),
            ),
        )
    ctx.jobout(
        t_fail + timedelta(milliseconds=900),
        f"slurmstepd: error: Detected {len(killed)} oom_kill events in StepId={spec.job_id}.0. "
        "Some of the step tasks have been OOM Killed.",
    )
    dead = {
        r: Death(t_fail + timedelta(milliseconds=i * 380 + 40), -9) for i, r in enumerate(killed)
    }
    kill_at = t_fail + timedelta(seconds=1.2)
    batch = sorted(n.name for n in ctx.nodes)[0]
    ctx.jobout(
        kill_at,
        [
            f"srun: Terminating StepId={spec.job_id}.0",
            f"slurmstepd: error: *** STEP {spec.job_id}.0 ON {batch} CANCELLED AT "
            f"{_slurm_time(ctx, kill_at)} ***",
        ],
    )
    t_end = collateral(
        ctx, run, t_fail=t_fail, dead=dead, mode="kill", kill_at=kill_at, peermem=False
    )
    post_decoys(ctx, t_fail)
    return Outcome(t_end=t_end, step_state="OUT_OF_MEMORY", step_exit="0:125", exp_rank=None)


def sc_application_error(ctx: Ctx) -> Outcome:
    rng, v = ctx.rng, ctx.spec.variant
    ni, node, local, rank = _culprit(ctx)
    pre_decoys(ctx)
    if v == "import-error-node":
        return _import_error(ctx)
    run = prologue(ctx)
    t_fail = _t_fail(ctx)
    progress(ctx, run, t_fail)
    pid = ctx.pid(rank)
    if v == "dataset-keyerror":
        key = f"shard-{rng.randint(0, 2047):05d}/seq-{rng.randint(0, 99999):06d}"
        frames = train_frames(ctx, "none") + [
            ("/workspace/llm/trainer.py", 229, "fit", "batch = next(self.train_iter)"),
            (
                f"{PY_SITE}/torch/utils/data/dataloader.py",
                701,
                "__next__",
                "data = self._next_data()",
            ),
            (
                f"{PY_SITE}/torch/utils/data/dataloader.py",
                1465,
                "_next_data",
                "return self._process_data(data)",
            ),
            (f"{PY_SITE}/torch/utils/data/dataloader.py", 1491, "_process_data", "data.reraise()"),
            (f"{PY_SITE}/torch/_utils.py", 715, "reraise", "raise exception"),
        ]
        worker = rng.randint(0, 7)
        exc = [
            f"KeyError: Caught KeyError in DataLoader worker process {worker}.",
            "Original Traceback (most recent call last):",
            f'  File "{PY_SITE}/torch/utils/data/_utils/worker.py", line 351, in _worker_loop',
            "    data = fetcher.fetch(index)  # type: ignore[possibly-undefined]",
            f'  File "{PY_SITE}/torch/utils/data/_utils/fetch.py", line 52, in fetch',
            "    data = [self.dataset[idx] for idx in possibly_batched_index]",
            '  File "/workspace/llm/data/packed_dataset.py", line 187, in __getitem__',
            "    meta = self.index[key]",
            f"KeyError: '{key}'",
            "",
        ]
        death = py_exception(ctx, rank, t_fail, frames, exc)
    elif v == "missing-shard":
        path = f"/lustre/datasets/fineweb-edu/tokenized/shard-{rng.randint(0, 4095):05d}.bin"
        frames = train_frames(ctx, "none") + [
            ("/workspace/llm/trainer.py", 229, "fit", "batch = next(self.train_iter)"),
            (
                "/workspace/llm/data/packed_dataset.py",
                141,
                "__iter__",
                "yield from self._read_shard(shard)",
            ),
            (
                "/workspace/llm/data/packed_dataset.py",
                96,
                "_read_shard",
                'tokens = np.memmap(path, dtype=np.uint16, mode="r")',
            ),
            (
                "/usr/local/lib/python3.10/dist-packages/numpy/core/memmap.py",
                229,
                "__new__",
                "f_ctx = open(os_fspath(filename), ('r' if mode == 'c' else mode)+'b')",
            ),
        ]
        death = py_exception(
            ctx,
            rank,
            t_fail,
            frames,
            [f"FileNotFoundError: [Errno 2] No such file or directory: '{path}'"],
        )
    elif v == "assertion-rank0":
        frames = train_frames(ctx, "forward") + [
            (
                "/workspace/llm/model/transformer.py",
                388,
                "forward",
                "h = layer(h, freqs_cis, mask)",
            ),
            (
                f"{PY_SITE}/torch/nn/modules/module.py",
                1747,
                "_call_impl",
                "return forward_call(*args, **kwargs)",
            ),
            (
                "/workspace/llm/model/attention.py",
                142,
                "forward",
                'assert q.shape[-2] == k.shape[-2], f"seq mismatch {q.shape} vs {k.shape}"',
            ),
        ]
        seq_len = rng.choice((4096, 8192))
        death = py_exception(
            ctx,
            rank,
            t_fail,
            frames,
            [
                f"AssertionError: seq mismatch torch.Size([2, 32, {seq_len}, 128]) vs "
                "torch.Size([2, 32, "
                f"{seq_len - 2}, 128])"
            ],
        )
    elif v in ("xid13-illegal-address", "xid31-triton-mmu"):
        if v == "xid13-illegal-address":
            gpc, tpc = rng.randint(0, 7), rng.randint(0, 8)
            kmsgs = [
                xid_line(
                    ctx,
                    local,
                    13,
                    f"Graphics SM Warp Exception on (GPC {gpc}, TPC {tpc}, SM 0): "
                    "Out Of Range Address",
                ),
                xid_line(
                    ctx,
                    local,
                    13,
                    f"Graphics SM Global Exception on (GPC {gpc}, TPC {tpc}, SM 0): "
                    "Multiple Warp Errors",
                ),
                xid_line(
                    ctx,
                    local,
                    13,
                    "Graphics Exception: ESR 0x524648=0x101000e 0x52464c=0x24 "
                    "0x524650=0x0 0x524644=0x1174",
                ),
                xid_line(ctx, local, 43, "Ch 00000008", pid),
            ]
            kernel_frame = (
                "/workspace/llm/kernels/fused_rope.py",
                88,
                "forward",
                "_fused_rope_fwd[grid](q, k, cos, sin, q.stride(0), BLOCK=block)",
            )
        else:
            kmsgs = [
                xid_line(
                    ctx,
                    local,
                    31,
                    f"Ch 0000003b, intr 00000000. MMU Fault: ENGINE GRAPHICS "
                    f"GPCCLIENT_T1_{rng.randint(0, 15)} faulted @ "
                    f"0x7f{_hex(rng, 2)}_{_hex(rng, 8)}. "
                    "Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
                    pid,
                )
            ]
            kernel_frame = (
                "/workspace/llm/kernels/moe_dispatch.py",
                133,
                "dispatch",
                "_scatter_tokens_kernel[grid](x, idx, out, n_tokens, BLOCK_M=64)",
            )
        ctx.kern_block(node, t_fail, kmsgs)
        frames = train_frames(ctx, "forward") + [
            kernel_frame,
            (
                f"{PY_SITE}/triton/runtime/jit.py",
                345,
                "<lambda>",
                "return lambda *args, **kwargs: self.run(grid=grid, warmup=False, *args, **kwargs)",
            ),
        ]
        death = py_exception(
            ctx,
            rank,
            t_fail + timedelta(seconds=rng.uniform(0.2, 2)),
            frames,
            [
                "RuntimeError: CUDA error: an illegal memory access was encountered",
                *CUDA_ASYNC_NOTE,
            ],
        )
    else:
        raise ValueError(v)
    return _finish_crash(ctx, run, t_fail, rank, death)


def _import_error(ctx: Ctx) -> Outcome:
    """A node with a stale image: all its ranks die at import, before NCCL is ever up."""
    spec, rng = ctx.spec, ctx.rng
    ni = spec.culprit_node
    assert ni is not None
    run = prologue(ctx, init=False)
    t_fail = spec.start + timedelta(seconds=rng.uniform(9, 16))
    frames = [
        ("/workspace/train.py", 9, "<module>", "from llm.model import build_model"),
        (
            "/workspace/llm/model/__init__.py",
            3,
            "<module>",
            "from .attention import FlashSelfAttention",
        ),
        (
            "/workspace/llm/model/attention.py",
            12,
            "<module>",
            "from flash_attn import flash_attn_func",
        ),
        (
            f"{PY_SITE}/flash_attn/__init__.py",
            3,
            "<module>",
            "from flash_attn.flash_attn_interface import (",
        ),
        (
            f"{PY_SITE}/flash_attn/flash_attn_interface.py",
            10,
            "<module>",
            "import flash_attn_2_cuda as flash_attn_cuda",
        ),
    ]
    exc = [
        f"ImportError: {PY_SITE}/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined "
        "symbol: "
        "_ZN3c104cuda9SetDeviceEi"
    ]
    dead = {}
    for r in ctx.ranks_on(ni):
        t = t_fail + timedelta(milliseconds=rng.randint(0, 900))
        ctx.out(r, t, traceback_lines(frames, exc))
        dead[r] = Death(t + timedelta(milliseconds=200), 1)
    for r in range(ctx.world):
        if ctx.node_idx(r) != ni:
            t = t_fail - timedelta(seconds=rng.uniform(1, 4))
            ctx.out(
                r,
                t,
                ctx.pylog(
                    r,
                    t,
                    "INFO",
                    "trainer",
                    f"initializing process group (rank={r}, world_size={ctx.world}, backend=nccl)",
                ),
            )
    kill_at = max(d.t for d in dead.values()) + timedelta(seconds=1.5)
    batch = sorted(n.name for n in ctx.nodes)[0]
    ctx.jobout(
        kill_at - timedelta(milliseconds=50),
        [
            f"srun: Terminating StepId={spec.job_id}.0",
            f"slurmstepd: error: *** STEP {spec.job_id}.0 ON {batch} CANCELLED AT "
            f"{_slurm_time(ctx, kill_at)} ***",
        ],
    )
    t_end = collateral(
        ctx, run, t_fail=t_fail, dead=dead, mode="kill", kill_at=kill_at, peermem=False
    )
    post_decoys(ctx, t_fail)
    oc = outcome_failed(ctx, t_end)
    oc.exp_rank = None
    return oc


def sc_network_fault(ctx: Ctx) -> Outcome:
    spec, rng, v = ctx.spec, ctx.rng, ctx.spec.variant
    ni, node, k, rank = _culprit(ctx)
    ctx.socket_net = v == "bond-eth-down"
    pre_decoys(ctx)
    run = prologue(ctx)
    t_fail = _t_fail(ctx)
    progress(ctx, run, t_fail)
    hca, pci = node.hcas[k], f"0000:{HCA_BUS[k]}:00.0"
    if v in ("ib-link-down", "link-flap-recovered", "k8s-roce-port-down"):
        kmsgs = [f"mlx5_core {pci} {hca}: Port: 1 Link DOWN"]
        if v == "k8s-roce-port-down":
            kmsgs.insert(0, f"mlx5_core {pci} eth{k + 1}: Link down")
        ctx.kern_block(node, t_fail, kmsgs)
        if v == "link-flap-recovered":
            ctx.kern(
                node,
                t_fail + timedelta(seconds=rng.uniform(6, 14)),
                f"mlx5_core {pci} {hca}: Port: 1 Link ACTIVE",
            )
    elif v == "module-high-temp":
        ctx.kern(
            node,
            t_fail - timedelta(seconds=rng.uniform(1, 3)),
            f"mlx5_core {pci}: mlx5_port_module_event:1147:(pid 0): Port module event[error]: "
            f"module {k}, "
            "Cable error, High Temperature",
        )
        ctx.kern(node, t_fail, f"mlx5_core {pci} {hca}: Port: 1 Link DOWN")
    elif v == "bond-eth-down":
        ctx.kern_block(
            node,
            t_fail,
            [
                "mlx5_core 0000:3b:00.0 ens1f0np0: Link down",
                "bond0: (slave ens1f0np0): link status definitely down, disabling slave",
                "mlx5_core 0000:3b:00.1 ens1f1np1: Link down",
                "bond0: (slave ens1f1np1): link status definitely down, disabling slave",
                "bond0: now running without any active interface!",
            ],
        )
    elif v != "peer-ip-only":
        raise ValueError(v)
    # who notices: the peers on the same rail, then the culprit's own rank about its neighbour
    remote: dict[int, tuple[datetime, str, list[str]]] = {}
    others = [i for i in ctx.order if i != ni]
    neighbour = ctx.nodes[others[0]]
    for r in range(ctx.world):
        on = ctx.node_idx(r)
        if ctx.local(r) != k:
            continue
        t_err = t_fail + timedelta(seconds=rng.uniform(7, 24))
        peer = neighbour if on == ni else node
        if ctx.socket_net:
            warn = []
            for ch in range(1 if on == ni else rng.randint(2, 3)):
                port = 40000 + (r * 7919 + ch * 131) % 20000
                err = (
                    f"socketProgressOpt: Call to recv from {peer.ip}<{port}> failed : "
                    "Connection timed out"
                )
                warn += [
                    f"{ctx.nccl_prefix(r, 91)} misc/socket.cc:49 NCCL WARN {err}",
                    f"{ctx.nccl_prefix(r, 91)} NCCL INFO misc/socket.cc:778 -> 6",
                ]
        else:
            warn = []
            chans = 1 if on == ni else rng.randint(2, 3)
            for ch in range(chans):
                warn += ib_completion_lines(ctx, r, peer, channel=ch)
            err = warn[0].split("NCCL WARN ", 1)[1]
            if on == ni and v == "peer-ip-only":
                warn.insert(
                    0,
                    f"{ctx.nccl_prefix(r, 88)} NCCL WARN NET/IB : {hca}:1 Got async event : port "
                    "error",
                )
        remote[r] = (t_err, err, warn)
    t_end = collateral(ctx, run, t_fail=t_fail, dead={}, remote=remote)
    post_decoys(ctx, t_fail)
    oc = outcome_failed(ctx, t_end, step_exit="1:0" if ctx.has_agent else "0:6")
    oc.exp_rank = None
    if spec.platform == "k8s":
        k8s_failed(ctx, oc, failed=len(ctx.nodes))
    return oc


def sc_node_failure(ctx: Ctx) -> Outcome:
    spec, rng, v = ctx.spec, ctx.rng, ctx.spec.variant
    ni = spec.culprit_node
    assert ni is not None
    node = ctx.nodes[ni]
    pre_decoys(ctx)
    run = prologue(ctx)
    t_fail = _t_fail(ctx)
    progress(ctx, run, t_fail)
    if v == "mce-then-silence":
        ctx.kern_block(
            node,
            t_fail - timedelta(seconds=1.2),
            [
                "mce: [Hardware Error]: Machine check events logged",
                f"mce: [Hardware Error]: CPU {rng.randint(0, 191)}: Machine Check Exception: 5 "
                "Bank 12: "
                "be20000000800400",
                "mce: [Hardware Error]: RIP !INEXACT! 10:<ffffffff9a2c3e80> {intel_idle+0x70/0xb0}",
                f"mce: [Hardware Error]: TSC 1f3a{_hex(rng, 8)} ADDR 3fff{_hex(rng, 8)} MISC 86 ",
                f"mce: [Hardware Error]: PROCESSOR 0:806f8 TIME {int(t_fail.timestamp())} SOCKET "
                "1 APIC 54 "
                "microcode 2b000590",
            ],
            step_us=400,
        )
    remote: dict[int, tuple[datetime, str, list[str]]] = {}
    for other in range(len(ctx.nodes)):
        if other == ni:
            continue
        for local in rng.sample(range(ctx.gpn), k=min(2, ctx.gpn)):
            r = ctx.rank_at(other, local)
            warn = ib_completion_lines(ctx, r, node)
            remote[r] = (
                t_fail + timedelta(seconds=rng.uniform(8, 30)),
                warn[0].split("NCCL WARN ", 1)[1],
                warn,
            )
    if spec.platform == "slurm":
        t_nf = t_fail + timedelta(seconds=300 + rng.uniform(2, 40))
        batch = sorted(n.name for n in ctx.nodes)[0]
        ctx.jobout(
            t_nf,
            [
                f"srun: error: Node failure on {node.name}",
                f"slurmstepd: error: *** JOB {spec.job_id} ON {batch} CANCELLED AT "
                f"{_slurm_time(ctx, t_nf)} DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***",
            ],
        )
        t_end = collateral(
            ctx, run, t_fail=t_fail, dead={}, lost=[ni], remote=remote, deadline=t_nf
        )
        t_end = max(t_end, t_nf + timedelta(seconds=rng.uniform(1, 3)))
        ctx.truncate_node(ni, t_fail)
        post_decoys(ctx, t_fail)
        oc = Outcome(
            t_end=t_end,
            job_state="NODE_FAIL",
            job_exit="0:0",
            step_state="NODE_FAIL",
            step_exit="0:0",
            batch_state="CANCELLED",
            batch_exit="0:15",
            reason="NodeDown",
            failed_node=node.name,
            exp_rank=None,
        )
        oc.sinfo.append(("Not responding", "slurm", t_nf, node.name))
        oc.node_state[node.name] = ("DOWN+NOT_RESPONDING", "Not responding", t_nf)
        return oc
    t_nr = t_fail + timedelta(seconds=40 + rng.uniform(0, 5))
    t_end = collateral(ctx, run, t_fail=t_fail, dead={}, lost=[ni], remote=remote)
    ctx.truncate_node(ni, t_fail)
    post_decoys(ctx, t_fail)
    oc = Outcome(t_end=t_end, exp_rank=None)
    oc.pods[ni] = {"state": "running", "not_ready": True, "ready_changed": t_nr, "phase": "Running"}
    unknown = {
        "status": "Unknown",
        "reason": "NodeStatusUnknown",
        "message": "Kubelet stopped posting node status.",
        "lastHeartbeatTime": _kt(t_fail - timedelta(seconds=3)),
        "lastTransitionTime": _kt(t_nr),
    }
    oc.k8s_nodes[node.name] = {
        "heartbeat": t_fail - timedelta(seconds=3),
        "ready": unknown,
        **{k: dict(unknown) for k in ("MemoryPressure", "DiskPressure", "PIDPressure")},
        "taints": [
            {
                "effect": "NoSchedule",
                "key": "node.kubernetes.io/unreachable",
                "timeAdded": _kt(t_nr),
            },
            {
                "effect": "NoExecute",
                "key": "node.kubernetes.io/unreachable",
                "timeAdded": _kt(t_nr),
            },
        ],
    }
    default_k8s_events(ctx, oc)
    k8s_event(
        ctx,
        oc,
        t_nr,
        node_ref(node.name),
        "NodeNotReady",
        f"Node {node.name} status is now: NodeNotReady",
        component="node-controller",
    )
    k8s_event(
        ctx,
        oc,
        t_nr,
        pod_ref(ctx, node),
        "NodeNotReady",
        "Node is not ready",
        warning=True,
        component="node-controller",
    )
    k8s_event(
        ctx,
        oc,
        t_nr + timedelta(seconds=300),
        pod_ref(ctx, node),
        "TaintManagerEviction",
        f"Marking for deletion Pod ml-train/{node.pod}",
        component="taint-eviction-controller",
    )
    ends = sorted(t for i, t in ctx.node_end.items() if i != ni)
    job_failed_event(ctx, oc, ends[0] + timedelta(seconds=2), len(ctx.nodes) - 1)
    return oc


def flight_recorder(
    ctx: Ctx,
    run: Run,
    rank: int,
    last_seq: int,
    states: dict[int, str],
    t_of: Callable[[int], datetime],
    pg_status: tuple[int, int, int],
) -> None:
    names = {
        "ALLREDUCE": "nccl:all_reduce",
        "_ALLGATHER_BASE": "nccl:_all_gather_base",
        "_REDUCE_SCATTER_BASE": "nccl:_reduce_scatter_base",
        "BROADCAST": "nccl:broadcast",
    }
    entries = []
    for seq in range(last_seq - 9, last_seq + 1):
        state = states.get(seq, "completed")
        created = t_of(seq)
        ns = int(created.timestamp() * 1e9)
        entries.append(
            {
                "record_id": seq - run.seq0,
                "pg_id": 0,
                "process_group": ["0", "default_pg"],
                "collective_seq_id": seq,
                "p2p_seq_id": 0,
                "op_id": seq,
                "profiling_name": names[run.op],
                "time_created_ns": ns,
                "duration_ms": round(3.2 + (seq % 7) * 0.41, 3) if state == "completed" else None,
                "input_sizes": [[run.numel_in]],
                "input_dtypes": ["BFloat16"],
                "output_sizes": [[run.numel_out]],
                "output_dtypes": ["BFloat16"],
                "state": state,
                "time_discovered_started_ns": ns + 91000 if state != "scheduled" else None,
                "time_discovered_completed_ns": ns + 4_100_000 if state == "completed" else None,
                "retired": state == "completed",
                "timeout_ms": ctx.spec.timeout_ms,
                "is_p2p": False,
                "frames": [
                    {
                        "name": "all_reduce" if run.op == "ALLREDUCE" else "reduce_scatter_tensor",
                        "filename": f"{PY_SITE}/torch/distributed/distributed_c10d.py",
                        "line": 2501,
                    },
                    {
                        "name": "_reduce_grad",
                        "filename": f"{PY_SITE}/torch/distributed/fsdp/_runtime_utils.py",
                        "line": 1093,
                    },
                ],
            }
        )
    enq, started, done = pg_status
    doc = {
        "version": "2.4",
        "pg_config": {
            "0": {"name": "0", "desc": "default_pg", "ranks": str(list(range(ctx.world)))}
        },
        "pg_status": {
            "0": {
                "last_enqueued_collective": enq,
                "last_started_collective": started,
                "last_completed_collective": done,
            }
        },
        "entries": entries,
    }
    ctx.sink(f"flight_recorder/nccl_trace_rank_{rank}.json").raw = json.dumps(doc, indent=1) + "\n"


def sc_hang(ctx: Ctx) -> Outcome:
    spec, rng, v = ctx.spec, ctx.rng, ctx.spec.variant
    ni, node, local, stuck = _culprit(ctx)
    pre_decoys(ctx)
    run = prologue(ctx)
    t_stuck = _t_fail(ctx)
    if v == "rank0-only-barrier":
        return _rank0_barrier(ctx, run, t_stuck)
    progress(ctx, run, t_stuck)
    seq = run.seq_at(t_stuck)
    if v in ("dataloader-stall", "k8s-stuck-worker"):
        shard = rng.randint(0, 4095)
        ctx.out(
            stuck,
            t_stuck - timedelta(seconds=0.4),
            ctx.pylog(
                stuck,
                t_stuck - timedelta(seconds=0.4),
                "INFO",
                "data",
                f"rank {stuck}: opening shard {shard:05d} (/lustre/datasets/fineweb-edu/tokenized/"
                f"shard-{shard:05d}.bin)",
            ),
        )
    elif v == "nfs-checkpoint-stall":
        ctx.out(
            stuck,
            t_stuck - timedelta(seconds=0.2),
            ctx.pylog(
                stuck,
                t_stuck - timedelta(seconds=0.2),
                "INFO",
                "checkpoint",
                f"rank {stuck}: writing shard to "
                f"/nfs/checkpoints/{spec.job_name}/step_{run.step_at(t_stuck):08d}/"
                f"__{stuck}_0.distcp",
            ),
        )
        pid = ctx.pid(stuck)
        ctx.kern(
            node,
            t_stuck + timedelta(seconds=rng.uniform(4, 9)),
            "nfs: server nfs01 not responding, still trying",
        )
        t_hung = t_stuck + timedelta(seconds=123 + rng.uniform(0, 2))
        ctx.kern_block(
            node,
            t_hung,
            [
                f"INFO: task python:{pid} blocked for more than 120 seconds.",
                "      Tainted: P           OE     5.15.0-105-generic #115-Ubuntu",
                '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.',
                f"task:python          state:D stack:    0 pid:{pid} ppid:{node.agent_pid} "
                "flags:0x00004002",
                "Call Trace:",
                " <TASK>",
                " __schedule+0x2cd/0x890",
                " schedule+0x69/0x110",
                " rpc_wait_bit_killable+0x11/0x70 [sunrpc]",
                " __wait_on_bit+0x36/0xa0",
                " nfs_wait_on_request+0x39/0x50 [nfs]",
                " </TASK>",
            ],
            step_us=30,
        )
    enq_for = (lambda r: seq + 2) if v == "seqnum-behind" else None  # noqa: E731
    t_end = collateral(ctx, run, t_fail=t_stuck, dead={}, skip_watchdog=[stuck], enq_for=enq_for)
    post_decoys(ctx, t_stuck)
    if "flight_recorder" in spec.extras:
        dump_ranks = sorted(
            {
                stuck,
                0,
                *ctx.ranks_on(ni)[:3],
                *(ctx.rank_at(i, local) for i in range(len(ctx.nodes))),
            }
        )
        t0 = run.t_init

        def t_of(s: int) -> datetime:
            return t0 + timedelta(seconds=(s - run.seq0) / run.coll_per_step * run.step_s)

        for r in dump_ranks:
            if r == stuck:
                flight_recorder(ctx, run, r, seq - 1, {}, t_of, (seq - 1, seq - 1, seq - 1))
            else:
                flight_recorder(
                    ctx,
                    run,
                    r,
                    seq + 2,
                    {seq: "started", seq + 1: "scheduled", seq + 2: "scheduled"},
                    t_of,
                    (seq + 2, seq, seq - 1),
                )
    oc = outcome_failed(ctx, t_end)
    if spec.platform == "k8s":
        k8s_failed(ctx, oc, failed=len(ctx.nodes))
    return oc


def _rank0_barrier(ctx: Ctx, run: Run, t_done: datetime) -> Outcome:
    """Only rank 0 enters a barrier (inside `if rank == 0:`); everyone else has finished."""
    spec, rng = ctx.spec, ctx.rng
    last = progress(ctx, run, t_done)
    seq = run.seq_at(t_done) + 1
    for r in range(ctx.world):
        t = t_done + timedelta(seconds=rng.uniform(0.5, 3))
        if r == 0:
            ctx.out(
                0,
                t,
                ctx.pylog(
                    0,
                    t,
                    "INFO",
                    "trainer",
                    f"training finished at step {last}; saving final checkpoint on rank 0",
                ),
            )
            continue
        if r % ctx.gpn == 0:
            ctx.out(r, t, ctx.pylog(r, t, "INFO", "trainer", "training finished, exiting"))
    timeout = timedelta(milliseconds=spec.timeout_ms)
    t_to = t_done + timedelta(seconds=4) + timeout + timedelta(milliseconds=rng.randint(20, 900))
    run0 = Run(**{**run.__dict__, "op": "ALLREDUCE", "numel_in": 1, "numel_out": 1})
    ctx.out(
        0,
        t_to,
        watchdog_lines(
            ctx, 0, t_to, run0, seq, spec.timeout_ms + rng.randint(10, 90), seq, seq - 1, run.frames
        ),
    )
    master = ctx.order[0]
    for i, node in enumerate(ctx.nodes):
        if i == master:
            continue
        t = t_done + timedelta(seconds=rng.uniform(4, 6))
        ctx.agent(
            node,
            t,
            [
                ctx.elog(
                    node,
                    t,
                    "I",
                    "agent/server/api.py",
                    879,
                    "[default] worker group successfully finished. "
                    "Waiting 300 seconds for other agents to finish.",
                ),
                ctx.elog(
                    node,
                    t,
                    "I",
                    "agent/server/api.py",
                    932,
                    "Local worker group finished "
                    "(WorkerState.SUCCEEDED). Waiting 300 seconds for other agents to finish",
                ),
            ],
        )
        t2 = t + timedelta(seconds=300.4)
        ctx.agent(
            node,
            t2,
            ctx.elog(
                node,
                t2,
                "I",
                "agent/server/api.py",
                946,
                f"Done waiting for other agents. Elapsed: {300.4 + rng.random():.4f} seconds",
            ),
        )
        ctx.node_end[i], ctx.node_exit[i] = t2 + timedelta(milliseconds=300), 0
    deaths = {0: Death(t_to + timedelta(milliseconds=300), -6)}
    for r in ctx.ranks_on(master):
        if r:
            deaths[r] = Death(t_done + timedelta(seconds=rng.uniform(3, 4)), 0)
    if ctx.has_agent:
        t_sum = t_to + timedelta(seconds=1.1)
        m = ctx.nodes[master]
        ctx.agent(
            m,
            t_to + timedelta(milliseconds=700),
            ctx.elog(
                m,
                t_to + timedelta(milliseconds=700),
                "E",
                "multiprocessing/api.py",
                869,
                f"failed (exitcode: -6) local_rank: 0 (pid: {ctx.pid(0)}) of binary: "
                "/usr/bin/python3",
            ),
        )
        ctx.agent(
            m,
            t_sum,
            traceback_lines(
                ELASTIC_TB,
                [
                    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
                    "=" * 60,
                    "train.py FAILED",
                    "-" * 60,
                    "Failures:",
                    "  <NO_OTHER_FAILURES>",
                    "-" * 60,
                    "Root Cause (first observed failure):",
                    *_failure_entry(ctx, 0, m, 0, deaths[0]),
                    "=" * 60,
                ],
            ),
        )
        ctx.node_end[master], ctx.node_exit[master] = t_sum + timedelta(milliseconds=250), 1
    else:
        ctx.node_end[master], ctx.node_exit[master] = deaths[0].t, 1
    if spec.platform == "slurm":
        ctx.jobout(
            ctx.node_end[master], srun_exit_line(ctx, master, [0], 1 if ctx.has_agent else -6)
        )
    t_end = max(ctx.node_end.values()) + timedelta(seconds=1.5)
    post_decoys(ctx, t_to)
    oc = outcome_failed(ctx, t_end)
    if spec.platform == "k8s":
        for i in ctx.node_end:
            if ctx.node_exit[i] == 0:
                oc.pods[i] = {"exit": 0, "reason": "Completed"}
        k8s_failed(ctx, oc)
    return oc


def _cancel(ctx: Ctx, why: str) -> Outcome:
    """The scheduler ends a healthy job (time limit, preemption): SIGTERM everywhere."""
    spec, rng = ctx.spec, ctx.rng
    pre_decoys(ctx)
    run = prologue(ctx)
    t_kill = spec.start + timedelta(seconds=spec.fail_after_s + rng.uniform(0, 40))
    if why == "TIME LIMIT":
        ctx.time_limit = timedelta(seconds=spec.fail_after_s)
        t_kill = spec.start + ctx.time_limit + timedelta(seconds=rng.uniform(1, 50))
    progress(ctx, run, t_kill, checkpoint_every=rng.choice((500, 1000, 2000)))
    batch = sorted(n.name for n in ctx.nodes)[0]
    ctx.jobout(
        t_kill,
        [
            f"slurmstepd: error: *** JOB {spec.job_id} ON {batch} CANCELLED AT "
            f"{_slurm_time(ctx, t_kill)} DUE TO {why} ***",
            f"slurmstepd: error: *** STEP {spec.job_id}.0 ON {batch} CANCELLED AT "
            f"{_slurm_time(ctx, t_kill)} "
            f"DUE TO {why} ***",
            "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
        ],
    )
    if "noisy_shutdown" in spec.decoys:
        noisy = rng.sample(range(ctx.world), k=min(6, ctx.world))
        for r in noisy:
            tt = t_kill + timedelta(milliseconds=rng.randint(40, 90))
            peer = ctx.nodes[(ctx.node_idx(r) + 1) % len(ctx.nodes)]
            ctx.out(
                r,
                tt,
                remote_error_lines(
                    ctx,
                    r,
                    tt,
                    f"socketProgressOpt: Call to recv from {peer.ip}"
                    f"<{40000 + r * 13}> failed : Connection reset by peer",
                ),
            )
    t_end = collateral(ctx, run, t_fail=t_kill, dead={}, mode="kill", kill_at=t_kill)
    if spec.platform == "slurm":
        ctx.jobout(
            t_end - timedelta(milliseconds=500), f"srun: Force Terminated StepId={spec.job_id}.0"
        )
    post_decoys(ctx, t_kill)
    state = "TIMEOUT" if why == "TIME LIMIT" else "PREEMPTED"
    return Outcome(
        t_end=t_end,
        job_state=state,
        job_exit="0:0",
        step_state="CANCELLED",
        step_exit="0:15",
        batch_state="CANCELLED",
        batch_exit="0:15",
        reason="TimeLimit" if why == "TIME LIMIT" else "Preempted",
        exp_rank=None,
        exp_gpu=None,
    )


def sc_time_limit(ctx: Ctx) -> Outcome:
    return _cancel(ctx, "TIME LIMIT")


def sc_preempted(ctx: Ctx) -> Outcome:
    if ctx.spec.platform == "slurm":
        return _cancel(ctx, "PREEMPTION")
    spec, rng = ctx.spec, ctx.rng
    ni = spec.culprit_node if spec.culprit_node is not None else 1
    node = ctx.nodes[ni]
    pre_decoys(ctx)
    run = prologue(ctx)
    t_pre = _t_fail(ctx)
    progress(ctx, run, t_pre)
    dead = {
        r: Death(t_pre + timedelta(milliseconds=rng.randint(300, 1200)), -15)
        for r in ctx.ranks_on(ni)
    }
    remote = {}
    for r in range(ctx.world):
        if ctx.node_idx(r) != ni and ctx.local(r) in (0, ctx.gpn // 2):
            port = 40000 + (r * 7919) % 20000
            err = (
                f"socketProgressOpt: Call to recv from {node.ip}<{port}> failed : "
                "Connection reset by peer"
            )
            remote[r] = (
                t_pre + timedelta(seconds=rng.uniform(1.5, 6)),
                err,
                [f"{ctx.nccl_prefix(r, 91)} misc/socket.cc:49 NCCL WARN {err}"],
            )
    t_end = collateral(ctx, run, t_fail=t_pre, dead=dead, remote=remote, sigterm_nodes={ni: t_pre})
    post_decoys(ctx, t_pre)
    oc = Outcome(t_end=t_end, exp_rank=None, exp_gpu=None)
    oc.pods[ni] = {"exit": 143, "reason": "Error", "finished": ctx.node_end[ni]}
    default_k8s_events(ctx, oc)
    k8s_event(
        ctx,
        oc,
        t_pre - timedelta(milliseconds=400),
        pod_ref(ctx, node),
        "Preempted",
        f"Preempted by pod {_uuid(rng)} on node {node.name}",
        component="default-scheduler",
    )
    k8s_event(
        ctx,
        oc,
        t_pre - timedelta(milliseconds=200),
        pod_ref(ctx, node),
        "Killing",
        "Stopping container pytorch",
        host=node.name,
    )
    job_failed_event(ctx, oc, ctx.node_end[ni] + timedelta(seconds=1))
    return oc


SCENARIOS: dict[str, Callable[[Ctx], Outcome]] = {
    "gpu_hardware": sc_gpu_hardware,
    "gpu_oom": sc_gpu_oom,
    "host_oom": sc_host_oom,
    "application_error": sc_application_error,
    "network_fault": sc_network_fault,
    "node_failure": sc_node_failure,
    "hang": sc_hang,
    "time_limit": sc_time_limit,
    "preempted": sc_preempted,
}


# --------------------------------------------------------------------------- the suite

AGENT_LAYOUTS: tuple[LayoutName, ...] = ("torchrun_node", "torchrun_rankfiles")
SRUN_LAYOUTS: tuple[LayoutName, ...] = ("srun_per_rank", "srun_l")
_VOLUME = (
    "the culprit node prints the fewest error lines: torchelastic SIGTERMs its siblings "
    "within a second, while every other node prints NCCL watchdog timeouts ~{timeout} min later"
)


@dataclass(frozen=True)
class Recipe:
    category: str
    variant: str
    platform: Platform = "slurm"
    misleading: bool = False
    retry: bool | None = False
    notes: str = ""
    decoys: tuple[str, ...] = ()
    kill: bool = False
    layouts: tuple[LayoutName, ...] = ()
    torch: tuple[TorchStyle, ...] = ()
    extras: tuple[str, ...] = ()
    sched: str | None = None
    culprit: str = "any"  # any | master | not_master
    culprit_kernel: str | None = "keep"  # keep | None (missing) | a style
    tz: str | None = None  # None: random, "UTC", "local": a non-UTC zone
    nodes: tuple[int, ...] = ()
    gpn: tuple[int, ...] = ()


RECIPES: tuple[Recipe, ...] = (
    # round 1
    Recipe(
        "gpu_hardware",
        "xid79",
        misleading=True,
        decoys=("xid45", "xid43"),
        layouts=AGENT_LAYOUTS,
        notes="Xid 79 (fell off the bus) on {node} {bus} behind rank {rank}; "
        + _VOLUME
        + "; an Xid 45/43 on another node comes after the kill and is a symptom",
    ),
    Recipe(
        "gpu_oom",
        "forward-long-seq",
        kill=True,
        culprit="not_master",
        notes="CUDA OOM on rank {rank} in attention; srun --kill-on-bad-exit stops the others "
        "quietly",
    ),
    Recipe(
        "host_oom",
        "slurm-memcg",
        kill=True,
        culprit="not_master",
        layouts=AGENT_LAYOUTS,
        notes="cgroup OOM killer SIGKILLs rank {rank} on {node}; the rank prints nothing itself: "
        "the kernel "
        "log, slurmstepd's oom_kill line and torchelastic's exitcode -9 carry it; step "
        "OUT_OF_MEMORY",
    ),
    Recipe(
        "application_error",
        "dataset-keyerror",
        kill=True,
        culprit="not_master",
        layouts=AGENT_LAYOUTS,
        extras=("error_files",),
        notes="KeyError raised in a DataLoader worker of rank {rank} (innermost frame "
        "packed_dataset.py "
        "__getitem__); torchelastic error file names it",
    ),
    Recipe(
        "network_fault",
        "ib-link-down",
        misleading=True,
        layouts=AGENT_LAYOUTS,
        notes="{hca} on {node} goes Link DOWN; peers on the same rail report NET/IB status=12 "
        "naming "
        "{node}'s IP, so the errors are printed on the victims, not on the culprit",
    ),
    Recipe(
        "node_failure",
        "slurm-not-responding",
        misleading=True,
        retry=True,
        culprit="not_master",
        extras=("sinfo_R",),
        layouts=AGENT_LAYOUTS,
        notes="{node} dies silently: its logs just stop; peers show NET/IB retry-exceeded errors "
        "naming "
        "its IP (looks like a network fault); sacct NODE_FAIL and sinfo -R 'Not responding' decide",
    ),
    Recipe(
        "hang",
        "dataloader-stall",
        misleading=True,
        retry=None,
        layouts=AGENT_LAYOUTS,
        torch=("2.3", "2.5", "2.6"),
        extras=("flight_recorder",),
        notes="rank {rank} stops in a data read and never enqueues collective N: it prints no "
        "watchdog "
        "line while all others time out on SeqNum N; torchelastic's 'first observed failure' names "
        "a different rank (a decoy); flight recorder shows rank {rank} last completed N-1",
    ),
    Recipe(
        "time_limit",
        "sigterm-collateral",
        misleading=True,
        decoys=("noisy_shutdown",),
        extras=("scontrol_job",),
        notes="TIMEOUT: slurmstepd cancels at the limit; the NCCL 'Connection reset by peer' "
        "errors during "
        "shutdown are consequences of the SIGTERM",
    ),
    Recipe(
        "preempted",
        "slurm-preemption",
        retry=True,
        notes="PREEMPTED: slurmstepd 'DUE TO PREEMPTION'; a healthy run was stopped",
    ),
    # round 2
    Recipe(
        "gpu_hardware",
        "xid48-dbe",
        misleading=True,
        decoys=("old_xid",),
        layouts=AGENT_LAYOUTS,
        notes="Xid 48 (DBE) + 63 on {node} {bus}, rank {rank} raises 'uncorrectable ECC error "
        "encountered'; an Xid 79 on another node is from the previous day (outside the window)",
    ),
    Recipe(
        "gpu_oom",
        "rank0-checkpoint-gather",
        misleading=True,
        culprit="master",
        layouts=AGENT_LAYOUTS,
        torch=("2.5", "2.6"),
        notes="rank 0 OOMs gathering a full state dict for a checkpoint; the others wait in the "
        "next "
        "collective and time out loudly; the early 'barrier ... potentially cause a hang' warning "
        "is benign",
    ),
    Recipe(
        "host_oom",
        "k8s-oomkilled",
        platform="k8s",
        misleading=True,
        notes="container memory limit: kernel memcg OOM on {node}, pod OOMKilled exit 137, no "
        "torchelastic "
        "summary from it; the other pods print watchdog timeouts",
    ),
    Recipe(
        "application_error",
        "missing-shard",
        misleading=True,
        decoys=("edac",),
        layouts=AGENT_LAYOUTS,
        notes="FileNotFoundError for a missing data shard on rank {rank}; a corrected EDAC error "
        "on another "
        "node is harmless; victims are louder",
    ),
    Recipe(
        "network_fault",
        "link-flap-recovered",
        misleading=True,
        retry=True,
        sched="sacct_json",
        layouts=AGENT_LAYOUTS,
        notes="{hca} on {node} flaps (DOWN, ACTIVE ~10 s later); NCCL had already failed on that "
        "rail; "
        "transient, so a retry is useful",
    ),
    Recipe(
        "node_failure",
        "k8s-notready",
        platform="k8s",
        misleading=True,
        retry=True,
        culprit="not_master",
        notes="node {node} goes NotReady/Unknown with unreachable taints; its pod never "
        "terminates and its "
        "logs stop; the other pods fail with NET/IB errors and watchdog timeouts",
    ),
    Recipe(
        "hang",
        "rank0-only-barrier",
        culprit="master",
        torch=("2.3", "2.5", "2.6"),
        layouts=AGENT_LAYOUTS,
        notes="a barrier inside `if rank == 0`: everyone else finished and exited 0; only rank 0 "
        "times "
        "out, on a 1-element ALLREDUCE",
    ),
    Recipe(
        "time_limit",
        "xid45-after-kill",
        misleading=True,
        decoys=("xid45",),
        notes="TIMEOUT; Xid 45 (preemptive cleanup) appears after the SIGTERM killed processes "
        "with work "
        "in flight: a consequence, not a GPU fault",
    ),
    Recipe(
        "preempted",
        "k8s-preempted",
        platform="k8s",
        misleading=True,
        retry=True,
        notes="the scheduler preempts one worker pod (event Preempted, exit 143); the other pods "
        "then "
        "fail with NCCL connection resets, which are consequences",
    ),
    # round 3
    Recipe(
        "gpu_hardware",
        "xid64-row-remap",
        platform="k8s",
        misleading=True,
        decoys=("xid45",),
        notes="Xid 48 + 64 (row remapping exhausted) + 154 'GPU Reset Required' on {node} {bus}; "
        "Xid 45 on another node after the kill is a symptom",
    ),
    Recipe(
        "gpu_oom",
        "k8s-worker-oom",
        platform="k8s",
        misleading=True,
        notes="CUDA OOM in backward on rank {rank} ({node}); the other pods' ranks time out loudly",
    ),
    Recipe(
        "host_oom",
        "dataloader-global-oom",
        misleading=True,
        layouts=AGENT_LAYOUTS,
        notes="global OOM killer kills a DataLoader worker (pt_data_worker) on {node}; rank "
        "{rank} raises "
        "'DataLoader worker ... is killed by signal: Killed'; victims louder",
    ),
    Recipe(
        "application_error",
        "assertion-rank0",
        platform="k8s",
        kill=True,
        culprit="master",
        notes="AssertionError (seq length mismatch) in attention.py on rank 0; the job controller "
        "stops "
        "the other pods right away",
    ),
    Recipe(
        "network_fault",
        "k8s-roce-port-down",
        platform="k8s",
        misleading=True,
        notes="RoCE port {hca} on {node} goes down; errors are printed by the peers naming its IP",
    ),
    Recipe(
        "node_failure",
        "mce-then-silence",
        misleading=True,
        retry=True,
        culprit="not_master",
        extras=("sinfo_R",),
        layouts=AGENT_LAYOUTS,
        notes="{node} logs a machine check and then nothing; NODE_FAIL + sinfo 'Not responding'",
    ),
    Recipe(
        "hang",
        "nfs-checkpoint-stall",
        misleading=True,
        retry=True,
        layouts=AGENT_LAYOUTS,
        notes="rank {rank} blocks in an NFS write (kernel: 'nfs: server not responding', hung "
        "task); "
        "it never joins the next collective; the others time out",
    ),
    Recipe(
        "time_limit",
        "sacct-json",
        sched="sacct_json",
        notes="TIMEOUT in sacct --json; training was healthy up to the limit",
    ),
    Recipe(
        "preempted",
        "requeued",
        retry=True,
        extras=("scontrol_job",),
        sched="sacct_txt",
        notes="PREEMPTED and requeued: sacct shows the preempted run and a PENDING requeue; "
        "scontrol "
        "Restarts=1",
    ),
    # round 4
    Recipe(
        "gpu_hardware",
        "xid74-nvlink",
        kill=True,
        culprit="not_master",
        notes="Xid 74 NVLink fatal error on {node} {bus}; rank {rank} fails with "
        "ncclUnhandledCudaError",
    ),
    Recipe(
        "gpu_oom",
        "nccl-cuda-oom",
        misleading=True,
        layouts=AGENT_LAYOUTS,
        notes="NCCL 'Cuda failure 2 out of memory' surfaces as a DistBackendError (looks like a "
        "comm "
        "error) on rank {rank}; memory was exhausted",
    ),
    Recipe(
        "host_oom",
        "k8s-silent-oomkill",
        platform="k8s",
        misleading=True,
        culprit_kernel=None,
        notes="pod on {node} OOMKilled (exit 137) with no kernel log and a pod log that just "
        "stops; only "
        "pods.json says OOMKilled",
    ),
    Recipe(
        "application_error",
        "xid13-illegal-address",
        misleading=True,
        layouts=AGENT_LAYOUTS,
        notes="Xid 13 (Out Of Range Address) + 43 on {node} {bus} are caused by a custom kernel's "
        "illegal "
        "memory access on rank {rank}: an application bug, not hardware",
    ),
    Recipe(
        "network_fault",
        "module-high-temp",
        misleading=True,
        tz="local",
        layouts=AGENT_LAYOUTS,
        notes="transceiver on {hca} of {node} reports High Temperature then Link DOWN; times are "
        "local",
    ),
    Recipe(
        "node_failure",
        "k8s-lost-xid45-decoy",
        platform="k8s",
        misleading=True,
        retry=True,
        culprit="not_master",
        decoys=("xid45",),
        notes="node {node} is lost (NotReady); an Xid 45 on another node after its processes were "
        "killed "
        "is a symptom",
    ),
    Recipe(
        "hang",
        "k8s-stuck-worker",
        platform="k8s",
        misleading=True,
        retry=None,
        torch=("2.3", "2.5", "2.6"),
        extras=("flight_recorder",),
        notes="rank {rank} in pod on {node} stalls in data loading; no watchdog line from it; "
        "flight "
        "recorder and the missing line point at it",
    ),
    Recipe(
        "time_limit",
        "scontrol-runtime",
        extras=("scontrol_job",),
        notes="TIMEOUT; scontrol show job RunTime reaches TimeLimit",
    ),
    Recipe(
        "preempted",
        "sacct-json",
        misleading=True,
        retry=True,
        sched="sacct_json",
        decoys=("xid45",),
        notes="PREEMPTED in sacct --json; an Xid 45 after the SIGTERM is a consequence",
    ),
    # round 5
    Recipe(
        "gpu_hardware",
        "xid95-drain",
        misleading=True,
        tz="local",
        layouts=AGENT_LAYOUTS,
        notes="Xid 95 (uncontained ECC) + 154 'Drain and Reset' on {node} {bus}; times are local",
    ),
    Recipe(
        "gpu_oom",
        "legacy-srun-l",
        kill=True,
        culprit="not_master",
        layouts=("srun_l",),
        torch=("2.1",),
        notes="legacy 'RuntimeError: CUDA out of memory' wording in a combined srun -l log, rank "
        "{rank}",
    ),
    Recipe(
        "host_oom",
        "checkpoint-load-oom",
        layouts=("srun_per_rank",),
        extras=("no_frames",),
        notes="all ranks of {node} load a checkpoint into host RAM; the OOM killer kills two of "
        "them "
        "(srun 'Out Of Memory'); a node-level problem, so no single rank",
    ),
    Recipe(
        "application_error",
        "xid31-triton-mmu",
        platform="k8s",
        misleading=True,
        notes="Xid 31 MMU fault on {node} {bus} from an out-of-bounds Triton kernel on rank "
        "{rank}: an "
        "application bug",
    ),
    Recipe(
        "network_fault",
        "peer-ip-only",
        misleading=True,
        culprit_kernel=None,
        layouts=AGENT_LAYOUTS,
        notes="{node}'s kernel log is missing; only the peers' NET/IB errors (all naming its IP) "
        "and its "
        "own 'port error' async event identify it",
    ),
    Recipe(
        "node_failure",
        "sacct-json-failed-node",
        misleading=True,
        retry=True,
        sched="sacct_json",
        culprit="not_master",
        decoys=("old_xid",),
        layouts=AGENT_LAYOUTS,
        notes="NODE_FAIL with failed_node in sacct --json; an old Xid on another node predates "
        "the window",
    ),
    Recipe(
        "hang",
        "seqnum-behind",
        misleading=True,
        retry=None,
        layouts=AGENT_LAYOUTS,
        torch=("2.5", "2.6"),
        extras=("flight_recorder",),
        notes="no log line explains it: the others time out on SeqNum N (last enqueued N+2), rank "
        "{rank} never fires a watchdog; only the collective bookkeeping (flight recorder: last "
        "enqueued N-1) shows it is behind",
    ),
    Recipe(
        "gpu_hardware",
        "xid119-gsp",
        misleading=True,
        torch=("2.3", "2.5", "2.6"),
        layouts=AGENT_LAYOUTS,
        notes="Xid 119 GSP RPC timeout on {node} {bus}: rank {rank} hangs silently until the "
        "heartbeat "
        "monitor kills it (looks like a hang)",
    ),
    Recipe(
        "application_error",
        "import-error-node",
        culprit="not_master",
        layouts=("torchrun_node",),
        notes="stale image on {node}: all its ranks fail at import (undefined symbol) before NCCL "
        "init; "
        "a node-level environment error",
    ),
    Recipe(
        "network_fault",
        "bond-eth-down",
        misleading=True,
        layouts=AGENT_LAYOUTS,
        notes="both bond0 slaves on {node} go down; NCCL over sockets times out naming its IP",
    ),
    Recipe(
        "gpu_hardware",
        "xid79-k8s-nokern",
        platform="k8s",
        misleading=True,
        culprit_kernel=None,
        notes="Xid 79 on {node} but its kernel log is missing: only rank {rank}'s CUDA error and "
        "the node's "
        "allocatable nvidia.com/gpu dropping to 7 show it",
    ),
    Recipe(
        "gpu_hardware",
        "xid94-contained",
        kill=True,
        culprit="not_master",
        retry=True,
        culprit_kernel="dmesg-raw",
        notes="Xid 94 (contained ECC) on {node} {bus} in raw dmesg (uptime, anchored by syslog); "
        "NVIDIA's "
        "action is restart the app, so a retry is useful",
    ),
)


_ALNUM = "bcdfghjklmnpqrstvwxz0123456789"


def _node_names(rng: random.Random, platform: Platform, n: int) -> list[str]:
    if platform == "slurm":
        scheme = rng.choice(SLURM_SCHEMES)
        first = rng.randint(1, 40)
        nums, cur = [], first
        for _ in range(n):
            nums.append(cur)
            cur += 1 if rng.random() < 0.8 else 2
        return [scheme.format(x) for x in nums]
    flavor = rng.choice(("gke", "eks", "aks"))
    if flavor == "gke":
        pool = _hex(rng, 4)
        return [
            f"gke-a3-pool-{pool}-{''.join(rng.choice(_ALNUM) for _ in range(4))}" for _ in range(n)
        ]
    if flavor == "eks":
        return [
            f"ip-10-0-{rng.randint(1, 60)}-{rng.randint(2, 250)}.ec2.internal" for _ in range(n)
        ]
    vmss = rng.randint(10**7, 10**8 - 1)
    return [f"aks-ndh100-{vmss}-vmss{i:06x}" for i in range(n)]


def _plan(recipe: Recipe, idx: int, seed: int) -> CaseSpec:
    rng = random.Random(f"plan:{seed}:{idx}:{recipe.category}:{recipe.variant}")
    plat = recipe.platform
    big = idx % 12 == 7
    n_nodes = rng.choice(recipe.nodes or ((8, 16) if big else (2, 3, 4, 4, 6)))
    gpn = rng.choice(recipe.gpn or ((8,) if big else (8, 8, 8, 4)))
    names = _node_names(rng, plat, n_nodes)
    if plat == "k8s":
        layout: LayoutName = "k8s"
    else:
        layout = rng.choice(recipe.layouts or (*AGENT_LAYOUTS, *SRUN_LAYOUTS))
    order = list(range(n_nodes))
    if layout not in SRUN_LAYOUTS and rng.random() < 0.5:
        rng.shuffle(order)
    if recipe.culprit == "master":
        culprit, local = order[0], 0
    else:
        pool = [i for i in range(n_nodes) if recipe.culprit != "not_master" or i != order[0]]
        culprit, local = rng.choice(pool), rng.randrange(gpn)
    if recipe.category in ("time_limit",) or (recipe.category == "preempted" and plat == "slurm"):
        culprit, local = None, None
    if recipe.tz == "local" or (recipe.tz is None and plat == "slurm" and rng.random() < 0.35):
        tz = rng.choice(ZONES)
    else:
        tz = "UTC"
    day = BASE_DATES[(idx * 5 + seed) % len(BASE_DATES)]
    local_start = datetime(
        day.year,
        day.month,
        day.day,
        rng.randint(0, 19),
        rng.randint(0, 59),
        rng.randint(0, 59),
        tzinfo=_tz(tz),
    )
    start = local_start.astimezone(UTC)
    if recipe.category == "time_limit":
        fail_after = rng.choice((2, 4, 6)) * 3600
    elif recipe.category == "preempted":
        fail_after = rng.randint(1800, 9000)
    else:
        fail_after = rng.randint(420, 5400)
    styles = (
        list(JOURNAL_STYLES + ("dmesg-T", "dmesg-iso"))
        if plat == "slurm"
        else ["short-iso", "short", "dmesg-T", "short-precise"]
    )
    main = rng.choice(styles)
    kernel: dict[str, str | None] = {}
    for i, name in enumerate(names):
        style: str | None = main if rng.random() < 0.75 else rng.choice(styles)
        if i != culprit and rng.random() < 0.15:
            style = None
        kernel[name] = style
    if culprit is not None and recipe.culprit_kernel != "keep":
        kernel[names[culprit]] = recipe.culprit_kernel
    elif culprit is not None and kernel[names[culprit]] is None:
        kernel[names[culprit]] = main
    torch_style = rng.choice(recipe.torch or ("2.1", "2.3", "2.3", "2.5", "2.5", "2.6"))
    variant_slug = recipe.variant
    case_id = f"c{idx + 1:02d}-{recipe.category.replace('_', '-')}-{variant_slug}"
    job_id = "48213" if idx == 0 else str(rng.randint(100000, 9999999))
    model = rng.choice(MODELS)
    job_name = (
        (model + "-pretrain") if plat == "k8s" else rng.choice((model, "pretrain", f"{model}-sft"))
    )
    extras = list(recipe.extras)
    if plat == "slurm" and recipe.category in ("time_limit", "preempted") and rng.random() < 0.5:
        extras.append("scontrol_job")
    return CaseSpec(
        case_id=case_id,
        category=recipe.category,
        variant=recipe.variant,
        platform=plat,
        seed=seed * 1000 + idx,
        job_id=job_id,
        job_name=job_name,
        user=rng.choice(("mlops", "jdoe", "svc-train")),
        partition=rng.choice(("gpu", "h100", "train")),
        node_names=names,
        node_order=order,
        gpus_per_node=gpn,
        gpu_bus=[f"0000:{b}:00" for b in rng.choice(BUS_SETS)][:gpn],
        culprit_node=culprit,
        culprit_local=local,
        start=start,
        fail_after_s=fail_after,
        tz=tz,
        layout=layout,
        rank_file=rng.choice(("rank{r}.log", "rank-{r}.out", "train.rank{r}.log")),
        kernel=kernel,
        sched=recipe.sched or ("sacct_json" if rng.random() < 0.3 else "sacct_txt"),
        sacct_columns=list(rng.choice(SACCT_COLUMN_SETS)),
        torch=torch_style,
        timeout_ms=rng.choice((600_000, 600_000, 600_000, 1_800_000)),
        kill_on_bad_exit=recipe.kill,
        k8s_kind="indexed_job" if plat == "k8s" and rng.random() < 0.3 else "pytorchjob",
        k8s_timestamps=plat == "k8s" and rng.random() < 0.4,
        extras=sorted(set(extras)),
        decoys=list(recipe.decoys),
        misleading=recipe.misleading,
        retry_useful=recipe.retry,
        notes=recipe.notes,
    )


def plan_suite(seed: int = 7, count: int = 48) -> list[CaseSpec]:
    """The specs of the suite: the recipes in order, cycled when count exceeds them."""
    specs = []
    for idx in range(count):
        specs.append(_plan(RECIPES[idx % len(RECIPES)], idx, seed + 7919 * (idx // len(RECIPES))))
    return specs


def demo_spec() -> CaseSpec:
    """The demo incident: Xid 79 on gpu-node-03 GPU 5 (rank 29) of a 4-node, 32-rank job."""
    names = [f"gpu-node-{i:02d}" for i in range(1, 5)]
    return CaseSpec(
        case_id="demo-xid79",
        category="gpu_hardware",
        variant="xid79",
        platform="slurm",
        seed=48213,
        job_id="48213",
        job_name="llama3-8b-pretrain",
        user="mlops",
        partition="gpu",
        node_names=names,
        node_order=[0, 1, 3, 2],
        gpus_per_node=8,
        gpu_bus=[f"0000:{b}:00" for b in BUS_SETS[0]],
        culprit_node=2,
        culprit_local=5,
        start=datetime(2024, 5, 1, 10, 0, 0, tzinfo=UTC),
        fail_after_s=842,
        tz="UTC",
        layout="torchrun_node",
        kernel={n: "short" for n in names},
        sched="sacct_txt",
        sacct_columns=list(SACCT_COLUMN_SETS[0]),
        torch="2.5",
        timeout_ms=600_000,
        extras=["no_frames"],
        decoys=["xid45"],
        misleading=True,
        retry_useful=False,
        notes="Xid 79 (GPU has fallen off the bus) on {node} {bus} (GPU 5) behind rank {rank}; "
        + _VOLUME
        + "; the connection resets and an Xid 45 on another node come after and are symptoms",
    )


def _expected(ctx: Ctx, oc: Outcome) -> Expected:
    spec = ctx.spec
    node = rank = gpu = gpu_index = None
    if spec.culprit_node is not None and spec.category not in ("time_limit", "preempted"):
        node = spec.node_names[spec.culprit_node]
        if spec.culprit_local is not None:
            rank = ctx.rank_at(spec.culprit_node, spec.culprit_local)
            if spec.category in GPU_CATEGORIES:
                gpu, gpu_index = ctx.bus[spec.culprit_local], str(spec.culprit_local)
    if oc.exp_rank != "auto":
        rank = oc.exp_rank if isinstance(oc.exp_rank, int) else None
    if oc.exp_gpu != "auto":
        gpu = gpu_index = None
    local = spec.culprit_local if spec.culprit_local is not None else 0
    n0 = ctx.nodes[spec.culprit_node] if spec.culprit_node is not None else ctx.nodes[0]
    notes = spec.notes.format(
        node=node or "-",
        rank=rank if rank is not None else "-",
        bus=ctx.bus[local],
        hca=n0.hcas[local % len(n0.hcas)],
        timeout=spec.timeout_ms // 60000,
    )
    return Expected(
        case_id=spec.case_id,
        category=spec.category,
        node=node,
        rank=rank,
        gpu=gpu,
        retry_useful=spec.retry_useful,
        misleading=spec.misleading,
        notes=notes,
        gpu_index=gpu_index,
        variant=spec.variant,
        platform=spec.platform,
        decoys=list(spec.decoys),
    )


def _incident_yaml(ctx: Ctx, oc: Outcome) -> str:
    spec = ctx.spec
    start = (spec.start - timedelta(minutes=10)).replace(second=0, microsecond=0)
    end = (oc.t_end + timedelta(minutes=11)).replace(second=0, microsecond=0)

    def iso(t: datetime) -> str:
        if spec.tz == "UTC":
            return _iso_z(t)
        return t.astimezone(ctx.tz).isoformat(timespec="seconds")

    lines = [
        f'question: "why did job {spec.job_id if spec.platform == "slurm" else spec.job_name} '
        'fail?"',
        f'job: "{spec.job_id if spec.platform == "slurm" else spec.job_name}"',
        "window:",
        f'  start: "{iso(start)}"',
        f'  end: "{iso(end)}"',
    ]
    if spec.tz != "UTC":
        lines.append(f'timezone: "{spec.tz}"')
    return "\n".join(lines) + "\n"


def _anchor_raw_dmesg(ctx: Ctx) -> None:
    """Raw-uptime dmesg needs an anchor: the same kernel lines as rsyslog wrote them."""
    for i, node in enumerate(ctx.nodes):
        if node.kstyle != "dmesg-raw":
            continue
        sink = ctx.files.get(ctx.kernel_path(node))
        if not sink or not sink.lines:
            continue
        rows = sorted(sink.lines)[:3]
        out = Sink()
        for t, seq, text, _ in rows:
            msg = text.split("] ", 1)[1]
            up = text.split("] ", 1)[0] + "]"
            out.add(
                t,
                seq,
                kernel_line("syslog", ctx.lt(node, t), node.name.split(".")[0], "kernel", up, msg),
                i,
            )
        ctx.files[f"nodes/{node.name}/syslog"] = out


def render_case(spec: CaseSpec, out_dir: Path, *, with_expected: bool = True) -> Case:
    """Write one bundle with `out_dir` as its root (incident.yaml at the top) and return it."""
    out_dir = Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()):
        if not (out_dir / "incident.yaml").exists():
            raise FileExistsError(f"{out_dir} exists and is not a bundle; refusing to overwrite it")
        shutil.rmtree(out_dir)
    ctx = Ctx(spec)
    oc = SCENARIOS[spec.category](ctx)
    _anchor_raw_dmesg(ctx)
    if spec.platform == "slurm":
        write_slurm(ctx, oc)
    else:
        write_k8s(ctx, oc)
    expected = _expected(ctx, oc)
    ctx.sink("incident.yaml").raw = _incident_yaml(ctx, oc)
    if with_expected:
        ctx.sink(EXPECTED_FILE).raw = expected.model_dump_json(indent=2) + "\n"
    total = 0
    for rel in sorted(ctx.files):
        data = ctx.files[rel].render().encode("utf-8")
        if not data:
            continue
        path = out_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        total += len(data)
    files = sorted(str(p.relative_to(out_dir)) for p in out_dir.rglob("*") if p.is_file())
    return Case(
        case_id=spec.case_id, path=out_dir, expected=expected, files=files, total_bytes=total
    )


def generate_suite(out_dir: Path, seed: int = 7, count: int = 48) -> list[Case]:
    """Write `count` cases under out_dir/<case_id>/ (stale case folders there are removed)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    specs = plan_suite(seed, count)
    keep = {s.case_id for s in specs}
    for child in sorted(out_dir.iterdir()):
        if child.is_dir() and child.name not in keep and (child / "incident.yaml").exists():
            shutil.rmtree(child)
    cases = [render_case(spec, out_dir / spec.case_id) for spec in specs]
    index = {
        "seed": seed,
        "count": count,
        "cases": [
            {
                "case_id": c.case_id,
                "category": c.expected.category,
                "misleading": c.expected.misleading,
                "platform": c.expected.platform,
            }
            for c in cases
        ],
    }
    (out_dir / "suite.json").write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")
    return cases


def tree_digest(root: Path) -> dict[str, str]:
    """sha256 of every file under root, by relative path (for reproducibility checks)."""
    root = Path(root)
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m goodput_agent.evals.generator",
        description="Generate the incident-bundle eval suite.",
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "cases")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--count", type=int, default=48)
    parser.add_argument(
        "--demo", type=Path, default=None, help="write only the demo bundle to this folder"
    )
    args = parser.parse_args(argv)
    if args.demo is not None:
        case = render_case(demo_spec(), args.demo, with_expected=False)
        print(f"{case.case_id}: {len(case.files)} files, {case.total_bytes} bytes -> {case.path}")
        return 0
    cases = generate_suite(args.out, seed=args.seed, count=args.count)
    by_cat: dict[str, list[str]] = {}
    for case in cases:
        by_cat.setdefault(case.expected.category, []).append(case.case_id)
    for cat in CATEGORIES:
        print(f"{cat:18} {len(by_cat.get(cat, [])):3}  {' '.join(by_cat.get(cat, []))}")
    total = sum(c.total_bytes for c in cases)
    print(
        f"{len(cases)} cases, {sum(c.expected.misleading for c in cases)} misleading, "
        f"{total / 1e6:.2f} MB"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
