"""A small ledger and sacct history written the way investigations and sacct write them."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from goodput_agent.ledger import Ledger

HEADER = "JobID|NodeList|AllocTRES|Elapsed|Start|End|Partition|Account|State"
T0 = datetime(2026, 11, 1)


def record_failure(ledger: Ledger, job: str, category: str, node: str | None,
                   excerpt: str = "failure", stamp: str = "20261101T000000Z",
                   status: str = "supported") -> str:
    target = f"/data/reports/slurm-job-{job}-{stamp}/bundle"
    inv = ledger.start_investigation(f"why did {job} fail?", "failure", target, "offline", "t")
    ev = ledger.record_evidence(inv, None, "kern.log", "kern.log:1", excerpt, None)
    ledger.record_claim(inv, f"{category} on {node}", category, 0.9, status, [ev], [], node=node)
    ledger.record_conclusion(inv, category, 0.9, 0, "{}")
    return inv


def sacct_row(job: str, nodes: str, gpus: int, start_h: float, hours: float,
              partition: str = "gpu", account: str = "a1", state: str = "COMPLETED") -> str:
    start = T0 + timedelta(hours=start_h)
    end = start + timedelta(hours=hours)
    return (f"{job}|{nodes}|cpu=8,gres/gpu={gpus},node=1|00:00:00|{start:%Y-%m-%dT%H:%M:%S}|"
            f"{end:%Y-%m-%dT%H:%M:%S}|{partition}|{account}|{state}")


def write_sacct(path: Path, rows: list[str]) -> Path:
    path.write_text(HEADER + "\n" + "\n".join(rows) + "\n")
    return path
