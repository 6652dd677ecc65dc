"""What the reviewers' scenario scripts share: writing a bundle's files, and the log lines that
several of them print the same way (c10 glog stamps, NCCL init, watchdog timeouts, sacct rows,
kernel noise).

Each script owns one `Kit`: its output folder and its random source. The helpers draw from that
source in the order the scripts always did, so every scenario's bytes stay as they were.
"""

from __future__ import annotations

import gzip
import json
import random
import shutil
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

F = "%Y-%m-%dT%H:%M:%S"
HDR = "JobID|JobName|State|ExitCode|DerivedExitCode|NodeList|Start|End|Elapsed"
KernelFormat = Callable[[datetime, str], str]
BENIGN_KERNEL = [
    "mlx5_core 0000:0c:00.0 mlx5_0: Port: 1 Link ACTIVE",
    "hrtimer: interrupt took 30211 ns",
    "nvidia-nvswitch3: open (major=508)",
    "IPv6: ADDRCONF(NETDEV_CHANGE): ib0: link becomes ready",
]


class Kit:
    """One scenario script's output folder and random source, shared by its helpers.

    glog: how the script's c10 lines stamp time: "nanos" (microseconds and three random digits)
    or "tid" (microseconds, then a random thread id). lists_as: what `w` makes of a list: its
    lines, or a JSON array.
    """

    def __init__(
        self,
        seed: int,
        *,
        glog: Literal["nanos", "tid"] = "nanos",
        lists_as: Literal["lines", "json"] = "lines",
    ) -> None:
        self.root = Path(".")
        self.rng = random.Random(seed)
        self.glog_style = glog
        self.lists_as = lists_as

    def start(self, out: Path | str, seed: int) -> tuple[Path, random.Random]:
        """A fresh run into `out`: the folder and the random source the script's bodies use."""
        self.root, self.rng = Path(out), random.Random(seed)
        return self.root, self.rng

    # ---- files
    def w(self, b: str, rel: str, text: Any, gz: bool = False) -> None:
        p = self.root / b / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            p.write_bytes(text)
            return
        if isinstance(text, list) and self.lists_as == "lines":
            text = "\n".join(text)
        if isinstance(text, dict | list):
            text = json.dumps(text, indent=2)
        text = text if text.endswith("\n") else text + "\n"
        if gz:
            with gzip.open(p, "wt") as f:
                f.write(text)
        else:
            p.write_text(text)

    def _empty(self, b: str) -> None:
        d = self.root / b
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)

    def fresh(self, b: str, cat: str, node: Any, rank: Any) -> None:
        """An empty bundle folder with its expected.txt (category, node, rank)."""
        self._empty(b)
        self.w(b, "expected.txt", f"category: {cat}\nnode: {node}\nrank: {rank}\n")

    def fresh_text(self, b: str, expected: str, *, beside: bool = False) -> None:
        """An empty bundle folder with expected.txt as given (and a copy beside it, `beside`)."""
        self._empty(b)
        if beside:
            (self.root / f"{b}.expected.txt").write_text(expected + "\n")
        self.w(b, "expected.txt", expected)

    def incident(
        self, b: str, job: str, start: datetime, end: datetime, tz: str | None = None,
        q: str | None = None,
    ) -> None:
        s = (f'question: "{q or f"why did job {job} fail?"}"\njob: "{job}"\nwindow:\n'
             f'  start: "{start:{F}}"\n  end: "{end:{F}}"\n')
        if tz:
            s += f"timezone: {tz}\n"
        self.w(b, "incident.yaml", s)

    # ---- log lines
    def glog(self, level: str, t: datetime, src: str = "ProcessGroupNCCL.cpp:1590") -> str:
        stamp = f"{level}{t:%m%d %H:%M:%S}.{t.microsecond:06d}"
        if self.glog_style == "tid":
            return f"{stamp} {self.rng.randint(100000, 999999)} {src}"
        return f"{stamp}{self.rng.randint(100, 999)} {src}"

    def nccl_init(
        self, host: str, pid: int, lr: int, rank: int, n: int, busid: str, net: str = "IB",
        hcas: int = 2,
    ) -> list[str]:
        pre = f"{host}:{pid}:{pid + 61} [{lr}]"
        if net == "IB":
            used = " ".join(f"[{k}]mlx5_{k}:1/IB" for k in range(hcas))
            netl = f"{pre} NCCL INFO NET/IB : Using {used} [RO]; OOB ib0:10.0.0.1<0>"
        else:
            netl = f"{pre} NCCL INFO NET/Socket : Using [0]{net}"
        comm = self.rng.randint(1 << 40, 1 << 44)
        return [netl, f"{pre} NCCL INFO comm 0x{comm:x} rank {rank} nranks {n} cudaDev {lr} "
                      f"nvmlDev {lr} busId {busid} commId 0x5e1f00d - Init COMPLETE"]

    def wd(
        self, rank: int, t: datetime, seq: int, op: str = "ALLREDUCE", prefix: str = ""
    ) -> list[str]:
        """A watchdog timeout and the process teardown, as PyTorch 2.4+ print them."""
        pg = f"[PG ID 0 PG GUID 0(default_pg) Rank {rank}]"
        caught = self.glog("E", t)
        first = (f"{prefix}[{caught}] {pg} Watchdog caught collective operation timeout: "
                 f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=131072000, NumelOut=131072000, "
                 f"Timeout(ms)=600000) ran for 600{self.rng.randint(10, 99)}3 milliseconds before "
                 "timing out.")
        down = self.glog("E", t + timedelta(milliseconds=3), "ProcessGroupNCCL.cpp:1632")
        return [first, f"{prefix}[{down}] {pg} To avoid data inconsistency, we are taking the "
                       "entire process down."]

    def train(self, t0: datetime, n: int, every: int = 60, step0: int = 3000,
              grad_norm: bool = False) -> list[str]:
        """Rank 0's step lines, one every `every` seconds."""
        out = []
        for i in range(n):
            t = t0 + timedelta(seconds=every * i)
            ms = self.rng.randint(100, 999)
            gn = " | grad_norm 0.41" if grad_norm else ""
            out.append(f"{t:%Y-%m-%d %H:%M:%S},{ms} - INFO - train - step {step0 + i} | loss "
                       f"{2.1 - i * 0.003:.4f}{gn} | tokens/s {self.rng.randint(9000, 9900)}")
        return out


