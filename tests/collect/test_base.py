"""BundleWriter: redaction before writing, bounded copies, safe paths, and a manifest whose
errors reach the report as missing evidence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from goodput_agent.bundle import open_bundle
from goodput_agent.collect.base import MANIFEST_NAME, BundleWriter, read_manifest
from goodput_agent.core.errors import BadInput
from goodput_agent.core.redact import MASK
from goodput_agent.sources.errors import Unreachable


def test_written_files_are_redacted_and_listed(tmp_path: Path) -> None:
    log = tmp_path / "job.out"
    log.write_text("step 1 ok\nexport HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz012345\n")
    out = tmp_path / "b"
    with BundleWriter(out, {"slurm_job": "7"}) as w:
        w.write_text("slurm/sacct.txt", "JobID|State\n7|FAILED\n", source="slurm",
                     what="sacct of job 7", command=["sacct", "-j", "7", "--password=hunter2"])
        w.copy_file("logs/job.out", log, source="slurm", what="stdout of job 7")
    text = (out / "logs/job.out").read_text()
    assert "hf_abcdef" not in text and MASK in text and text.startswith("step 1 ok\n")
    m = read_manifest(out / MANIFEST_NAME)
    assert m is not None and m.target == {"slurm_job": "7"}
    files = {f.path: f for f in m.files}
    assert files["logs/job.out"].redacted and not files["slurm/sacct.txt"].redacted
    assert "hunter2" not in (files["slurm/sacct.txt"].command or "")
    assert files["slurm/sacct.txt"].bytes == len("JobID|State\n7|FAILED\n")


def test_big_files_keep_their_first_and_last_lines(tmp_path: Path) -> None:
    src = tmp_path / "big.log"
    src.write_text("".join(f"line {i:05d}\n" for i in range(10_000)))  # 110,000 bytes
    w = BundleWriter(tmp_path / "b", {}, max_file_bytes=20_000)
    w.copy_file("logs/big.log", src, source="slurm", what="stdout")
    m = w.finish()
    lines = (tmp_path / "b/logs/big.log").read_text().splitlines()
    assert lines[0] == "line 00000" and lines[-1] == "line 09999"
    assert len(lines) < 2000 and m.files[0].truncated and "110000" in m.files[0].truncated


def test_unsafe_names_and_used_folders_are_refused(tmp_path: Path) -> None:
    w = BundleWriter(tmp_path / "b", {})
    for rel in ("../escape.txt", "/etc/passwd", "nodes/../../x", ""):
        with pytest.raises(BadInput, match="not a safe path"):
            w.write_text(rel, "x", source="t", what="t")
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "f").write_text("x")
    with pytest.raises(BadInput, match="not an empty folder"):
        BundleWriter(tmp_path / "used", {})


def test_unreadable_source_files_become_errors(tmp_path: Path) -> None:
    w = BundleWriter(tmp_path / "b", {})
    assert w.copy_file("logs/x.log", tmp_path / "absent.log", source="slurm",
                       what="stdout of job 7") is None
    w.source_error("kernel log of gpu-node-01",
                   Unreachable("kernel_log", "journalctl: no journal", "journalctl -k"))
    m = w.finish()
    assert [(e.kind, e.what) for e in m.errors] == [
        ("not_found", "stdout of job 7"), ("unreachable", "kernel log of gpu-node-01")]
    assert m.missing_evidence()[1].startswith("missing evidence: kernel log of gpu-node-01 ")


def test_manifest_is_not_evidence_and_its_errors_are_missing_evidence(tmp_path: Path) -> None:
    with BundleWriter(tmp_path / "b", {"slurm_job": "7"}) as w:
        w.write_text("slurm/sacct.txt", "JobID|JobName|State|ExitCode\n7|train|FAILED|1:0\n",
                     source="slurm", what="sacct of job 7")
        w.error("kernel_log", "kernel log of gpu-node-01", "forbidden", "dmesg: not permitted")
    with open_bundle(tmp_path / "b") as b:
        assert [u.path for u in b.inventory.unread] == []
        assert [f.format for f in b.inventory.files] == ["sacct_pipe"]
        assert b.inventory.missing == ["missing evidence: kernel log of gpu-node-01 "
                                       "(kernel_log, forbidden: dmesg: not permitted)"]


def test_a_foreign_manifest_json_stays_evidence(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / MANIFEST_NAME).write_text(json.dumps({"schema": "other", "x": 1}))
    assert read_manifest(tmp_path / "b" / MANIFEST_NAME) is None
    with open_bundle(tmp_path / "b") as b:
        # evidence like any text no format claims: read as free text, not set aside
        assert [f.rel_path for f in b.inventory.files] == [MANIFEST_NAME]
        assert b.inventory.unread == []
