"""Inputs past the limits are refused in one line naming the file, with bounded disk and memory:
a decompression bomb, an archive or folder of too many files, a trace too big to hold; and a
bundle of many unread files is summarised on the terminal, not listed whole."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from goodput_agent.cli import cli
from goodput_agent.evals.scorer import suite_dir

CHUNK = 10 * 1024**2


def _zeros_tar(path: Path, members: int, size: int = CHUNK) -> Path:
    """A .tar.gz of `members` files of zeros: about a thousandth of its unpacked size."""
    zeros = bytes(size)
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        for i in range(members):
            info = tarfile.TarInfo(f"bundle/logs/big-{i}.log")
            info.size = size
            tar.addfile(info, io.BytesIO(zeros))
    return path


# the CLI in a child process that reports its own peak RSS (KiB) on the descriptor it is given:
# VmHWM, its own address space's high-water mark (getrusage's ru_maxrss survives exec, so it can
# report the forking test process's size instead)
_MEASURED = """
import os, re, sys
from goodput_agent.cli.main import cli
try:
    cli(sys.argv[2:], prog_name="goodput")
finally:
    hwm = re.search(r"VmHWM:\\s*(\\d+)", open("/proc/self/status").read()).group(1)
    os.write(int(sys.argv[1]), hwm.encode())
"""


def _goodput(*args: str, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess,
                                                                      int]:
    """The command in a child process: its result and its peak RSS in KiB."""
    read, write = os.pipe()
    proc = subprocess.run([sys.executable, "-c", _MEASURED, str(write), *args],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})}, pass_fds=(write,))
    os.close(write)
    with os.fdopen(read) as f:
        peak = f.read()
    return proc, int(peak or 0)


def _temp_bundles() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("goodput-bundle-*")}


def test_a_decompression_bomb_is_refused_before_it_is_written(tmp_path: Path) -> None:
    bomb = _zeros_tar(tmp_path / "bomb.tar.gz", 40)  # 400 MiB from a few hundred KiB
    assert bomb.stat().st_size < 2 * 1024**2
    before = _temp_bundles()
    proc, peak_kib = _goodput("investigate", str(bomb), "--ledger", str(tmp_path / "l.duckdb"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    err = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(err) == 1 and str(bomb) in err[0] and "decompression bomb" in err[0], err
    assert "GOODPUT_MAX_ARCHIVE_BYTES" in err[0] and "Traceback" not in proc.stderr
    assert _temp_bundles() <= before  # what it unpacked before refusing is gone
    assert peak_kib < 600 * 1024


def test_the_byte_limit_can_be_raised_or_lowered(tmp_path: Path) -> None:
    small = _zeros_tar(tmp_path / "small.tar.gz", 2, 1024**2)  # 2 MiB, ratio far past 200
    env = {"GOODPUT_MAX_ARCHIVE_BYTES": "1M"}
    proc, _ = _goodput("investigate", str(small), "--ledger", str(tmp_path / "l.duckdb"), env=env)
    assert proc.returncode == 2 and "more than 1.0 MiB" in proc.stderr


def test_too_many_files_in_an_archive_or_a_folder(tmp_path: Path) -> None:
    folder = tmp_path / "many"
    (folder / "logs").mkdir(parents=True)
    for i in range(60):
        (folder / "logs" / f"f{i}.log").write_text("x\n")
    env = {"GOODPUT_MAX_BUNDLE_FILES": "50"}
    proc, _ = _goodput("investigate", str(folder), "--ledger", str(tmp_path / "l.duckdb"),
                       env=env)
    assert proc.returncode == 2 and "more than 50 files" in proc.stderr
    assert str(folder) in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    archive = tmp_path / "many.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname="many")
    proc, _ = _goodput("investigate", str(archive), "--ledger", str(tmp_path / "l.duckdb"),
                       env=env)
    assert proc.returncode == 2 and "more than 50 files" in proc.stderr


@pytest.mark.parametrize("compressed", [False, True])
def test_a_trace_past_its_limit_is_unread_with_the_reason(tmp_path: Path,
                                                          compressed: bool) -> None:
    from goodput_agent.bundle import open_bundle

    case = next(p for p in sorted(suite_dir("slowdown").iterdir()) if p.is_dir())
    bundle = tmp_path / "b"
    shutil.copytree(case, bundle)
    traces = [p for p in bundle.rglob("*.json*") if "trace" in p.name or p.suffix == ".gz"]
    assert traces
    if not compressed:
        for p in traces:
            if p.suffix == ".gz":
                import gzip

                p.with_suffix("").write_bytes(gzip.decompress(p.read_bytes()))
                p.unlink()
    os.environ["GOODPUT_MAX_TRACE_BYTES"] = "64K"
    try:
        with open_bundle(bundle) as b:
            from goodput_agent.parsing.kineto.load import TraceProblem, load_trace

            f = next(x for x in b.inventory.files if x.format == "kineto_trace")
            with pytest.raises(TraceProblem, match="larger than the 64.0 KiB a trace may"):
                load_trace(bundle / f.rel_path, f.rel_path)
    finally:
        del os.environ["GOODPUT_MAX_TRACE_BYTES"]


def test_many_unread_files_are_counted_by_reason_on_the_terminal(tmp_path: Path) -> None:
    bundle = tmp_path / "b"
    shutil.copytree(suite_dir("failure") / "c01-gpu-hardware-xid79", bundle)
    (bundle / "expected.json").unlink()  # the eval's answer key, not evidence
    (bundle / "junk").mkdir()
    for i in range(45):
        (bundle / "junk" / f"blob{i:02d}.bin").write_bytes(b"\x00\x01" * 64)
    for i in range(5):
        (bundle / "junk" / f"empty{i}.txt").write_bytes(b"")
    r = CliRunner().invoke(cli, ["investigate", str(bundle), "--ledger",
                                 str(tmp_path / "l.duckdb")], env={"COLUMNS": "160"})
    out = r.output
    assert out.count("unread: junk/") == 20
    assert "30 more files not listed" in out and "× binary file" in out
    as_json = CliRunner().invoke(cli, ["investigate", str(bundle), "--json", "--ledger",
                                       str(tmp_path / "l.duckdb")])
    assert as_json.output.count("junk/blob") >= 45  # the contract still lists every one
