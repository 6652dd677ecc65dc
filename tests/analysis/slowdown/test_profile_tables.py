"""A slowdown from two key_averages() tables: the part of the step that grew names the class,
as properties over generated tables (tests/parsing/test_profile_table.py's layout): each part
grown alone gives its class at most 0.6, whichever file is named first; everything grown
together, GPU kernels grown, no growth, or one table alone is `unknown`."""

from __future__ import annotations

from pathlib import Path

import pytest

from goodput_agent.analysis.abstention import NOTHING_TO_COMPARE
from goodput_agent.analysis.slowdown.from_logs import MAX_CONFIDENCE
from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger
from tests.parsing.test_profile_table import table

GPU_HEADER = ("Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
              "Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg", "# of Calls")
STEPS = 20
# per step, in ms: (self CPU, CPU total, self CUDA) of each row; the step's CPU total is their
# sum (the host waits in cudaStreamSynchronize for the GPU's part)
BASE = {"dataloader": 0.4, "host": 6.0, "gemm": 50.0, "nccl": 10.0}


def profile(part: dict[str, float]) -> str:
    gpu = part["gemm"] + part["nccl"]
    step = part["dataloader"] + part["host"] + gpu

    def ms(v: float) -> str:
        return f"{v * STEPS:.3f}ms"

    rows = [
        ("ProfilerStep*", "1.00%", ms(0.5), "100.00%", ms(step), ms(step / STEPS), "0.000us",
         "0.00%", ms(gpu), ms(gpu / STEPS), str(STEPS)),
        ("aten::mm", "1.00%", ms(part["host"] * 0.4), "2.00%", ms(part["host"] * 0.5),
         "28.000us", "0.000us", "0.00%", ms(part["gemm"]), "500.000us", "1920"),
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn...", "0.00%", "0.000us", "0.00%", "0.000us",
         "0.000us", ms(part["gemm"]), "80.00%", ms(part["gemm"]), "500.000us", "1920"),
        ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL...", "0.00%", "0.000us", "0.00%", "0.000us",
         "0.000us", ms(part["nccl"]), "15.00%", ms(part["nccl"]), "2.500ms", "80"),
        ("cudaStreamSynchronize", "80.00%", ms(gpu), "80.00%", ms(gpu), ms(gpu / STEPS),
         "0.000us", "0.00%", "0.000us", "0.000us", str(STEPS)),
        ("enumerate(DataLoader)#_MultiProcessingDataLo...", "0.40%", ms(part["dataloader"]),
         "0.40%", ms(part["dataloader"]), "400.000us", "0.000us", "0.00%", "0.000us",
         "0.000us", str(STEPS)),
        ("cudaLaunchKernel", "3.00%", ms(part["host"] * 0.6), "3.00%", ms(part["host"] * 0.6),
         "6.000us", "0.000us", "0.00%", "0.000us", "0.000us", "10400"),
    ]
    return table(rows, width=55, header=GPU_HEADER)


def _verdict(tmp_path: Path, slow: dict[str, float], names: tuple[str, str] =
             ("baseline/key_averages.txt", "slow/key_averages.txt"), both: bool = True):
    b = tmp_path / "b"
    for name, part in zip(names, (BASE, slow), strict=True):
        if part is slow or both:
            (b / name).parent.mkdir(parents=True, exist_ok=True)
            (b / name).write_text(profile(part))
    (b / "incident.yaml").write_text("question: training got slower since yesterday, why?\n")
    with Ledger(tmp_path / "l.duckdb") as lg:
        report = investigate_bundle(b, lg)
    assert report.kind == "slowdown"
    return report.root_cause


@pytest.mark.parametrize(("grown", "category"), [
    ({"dataloader": 35.0}, "input_stall"),
    ({"nccl": 40.0}, "communication"),
    ({"host": 30.0}, "host_overhead"),
])
@pytest.mark.parametrize("names", [("baseline/key_averages.txt", "slow/key_averages.txt"),
                                   ("profile/after.txt", "profile/before.txt"),
                                   ("a.txt", "b.txt")])
def test_the_part_that_grew_alone_names_the_class(tmp_path: Path, grown: dict[str, float],
                                                   category: str, names: tuple[str, str]
                                                   ) -> None:
    """The slower table is the slow run, whatever the files are called (the question says
    training got slower)."""
    rc = _verdict(tmp_path, {**BASE, **grown}, names)
    assert (rc.category, rc.confidence) == (category, MAX_CONFIDENCE), rc.summary
    assert rc.evidence and all(e.locator.split(":")[0] in names for e in rc.evidence)


@pytest.mark.parametrize("slow", [
    {k: v * 1.6 for k, v in BASE.items()},  # everything grew: no one part carries it
    {**BASE, "gemm": 90.0},  # GPU kernels: throttling or a changed shape, not told apart
    {**BASE, "host": 6.5},  # no slowdown to explain
])
def test_no_one_part_or_only_kernels_is_unknown(tmp_path: Path, slow: dict[str, float]) -> None:
    rc = _verdict(tmp_path, slow)
    assert rc.category == "unknown" and rc.confidence <= 0.3


def test_one_table_alone_has_nothing_to_compare(tmp_path: Path) -> None:
    rc = _verdict(tmp_path, {**BASE, "dataloader": 35.0}, both=False)
    assert (rc.category, rc.confidence) == ("unknown", NOTHING_TO_COMPARE)
