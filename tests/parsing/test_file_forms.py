"""A file reads the same gzipped (as `gzip -r bundle/` leaves it) or with a UTF-8 byte order
mark (as Notepad or PowerShell's Out-File write it), for every format: the same format, the
same events; a compressed log's last line is found."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from goodput_agent.bundle import open_bundle
from goodput_agent.metrics.engine_args import load_engine_args
from goodput_agent.parsing.base import ParseContext
from goodput_agent.parsing.lines import plain_suffix, read_head, read_tail, read_whole
from goodput_agent.parsing.registry import identify
from goodput_agent.parsing.timefmt import ClockPolicy
from goodput_agent.toolkit import ToolContext
from tools.log_activity import TOOL as LOG_ACTIVITY
from tools.log_activity import ActivityInput

EVALS = Path(__file__).resolve().parents[2] / "evals"
SAMPLES = [
    "cases/c04-application-error-dataset-keyerror/errors/error-29.json",  # torchelastic
    "cases/c07-hang-dataloader-stall/flight_recorder/nccl_trace_rank_0.json",
    "slowdown_cases/s20-gpu-throttling/metrics/dcgm_query_range.json",  # Prometheus API JSON
    "latency_cases/l11-kv-arrivals-with-high-batch-limit/config/engine_args.yaml",
    "cases/c01-gpu-hardware-xid79/slurm/sacct.txt",
    "cases/c03-host-oom-slurm-memcg/slurm/sacct.json",
    "cases/c12-host-oom-k8s-oomkilled/k8s/pods.json",
    "goodput_agent/demo/bundle/nodes/gpu-node-03/kern.log",
]


def _sample(rel: str) -> Path:
    return EVALS.parent / rel if rel.startswith("goodput_agent/") else EVALS / rel


def _gzipped(src: Path, tmp: Path) -> Path:
    out = tmp / (src.name + ".gz")
    out.write_bytes(gzip.compress(src.read_bytes()))
    return out


def _parse(path: Path):
    parser = identify(read_head(path).decode("utf-8", errors="replace"), path.name)
    assert parser is not None, path
    ctx = ParseContext(rel_path=path.name.removesuffix(".gz"), clock=ClockPolicy(year=2025))
    return parser.parse(path, ctx)


@pytest.mark.parametrize("rel", SAMPLES, ids=lambda r: r.rsplit("/", 1)[-1])
def test_a_gzipped_file_parses_as_the_plain_one(rel: str, tmp_path: Path) -> None:
    plain = tmp_path / "plain" / Path(rel).name
    plain.parent.mkdir()
    shutil.copy(_sample(rel), plain)
    a, b = _parse(plain), _parse(_gzipped(plain, tmp_path))
    assert (b.format, len(b.events), b.rank_hosts) == (a.format, len(a.events), a.rank_hosts)
    assert [(e.kind, e.ts, e.node, e.rank, e.summary) for e in b.events] == \
        [(e.kind, e.ts, e.node, e.rank, e.summary) for e in a.events]


@pytest.mark.parametrize("rel", SAMPLES, ids=lambda r: r.rsplit("/", 1)[-1])
def test_a_file_with_a_byte_order_mark_parses_as_without(rel: str, tmp_path: Path) -> None:
    plain = tmp_path / "plain" / Path(rel).name
    marked = tmp_path / "marked" / Path(rel).name
    plain.parent.mkdir()
    marked.parent.mkdir()
    shutil.copy(_sample(rel), plain)
    marked.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    a, b = _parse(plain), _parse(marked)
    assert (b.format, len(b.events), b.rank_hosts) == (a.format, len(a.events), a.rank_hosts)
    assert [(e.kind, e.ts, e.summary, e.excerpt) for e in b.events] == \
        [(e.kind, e.ts, e.summary, e.excerpt) for e in a.events]


def test_gzipped_engine_arguments_are_read(tmp_path: Path) -> None:
    src = _sample(SAMPLES[3])
    assert load_engine_args(_gzipped(src, tmp_path), "x") == load_engine_args(src, "x")
    assert plain_suffix(Path("a/engine_args.yaml.gz")) == ".yaml"


def test_read_whole_and_tail_decompress(tmp_path: Path) -> None:
    text = b"".join(b"line %d\n" % i for i in range(50_000))
    gz = tmp_path / "x.log.gz"
    gz.write_bytes(gzip.compress(text))
    assert read_whole(gz) == text and len(read_whole(gz, 100)) == 101
    tail, cut = read_tail(gz, 1000)
    assert cut and tail == text[-1000:]
    assert read_tail(gz, 10**7) == (text, False)


def test_log_activity_finds_the_last_line_of_a_gzipped_log(tmp_path: Path) -> None:
    root = tmp_path / "bundle"
    shutil.copytree(EVALS.parent / "goodput_agent" / "demo" / "bundle", root)
    with open_bundle(root) as bundle:
        plain = LOG_ACTIVITY.run(ToolContext(bundle=bundle), ActivityInput())
    for path in root.rglob("*.log"):
        path.with_name(path.name + ".gz").write_bytes(gzip.compress(path.read_bytes()))
        path.unlink()
    with open_bundle(root) as bundle:
        packed = LOG_ACTIVITY.run(ToolContext(bundle=bundle), ActivityInput())
    edges = {f.path: (f.first, f.last) for f in plain.files}
    assert len(packed.files) == len(plain.files)
    assert sum(f.last is not None for f in packed.files) >= 8  # every kern.log and train.log
    for f in packed.files:
        assert (f.first, f.last) == edges[f.path.removesuffix(".gz")]
