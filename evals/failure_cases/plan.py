"""The suite's plan: every class's recipes, interleaved by class, each made a CaseSpec by a seed;
the demo incident's spec."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from goodput_agent.evals.cluster.formats import _hex, _tz
from goodput_agent.evals.cluster.spec import (
    BASE_DATES,
    BUS_SETS,
    CATEGORIES,
    JOURNAL_STYLES,
    MODELS,
    SACCT_COLUMN_SETS,
    SLURM_SCHEMES,
    ZONES,
    CaseSpec,
    LayoutName,
    Platform,
)
from goodput_agent.evals.failure_cases import of_class
from goodput_agent.evals.failure_cases.recipe import _VOLUME, AGENT_LAYOUTS, SRUN_LAYOUTS, Recipe

RECIPES_BY_CLASS: dict[str, tuple[Recipe, ...]] = {c: of_class(c).RECIPES for c in CATEGORIES}


def _interleaved(by_class: dict[str, tuple[Recipe, ...]]) -> tuple[Recipe, ...]:
    """Round k holds every class's k-th recipe, classes in CATEGORIES order."""
    depth = max(len(r) for r in by_class.values())
    return tuple(by_class[c][i] for i in range(depth) for c in CATEGORIES if i < len(by_class[c]))


RECIPES = _interleaved(RECIPES_BY_CLASS)


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


def _kernel_styles(
    plat: Platform, rng: random.Random, names: list[str], culprit: int | None, recipe: Recipe
) -> dict[str, str | None]:
    """Each node's kernel-log style (None: none), the culprit's kept unless its recipe says."""
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
    return kernel


def _start_time(
    recipe: Recipe, plat: Platform, rng: random.Random, seed: int, idx: int
) -> tuple[str, datetime]:
    """The case's time zone and its job's start (UTC), on one of the base dates."""
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
    return tz, start


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
    tz, start = _start_time(recipe, plat, rng, seed, idx)
    if recipe.category == "time_limit":
        fail_after = rng.choice((2, 4, 6)) * 3600
    elif recipe.category == "preempted":
        fail_after = rng.randint(1800, 9000)
    else:
        fail_after = rng.randint(420, 5400)
    kernel = _kernel_styles(plat, rng, names, culprit, recipe)
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
