"""Every real excerpt in ../shared/realworld is read without error, and where what the
excerpt shows decides the class, the verdict matches the thread's label."""

import json
import shutil
from pathlib import Path

import pytest

from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger

# The shared labels mapped onto the product's taxonomy. Hangs caused by one rank's own work
# (a 200 GB preprocessing step, a rank-0-only barrier) are labelled application_error in the
# threads; the product calls that class `hang`, so both are accepted there.
LABEL_TO_CATEGORY = {"gpu_hardware": {"gpu_hardware"}, "gpu_oom": {"gpu_oom"},
                     "host_oom": {"host_oom"}, "application_error": {"application_error"},
                     "network": {"network_fault"},
                     # the serving engine's own log: KV-cache preemptions, requests queued
                     # behind long prompts' prefill (queueing; the prompts are the alternative)
                     "kv_cache_preemption": {"kv_cache_pressure"},
                     "queueing_long_prompts": {"queueing", "prompt_length"}}
HANG_BY_OWN_WORK = {"accelerate314_timeout_one_rank_reading_200G_file",
                    "autocast381_postfit_allreduce_timeout_rank0_barrier"}
# Excerpts whose deciding evidence is not in the text (a narrative without the raw lines, or a
# signal that does not single out the class): the label is not decisive.
NOT_DECISIVE = {
    "ogkm1151_xid79_rtx5080_link_up_device_dead": "narrative, no raw Xid line",
    "ogkm1355_xid145_nvlink_b300_vllm_tp_narrative": "narrative, no raw Xid line",
    "vllmbackport62_hbm_failing_xid48_63_94_154_narrative": "narrative, no raw Xid line",
    "alpacalora546_killed_loading_checkpoint_shards": "only the word 'killed' in prose",
    "nccl2076_ncclremoteerror_ib_nodes": "only the remote-error symptom on one rank",
    "nccl697_ncclsystemerror_socket_ifname_bridges": "ncclSystemError from interface choice",
}


def _excerpts(shared: Path) -> list[tuple[Path, dict]]:
    out = []
    for side in sorted((shared / "realworld").glob("*/*.json")):
        if side.parent.name == "slurm-json":
            continue
        meta = json.loads(side.read_text())
        log = next(p for p in (side.with_suffix(".log"), side.with_suffix(".prom")) if p.exists())
        out.append((log, meta))
    return out


def test_every_excerpt_reads_and_decisive_labels_match(shared_dir: Path, tmp_path: Path) -> None:
    checked, mismatches = 0, []
    with Ledger(tmp_path / "l.duckdb") as ledger:
        for log, meta in _excerpts(shared_dir):
            bundle = tmp_path / log.stem
            bundle.mkdir()
            shutil.copy(log, bundle / log.name)  # a one-file bundle in tmp, not in the repo
            report = investigate_bundle(bundle, ledger)
            for ev in report.root_cause.evidence:
                assert ev.source == log.name and ev.excerpt
            allowed = set(LABEL_TO_CATEGORY.get(meta["label"], set()))
            if log.stem in HANG_BY_OWN_WORK:
                allowed.add("hang")
            if not allowed or log.stem in NOT_DECISIVE:
                continue
            checked += 1
            if report.root_cause.category not in allowed:
                mismatches.append((log.stem, meta["label"], report.root_cause.category))
    assert not mismatches
    assert checked >= 20


def test_slurm_json_samples_parse_into_the_right_states(shared_dir: Path, tmp_path: Path) -> None:
    cases = {"slurmdb-job-timeout.json": "time_limit", "slurm-job-timeout.json": "time_limit"}
    with Ledger(tmp_path / "l.duckdb") as ledger:
        for name, category in cases.items():
            bundle = tmp_path / name.replace(".", "_")
            bundle.mkdir()
            shutil.copy(shared_dir / "realworld" / "slurm-json" / name, bundle / name)
            report = investigate_bundle(bundle, ledger)
            assert report.root_cause.category == category, name
            assert report.unread == []


@pytest.mark.parametrize("stem", ["gpud_testdata_fabricmanager_normal"])
def test_healthy_control_gives_no_failure_verdict(shared_dir: Path, tmp_path: Path,
                                                  stem: str) -> None:
    log = shared_dir / "realworld" / "X_misc" / f"{stem}.log"
    bundle = tmp_path / "b"
    bundle.mkdir()
    shutil.copy(log, bundle / log.name)
    with Ledger(tmp_path / "l.duckdb") as ledger:
        report = investigate_bundle(bundle, ledger)
    assert report.root_cause.category == "unknown"
    assert report.unread == []  # read as free text: no format claims it, nothing is dropped


def test_every_healthy_control_gives_no_failure_verdict(shared_dir: Path, tmp_path: Path) -> None:
    healthy = [log for log, meta in _excerpts(shared_dir) if meta["label"] == "healthy"]
    assert healthy
    with Ledger(tmp_path / "l.duckdb") as ledger:
        for log in healthy:
            bundle = tmp_path / log.stem
            bundle.mkdir()
            shutil.copy(log, bundle / log.name)  # a one-file bundle in tmp, not in the repo
            report = investigate_bundle(bundle, ledger)
            assert report.root_cause.category == "unknown", log.stem
