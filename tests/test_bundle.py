"""Bundles: every file identified by content or listed unread with a reason."""

from datetime import timedelta
from pathlib import Path, PurePosixPath

import pytest

from goodput_agent.bundle import node_hint_for, open_bundle, scan
from goodput_agent.core.errors import BadInput


def test_node_hint_comes_from_the_nearest_nodes_folder() -> None:
    assert node_hint_for(PurePosixPath("nodes/gpu-03/kern.log")) == "gpu-03"
    assert node_hint_for(PurePosixPath("x/nodes/gpu-03/logs/dmesg.txt")) == "gpu-03"
    assert node_hint_for(PurePosixPath("logs/rank3.log")) is None


def test_formats_are_identified_by_content_not_name(tmp_path: Path) -> None:
    (tmp_path / "nodes" / "n1").mkdir(parents=True)
    (tmp_path / "a.txt").write_text(
        "JobID|JobName|State|ExitCode\n48213|train|FAILED|1:0\n48213.0|python|FAILED|1:0\n")
    (tmp_path / "nodes" / "n1" / "b.txt").write_text(
        "May 01 10:04:12 n1 kernel: NVRM: Xid (PCI:0000:9b:00): 79, pid=1, name=python, "
        "GPU has fallen off the bus.\nMay 01 10:04:13 n1 kernel: audit: ok\n")
    (tmp_path / "c.txt").write_text(
        "[rank3]: Traceback (most recent call last):\n"
        '[rank3]:   File "train.py", line 3, in <module>\n[rank3]: KeyError: \'x\'\n')
    (tmp_path / "d.dat").write_bytes(bytes(range(256)) * 10)
    (tmp_path / "e.txt").write_text("just some notes\nnothing else\n")
    (tmp_path / "empty.log").write_text("")
    inv = scan(tmp_path)
    formats = {f.rel_path: f.format for f in inv.files}
    # text no format claims is read as free text: its decisive lines and failure words
    assert formats == {"a.txt": "sacct_pipe", "nodes/n1/b.txt": "kernel_log",
                       "c.txt": "job_log", "e.txt": "job_log"}
    reasons = {u.path: u.reason for u in inv.unread}
    assert reasons == {"d.dat": "binary file", "empty.log": "empty file"}


def test_incident_yaml_sets_the_clock(tmp_path: Path) -> None:
    (tmp_path / "incident.yaml").write_text(
        "question: why?\njob: 42\ntimezone: America/Chicago\n"
        "window: {start: 2023-02-01T10:00:00, end: 2023-02-01T11:00:00}\n")
    (tmp_path / "rank0.log").write_text("Traceback (most recent call last):\nValueError: x\n")
    inv = scan(tmp_path)
    assert inv.incident.job == "42"
    assert (inv.clock.tz_name, inv.clock.year) == ("America/Chicago", 2023)
    # a window without a zone is in the bundle's zone, as every zoneless time is
    assert inv.incident.window.start.isoformat() == "2023-02-01T10:00:00-06:00"
    assert inv.incident.window.end.utcoffset() == timedelta(hours=-6)


def test_a_folder_holding_only_the_bundle_folder_is_opened_at_the_bundle(tmp_path: Path) -> None:
    inner = tmp_path / "incident-42"
    (inner / "nodes" / "n1").mkdir(parents=True)
    (inner / "incident.yaml").write_text("job: 42\ntimezone: America/Chicago\n")
    (inner / "rank0.log").write_text("Traceback (most recent call last):\nValueError: x\n")
    with open_bundle(tmp_path) as bundle:
        assert bundle.root == inner and bundle.inventory.incident.job == "42"
        assert bundle.inventory.clock.tz_name == "America/Chicago"
        assert [f.rel_path for f in bundle.inventory.files] == ["rank0.log"]
    (inner / "incident.yaml").unlink()  # no question: the folder is not taken for the bundle
    with open_bundle(tmp_path) as bundle:
        assert bundle.root == tmp_path
        assert [f.rel_path for f in bundle.inventory.files] == ["incident-42/rank0.log"]


def test_unknown_time_zone_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "incident.yaml").write_text("timezone: Mars/Olympus\n")
    (tmp_path / "rank0.log").write_text("Traceback (most recent call last):\nValueError: x\n")
    with pytest.raises(BadInput, match="incident.yaml.*timezone"):
        scan(tmp_path)


def test_tar_with_a_path_escaping_the_bundle_is_refused(tmp_path: Path) -> None:
    import io
    import tarfile

    archive = tmp_path / "evil.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        data = b"pwned"
        info = tarfile.TarInfo("../../escaped.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with pytest.raises(BadInput, match="evil.tar.gz"):
        open_bundle(archive)
    assert not (tmp_path.parent / "escaped.txt").exists()


def test_fifos_and_unreadable_entries_are_listed_not_read(tmp_path: Path) -> None:
    import os

    (tmp_path / "rank0.log").write_text("Traceback (most recent call last):\nValueError: x\n")
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "utf16.log").write_bytes("NVRM: Xid 79\n".encode("utf-16"))
    inv = scan(tmp_path)
    reasons = {u.path: u.reason for u in inv.unread}
    assert reasons["pipe"].startswith("not a regular file")
    assert reasons["utf16.log"].startswith("UTF-16")


def test_window_must_end_after_it_starts(tmp_path: Path) -> None:
    (tmp_path / "incident.yaml").write_text(
        "window: {start: 2024-05-01T10:35:00Z, end: 2024-05-01T09:50:00Z}\n")
    (tmp_path / "rank0.log").write_text("Traceback (most recent call last):\nValueError: x\n")
    with pytest.raises(BadInput, match="end is before start"):
        scan(tmp_path)


def test_truncated_archive_is_bad_input(tmp_path: Path, demo_bundle: Path) -> None:
    import tarfile

    full = tmp_path / "full.tar.gz"
    with tarfile.open(full, "w:gz") as tar:
        tar.add(demo_bundle, arcname="b")
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(full.read_bytes()[:100])
    with pytest.raises(BadInput, match="cut.tar.gz"):
        open_bundle(cut)


def test_a_file_is_identified_by_the_lines_it_holds_past_its_head(tmp_path: Path) -> None:
    # a long job output whose first pages are an argument dump no sniffer knows, with
    # slurmstepd's time-limit line near its end (issue 24): read, never listed unread
    dump = "".join(f"  --option-{i:05d} ................ value-{i}\n" for i in range(6000))
    (tmp_path / "slurm-77.out").write_text(
        dump + "slurmstepd: error: *** JOB 77 ON gpu-3 CANCELLED AT 2024-05-01T10:00:00 DUE TO "
               "TIME LIMIT ***\n")
    inv = scan(tmp_path)
    assert len(dump) > 200_000
    assert [(f.rel_path, f.format) for f in inv.files] == [("slurm-77.out", "job_log")]
    assert inv.unread == []


def test_text_no_format_claims_is_read_for_its_decisive_lines(tmp_path: Path) -> None:
    """Issue 24 class 1: no text file is dropped as unrecognised; a one-line paste of a
    client's error is the answer."""
    from goodput_agent.investigate import investigate_bundle
    from goodput_agent.ledger import Ledger

    b = tmp_path / "b"
    b.mkdir()
    (b / "paste.txt").write_text("salloc: error: Node failure on worker-1\n")
    assert [f.format for f in scan(b).files] == ["job_log"]
    with Ledger(tmp_path / "l.duckdb") as lg:
        rc = investigate_bundle(b, lg).root_cause
    assert (rc.category, rc.node) == ("node_failure", "worker-1")
