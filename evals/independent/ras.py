"""NCCL's RAS status report (`ncclras`, NCCL >= 2.24) as its client prints text: the job
summary, the communicator table, then Errors and Warnings naming ranks by GPU, process and
node, the node by its IP address."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class RasRank:
    rank: int
    gpu: int
    pid: int
    ip: str


def _header(nodes: int, per_node: int, version: str) -> list[str]:
    procs = nodes * per_node
    return [f"NCCL version {version} compiled with CUDA 12.8",
            "CUDA runtime version 12080, driver version 12080", "", "Job summary",
            "===========", "", "  Nodes  Processes         GPUs  Processes     GPUs",
            "(total)   per node  per process    (total)  (total)",
            f"{nodes:7d}  {per_node:9d}  {1:11d}  {procs:9d}  {procs:7d}", "",
            "Communicators... (0.01s)", "============="]


def _comm_row(nodes: int, per_node: int, ranks: int, status: str, errors: str) -> list[str]:
    return ["", "Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors",
            "    #  in group  per comm  per node  per comm  in group",
            f"{0:5d}  {1:8d}  {nodes:8d}  {str(per_node):>8}  {ranks:8d}  {ranks:8d}  "
            f"{status:>8}  {errors:>6}"]


def mismatch_report(nodes: int, per_node: int, behind: RasRank, op: int, coll: str,
                    version: str = "2.27.3") -> str:
    """Every rank but one has launched up to operation `op`; `behind` is one short."""
    world = nodes * per_node
    out = _header(nodes, per_node, version) + _comm_row(nodes, per_node, world, "RUNNING",
                                                        "MISMATCH")
    out += ["", "Errors", "======", "", "Warnings", "========", "",
            "#0-0 (9c41d2e07a8b3f15) MISMATCH",
            f"  Communicator ranks have different {coll} operation counts",
            f"  {world - 1} ranks have launched up to operation {op}",
            f"  Rank {behind.rank} has launched up to operation {op - 1} -- GPU {behind.gpu} "
            f"managed by process {behind.pid} on node {behind.ip}", ""]
    return "\n".join(out) + "\n"


def dead_report(nodes: int, per_node: int, dead: list[RasRank], version: str = "2.26.2") -> str:
    """A node's processes unreachable: DEAD, and the communicator INCOMPLETE without them."""
    world = nodes * per_node
    out = _header(nodes, per_node, version) + _comm_row(nodes, per_node, world, "RUNNING",
                                                        "INCOMPLETE")
    out += ["", "Errors", "======", "", "DEAD",
            f"  {len(dead)} job process{'es are' if len(dead) > 1 else ' is'} considered dead "
            "(unreachable via the RAS network)"]
    out += [f"  Process {d.pid} on node {d.ip} managing GPU {d.gpu}"
            for d in sorted(dead, key=lambda d: (d.ip, d.pid))]
    out += ["", "#0-0 (9c41d2e07a8b3f15) INCOMPLETE",
            f"  Missing communicator data from {len(dead)} rank{'s' if len(dead) > 1 else ''}"]
    out += [f"  Rank {d.rank} -- GPU {d.gpu} managed by process {d.pid} on node {d.ip}"
            for d in dead]
    out += ["", "Warnings", "========", ""]
    return "\n".join(out) + "\n"
