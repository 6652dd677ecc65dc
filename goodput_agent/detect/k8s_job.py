"""A running Kubernetes job, observed once: its pods (the workload's selector, the same
reader `goodput investigate --k8s-job` uses), progress from the pods' logs with the kubelet's
timestamps, and, when the silence is suspect or stacks were asked for, every rank's stack
through `kubectl exec` in each running pod (the API's pods/exec: opt-in RBAC in
deploy/kubernetes/optional/stack-dumps.yaml). Read-only towards the job.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from goodput_agent.analysis.live.stall import StallSettings
from goodput_agent.core.errors import BadInput
from goodput_agent.detect.assess import Observation, stall_of
from goodput_agent.detect.progress import ProgressLog, read_progress
from goodput_agent.detect.slurm_job import DumpSettings
from goodput_agent.sources.stack_dumps import RankDumps, assemble, pod_script_argv, run_command

LOG_TAIL = 20_000


class KubectlSettings(BaseModel):
    kubectl: str = "kubectl"
    kubeconfig: str | None = None
    context: str | None = None


class K8sLook(BaseModel):
    target: str
    pods: list[dict[str, str]] = Field(default_factory=list)  # name, node, container
    observation: Observation
    progress: ProgressLog | None = None
    stacks: RankDumps | None = None
    missing: list[str] = Field(default_factory=list)


def _running(pods: list[dict[str, Any]]) -> list[dict[str, str]]:
    out = []
    for p in pods:
        if (p.get("status") or {}).get("phase") != "Running":
            continue
        spec = p.get("spec") or {}
        containers = [c.get("name") for c in spec.get("containers") or [] if c.get("name")]
        out.append({"name": p["metadata"]["name"], "node": spec.get("nodeName") or "",
                    "container": containers[0] if containers else ""})
    return out


def look(source, ref: str, out_dir: Path, dumps: DumpSettings | None = None,  # noqa: ANN001
         settings: StallSettings | None = None, kubectl: KubectlSettings | None = None,
         now: float | None = None) -> K8sLook:
    """`source`: a sources.k8s.K8sSource; `ref`: NS/NAME or NS/KIND/NAME."""
    from goodput_agent.sources.k8s import split_ref

    dumps = dumps or DumpSettings()
    namespace, kind, name = split_ref(ref, source.namespace)
    wl = source.workload(namespace, name, kind)
    pods = _running(source.workload_pods(wl))
    if not pods:
        raise BadInput(f"kubernetes: {ref} has no running pod: `goodput investigate "
                       f"--k8s-job {ref}` explains one that ended")
    obs = Observation(job=f"k8s:{namespace}/{name}", now=now or time.time())
    lk = K8sLook(target=f"{namespace}/{name}", pods=pods, observation=obs)
    lk.progress = _progress(source, namespace, pods, out_dir, lk.missing)
    if lk.progress is not None:
        obs.progress = [m.t for m in lk.progress.marks]
        obs.steps = [float(m.step) for m in lk.progress.marks] if all(
            m.step is not None for m in lk.progress.marks) else None
        obs.phases = lk.progress.phases
    stall = stall_of(obs, settings)
    if dumps.when == "always" or (dumps.when == "suspect" and stall.suspect):
        lk.stacks = pod_stacks(namespace, pods, dumps, kubectl or KubectlSettings())
        obs.dumps, obs.rank_nodes = lk.stacks.dumps, lk.stacks.rank_nodes
        obs.world_size = None
        for where, why in lk.stacks.node_errors.items():
            lk.missing.append(f"missing evidence: stacks of {where}: {why}")
    return lk


def _progress(source, namespace: str, pods: list[dict[str, str]], out_dir: Path,  # noqa: ANN001
              missing: list[str]) -> ProgressLog | None:
    """Each running pod's log saved beside the ledger (the evidence); the one with the most
    progress lines (rank 0's, usually) is the job's progress."""
    from goodput_agent.sources.errors import SourceError

    best: ProgressLog | None = None
    folder = out_dir / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    for p in pods:
        try:
            text = source.log(namespace, p["name"], p["container"], tail_lines=LOG_TAIL)
        except SourceError as exc:
            missing.append(f"missing evidence: log of {namespace}/{p['name']}: {exc}")
            continue
        path = folder / f"{re.sub(r'[^A-Za-z0-9._-]+', '_', p['name'])}.log"
        path.write_text(text)
        log = read_progress(path)
        if best is None or len(log.marks) > len(best.marks):
            best = log
    if best is None or not best.marks:
        missing.append("missing evidence: no pod's log shows training progress with a time")
    return best


def kubectl_argv(namespace: str, pod: str, container: str, dumps: DumpSettings,
                 k: KubectlSettings) -> list[str]:
    argv = [k.kubectl]
    if k.kubeconfig:
        argv.append(f"--kubeconfig={k.kubeconfig}")
    if k.context:
        argv.append(f"--context={k.context}")
    argv += ["exec", "-n", namespace, pod]
    if container:
        argv += ["-c", container]
    return [*argv, "--", *pod_script_argv(dumps.samples, dumps.pause_s, dumps.pyspy)]


def pod_stacks(namespace: str, pods: list[dict[str, str]], dumps: DumpSettings,
               k: KubectlSettings) -> RankDumps:
    outputs: dict[str, str] = {}
    failed: dict[str, str] = {}
    for p in pods:
        rc, out, err = run_command(kubectl_argv(namespace, p["name"], p["container"], dumps, k),
                                   dumps.timeout_s)
        if rc != 0 and "@@node" not in out:
            failed[p["name"]] = f"kubectl exec rc {rc}: " + (" ".join(err.split())[:300]
                                                            or "no output")
            continue
        outputs[p["name"]] = out.replace("@@node ", "@@node-host ", 1)  # the pod names it
    result = assemble(outputs, f"{k.kubectl} exec -n {namespace} POD -- sh -c <dump script>")
    nodes = {p["name"]: p["node"] or p["name"] for p in pods}
    result.rank_nodes = {r: nodes.get(pod, pod) for r, pod in result.rank_nodes.items()}
    result.node_errors.update(failed)
    return result
