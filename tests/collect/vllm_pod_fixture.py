"""FIXTURE (hand-built, not a recording): vLLM pods for the fixture API server, and a generated
latency case's series carrying the labels Prometheus' Kubernetes discovery gives a pod's
targets (a Prometheus Operator ServiceMonitor: `namespace`, `pod`, `container`, `endpoint`,
`service`, `job`, `instance` = the pod's IP and port), to backfill into the real Prometheus.

- `vllm-0` runs the case's service: image `vllm/vllm-openai`, `vllm serve` with the case's own
  engine arguments (evals/latency_generator.py Regime.engine_args);
- `chat-1` serves too, but nothing in its spec names vLLM (a generic image, a wrapper script):
  only its Prometheus series say it is vLLM; its series are another case's, moved to the same
  hour, so a collector that mixed the pods would mix two services.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from goodput_agent.evals.latency_generator import LatencyCaseSpec, latency_spec, render_vllm_metrics
from tests.servers.kube_api import FixtureCluster

CASE = "l01-queueing-arrival-surge"  # queueing: arrivals 3.8 -> 5.8/s against max_num_seqs 24
DECOY = "l32-no-change-steady"  # steady latency, put in the same hour on another pod
NS = "serving"
NODE = "gpu-node-11"
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)\{")


def case_spec() -> LatencyCaseSpec:
    return latency_spec(CASE)


def decoy_spec() -> LatencyCaseSpec:
    return latency_spec(DECOY).model_copy(update={"start": case_spec().start})


def pod(name: str, ip: str, containers: list[dict[str, Any]],
        started: str = "2025-06-01T08:00:00Z", statuses: list[dict[str, Any]] | None = None
        ) -> dict[str, Any]:
    running = [{"name": c["name"], "ready": True, "restartCount": 0, "started": True,
                "image": c["image"], "imageID": "", "lastState": {},
                "state": {"running": {"startedAt": started}}} for c in containers]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "creationTimestamp": started,
                         "labels": {"app": name.split("-")[0]}},
            "spec": {"nodeName": NODE, "restartPolicy": "Always", "containers": containers},
            "status": {"phase": "Running", "podIP": ip, "hostIP": "10.1.0.11",
                       "startTime": started, "containerStatuses": statuses or running}}


def case_pod(case_id: str, k: int) -> dict[str, Any]:
    """A pod serving one more case's service (`vllm-<case number>`), with its engine arguments
    (those it starts with: a redeploy is another pod)."""
    model = latency_spec(case_id).models[0]
    argv = model.before.engine_args(model.name)
    return pod(f"vllm-{case_id[1:3]}", f"10.2.1.{k}", [
        {"name": "vllm", "image": "vllm/vllm-openai:v0.8.5", "command": argv[:2],
         "args": argv[2:]}])


def vllm_pod() -> dict[str, Any]:
    spec = case_spec()
    model = spec.models[0]
    argv = model.before.engine_args(model.name)  # ["vllm", "serve", MODEL, "--max-num-seqs", ...]
    return pod("vllm-0", "10.2.0.5", [
        {"name": "vllm", "image": "vllm/vllm-openai:v0.8.5", "command": argv[:2],
         "args": [*argv[2:], "--api-key", "sk-fixtureSecret0123456789"],
         "ports": [{"containerPort": 8000, "name": "http", "protocol": "TCP"}],
         "resources": {"limits": {"nvidia.com/gpu": "1"}}}])


def generic_pod() -> dict[str, Any]:
    return pod("chat-1", "10.2.0.6", [
        {"name": "server", "image": "registry.example.com/acme/llm-server:2.4",
         "command": ["/entrypoint.sh"], "args": ["--port", "8000"],
         "resources": {"limits": {"nvidia.com/gpu": "1"}}}])


def cluster(*pods: dict[str, Any]) -> FixtureCluster:
    c = FixtureCluster()
    c.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE},
           "status": {"allocatable": {"nvidia.com/gpu": "8"},
                      "conditions": [{"type": "Ready", "status": "True"}]}})
    for p in pods:
        c.add(p)
        for container in p["spec"]["containers"]:
            c.add_log(NS, p["metadata"]["name"], container["name"],
                      "2025-06-01T08:00:30Z INFO Started server process\n")
    return c


def target_labels(p: dict[str, Any]) -> dict[str, str]:
    """What a ServiceMonitor's target of this pod carries."""
    name = p["metadata"]["name"]
    return {"namespace": NS, "pod": name, "container": p["spec"]["containers"][0]["name"],
            "endpoint": "http", "service": name.split("-")[0], "job": name.split("-")[0],
            "instance": f"{p['status']['podIP']}:8000"}


def labelled(text: str, labels: dict[str, str]) -> str:
    """OpenMetrics text with `labels` added to every sample (every vLLM sample has labels)."""
    inner = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return "\n".join(_SAMPLE.sub(lambda m: f"{m[1]}{{{inner},", line)
                     if line and not line.startswith("#") else line
                     for line in text.split("\n"))


def write_series(out: Path, more: tuple[str, ...] = ()) -> list[Path]:
    """The case's series as vllm-0's and the decoy's as chat-1's, and each of `more` cases as
    its case_pod's (one file per pod to backfill)."""
    out.mkdir(parents=True, exist_ok=True)
    files = []
    pairs = [(case_spec(), vllm_pod()), (decoy_spec(), generic_pod())]
    pairs += [(latency_spec(c), case_pod(c, k)) for k, c in enumerate(more)]
    for spec, p in pairs:
        path = out / f"{p['metadata']['name']}.om"
        path.write_text(labelled(render_vllm_metrics(spec), target_labels(p)))
        files.append(path)
    return files
