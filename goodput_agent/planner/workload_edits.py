"""Exact patches of a Kubernetes workload (`k8s_patch_workload`, previewed as the server's dry
run) where the evidence names the setting and the bundle holds the Deployment/StatefulSet:

- latency: an engine flag whose change between the baseline and incident windows explains the
  verdict (`analysis/latency/decide.weigh`: --max-num-seqs lowered before queueing,
  --gpu-memory-utilization lowered before KV-cache pressure, ...) is set back to its baseline
  value, in the container whose args hold the incident value;
- failure: a container OOMKilled at its memory limit gets double that limit.

A workload manifest (YAML) in the bundle that sets the flag gets the same revert as an exact
`config_change` of that file (a files-only bundle: no cluster needed for its diff).

Otherwise the proposal stays advice and says what is missing. Nothing here calls the API.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from goodput_agent.analysis.advice import Advice
from goodput_agent.analysis.failure.analyze import FailureVerdict
from goodput_agent.analysis.failure.remedy import Proposal
from goodput_agent.analysis.latency.model import ConfigChange, LatencyResult
from goodput_agent.bundle import Inventory
from goodput_agent.core.events import EventKind
from goodput_agent.planner.base import ProposalDraft
from goodput_agent.tools.k8s_patch_workload import new_args

KINDS = ("Deployment", "StatefulSet")
NO_WORKLOAD = ("no Deployment/StatefulSet in the bundle (`goodput collect --k8s-pod/--k8s-job` "
               "saves the pods' owner as k8s/workloads.json)")
_QUANTITY = re.compile(r"^(\d+)([A-Za-z]*)$")


def workloads(inv: Inventory | None) -> list[dict[str, Any]]:
    """Every Deployment/StatefulSet in the bundle's Kubernetes JSON files."""
    out: list[dict[str, Any]] = []
    for f in inv.of_format("k8s_list") if inv else []:
        try:
            doc = json.loads((Path(inv.root) / f.rel_path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        items = doc.get("items") if isinstance(doc, dict) else None
        out += [i for i in (items if isinstance(items, list) else [doc])
                if isinstance(i, dict) and i.get("kind") in KINDS]
    return out


def containers(wl: dict[str, Any]) -> list[dict[str, Any]]:
    spec = ((wl.get("spec") or {}).get("template") or {}).get("spec") or {}
    return [c for c in spec.get("containers") or [] if isinstance(c, dict)]


def _ref(wl: dict[str, Any]) -> dict[str, Any]:
    meta = wl.get("metadata") or {}
    return {"namespace": meta.get("namespace") or "default", "kind": wl["kind"],
            "name": meta.get("name")}


def flag_value(args: list[str], flag: str) -> str | None:
    for k, a in enumerate(args):
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
        if a == flag and k + 1 < len(args):
            return args[k + 1]
    return None


def _revert(c: ConfigChange, wls: list[dict[str, Any]], why: str
            ) -> tuple[ProposalDraft | None, str | None]:
    flag = "--" + c.key.replace("_", "-")
    for wl in wls:
        for ct in containers(wl):
            args = [str(a) for a in ct.get("args") or []]
            if flag_value(args, flag) == c.incident and new_args(args, {flag: c.baseline}) != args:
                ref, name = _ref(wl), ct.get("name")
                return ProposalDraft(
                    tool="k8s_patch_workload", mutating=True,
                    args={**ref, "container": name, "set_args": {flag: c.baseline}},
                    rationale=(f"set {flag} back to {c.baseline} (it went {c.baseline} -> "
                               f"{c.incident}, {c.source}): {why}; in {ref['kind']} "
                               f"{ref['namespace']}/{ref['name']} container {name}")), None
    return None, (f"no container of the bundle's workloads sets {flag} {c.incident} (the "
                  "incident value): the running spec is not the one measured")


def _manifest_revert(c: ConfigChange, inv: Inventory | None, why: str) -> list[ProposalDraft]:
    """The same revert as an exact edit of each workload manifest in the bundle that sets the
    flag to the incident value (`--flag=V`, `- --flag` + `- "V"`, `["--flag", "V"]`)."""
    flag = "--" + c.key.replace("_", "-")
    pat = re.compile(rf"{re.escape(flag)}(?P<sep>=|['\"]?\s*,\s*['\"]?|['\"]?\s*\n\s*-\s*"
                     rf"['\"]?)(?P<v>{re.escape(str(c.incident))})(?![\w.])")
    out: list[ProposalDraft] = []
    for f in inv.of_format("k8s_manifest") if inv else []:
        path = Path(inv.root) / f.rel_path  # type: ignore[union-attr]
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        hits = list(pat.finditer(text))
        if len(hits) != 1 or text.count(hits[0][0]) != 1:
            continue
        m = hits[0]
        out.append(ProposalDraft(tool="config_change", mutating=True, args={
            "path": str(path), "edits": [{"old": m[0], "new": f"{flag}{m['sep']}{c.baseline}"}],
            "change": f"set {flag} back to {c.baseline}"},
            rationale=f"set {flag} back to {c.baseline} in {f.rel_path} (it went {c.baseline} "
                      f"-> {c.incident}, {c.source}): {why}"))
    return out


def latency_fixes(result: LatencyResult, inv: Inventory | None
                  ) -> tuple[list[ProposalDraft], list[Advice]]:
    """The verdict's advice, each revert of a configuration change made exact where the bundle
    holds the workload (a patch) or a manifest that sets the flag (an edit); a revert that
    cannot be made exact stays advice, saying what is missing."""
    v = result.verdict
    changes = {c.key: c for c in result.config_diff}
    exact: list[ProposalDraft] = []
    advice: list[Advice] = []
    wls = workloads(inv)
    for a in v.advice:
        c = changes.get(str(a.details.get("key"))) if a.details.get("from") else None
        if c is None:
            advice.append(a)
            continue
        p, note = _revert(c, wls, a.rationale) if wls else (
            None, NO_WORKLOAD + ", nor a YAML manifest that sets the flag")
        found = ([p] if p else []) + _manifest_revert(c, inv, a.rationale)
        exact += found
        if not found:
            advice.append(a.model_copy(update={"missing": note}))
    return exact, advice


def _double(q: str) -> str | None:
    m = _QUANTITY.match(q.strip())
    return f"{int(m[1]) * 2}{m[2]}" if m else None


def oom_limit_patch(v: FailureVerdict, inv: Inventory | None) -> tuple[Proposal | None, str]:
    """Double the memory limit of the container the kubelet reported OOMKilled."""
    kill = next((e for e in ([v.primary] if v.primary else []) + v.evidence
                 if e.kind == EventKind.cgroup_oom and e.detail.get("container")
                 and e.detail.get("pod")), None)
    if kill is None:
        return None, "no container named as OOMKilled in the pod status"
    pod, name = kill.detail["pod"], kill.detail["container"]
    wls = workloads(inv)
    for wl in wls:
        meta = wl.get("metadata") or {}
        if not str(pod).startswith(f"{meta.get('name')}-"):
            continue
        ct = next((c for c in containers(wl) if c.get("name") == name), None)
        limit = ((ct or {}).get("resources") or {}).get("limits", {}).get("memory")
        doubled = _double(str(limit)) if limit else None
        if doubled is None:
            return None, (f"{wl['kind']} {meta.get('name')} container {name} has no memory "
                          "limit to raise (the kill came from the node's memory)")
        return Proposal(tool="k8s_patch_workload", mutating=True, args={
            **_ref(wl), "container": name, "limits": {"memory": doubled}},
            rationale=(f"container {name} of pod {pod} was OOMKilled at its memory limit "
                       f"({kill.locator}): double it, {limit} -> {doubled}")), ""
    return None, NO_WORKLOAD if not wls else f"no workload of the bundle owns pod {pod}"
