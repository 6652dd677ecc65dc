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
import shutil
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

from goodput_agent.core import failure_classes
from goodput_agent.evals.cluster.context import Ctx, Outcome, Sink
from goodput_agent.evals.cluster.formats import _iso_z, compress_hostlist, kernel_line
from goodput_agent.evals.cluster.k8s import write_k8s
from goodput_agent.evals.cluster.slurm import write_slurm
from goodput_agent.evals.cluster.spec import (
    CATEGORIES,
    EXPECTED_FILE,
    GPU_CATEGORIES,
    KERNEL_STYLES,
    Case,
    CaseSpec,
    Expected,
)
from goodput_agent.evals.failure_cases import of_class
from goodput_agent.evals.failure_cases.plan import RECIPES, demo_spec, plan_suite

__all__ = [
    "CATEGORIES",
    "EXPECTED_FILE",
    "KERNEL_STYLES",
    "RECIPES",
    "SCENARIOS",
    "Case",
    "CaseSpec",
    "Expected",
    "compress_hostlist",
    "demo_spec",
    "generate_suite",
    "kernel_line",
    "main",
    "plan_suite",
    "render_case",
    "tree_digest",
]

SCENARIOS: dict[str, Callable[[Ctx], Outcome]] = {
    c: getattr(of_class(c), f"sc_{c}") for c in CATEGORIES}


def _expected(ctx: Ctx, oc: Outcome) -> Expected:
    spec = ctx.spec
    node = rank = gpu = gpu_index = None
    if spec.culprit_node is not None and spec.category not in failure_classes.job_level():
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
