"""The watch's live source on Kubernetes (`goodput watch --k8s --live`): every job with
running pods in the watched namespaces, looked at each poll for a stall or a slow node, as
watch/live_source.py does for Slurm. A job is what its pods' controller labels name (a Job's
`batch.kubernetes.io/job-name`/`job-name`, a JobSet's, a PyTorchJob's); its progress is read
from its running pods' logs (the kubelet's timestamps), its stacks through `kubectl exec` only
when it is silent past an ordinary step (opt-in RBAC: deploy/kubernetes/optional/).
"""

from __future__ import annotations

import logging
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from goodput_agent.core.errors import BadInput
from goodput_agent.detect.assess import Finding, assess
from goodput_agent.detect.check import CheckOptions
from goodput_agent.sources.errors import SourceError
from goodput_agent.watch.live_source import LIVE_INTERVAL_S
from goodput_agent.watch.trigger import Poll, SourceDown, Trigger

log = logging.getLogger(__name__)
# label -> the workload kind it names (the first found wins), as their controllers set them
JOB_LABELS = (("jobset.sigs.k8s.io/jobset-name", "jobset"),
              ("training.kubeflow.org/job-name", "pytorchjob"),
              ("batch.kubernetes.io/job-name", "job"), ("job-name", "job"))


def job_refs(pods: list[dict[str, Any]]) -> list[str]:
    """NS/KIND/NAME of every job that has a running pod (a JobSet's pods also carry their
    child Job's labels: the JobSet is named)."""
    refs: list[str] = []
    for p in pods:
        if (p.get("status") or {}).get("phase") != "Running":
            continue
        meta = p.get("metadata") or {}
        labels = meta.get("labels") or {}
        for label, kind in JOB_LABELS:
            if labels.get(label):
                ref = f"{meta.get('namespace')}/{kind}/{labels[label]}"
                if ref not in refs:
                    refs.append(ref)
                break
    return refs


class K8sLiveSource:
    name = "kubernetes-live"

    def __init__(self, connect: Any, namespaces: list[str], selector: str,
                 options: CheckOptions, kubectl: Any = None,
                 interval_s: float = LIVE_INTERVAL_S):
        self.connect, self.namespaces, self.selector = connect, namespaces, selector
        self.options, self.kubectl = options, kubectl
        self.interval_s = interval_s
        self.source: Any = None

    def finding(self, ref: str, work: Path) -> Finding | None:
        from goodput_agent.detect.k8s_job import look

        try:
            lk = look(self.source, ref, work / ref.replace("/", "_"), self.options.dumps,
                      self.options.stall, self.kubectl)
        except BadInput:  # no running pod any more: next poll
            return None
        return assess(lk.observation, self.options.stall)

    def poll(self, cursor: str | None) -> Poll:
        try:
            if self.source is None:
                self.source = self.connect()
            pods = [p for ns in (self.namespaces or [self.source.namespace])
                    for p in self.source.pods(ns, self.selector)]
        except SourceError as exc:
            raise SourceDown(str(exc)) from None
        triggers = []
        with tempfile.TemporaryDirectory(prefix="goodput-live-") as tmp:
            for ref in job_refs(pods):
                f = self.finding(ref, Path(tmp))
                if f is None or not f.alarm:
                    continue
                anchor = (f"stall:{int(f.stall.last_progress or 0)}" if f.kind == "hang"
                          else f"slow:{f.node}")
                triggers.append(Trigger(
                    source="kubernetes", key=f"live:k8s:{ref}:{anchor}", question="live",
                    subject=ref, state=f.kind.upper(), occurred_at=datetime.now(UTC),
                    nodes=[f.node] if f.node else [], collect={"live_k8s_job": ref},
                    detail=f.summary[:500]))
        return Poll(triggers=triggers, cursor=str(int(time.time())))
