"""The failure suite's case model: the spec that decides one bundle, its answer key, and the
cluster's fixed vocabulary (categories, log layouts, kernel-log styles, bus ids, versions)."""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from goodput_agent.core import failure_classes

CATEGORIES = failure_classes.names()  # the suite's classes: every one the product concludes


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
