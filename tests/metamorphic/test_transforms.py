"""Each transform does what it says, on a tiny bundle (fast; no investigation)."""

from __future__ import annotations

import gzip
import json
import tarfile
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from goodput_agent.parsing.job_log import rank_from_filename
from goodput_agent.parsing.timefmt import ClockPolicy, parse_any
from tests.metamorphic.bundle_text import evidence_files, read_text
from tests.metamorphic.clock_transforms import DECOY_LEAD, add_decoy_event, shift_time_zone
from tests.metamorphic.rank_logs import merge_rank_logs, split_combined_logs
from tests.metamorphic.transforms import (
    EXTRA_FILES,
    CaseInfo,
    add_extra_files,
    other_form,
    pack_tar_gz,
    qualify_hosts,
    rename_and_nest,
    reword_question,
    shuffle_order,
    to_crlf,
    toggle_gzip,
    wrap_in_folder,
)
from tests.metamorphic.variants import VARIANTS, T, shipped_cases

INFO = CaseInfo("tiny", "failure", node="gpu-02")
FILES = {
    "incident.yaml": "question: why did job 7 fail?\njob: '7'\ntimezone: Europe/Berlin\n"
                     "window: {start: '2024-05-01T09:50:00+02:00',\n"
                     "         end: '2024-05-01T10:35:00+02:00'}\n",
    "slurm/sacct.txt": "JobID|State|NodeList|Start|End\n"
                       "7|FAILED|gpu-[01-02]|2024-05-01T10:00:00|2024-05-01T10:24:07\n",
    "nodes/gpu-01/kern.log": "May 01 09:25:39 gpu-01 kernel: hrtimer: interrupt took 31542 ns\n"
                             "May 01 10:20:01 gpu-01 kernel: NVRM: Xid (PCI:0000:1b:00): 79, "
                             "pid=1, GPU has fallen off the bus.\n",
    "nodes/gpu-02/kern.log": "2024-05-01T10:01:00+0200 gpu-02 kernel: mlx5_core: link up\n",
    "nodes/gpu-02/dmesg.txt": "[Wed May  1 10:02:00 2024] mlx5_core: port up\n",
    "logs/rank0.log": "gpu-01:11:11 [0] NCCL INFO comm 0x1 rank 0 nranks 2 - Init COMPLETE\n"
                      "2024-05-01 10:05:00,100 INFO step 1\n"
                      "[rank0]:[E0501 10:20:02.000001 ProcessGroupNCCL.cpp:1] Watchdog\n",
    "logs/rank1.log": "gpu-02:12:12 [0] NCCL INFO comm 0x1 rank 1 nranks 2 - Init COMPLETE\n"
                      "2024-05-01 10:05:00,200 INFO step 1\nno time here\n",
    "logs/slurm-7.out": "srun: error: gpu-01: task 0: Exited with exit code 1\n",
    "k8s/pods.json": json.dumps({"kind": "List", "items": [{"n": i} for i in range(6)]}),
    "traces/baseline/gpu-01_100.1714557600000.pt.trace.json.gz": "{}",
}


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    root = tmp_path / "tiny"
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode()
        path.write_bytes(gzip.compress(data) if rel.endswith(".gz") else data)
    return root


def contents(root: Path) -> Counter[str]:
    return Counter(read_text(p) for p in evidence_files(root))


def test_rename_and_nest_moves_every_file_and_keeps_node_folders(bundle: Path) -> None:
    before = contents(bundle)
    rename_and_nest(bundle, INFO)
    rels = [p.relative_to(bundle).as_posix() for p in evidence_files(bundle)]
    assert contents(bundle) == before
    assert (bundle / "incident.yaml").exists()
    assert all(r.startswith("collected/incident-files/") for r in rels)
    assert any("/nodes/gpu-01/kern.log" in r for r in rels)
    assert any("/profiles/good/" in r for r in rels)  # baseline -> a synonym
    assert not any("/logs/" in r for r in rels)


def test_wrap_puts_the_whole_bundle_one_folder_down(bundle: Path) -> None:
    before = contents(bundle)
    wrap_in_folder(bundle, INFO)
    assert [p.name for p in bundle.iterdir()] == ["incident-tiny"]
    assert (bundle / "incident-tiny" / "incident.yaml").exists()
    assert contents(bundle / "incident-tiny") == before


def test_extra_files_are_added(bundle: Path) -> None:
    add_extra_files(bundle, INFO)
    assert all((bundle / rel).read_bytes() == data for rel, data in EXTRA_FILES.items())


