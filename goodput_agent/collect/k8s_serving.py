"""Which question a collected pod asks, from the evidence the pod itself carries:

- a pod that is failing (phase Failed, a container waiting in CrashLoopBackOff or another error
  reason, a container that terminated with a failure — OOMKilled, a crash signal, a non-zero
  exit — now, or last time within the collected window) asks the failure question;
- a pod that serves vLLM (a container whose command, args or image name vLLM) asks the latency
  question when a Prometheus is given: its vLLM series are collected (collect/
  prometheus_series.py), and its container's command line becomes the engine-argument evidence
  the latency analysis reads from a bundle's config/ folder (metrics/engine_args.py's
  load_engine_args), so the pod's `--max-num-seqs`, `--gpu-memory-utilization`, ... are weighed
  as a deployment's config file would be.

The pod's text (images, args) is untrusted data: it is matched and copied, never run.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import yaml

from goodput_agent.collect.base import BundleWriter, command_text
from goodput_agent.collect.k8s_target import K8sTarget, LatencyWindows
from goodput_agent.core.events import Role
from goodput_agent.metrics.source import TimeWindow
from goodput_agent.metrics.vllm_names import parse_engine_args
from goodput_agent.parsing.k8s.verdicts import classify_termination

ENGINE_ARGS_FILE = "config/engine_args.yaml"
_VLLM = re.compile(r"vllm", re.I)
_SHELLS = {"sh", "bash", "dash", "ash", "zsh"}
_SEGMENT = re.compile(r"&&|\|\||[;|\n]")
# waiting reasons of a container that is starting, not failing
_STARTING = {"ContainerCreating", "PodInitializing"}


@dataclass(frozen=True)
class VllmContainer:
    name: str
    argv: list[str]  # the vLLM command line (the container's command + args), may be empty
    evidence: str  # why it is taken for vLLM, in words


def _strs(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _shell_script(argv: list[str]) -> str | None:
    """`sh -c 'script'` (and bash, `-ec`, `-lc`): the script, else None."""
    if len(argv) >= 3 and argv[0].rsplit("/", 1)[-1] in _SHELLS and argv[1].startswith("-") \
            and "c" in argv[1]:
        return argv[2]
    return None


def serving_argv(command: list[str], args: list[str]) -> list[str]:
    """The vLLM command line of a container: command + args, or, for `sh -c 'script'`, the
    script's segment that starts vLLM (`exec` dropped)."""
    argv = command + args
    script = _shell_script(argv)
    if script is None:
        return argv
    for segment in _SEGMENT.split(script.replace("\\\n", " ")):
        if _VLLM.search(segment):
            try:
                words = shlex.split(segment)
            except ValueError:
                continue
            while words and (words[0] == "exec" or "=" in words[0]):  # exec, VAR=value
                words = words[1:]
            return words
    return []


def vllm_container(pod: dict[str, Any]) -> VllmContainer | None:
    """The pod's vLLM container: the first whose command or args name vLLM, else the first whose
    image does (the image's entrypoint then runs vLLM with the container's args)."""
    containers = [c for c in (pod.get("spec") or {}).get("containers") or []
                  if isinstance(c, dict)]
    for c in containers:
        command, args = _strs(c.get("command")), _strs(c.get("args"))
        if any(_VLLM.search(w) for w in command + args):
            return VllmContainer(str(c.get("name")), serving_argv(command, args),
                                 f"container {c.get('name')} runs "
                                 f"{' '.join((command + args)[:3])!r}")
    for c in containers:
        if _VLLM.search(str(c.get("image") or "")):
            return VllmContainer(str(c.get("name")), serving_argv(_strs(c.get("command")),
                                                                  _strs(c.get("args"))),
                                 f"container {c.get('name')} image {c.get('image')}")
    return None


