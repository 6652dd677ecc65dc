"""The cluster while a case renders: nodes, ranks, clocks, and every log file being written."""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from goodput_agent.evals.cluster.formats import _hms_frac, _py_ts, _tz, _uptime, _uuid, kernel_line
from goodput_agent.evals.cluster.spec import (
    BUS_SETS,
    DRIVERS,
    JOURNAL_STYLES,
    NCCL_VERSIONS,
    CaseSpec,
)


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


def _slurm_time(ctx: Ctx, t: datetime) -> str:
    return t.astimezone(ctx.tz).strftime("%Y-%m-%dT%H:%M:%S")


def _sizes(ctx: Ctx) -> tuple[int, int]:
    cpn = {8: 192, 4: 96}.get(ctx.gpn, 24 * ctx.gpn)
    return cpn, {8: 1600, 4: 800}.get(ctx.gpn, 200 * ctx.gpn)
