"""Did the retry work: the requeued (or resubmitted) job got past the point where it failed, or
completed, on other nodes than the faulty one, and the faulty node is drained. Reads the
scheduler's records (sacct, sinfo -R, scontrol) and the job logs' step counters."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from goodput_agent.core import failure_classes
from goodput_agent.verify.model import VerifyResult

# "step 2230/57328", "Iteration: 17"; not Slurm's "STEP 48213.0" (job steps)
STEP = re.compile(rb"\b(?:[Ss]tep|[Ii]ter(?:ation)?)[\s:=#]+(\d{1,9})(?![.\d])")
PASSED_STATES = {"COMPLETED"}
RUNNING_STATES = {"RUNNING", "PENDING", "REQUEUED", "CONFIGURING", "COMPLETING"}
OUT_OF_SERVICE = ("DRAIN", "DOWN", "FAIL", "MAINT")
NODE_FAULTS = failure_classes.node_at_fault()  # the verdicts whose node a retry must avoid


def scheduler_facts(root: Path) -> tuple[list[dict], dict[str, dict], list[str]]:
    """Jobs and nodes as the scheduler recorded them, with the files they came from."""
    from goodput_agent.bundle import open_bundle
    from goodput_agent.toolkit import ToolContext, registry

    tool = registry()["scheduler_state"]
    with open_bundle(root) as b:
        out = tool.run(ToolContext(bundle=b), tool.input_model())
    jobs: list[dict] = []
    nodes: dict[str, dict] = {}
    for path, facts in out.facts.items():
        for j in facts.get("jobs") or []:
            jobs.append({**j, "file": path})
        for n in facts.get("nodes") or []:
            nodes[n["name"]] = {**n, "file": path}
    return jobs, nodes, out.files_read


def last_step(root: Path | None) -> int | None:
    """The highest training step any log of the bundle reached."""
    if root is None or not root.is_dir():
        return None
    best = None
    for f in root.rglob("*"):
        if f.is_file() and f.suffix in (".log", ".out", ".txt", ".err"):
            for m in STEP.finditer(f.read_bytes()):
                best = max(best or 0, int(m.group(1)))
    return best


def out_of_service(node: dict) -> bool:
    """A DRAIN/DOWN/FAIL state, a row of `sinfo -R` (which lists only such nodes; without a
    STATE column its rows carry just the reason), or a cordoned Kubernetes node."""
    if node.get("unschedulable"):  # a cordoned Kubernetes node
        return True
    state = str(node.get("state") or "").upper()
    return any(s in state for s in OUT_OF_SERVICE) or (not state and bool(node.get("reason")))


def _pick(jobs: list[dict], job_id: str | None, name: str | None) -> dict | None:
    for key, want in (("job_id", job_id), ("name", name)):
        hits = [j for j in jobs if want and str(j.get(key)) == want]
        if hits:
            return hits[-1]
    return jobs[-1] if len(jobs) == 1 else None


def verify(report: dict[str, Any], before_root: Path | None, after: Path) -> VerifyResult:
    rc = report.get("root_cause") or {}
    # where it ran matters only when a node was at fault
    node = rc.get("node") if rc.get("category") in NODE_FAULTS else None
    before_jobs = scheduler_facts(before_root)[0] if before_root and before_root.exists() else []
    failed = next((j for j in before_jobs if j.get("state") not in PASSED_STATES), None)
    job_id = failed["job_id"] if failed else None
    jobs, nodes, files = scheduler_facts(after)
    job = _pick(jobs, job_id, failed.get("name") if failed else None)
    if job is None:
        return VerifyResult(kind="failure", verdict="incomparable", comparable=False,
                            summary=f"{after}: no record of job {job_id or '?'} after the retry "
                                    "— nothing to compare", evidence=files)
    state, ran_on = str(job.get("state")), list(job.get("nodes") or [])
    before_step, after_step = last_step(before_root), last_step(after)
    conditions = [f"job {job['job_id']} ({job.get('name') or 'unnamed'}) in {job['file']}: "
                  f"{state} on {', '.join(ran_on) or 'no nodes'}",
                  f"failure point: step {before_step if before_step is not None else '?'} "
                  f"before; reached after: {after_step if after_step is not None else '?'}"]
    if state in PASSED_STATES:
        passed: bool | None = True
    elif before_step is not None and after_step is not None:
        passed = after_step > before_step
    else:
        passed = None if state in RUNNING_STATES else False
    if passed is None:
        return VerifyResult(kind="failure", verdict="incomparable", comparable=False,
                            summary=f"job {job['job_id']} is {state} and its logs show no step "
                                    "counter: whether it passed the failure point cannot be told "
                                    "yet", conditions=conditions, evidence=files)
    on_faulty = node is not None and node in ran_on
    n = nodes.get(node or "")
    drained = None if n is None else out_of_service(n)
    if node:
        conditions.append(f"faulty node {node}: " + (
            "no state in the after bundle" if n is None else
            f"{n.get('state')} ({n.get('reason') or 'no reason'}) in {n['file']}"))
    numbers = {"state": state, "nodes": ran_on, "before_step": before_step,
               "after_step": after_step, "faulty_node": node, "node_drained": drained}
    if not passed:
        verdict, text = "not_recovered", (f"job {job['job_id']} is {state} and did not get "
                                          f"past the failure point")
    elif state not in PASSED_STATES and state not in RUNNING_STATES:
        verdict, text = "regressed_elsewhere", (
            f"job {job['job_id']} got past the failure point (step {after_step} > "
            f"{before_step}) but then ended {state} on {', '.join(ran_on)}: a new failure")
    elif on_faulty:
        verdict, text = "partly", (f"job {job['job_id']} is {state}, but it ran on the faulty "
                                   f"node {node} again")
    elif drained is False:
        verdict, text = "partly", (f"job {job['job_id']} is {state} on other nodes, but {node} "
                                   f"is still in service ({n.get('state') if n else '?'})")
    else:
        verdict = "recovered"
        text = (f"job {job['job_id']} is {state} on {', '.join(ran_on)}, past the failure point"
                + (f"; {node} is drained" if drained else ""))
    notes = [f"{node}: its state is not in the after bundle (add `sinfo -R`)"] \
        if node and drained is None else []
    return VerifyResult(kind="failure", verdict=verdict, comparable=True, summary=text,
                        conditions=conditions, numbers=numbers, evidence=files, notes=notes)
