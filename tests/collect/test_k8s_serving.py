"""Which question a pod asks, and a vLLM pod's latency question end to end: the pod served by
the fixture API server (tests/servers/kube_api.py; no real kube-apiserver can run here), its
series — a generated latency case, labelled as a ServiceMonitor labels a pod's target — in a
real Prometheus (Debian's package, backfilled with promtool), `goodput investigate --k8s-pod
... --prometheus URL` against both, and `goodput collect` → `goodput investigate DIR`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from goodput_agent.cli import cli
from goodput_agent.collect.k8s_serving import failing, serving_argv, vllm_container
from goodput_agent.metrics.engine_args import load_engine_args
from goodput_agent.metrics.source import TimeWindow
from tests.collect import vllm_pod_fixture as F
from tests.conftest import REPO
from tests.servers.debian import free_port
from tests.servers.kube_api import running_kube_api
from tests.servers.kube_fixtures import serving_cluster
from tests.servers.prometheus import PrometheusUnavailable, ensure_prometheus, running_prometheus

CASES = REPO / "evals" / "latency_cases"
SINCE = "2025-06-03T11:00:00Z/2025-06-03T12:00:00Z"  # the case's hour
SECRET = "sk-fixtureSecret0123456789"
# one case of each other verdict, each served by its own pod (vllm-10, vllm-17, vllm-24)
MORE = ("l10-kv-num-gpu-blocks-info-only", "l17-prompt-3x", "l24-output-3x")


def expected(case: str) -> dict:
    return json.loads((CASES / case / "expected.json").read_text())


# --------------------------------------------------------------------------- the pod alone


def test_a_shell_wrapper_gives_the_vllm_command_line():
    argv = serving_argv(["/bin/sh", "-c"], [
        "pip list >/dev/null; HF_HOME=/cache exec python3 -m vllm.entrypoints.openai.api_server"
        " --model meta-llama/Llama-3.1-8B --max-num-seqs 128 \\\n --gpu-memory-utilization 0.85"])
    assert argv == ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model",
                    "meta-llama/Llama-3.1-8B", "--max-num-seqs", "128",
                    "--gpu-memory-utilization", "0.85"]


def test_the_vllm_container_by_its_command_else_its_image():
    pod = F.vllm_pod()
    pod["spec"]["containers"].insert(0, {"name": "proxy", "image": "envoy:1.30"})
    found = vllm_container(pod)
    assert found is not None and found.name == "vllm" and found.argv[:3] == \
        ["vllm", "serve", "llama-3.1-8b"]
    by_image = F.pod("x", "10.0.0.1", [{"name": "engine", "image": "vllm/vllm-openai:v0.9.2",
                                        "args": ["--model", "qwen", "--max-num-seqs", "8"]}])
    found = vllm_container(by_image)
    assert found is not None and found.argv == ["--model", "qwen", "--max-num-seqs", "8"]
    assert "image vllm/vllm-openai" in found.evidence
    assert vllm_container(F.generic_pod()) is None


def test_failing_is_a_crash_now_or_within_the_window():
    oom = next(o for k, o in serving_cluster().objects.items() if k[2] == "vllm-6d4f9c7b8-x2k9p")
    assert failing(oom) == ("container vllm waiting: CrashLoopBackOff after OOMKilled "
                            "(exit code 137)")
    assert failing(F.vllm_pod()) is None
    restarted = F.vllm_pod()
    restarted["status"]["containerStatuses"][0]["lastState"] = {"terminated": {
        "exitCode": 137, "reason": "OOMKilled", "finishedAt": "2025-06-02T10:00:00Z"}}
    day = TimeWindow(start="2025-06-02T09:00:00Z", end="2025-06-02T11:00:00Z")
    later = TimeWindow(start="2025-06-03T11:00:00Z", end="2025-06-03T12:00:00Z")
    assert failing(restarted, day) == ("container vllm last terminated: OOMKilled (exit code "
                                       "137) at 2025-06-02T10:00:00Z")
    assert failing(restarted, later) is None  # an old crash: the pod serves again
    pending = F.vllm_pod()
    pending["status"] = {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
         "message": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."}]}
    assert failing(pending) == ("pod phase Pending (Unschedulable: 0/4 nodes are available: 4 "
                                "Insufficient nvidia.com/gpu.)")


# --------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    try:
        ensure_prometheus()
    except PrometheusUnavailable as exc:
        pytest.skip(str(exc))
    work = tmp_path_factory.mktemp("prom")
    files = F.write_series(work / "series", MORE)
    with running_prometheus(work, files) as url:
        yield url, work


@pytest.fixture
def kube(tmp_path: Path) -> Iterator[str]:
    c = F.cluster(F.vllm_pod(), F.generic_pod(),
                  *(F.case_pod(case, k) for k, case in enumerate(MORE)))
    oom = next(o for k, o in serving_cluster().objects.items() if k[2] == "vllm-6d4f9c7b8-x2k9p")
    c.add(oom)
    with running_kube_api(c) as srv:
        yield str(srv.kubeconfig(tmp_path / "kc"))


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


def report_of(result) -> dict:  # noqa: ANN001 - a click Result
    assert result.exit_code in (0, 3), result.output
    return json.loads(result.stdout)


def test_vllm_pod_live_collected_and_the_case_agree(served, kube, tmp_path):
    url, _ = served
    ledger = str(tmp_path / "l.duckdb")
    live = report_of(run("investigate", "--k8s-pod", "serving/vllm-0", "--prometheus", url,
                         "--since", SINCE, "--kubeconfig", kube, "--json", "--ledger", ledger))
    want = expected(F.CASE)
    assert (live["kind"], live["root_cause"]["category"]) == ("latency", want["category"])
    assert "the latency question" in live["question"] and "vllm serve" in live["question"]
    # the pod's --max-num-seqs 24 is weighed as the engine configuration
    assert "max_num_seqs 24" in live["root_cause"]["summary"]
    assert live["latency"]["incident"]["config"]["max_num_seqs"] == "24"

    out = tmp_path / "incident"
    collected = run("collect", "--k8s-pod", "serving/vllm-0", "--prometheus", url, "--since",
                    SINCE, "--kubeconfig", kube, "-o", str(out), "--json")
    assert collected.exit_code == 0, collected.output
    manifest = json.loads(collected.output)
    assert manifest["errors"] == [] and manifest["target"]["question"] == "latency"
    assert manifest["target"]["series_window"] == \
        "2025-06-03T10:55:00+00:00/2025-06-03T12:00:00+00:00"
    series = [f for f in manifest["files"] if f["path"].startswith("metrics/vllm/")]
    assert len(series) >= 15
    assert all('namespace="serving",pod="vllm-0"' in f["query"]
               and "2025-06-03T10:55:00+00:00" in f["query"] for f in series)
    for f in series:  # the other pod's series are not in the bundle
        doc = json.loads((out / f["path"]).read_text())
        assert {r["metric"]["pod"] for r in doc["data"]["result"]} == {"vllm-0"}
    assert SECRET not in "".join(p.read_text() for p in out.rglob("*") if p.is_file())
    [rev] = load_engine_args(out / "config" / "engine_args.yaml", "engine_args.yaml")
    assert rev.args["max_num_seqs"] == "24" and rev.args["api_key"] == "[REDACTED]"
    spec = yaml.safe_load((out / "incident.yaml").read_text())
    assert (spec["kind"], spec["service"]) == ("latency", want["service"])

    again = report_of(run("investigate", str(out), "--json", "--ledger", ledger))
    same = ("category", "summary", "confidence")
    assert [again["root_cause"][k] for k in same] == [live["root_cause"][k] for k in same]
    assert again["latency"]["ratios"] == live["latency"]["ratios"]
    # the case's own bundle (the same samples, without the pod's labels and arguments):
    # the same windows and the same numbers
    case = report_of(run("investigate", str(CASES / F.CASE), "--json", "--ledger", ledger))
    assert case["root_cause"]["category"] == live["root_cause"]["category"]
    assert case["latency"]["windows"] == live["latency"]["windows"]
    for key, value in case["latency"]["ratios"].items():
        assert live["latency"]["ratios"][key] == pytest.approx(value, rel=1e-9), key


@pytest.mark.parametrize("case", MORE)
def test_each_verdict_through_a_pod(served, kube, tmp_path, case):
    url, _ = served
    w = yaml.safe_load((CASES / case / "incident.yaml").read_text())["window"]
    ledger = str(tmp_path / "l.duckdb")
    live = report_of(run("investigate", "--k8s-pod", f"serving/vllm-{case[1:3]}", "--prometheus",
                         url, "--since", f"{w['start']}/{w['end']}", "--kubeconfig", kube,
                         "--json", "--ledger", ledger))
    shipped = report_of(run("investigate", str(CASES / case), "--json", "--ledger", ledger))
    assert live["kind"] == "latency"
    assert live["root_cause"]["category"] == shipped["root_cause"]["category"] == \
        expected(case)["category"]
    assert live["latency"]["windows"] == shipped["latency"]["windows"]


def test_a_pod_known_as_vllm_only_by_its_series(served, kube, tmp_path):
    url, _ = served
    result = run("investigate", "--k8s-pod", "serving/chat-1", "--prometheus", url, "--since",
                 SINCE, "--kubeconfig", kube, "--json", "--ledger", str(tmp_path / "l.duckdb"))
    report = report_of(result)
    assert report["kind"] == "latency" and "Prometheus has" in report["question"]
    assert report["root_cause"]["category"] == expected(F.DECOY)["category"] == "unknown"
    assert "did not rise" in report["root_cause"]["summary"]
    assert result.exit_code == 3


def test_user_windows_are_used_as_given(served, kube, tmp_path):
    url, _ = served
    report = report_of(run("investigate", "--k8s-pod", "serving/vllm-0", "--prometheus", url,
                           "--baseline", "2025-06-03T11:10:00Z/2025-06-03T11:25:00Z",
                           "--incident", "2025-06-03T11:40:00Z/2025-06-03T11:55:00Z",
                           "--kubeconfig", kube, "--json", "--ledger",
                           str(tmp_path / "l.duckdb")))
    windows = report["latency"]["windows"]
    assert windows["how"] == "user"
    assert (windows["baseline"]["start"], windows["incident"]["end"]) == \
        ("2025-06-03T11:10:00Z", "2025-06-03T11:55:00Z")
    assert report["root_cause"]["category"] == expected(F.CASE)["category"]


def test_prometheus_down_is_a_partial_report_naming_the_series(kube, tmp_path):
    dead = f"http://127.0.0.1:{free_port()}"
    result = run("investigate", "--k8s-pod", "serving/vllm-0", "--prometheus", dead, "--since",
                 SINCE, "--kubeconfig", kube, "--json", "--ledger", str(tmp_path / "l.duckdb"),
                 "--timeout", "2")
    report = report_of(result)
    assert result.exit_code == 3
    assert (report["kind"], report["root_cause"]["category"]) == ("latency", "unknown")
    missing = [u for u in report["unknowns"] if u.startswith(
        "missing evidence: the vLLM series of pod serving/vllm-0")]
    assert len(missing) == 1 and "vllm:e2e_request_latency_seconds_count" in missing[0]
    assert 'namespace="serving",pod="vllm-0"' in missing[0]
    assert "prometheus, unreachable" in missing[0] and "connection refused" in missing[0]


def test_a_failing_vllm_pod_keeps_the_failure_question(served, kube, tmp_path):
    url, _ = served
    report = report_of(run("investigate", "--k8s-pod", "serving/vllm-6d4f9c7b8-x2k9p",
                           "--prometheus", url, "--kubeconfig", kube, "--json", "--ledger",
                           str(tmp_path / "l.duckdb")))
    assert (report["kind"], report["root_cause"]["category"]) == ("failure", "host_oom")
    assert "the failure question: failing: container vllm waiting: CrashLoopBackOff" in \
        report["question"]
    assert not any("vLLM series" in u for u in report["unknowns"])


def test_latency_windows_need_a_pod_and_prometheus(kube, tmp_path):
    result = run("collect", "--k8s-job", "serving/vllm", "--since", "6h", "--kubeconfig", kube,
                 "-o", str(tmp_path / "b"))
    assert result.exit_code == 2
    assert "--since: only with --k8s-pod and --prometheus" in result.output
    result = run("collect", "--k8s-pod", "serving/vllm-0", "--prometheus", "http://127.0.0.1:1",
                 "--since", "3d", "--kubeconfig", kube, "-o", str(tmp_path / "c"))
    assert result.exit_code == 2 and "at most 24 h (narrow --since)" in result.output