def test_crlf_keeps_every_line(bundle: Path) -> None:
    before = {p: read_text(p) for p in evidence_files(bundle)}
    to_crlf(bundle, INFO)
    boms = 0
    for path, text in before.items():
        if "traces" not in path.parts:
            now = read_text(path)
            boms += now.startswith("\ufeff")
            assert now.removeprefix("\ufeff") == text.replace("\n", "\r\n")
    assert b"\r\n" in (bundle / "incident.yaml").read_bytes()
    assert (bundle / "incident.yaml").read_bytes().startswith(b"\xef\xbb\xbf")
    assert 0 < boms < len(before)  # some files, not all


def test_gzip_toggles_and_keeps_content(bundle: Path) -> None:
    before = contents(bundle)
    toggle_gzip(bundle, INFO)
    assert (bundle / "nodes/gpu-01/kern.log.gz").exists()
    assert not (bundle / "nodes/gpu-01/kern.log").exists()
    assert contents(bundle) == before
    toggle_gzip(bundle, INFO)
    assert (bundle / "nodes/gpu-01/kern.log").exists() and contents(bundle) == before


def test_tar_gz_holds_the_bundle_under_one_folder(bundle: Path) -> None:
    names = {p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file()}
    archive = pack_tar_gz(bundle, INFO)
    with tarfile.open(archive) as tar:
        inside = {m.name.split("/", 1)[1] for m in tar.getmembers() if m.isfile()}
        assert {m.name.split("/", 1)[0] for m in tar.getmembers()} == {"incident-tiny"}
    assert inside == names and not bundle.exists()


def test_fqdn_renames_hosts_in_some_sources_only(bundle: Path) -> None:
    qualify_hosts(bundle, INFO)
    kern = read_text(next(bundle.rglob("kern.log")))
    assert "gpu-01.cluster.example kernel:" in kern or "gpu-02.cluster.example" in kern
    rank0 = read_text(bundle / "logs/rank0.log")
    assert rank0.startswith("gpu-01.cluster.example:11:11 [0] NCCL")
    assert read_text(bundle / "slurm/sacct.txt") == FILES["slurm/sacct.txt"]
    assert read_text(bundle / "logs/slurm-7.out") == FILES["logs/slurm-7.out"]
    folders = {p.name for p in (bundle / "nodes").iterdir()}
    assert folders == {"gpu-01", "gpu-02.cluster.example"}  # one folder of two
    assert other_form(other_form("gpu-01")) == "gpu-01"
    assert other_form("ip-10-0-1-2.ec2.internal") == "ip-10-0-1-2"


def test_rank_order_keeps_ranks_and_items(bundle: Path) -> None:
    shuffle_order(bundle, INFO)
    logs = sorted(p.name for p in (bundle / "logs").iterdir())
    assert "rank000.log" in logs and "rank001.log" in logs
    assert {rank_from_filename(n) for n in logs} == {0, 1, None}
    items = json.loads(read_text(bundle / "k8s/pods.json"))["items"]
    assert sorted(i["n"] for i in items) == list(range(6)) and \
        [i["n"] for i in items] != list(range(6))
    trace = next((bundle / "traces").rglob("*.pt.trace.json.gz")).name
    assert trace.startswith("gpu-01_") and trace.endswith(".1714557600000.pt.trace.json.gz")
    assert trace != "gpu-01_100.1714557600000.pt.trace.json.gz"


def test_reworded_question_drops_the_kind(bundle: Path) -> None:
    (bundle / "incident.yaml").write_text("kind: failure\njob: '7'\nquestion: why?\n")
    reword_question(bundle, INFO)
    spec = yaml.safe_load((bundle / "incident.yaml").read_text())
    assert "kind" not in spec
    assert all(w in spec["question"] for w in ("slower", "SLO", "throughput", "hang"))


def _instants(root: Path) -> list[tuple[str, float | None]]:
    spec = yaml.safe_load((root / "incident.yaml").read_text())
    policy = ClockPolicy(tz_name=spec["timezone"], year=2024)
    out = []
    for path in evidence_files(root):
        for line in read_text(path).splitlines():
            hit = parse_any(line, policy)
            out.append((path.name, hit[0].timestamp() if hit else None))
    return out


