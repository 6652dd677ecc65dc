"""The cluster and job an incident happens in: hosts named in one of several real styles,
ranks placed on them, a start time and the zone the scheduler prints its times in."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

HOST_STYLES = (
    lambda i: f"gpu-node-{i:02d}",
    lambda i: f"dgx{i:03d}",
    lambda i: f"hpc-g{i // 4 + 1}n{i % 4 + 1}",
    lambda i: f"a100-{i:02d}",
    lambda i: f"h100-sxm-{i:03d}",
)
DOMAINS = ("cluster.example.org", "int.lab.example.net")
ZONES = ("UTC", "America/Chicago", "Europe/Berlin", "Asia/Tokyo")


@dataclass
class Job:
    job_id: str
    hosts: list[str]  # short names, as the scheduler names them
    gpus_per_node: int
    start: datetime  # UTC
    zone: str
    fqdn_domain: str | None  # logs print host.domain where set
    pids: dict[int, int] = field(default_factory=dict)  # rank -> pid

    @property
    def world(self) -> int:
        return len(self.hosts) * self.gpus_per_node

    def host_of(self, rank: int) -> str:
        return self.hosts[rank // self.gpus_per_node]

    def local_rank(self, rank: int) -> int:
        return rank % self.gpus_per_node

    def ranks_on(self, host: str) -> list[int]:
        i = self.hosts.index(host)
        return list(range(i * self.gpus_per_node, (i + 1) * self.gpus_per_node))

    def log_host(self, host: str) -> str:
        return f"{host}.{self.fqdn_domain}" if self.fqdn_domain else host

    def local(self, t: datetime) -> datetime:
        return t.astimezone(ZoneInfo(self.zone))

    def nodelist(self) -> str:
        return ",".join(self.hosts)


def make_job(rng: random.Random) -> Job:
    style = rng.choice(HOST_STYLES)
    first = rng.randint(1, 40)
    n_nodes = rng.choice((2, 2, 3, 4, 4, 8))
    hosts = [style(first + i) for i in range(n_nodes)]
    start = datetime(2026, rng.randint(1, 11), rng.randint(1, 27), rng.randint(0, 20),
                     rng.randint(0, 59), rng.randint(0, 59), tzinfo=UTC)
    job = Job(job_id=str(rng.randint(100000, 9999999)), hosts=hosts,
              gpus_per_node=rng.choice((4, 8)), start=start, zone=rng.choice(ZONES),
              fqdn_domain=rng.choice((None, None, *DOMAINS)))
    base = rng.randint(20000, 3000000)
    job.pids = {r: base + r * rng.randint(3, 40) for r in range(job.world)}
    return job


def later(t: datetime, seconds: float) -> datetime:
    return t + timedelta(seconds=seconds)
