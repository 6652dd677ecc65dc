"""Every proposal executable as proposed, or advice: checked when it is made, not when a person
presses Approve.

A proposal names a mutating tool and arguments that tool's own input model accepts. A job is
named by its id: a name (`pretrain-8003`) is resolved through the bundle's scheduler records,
and a job that cannot be resolved leaves no proposal, only advice saying what to run by hand.
A tool that does not exist, or arguments its model refuses, become advice with the reason
(`missing`): the ledger never holds a proposal that no approval could run.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from goodput_agent.analysis.advice import Advice, premise_holds
from goodput_agent.bundle import Bundle, Inventory
from goodput_agent.parsing.registry import KUBERNETES_FORMATS, SLURM_FORMATS
from goodput_agent.planner.base import ProposalDraft
from goodput_agent.planner.scheduler_facts import JobFact, SchedulerFacts
from goodput_agent.toolkit import MutatingTool, registry

_JOB_ID = re.compile(r"^\d+(_\d+)?$")


class JobRefs(BaseModel):
    """What the bundle's scheduler records say about jobs: ids and names (Slurm), namespaces
    (the pods')."""

    jobs: list[JobFact] = Field(default_factory=list)
    namespaces: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, facts: SchedulerFacts | None) -> JobRefs:
        if facts is None:
            return cls()
        spaces = list(dict.fromkeys(p.namespace for p in facts.pods if p.namespace))
        return cls(jobs=facts.jobs, namespaces=spaces)

    @classmethod
    def read(cls, inv: Inventory | None) -> JobRefs:
        """The records of a bundle whose playbook read no scheduler files (a slowdown)."""
        files = inv.of_format(*SLURM_FORMATS, *KUBERNETES_FORMATS) if inv else []
        if not files or inv is None:
            return cls()
        bundle = Bundle(Path(inv.root), inv)
        per_file = {f.rel_path: r.facts for f in files if (r := bundle.parse(f)) and r.facts}
        return cls.of(SchedulerFacts.from_files(per_file))

    def slurm_job(self, ref: str | None) -> tuple[str | None, str]:
        """The job id `ref` names (an id, or a job name the records hold once), or why not."""
        if ref and _JOB_ID.match(ref):
            return ref, ""
        runs = [j for j in self.jobs if not j.is_step]
        if ref is None:
            ids = list(dict.fromkeys(j.base_id for j in runs))
            return (ids[0], "") if len(ids) == 1 else \
                (None, "the bundle names no job id" + (f" ({len(ids)} jobs in its records)"
                                                        if ids else ""))
        ids = list(dict.fromkeys(j.base_id for j in runs if j.name == ref))
        if len(ids) == 1:
            return ids[0], ""
        if ids:
            return None, (f"the scheduler records name {len(ids)} jobs {ref!r} "
                          f"({', '.join(ids)}): which one to rerun is unclear")
        return None, (f"{ref!r} is a job name and the bundle's scheduler records give no id "
                      f"for it (find it with: squeue --name={ref} -h -o %i, or sacct "
                      f"--name={ref} -X -n -o JobID)")

    def namespace(self) -> str | None:
        return self.namespaces[0] if len(self.namespaces) == 1 else None


def _with_job(p: ProposalDraft, refs: JobRefs) -> tuple[ProposalDraft | None, str]:
    """The proposal with its job named as its tool needs it, or why it cannot be."""
    if "job" not in p.args:
        return p, ""
    args: dict[str, Any] = dict(p.args)
    if p.tool.startswith("slurm_"):
        job, why = refs.slurm_job(args["job"])
        if job is None:
            return None, why
        args["job"] = job
    elif p.tool.startswith("k8s_"):
        ref = args.get("job")
        if not ref:
            return None, "the bundle names no Kubernetes job to restart"
        if "/" in str(ref):
            args["namespace"], args["job"] = str(ref).split("/", 1)
        elif "namespace" not in args and refs.namespace():
            args["namespace"] = refs.namespace()
    return p.model_copy(update={"args": args}), ""


def as_advice(p: ProposalDraft, missing: str) -> Advice:
    return Advice(topic=p.tool, text=p.rationale, rationale=p.rationale,
                  details={k: v for k, v in p.args.items() if v is not None}, missing=missing)


def checked(p: ProposalDraft, refs: JobRefs) -> ProposalDraft | Advice:
    """The proposal as its tool will run it, or advice saying why it cannot be one."""
    tool = registry().get(p.tool)
    if not isinstance(tool, MutatingTool):
        return as_advice(p, f"no tool Goodput has does {p.tool!r}: a person does it")
    resolved, why = _with_job(p, refs)
    if resolved is None:
        return as_advice(p, why)
    try:
        tool.input_model.model_validate(resolved.args)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or "arguments"
        return as_advice(p, f"{p.tool} refuses these arguments ({where}: {err['msg']})")
    return resolved.model_copy(update={"mutating": True})


def settle(proposals: list[ProposalDraft], advice: list[Advice], refs: JobRefs,
           ) -> tuple[list[ProposalDraft], list[Advice]]:
    """Split the drafts into proposals a gate can run as they are and advice for a person."""
    ready: list[ProposalDraft] = []
    more: list[Advice] = []
    for p in proposals:
        out = checked(p, refs)
        (ready if isinstance(out, ProposalDraft) else more).append(out)  # type: ignore[arg-type]
    return ready, [*advice, *more]


def report_problems(actions: list[tuple[str, dict[str, Any]]], advice: list[Advice],
                    latency: dict[str, Any] | None) -> list[str]:
    """What a report's remedies get wrong: a proposal its tool would refuse to run, a remedy
    whose stated premise the report's own numbers do not bear out."""
    out = []
    for tool_name, args in actions:
        tool = registry().get(tool_name)
        if not isinstance(tool, MutatingTool):
            out.append(f"{tool_name}: not a mutating tool Goodput has")
            continue
        try:
            tool.input_model.model_validate(args)
        except ValidationError as exc:
            out.append(f"{tool_name}: {exc.errors()[0]['msg']}")
    for a in advice:
        out += [f"advice {a.text!r}: its premise {p.text!r} ({p.left} {p.op} "
                f"{p.factor:g} x {p.right}) does not hold in the report's numbers"
                for p in a.premises if not premise_holds(p, latency)]
    return out