def test_time_zone_shift_keeps_every_instant(bundle: Path) -> None:
    before = _instants(bundle)
    window = yaml.safe_load((bundle / "incident.yaml").read_text())["window"]
    shift_time_zone(bundle, INFO)
    spec = yaml.safe_load((bundle / "incident.yaml").read_text())
    assert spec["timezone"] == "Asia/Kolkata"
    assert "10:24:07" not in read_text(bundle / "slurm/sacct.txt")  # zoneless: rewritten
    assert "2024-05-01T10:01:00+0200" in read_text(bundle / "nodes/gpu-02/kern.log")  # zoned
    assert _instants(bundle) == before
    for key in ("start", "end"):
        assert spec["window"][key].endswith("+05:30") or "+" not in spec["window"][key]
        assert _parse(spec["window"][key], "Asia/Kolkata") == _parse(window[key])


def _parse(text: str, zone: str = "UTC") -> float:
    from datetime import datetime
    from zoneinfo import ZoneInfo

    t = datetime.fromisoformat(text)
    return (t if t.tzinfo else t.replace(tzinfo=ZoneInfo(zone))).timestamp()


def test_decoy_event_is_hours_before_on_another_node(bundle: Path) -> None:
    start = _parse(yaml.safe_load((bundle / "incident.yaml").read_text())["window"]["start"])
    add_decoy_event(bundle, INFO)
    first = read_text(bundle / "nodes/gpu-01/kern.log").splitlines()[0]
    assert "Xid" in first and " 13, " in first and "gpu-01 kernel:" in first
    hit = parse_any(first, ClockPolicy(tz_name="Europe/Berlin", year=2024))
    assert hit and hit[0].timestamp() == start - DECOY_LEAD.total_seconds()
    spec = yaml.safe_load((bundle / "incident.yaml").read_text())
    assert _parse(spec["window"]["start"]) <= start - (DECOY_LEAD + timedelta(minutes=5)) \
        .total_seconds()


def test_decoy_goes_to_a_node_without_a_kernel_log_as_a_new_one(bundle: Path) -> None:
    for name in ("kern.log", "dmesg.txt"):
        (bundle / "nodes/gpu-02" / name).unlink()
    (bundle / "nodes/gpu-02/train.log").write_text("hello\n")
    add_decoy_event(bundle, CaseInfo("tiny", "failure", node="gpu-01.cluster.example"))
    line = read_text(bundle / "nodes/gpu-02/kern.log")
    assert line.startswith("2024-05-01T04:50:00+0000 gpu-02 kernel: NVRM: Xid")


def test_merge_holds_every_line_of_every_rank_and_split_gives_them_back(bundle: Path) -> None:
    ranks = {r: read_text(bundle / f"logs/rank{r}.log").splitlines() for r in (0, 1)}
    merge_rank_logs(bundle, INFO)
    assert not (bundle / "logs/rank0.log").exists()
    merged = read_text(bundle / "logs/combined.log").splitlines()
    assert len(merged) == sum(len(v) for v in ranks.values())
    for r, lines in ranks.items():
        mine = [m for m in merged if m.startswith((f"[rank{r}]:", f"{r}: "))]
        assert [m.split(":", 1)[1].removeprefix(" ") for m in mine] == lines  # order kept
    split_combined_logs(bundle, INFO)
    assert not (bundle / "logs/combined.log").exists()
    for r, lines in ranks.items():
        assert read_text(bundle / f"logs/combined.rank{r}.log").splitlines() == lines


def test_split_needs_every_local_rank_mapped(bundle: Path) -> None:
    combined = bundle / "nodes/gpu-01/train.log"
    combined.write_text("[default0]:[rank2]:hello\n[default1]:world\n")
    split_combined_logs(bundle, INFO)
    assert combined.exists() and not (bundle / "nodes/gpu-01/train.rank2.log").exists()
    combined.write_text("[default0]:[rank2]:hello\n[default1]:[rank3]:x\n[default1]:world\n"
                        "torchrun: agent line\n")
    split_combined_logs(bundle, INFO)
    assert read_text(bundle / "nodes/gpu-01/train.rank3.log") == "[rank3]:x\nworld\n"
    assert read_text(combined) == "torchrun: agent line\n"


def test_variants_cover_every_transform_once_and_pack_last() -> None:
    names = [n for v in VARIANTS.values() for n in v]
    assert sorted(names) == sorted(T) and all(v.index("tar-gz") == len(v) - 1
                                              for v in VARIANTS.values() if "tar-gz" in v)


def test_every_transform_applies_to_some_shipped_case() -> None:
    cases = shipped_cases()
    for name, transform in T.items():
        assert any(transform.usable(c.path, CaseInfo(c.name, c.kind)) for c in cases), name
