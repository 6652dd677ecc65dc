"""The eval-suite generator: deterministic, complete, and able to mislead a naive analysis."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import yaml

from goodput_agent.evals.generator import (
    CATEGORIES,
    EXPECTED_FILE,
    KERNEL_STYLES,
    Expected,
    compress_hostlist,
    demo_spec,
    generate_suite,
    kernel_line,
    plan_suite,
    render_case,
    tree_digest,
)
from goodput_agent.parsing.timefmt import ClockPolicy, parse_any

SHIPPED = Path(__file__).resolve().parents[2] / "evals" / "cases"
SEED, COUNT = 7, 48


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("suite")
    generate_suite(out, seed=SEED, count=COUNT)
    return out


def case_dirs(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir())


def expected(case: Path) -> dict:
    return json.loads((case / EXPECTED_FILE).read_text())


# --------------------------------------------------------------------------- a naive baseline

ERROR = re.compile(
    r"(?i)\b(error|exception|fail(ed|ure)?|timeout|timed out|fatal|killed|traceback|abort(ed)?|"
    r"oom|out of memory)\b|Xid|NCCL WARN"
)
NCCL_RANK = re.compile(r"([A-Za-z0-9._-]+):\d+:\d+ \[\d+\] NCCL INFO .*?\brank (\d+) nranks")
SRUN_LABEL = re.compile(r"^\s*(\d+): ")
RANK_FILE = re.compile(r"rank-?(\d+)\.")


def naive_error_counts(case: Path) -> Counter[str]:
    """Error-looking lines per node: what "blame the loudest node" would look at."""
    hosts: dict[str, str] = {}
    pods = case / "k8s" / "pods.json"
    if pods.exists():
        for item in json.loads(pods.read_text())["items"]:
            hosts[item["metadata"]["name"]] = item["spec"]["nodeName"]
            if item["spec"].get("hostname"):
                hosts[item["spec"]["hostname"]] = item["spec"]["nodeName"]
    logs = [
        p
        for p in sorted(case.rglob("*"))
        if p.is_file()
        and p.suffix not in (".json", ".yaml")
        and p.relative_to(case).parts[0] not in ("slurm", "k8s")
    ]
    rank_node: dict[int, str] = {}
    for p in logs:
        for m in NCCL_RANK.finditer(p.read_text()):
            rank_node[int(m.group(2))] = hosts.get(m.group(1), m.group(1))
    known = sorted(
        set(rank_node.values())
        | {p.relative_to(case).parts[1] for p in logs if p.relative_to(case).parts[0] == "nodes"}
    )
    counts: Counter[str] = Counter()
    for p in logs:
        parts = p.relative_to(case).parts
        fixed = parts[1] if parts[0] == "nodes" else hosts.get(p.stem)
        m = RANK_FILE.search(parts[-1])
        if fixed is None and m and int(m.group(1)) in rank_node:
            fixed = rank_node[int(m.group(1))]
        for line in p.read_text().splitlines():
            if not ERROR.search(line):
                continue
            node = fixed
            label = SRUN_LABEL.match(line)
            if node is None and label and int(label.group(1)) in rank_node:
                node = rank_node[int(label.group(1))]
            node = node or next((n for n in known if n in line), None)
            if node:
                counts[node] += 1
    return counts


# --------------------------------------------------------------------------- tests


def test_same_seed_gives_identical_trees(tmp_path: Path, suite: Path) -> None:
    again = tmp_path / "again"
    generate_suite(again, seed=SEED, count=COUNT)
    assert tree_digest(again) == tree_digest(suite)


def test_another_seed_changes_the_data(tmp_path: Path, suite: Path) -> None:
    other = tmp_path / "other"
    generate_suite(other, seed=SEED + 1, count=COUNT)
    a, b = tree_digest(suite), tree_digest(other)
    changed = [k for k in a if k.endswith("expected.json") and a[k] != b.get(k)]
    assert len(changed) >= COUNT // 2


def test_every_class_is_covered_at_least_four_times(suite: Path) -> None:
    cats = Counter(expected(c)["category"] for c in case_dirs(suite))
    assert len(case_dirs(suite)) == COUNT
    assert set(cats) == set(CATEGORIES)
    assert min(cats.values()) >= 4, cats


def test_small_counts_still_cover_every_class() -> None:
    specs = plan_suite(seed=3, count=len(CATEGORIES))
    assert {s.category for s in specs} == set(CATEGORIES)
    assert len({s.case_id for s in plan_suite(seed=3, count=100)}) == 100


def test_expected_files_are_valid(suite: Path) -> None:
    pci = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}$")
    for case in case_dirs(suite):
        raw = expected(case)
        exp = Expected.model_validate(raw)
        assert {
            "case_id",
            "category",
            "node",
            "rank",
            "gpu",
            "retry_useful",
            "misleading",
            "notes",
        } <= raw.keys()
        assert exp.case_id == case.name
        assert exp.category in CATEGORIES
        assert exp.notes and "{" not in exp.notes, case.name
        if exp.category in ("time_limit", "preempted"):
            assert exp.node is None and exp.rank is None and exp.gpu is None
        else:
            assert exp.node, case.name
        if exp.category in ("gpu_hardware", "gpu_oom"):
            assert exp.gpu and pci.match(exp.gpu), case.name
            assert exp.gpu_index is not None
        else:
            assert exp.gpu is None, case.name


def test_the_culprit_appears_in_the_evidence(suite: Path) -> None:
    for case in case_dirs(suite):
        exp = expected(case)
        texts = [p.read_text() for p in case.rglob("*") if p.is_file() and p.name != EXPECTED_FILE]
        if exp["node"]:
            assert any(exp["node"] in t for t in texts), case.name
        if exp["rank"] is not None:
            pat = re.compile(rf"\brank[ =]?{exp['rank']}\b|\[rank{exp['rank']}\]")
            assert any(pat.search(t) for t in texts), case.name
        if exp["gpu"]:
            bus = exp["gpu"].split(":")[1]
            assert any(f"PCI:{exp['gpu']}" in t or f"busId {bus}000" in t for t in texts), case.name


def test_bundle_files_are_well_formed(suite: Path) -> None:
    for case in case_dirs(suite):
        inc = yaml.safe_load((case / "incident.yaml").read_text())
        assert inc["question"] == f"why did job {inc['job']} fail?"
        start = datetime.fromisoformat(inc["window"]["start"])
        end = datetime.fromisoformat(inc["window"]["end"])
        assert start.tzinfo is not None and start < end
        if "timezone" in inc:
            ZoneInfo(inc["timezone"])
            assert inc["timezone"] != "UTC"
        for p in case.rglob("*.json"):
            json.loads(p.read_text())
        sacct = case / "slurm" / "sacct.txt"
        if sacct.exists():
            rows = [r.split("|") for r in sacct.read_text().splitlines()]
            assert len({len(r) for r in rows}) == 1 and len(rows) >= 5
            assert rows[1][0] == inc["job"] or rows[1][0].startswith(inc["job"])
        k8s = case / "k8s"
        if k8s.exists():
            for name in ("pods.json", "events.json", "nodes.json"):
                doc = json.loads((k8s / name).read_text())
                assert doc["kind"] == "List" and doc["items"]
        assert (case / "slurm").exists() != k8s.exists()


def test_slurm_states_follow_the_failure(suite: Path) -> None:
    want = {"time_limit": "TIMEOUT", "preempted": "PREEMPTED", "node_failure": "NODE_FAIL"}
    for case in case_dirs(suite):
        exp = expected(case)
        if exp["platform"] != "slurm":
            continue
        if (case / "slurm" / "sacct.json").exists():
            job = json.loads((case / "slurm" / "sacct.json").read_text())["jobs"][0]
            state = job["state"]["current"][0]
            steps = [s["state"][0] for s in job["steps"]]
        else:
            rows = [r.split("|") for r in (case / "slurm" / "sacct.txt").read_text().splitlines()]
            col = rows[0].index("State")
            state, steps = rows[1][col], [r[col] for r in rows[2:]]
        assert state == want.get(exp["category"], "FAILED"), case.name
        if exp["category"] == "host_oom":
            assert "OUT_OF_MEMORY" in steps, case.name


def test_sizes_stay_bounded(suite: Path) -> None:
    total = sum(p.stat().st_size for p in suite.rglob("*") if p.is_file())
    assert total < 6_000_000
    for case in case_dirs(suite):
        size = sum(p.stat().st_size for p in case.rglob("*") if p.is_file())
        assert size < 600_000, case.name
        for p in (case / "logs").glob("*"):
            lines = p.read_text().count("\n")
            if re.search(r"rank-?\d+\.", p.name):
                assert 3 <= lines <= 300, (case.name, p.name, lines)
    ranks = [_world(c) for c in case_dirs(suite)]
    assert max(ranks) >= 64 and sum(r >= 64 for r in ranks) <= 6


def _world(case: Path) -> int:
    m = re.search(
        r"nranks (\d+)",
        "".join(p.read_text() for p in case.rglob("*.log"))
        + "".join(p.read_text() for p in case.rglob("*.out")),
    )
    return int(m.group(1)) if m else 0


def test_misleading_cases_fool_the_loudest_node_heuristic(suite: Path) -> None:
    misleading = 0
    for case in case_dirs(suite):
        exp = expected(case)
        misleading += exp["misleading"]
        if exp["node"] is None:
            continue
        counts = naive_error_counts(case)
        mine = counts.get(exp["node"], 0)
        loudest_other = max((v for k, v in counts.items() if k != exp["node"]), default=0)
        if exp["misleading"]:
            assert mine < loudest_other, (case.name, counts.most_common(3))
        else:
            assert mine > loudest_other, (case.name, counts.most_common(3))
    assert misleading >= 10


def test_old_xid_decoys_lie_outside_the_window(suite: Path) -> None:
    checked = 0
    for case in case_dirs(suite):
        exp = expected(case)
        if "old_xid" not in exp["decoys"]:
            continue
        inc = yaml.safe_load((case / "incident.yaml").read_text())
        start = datetime.fromisoformat(inc["window"]["start"])
        policy = ClockPolicy(tz_name=inc.get("timezone", "UTC"), year=start.year)
        for log in (case / "nodes").glob("*/kern.log"):
            if exp["node"] and log.parent.name == exp["node"]:
                continue
            for line in log.read_text().splitlines():
                if ": 79, " in line:
                    ts, _clock = parse_any(line, policy)
                    assert ts < start, (case.name, line)
                    checked += 1
    assert checked >= 2


def test_culprit_primary_precedes_the_victims_symptoms(tmp_path: Path) -> None:
    case = render_case(demo_spec(), tmp_path / "demo")
    policy = ClockPolicy(tz_name="UTC", year=2024)
    xid = [
        line
        for line in (case.path / "nodes/gpu-node-03/kern.log").read_text().splitlines()
        if "Xid" in line and ": 79, " in line
    ]
    assert len(xid) == 1 and "PCI:0000:9b:00" in xid[0]
    t_xid = parse_any(xid[0], policy)[0]
    victims = 0
    for node in ("gpu-node-01", "gpu-node-02", "gpu-node-04"):
        for line in (case.path / f"nodes/{node}/train.log").read_text().splitlines():
            if "Watchdog caught collective operation timeout" in line and "[E" in line:
                t_to = parse_any(line, policy)[0]
                assert (t_to - t_xid).total_seconds() > 300
                victims += 1
    assert victims >= 20


def test_demo_incident_matches_its_description(tmp_path: Path) -> None:
    case = render_case(demo_spec(), tmp_path / "demo", with_expected=False)
    assert not (case.path / EXPECTED_FILE).exists()
    exp = case.expected
    assert (exp.category, exp.node, exp.rank, exp.gpu, exp.gpu_index) == (
        "gpu_hardware",
        "gpu-node-03",
        29,
        "0000:9b:00",
        "5",
    )
    text = (case.path / "nodes/gpu-node-03/train.log").read_text()
    assert re.search(
        r"gpu-node-03:\d+:\d+ \[5\] NCCL INFO comm \S+ rank 29 nranks 32 .*busId 9b000", text
    )
    assert "[rank29]" in text and "unspecified launch failure" in text
    sacct = (case.path / "slurm/sacct.txt").read_text().splitlines()
    assert sacct[1].split("|")[2] == "FAILED"
    resets = sum(
        "Connection reset by peer" in (case.path / f"nodes/{n}/train.log").read_text()
        for n in ("gpu-node-02", "gpu-node-04")
    )
    assert resets >= 1
    assert sum(1 for p in case.path.rglob("train.log")) == 4


def test_render_refuses_to_clobber_a_foreign_folder(tmp_path: Path) -> None:
    (tmp_path / "precious.txt").write_text("keep me")
    with pytest.raises(FileExistsError):
        render_case(demo_spec(), tmp_path)
    assert (tmp_path / "precious.txt").read_text() == "keep me"


@pytest.mark.parametrize("zone", ["UTC", "America/Chicago", "Asia/Seoul"])
def test_kernel_time_formats_agree_on_the_instant(zone: str) -> None:
    t = datetime(2024, 5, 1, 15, 4, 12, 654321, tzinfo=ZoneInfo("UTC"))
    policy = ClockPolicy(tz_name=zone, year=2024)
    for style in KERNEL_STYLES:
        if style == "dmesg-raw":
            continue
        line = kernel_line(
            style,
            t.astimezone(ZoneInfo(zone)),
            "gpu-03",
            "kernel",
            "[86412.123456]",
            "NVRM: Xid (PCI:0000:9b:00): 79, pid=1, GPU has fallen",
        )
        got = parse_any(line, policy)
        assert got is not None, (style, line)
        assert abs((got[0] - t).total_seconds()) < 1, (style, line, got)


def test_hostlist_compression() -> None:
    assert compress_hostlist(["gpu-01", "gpu-02", "gpu-03", "gpu-07"]) == "gpu-[01-03,07]"
    assert compress_hostlist(["nid00123"]) == "nid00123"
    assert compress_hostlist(["dgx-a100-12", "dgx-a100-13", "gpu-01"]) == "dgx-a100-[12-13],gpu-01"


def test_shipped_cases_are_reproducible(tmp_path: Path) -> None:
    if not (SHIPPED / "suite.json").exists():
        pytest.fail(f"{SHIPPED} is missing: run python -m goodput_agent.evals.generator")
    index = json.loads((SHIPPED / "suite.json").read_text())
    fresh = tmp_path / "fresh"
    generate_suite(fresh, seed=index["seed"], count=index["count"])
    assert tree_digest(SHIPPED) == tree_digest(fresh)
