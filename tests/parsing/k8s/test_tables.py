"""`kubectl get pods|events|nodes` text tables (issue 24): read with or without a header, and
judged as their JSON would be."""

from __future__ import annotations

from pathlib import Path

from goodput_agent.bundle import scan
from goodput_agent.core.events import Role
from goodput_agent.parsing.base import ParseContext
from goodput_agent.parsing.k8s.tables import PARSER


def _parse(tmp_path: Path, text: str):
    p = tmp_path / "t.txt"
    p.write_text(text)
    assert scan(tmp_path).files[0].format == "k8s_table"
    return PARSER.parse(p, ParseContext(rel_path="t.txt"))


def test_a_pods_table_with_namespaces_reads_an_oomkilled_pod_as_host_memory(tmp_path) -> None:
    res = _parse(tmp_path, (
        "NAMESPACE   NAME                 READY   STATUS      RESTARTS        AGE\n"
        "train       pod/llama-worker-3   0/1     OOMKilled   4 (90s ago)     2h\n"
        "train       pod/llama-worker-4   1/1     Running     0               2h\n"))
    [oom] = res.events
    assert (oom.role, oom.category, oom.detail["pod"]) == (Role.primary, "host_oom",
                                                           "llama-worker-3")
    assert oom.locator.line_start == 2


def test_a_headerless_events_paste_reads_a_memory_eviction_and_not_a_disk_one(tmp_path) -> None:
    res = _parse(tmp_path, (
        "5m    Warning   Evicted   pod/etl-7   The node was low on resource: memory. Container "
        "etl was using 9Gi, which exceeds its request of 1Gi.\n"
        "4m    Warning   Evicted   pod/etl-8   The node was low on resource: ephemeral-storage.\n"
        "4m    Normal    Killing   pod/etl-7   Stopping container etl\n"))
    cats = [(e.role, e.category, e.detail["object"]) for e in res.events]
    assert (Role.primary, "host_oom", "etl-7") in cats
    assert (Role.context, None, "etl-8") in cats  # disk pressure is no memory fault


def test_a_nodes_table_names_the_not_ready_node_without_a_verdict(tmp_path) -> None:
    res = _parse(tmp_path, ("NAME     STATUS     ROLES    AGE   VERSION\n"
                            "gpu-01   NotReady   <none>   17h   v1.29.3\n"
                            "gpu-02   Ready      <none>   17h   v1.29.3\n"))
    assert res.facts["not_ready_nodes"] == ["gpu-01"]
    assert [e.role for e in res.events] == [Role.context]


def test_a_decisive_line_pasted_beside_a_table_is_read_too(tmp_path) -> None:
    (tmp_path / "t.txt").write_text(
        "Message: Pod Allocate failed due to rpc error: nvml: GPU is lost, which is unexpected\n"
        "NAME     READY   STATUS                     RESTARTS   AGE\n"
        "job-x    0/1     UnexpectedAdmissionError   0          4s\n")
    from goodput_agent.investigate import investigate_bundle
    from goodput_agent.ledger import Ledger

    with Ledger(tmp_path / "l.duckdb") as led:
        rc = investigate_bundle(tmp_path, led, ignore=("l.duckdb",),
                                pictures_dir=tmp_path / "p").root_cause
    assert rc.category == "gpu_hardware" and rc.confidence <= 0.6