def _ts(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def failing(pod: dict[str, Any], window: TimeWindow | None = None) -> str | None:
    """Why the pod is failing, in words, or None when it is not. A last termination counts
    when it ended within `window` (always, without one)."""
    status = pod.get("status") or {}
    if status.get("phase") == "Failed":
        return f"pod phase Failed ({status.get('reason') or 'no reason given'})"
    if status.get("phase") == "Pending":  # never scheduled or started: nothing served yet
        unscheduled = next((c for c in status.get("conditions") or [] if isinstance(c, dict)
                            and c.get("type") == "PodScheduled" and c.get("status") == "False"),
                           None)
        if unscheduled is None:
            return "pod phase Pending"
        why = ": ".join(str(unscheduled[k]) for k in ("reason", "message") if unscheduled.get(k))
        return f"pod phase Pending ({why or 'not scheduled'})"
    for cs in status.get("containerStatuses") or []:
        if not isinstance(cs, dict):
            continue
        name = cs.get("name")
        state = cs.get("state") or {}
        waiting = state.get("waiting") or {}
        if waiting and waiting.get("reason") and waiting["reason"] not in _STARTING:
            last = (cs.get("lastState") or {}).get("terminated") or {}
            after = f" after {last.get('reason')} (exit code {last.get('exitCode')})" \
                if last.get("reason") else ""
            return f"container {name} waiting: {waiting['reason']}{after}"
        for which, term in (("terminated", state.get("terminated")),
                            ("last terminated", (cs.get("lastState") or {}).get("terminated"))):
            if not isinstance(term, dict) or not term:
                continue
            code = term.get("exitCode")
            verdict = classify_termination(str(term.get("reason") or ""),
                                           code if isinstance(code, int) else None,
                                           term.get("signal") if isinstance(term.get("signal"),
                                                                            int) else None)
            if verdict.role is not Role.primary:
                continue
            ended = _ts(term.get("finishedAt"))
            if which == "last terminated" and window is not None and ended is not None and \
                    not window.start <= ended <= window.end:
                continue
            at = f" at {term['finishedAt']}" if term.get("finishedAt") else ""
            return (f"container {name} {which}: {term.get('reason') or 'exit'} (exit code "
                    f"{code}){at}")
    return None


def engine_args_yaml(pod: dict[str, Any], container: VllmContainer) -> str:
    """The container's command line in the engine-argument file format the latency analysis
    reads (metrics/engine_args.py load_engine_args), as one command line with its secrets (an
    --api-key) masked. No `from`: a pod's command is fixed for its life, and the bundle holds
    only this pod's series."""
    meta = pod.get("metadata") or {}
    head = (f"# engine arguments of pod {meta.get('namespace')}/{meta.get('name')} container "
            f"{container.name} (spec.containers[].command + args, as the API served them)\n")
    return head + yaml.safe_dump({"revisions": [{"args": command_text(container.argv)}]},
                                 sort_keys=False, width=10_000)


# --------------------------------------------------------------------------- the question

LOOKBACK = timedelta(minutes=5)  # samples before a window that its first gauge steps see
MAX_SPAN = timedelta(hours=24)  # raw samples of ~200 series: a day is ~1.2 M of them


def _iso(w: TimeWindow) -> dict[str, str]:
    return {"start": w.start.isoformat(), "end": w.end.isoformat()}


def choose_question(writer: BundleWriter, target: K8sTarget, pods: list[dict[str, Any]],
                    pods_window: TimeWindow | None, failure: dict[str, object],
                    now: datetime | None = None) -> dict[str, object]:
    """incident.yaml for a pod: `failure` (the failure question as collect_k8s built it) unless
    the pod serves vLLM, is not failing, and a Prometheus is given: then the latency question,
    with the pod's vLLM series and engine arguments written into the bundle. Which question and
    why is said in the question and in the manifest's target."""
    if not target.pod or len(pods) != 1:
        return failure
    pod = pods[0]
    vllm = vllm_container(pod)
    now = now or datetime.now(UTC)
    lw = target.latency or LatencyWindows()
    asked = lw.asked(now)
    broken = failing(pod, pods_window)
    if broken or not target.prometheus:
        if vllm is None and not target.prometheus:
            return failure
        why = f"failing: {broken}" if broken else \
            f"serves vLLM ({vllm.evidence if vllm else '?'}) but no --prometheus to ask"
        writer.manifest.target.update(question="failure", question_why=why)
        return {**failure, "kind": "failure",
                "question": f"{failure['question']} (the failure question: {why})"}
    from goodput_agent.collect.prometheus_series import collect_pod_series

    collect = TimeWindow(start=asked.start - LOOKBACK, end=asked.end)
    found = collect_pod_series(writer, target.prometheus, pod, collect,
                               target.prometheus_timeout_s)
    if vllm is None and not found.series:
        why = f"no vLLM container and no vLLM series of it ({found.error})"
        writer.manifest.target.update(question="failure", question_why=why)
        return {**failure, "kind": "failure",
                "question": f"{failure['question']} (the failure question: {why})"}
    meta = pod.get("metadata") or {}
    ref = f"{meta.get('namespace')}/{meta.get('name')}"
    if vllm is not None and vllm.argv:
        writer.write_text(ENGINE_ARGS_FILE, engine_args_yaml(pod, vllm), source="kubernetes",
                          what=f"vLLM engine arguments of pod {ref} (container {vllm.name})",
                          query=f"GET /api/v1/namespaces/{meta.get('namespace')}/pods/"
                                f"{meta.get('name')}: spec.containers[{vllm.name}] command, args")
    service = lw.service or (found.models[0] if len(found.models) == 1 else None)
    if service is None and vllm is not None:  # --served-model-name, else the model's path
        args = parse_engine_args(vllm.argv)
        service = args.get("served_model_name") or args.get("model")
    evidence = [vllm.evidence] if vllm else []
    if found.series:
        match = ",".join(f"{k}={v}" for k, v in found.match.items())
        evidence.append(f"Prometheus has {found.series} vLLM series with {match}")
    else:
        evidence.append(f"its vLLM series could not be had: {found.error}")
    why = "serves vLLM and is not failing: " + "; ".join(evidence)
    writer.manifest.target.update(question="latency", question_why=why, series_window=(
        f"{collect.start.isoformat()}/{collect.end.isoformat()}"))
    spec: dict[str, object] = {
        "question": f"why did inference latency of {service or 'the model'} on pod {ref} rise? "
                    f"(the latency question: {why})",
        "kind": "latency", "job": failure.get("job"), "window": _iso(asked)}
    if service:
        spec["service"] = service
    if lw.baseline and lw.incident:
        spec["baseline"], spec["incident"] = _iso(lw.baseline), _iso(lw.incident)
    return spec