def sacct_rows(job: str, name: str, state: str, code: str, nodes: str, start: datetime,
               end: datetime, step_state: str = "FAILED", step_code: str = "1:0",
               batch: str | None = None) -> list[str]:
    """`sacct -P` rows (HDR's columns) of a job, its batch, extern and first srun step."""
    h, r = divmod(int((end - start).total_seconds()), 3600)
    m, s = divmod(r, 60)
    el = f"{h:02d}:{m:02d}:{s:02d}"
    return [f"{job}|{name}|{state}|{code}|0:0|{nodes}|{start:{F}}|{end:{F}}|{el}",
            f"{job}.batch|batch|{step_state}|{step_code}||{batch}|{start:{F}}|{end:{F}}|{el}",
            f"{job}.extern|extern|COMPLETED|0:0||{nodes}|{start:{F}}|{end:{F}}|{el}",
            f"{job}.0|python|{step_state}|{step_code}||{nodes}|"
            f"{start + timedelta(seconds=5):{F}}|{end:{F}}|{el}"]


def jiso(host: str) -> KernelFormat:
    """journalctl -k -o short-iso on a UTC host."""
    return lambda t, m: f"{t:%Y-%m-%dT%H:%M:%S}+0000 {host} kernel: {m}"


def kernel_noise(fmt: KernelFormat, t: datetime, n: int = 3) -> list[str]:
    """`n` harmless kernel lines a minute apart."""
    return [fmt(t + timedelta(seconds=61 * i), BENIGN_KERNEL[i % 4]) for i in range(n)]
