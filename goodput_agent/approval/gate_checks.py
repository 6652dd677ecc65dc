"""What the approval gate checks before an action may run: the policy (tool allowed,
conclusion, contradictions, excluded and isolated nodes, retries, unseen changes) and the
live state the tool sees now. Each check answers with reasons to refuse.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ValidationError

from goodput_agent.approval import store
from goodput_agent.approval.identity import Identity
from goodput_agent.approval.policy import Policy
from goodput_agent.ledger import Ledger
from goodput_agent.ledger.actions import ActionRow, conclusion, later_verdict
from goodput_agent.ledger.actions import claims as claim_rows
from goodput_agent.toolkit import ActionTarget, MutatingTool, ToolContext, registry

DAY = timedelta(days=1)


def now_or_utc(now: datetime | None) -> datetime:
    return now or datetime.now(UTC)


def _tool(name: str) -> MutatingTool | None:
    t = registry().get(name)
    return t if isinstance(t, MutatingTool) else None


def _args(tool: MutatingTool, args: dict[str, Any]) -> BaseModel:
    return tool.input_model.model_validate(args)


def _conclusion(ledger: Ledger, inv_id: str) -> dict[str, Any] | None:
    return conclusion(ledger, inv_id)


def _contradiction(ledger: Ledger, inv_id: str) -> str | None:
    """A later investigation of the same target whose verdict differs contradicts the claim."""
    later = later_verdict(ledger, inv_id)
    if later:
        return (f"a newer investigation of the same target ({later[0]}) concluded "
                f"{later[1]}, contradicting {later[2]}")
    return None


def _isolated_nodes(ledger: Ledger, since: datetime | None = None) -> set[str]:
    """Nodes drained or cordoned: by executions that succeeded, and by those that started and
    never recorded a result (a crash mid-way: the change may have happened)."""
    out: set[str] = set()
    for e in store.successful_executions(ledger, since) + \
            store.unfinished_executions(ledger, since):
        if e.detail and e.detail.get("target", {}).get("isolates"):
            out.update(e.detail["target"].get("nodes") or [])
    return out


def _retry_reasons(ledger: Ledger, action: ActionRow, target: ActionTarget,
                   policy: Policy, claim_node: str | None) -> list[str]:
    if not target.retries:
        return []
    conc = _conclusion(ledger, action.investigation_id) or {}
    cat = conc.get("category")
    if cat in policy.retry.require_exclusion_for:
        if claim_node is None:
            return [f"retry rule: the job failed on a node fault ({cat}) but the node is not "
                    "known, so a retry may land on it again"]
        # target.excludes: hosts the scheduler keeps the retry off (avoid_nodes is not enforced)
        if claim_node in target.excludes or claim_node in _isolated_nodes(ledger):
            return []
        return [f"retry rule: the job failed on a node fault ({cat}) on {claim_node}; the "
                f"retry must exclude {claim_node} or follow its drain/cordon"]
    if cat in policy.retry.require_change_for:
        changed = [e for e in store.successful_executions(ledger)
                   if e.investigation_id == action.investigation_id and e.detail
                   and e.detail.get("target", {}).get("changes_config")]
        if not changed:
            return [f"retry rule: a bare retry after {cat} fails the same way; apply a config "
                    "change first (config_change / k8s_patch_workload, executed)"]
        unseen = _unseen_change(changed, target, action.tool)
        if unseen:
            return [f"retry rule: {unseen}"]
    return []


def _is_definition(path: str) -> bool:
    """A job script or a workload manifest: what the scheduler copied when the job was
    submitted or applied, so editing the file changes nothing already submitted."""
    from goodput_agent.parsing import job_script
    from goodput_agent.parsing.k8s import manifest as k8s_manifest

    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            head = f.read(4096)
    except OSError:
        head = ""
    name = path.rsplit("/", 1)[-1]
    return job_script.PARSER.sniff(head, name) or k8s_manifest.PARSER.sniff(head, name)


def _unseen_change(changes: list[store.Event], target: ActionTarget, tool: str) -> str | None:
    """Why no executed config change reaches what this retry runs; None when one does."""
    if any(e.tool != "config_change" for e in changes):
        return None  # a patched cluster object (k8s_patch_workload): the controller runs it
    edited = {p for e in changes for p in (e.detail or {}).get("target", {}).get("paths", [])}
    definitions = {p for p in edited if _is_definition(p)}
    if edited - definitions:
        return None  # a config file the job reads when it runs: a rerun picks it up
    if definitions & set(target.runs):
        return None
    how = ("a requeue reruns the script Slurm stored at submission; resubmit the edited script "
           "(slurm_resubmit_job)" if tool.startswith("slurm_") else
           "a restart reruns the workload the cluster holds; patch it (k8s_patch_workload)")
    return (f"the config change edited {', '.join(sorted(definitions))}, which {tool} does not "
            f"run: {how}")


Checked = tuple[list[str], MutatingTool | None, BaseModel | None]


def policy_reasons(ledger: Ledger, action: ActionRow, policy: Policy,
                   approver: Identity | None) -> Checked:
    """Every reason the policy forbids this action (static: no cluster needed)."""
    name = action.tool
    tool = _tool(name)
    if tool is None:
        kind = "read-only or advisory" if name in registry() else "not a tool Goodput has"
        return [f"{name} is not a mutating tool Goodput executes ({kind}); it is advice for a "
                "person"], None, None
    try:
        args = _args(tool, action.args)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "args"
        return [f"invalid arguments for {name}: {where}: {err['msg']}"], tool, None
    tp = policy.tool(name)
    reasons: list[str] = []
    if not tp.enabled:
        reasons.append(f"{name} is not enabled by the policy ({policy.source})")
    if approver is not None and not policy.may_approve(name, approver.person, approver.groups):
        reasons.append(f"{approver.person!r} may not approve {name} (policy {policy.source}: "
                       f"add them to tools.{name}.approvers, or to a group listed there)")
    target = tool.target(args)
    for node in target.nodes:
        if not tp.scope.node_allowed(node):
            reasons.append(f"node {node} is outside the policy's scope {tp.scope.nodes}")
    for path in target.paths:
        if not tp.scope.path_allowed(path):
            reasons.append(f"{path} is outside the files the policy lets {name} write "
                           f"(scope.paths: {tp.scope.paths or 'none'})")
    if target.namespace and tp.scope.namespaces and target.namespace not in tp.scope.namespaces:
        reasons.append(f"namespace {target.namespace} is outside the policy's scope "
                       f"{tp.scope.namespaces}")
    conc = _conclusion(ledger, action.investigation_id)
    pre = tp.preconditions
    if pre.concluded and (conc is None or conc["category"] == "unknown"):
        reasons.append("precondition: the investigation has no verdict")
    claims = claim_rows(ledger, action.claim_ids)
    claim = claims[0] if claims else None
    if claim is None:
        reasons.append("precondition: the action rests on no claim")
    else:
        if claim.confidence < pre.min_claim_confidence:
            reasons.append(f"precondition: claim {claim.id} has confidence "
                           f"{claim.confidence:.2f} < {pre.min_claim_confidence:.2f}")
        named = {c.node for c in claims if c.node}
        unnamed = [n for n in target.nodes if n not in named]
        if pre.claim_names_target and unnamed:  # each host acted on, not one of a list
            reasons.append(f"precondition: claim {claim.id} names node {claim.node}, "
                           f"not {', '.join(unnamed)}")
    contra = _contradiction(ledger, action.investigation_id)
    if contra:
        reasons.append(contra)
    reasons += _retry_reasons(ledger, action, target, policy, claim.node if claim else None)
    return reasons, tool, args


def live_reasons(ledger: Ledger, tool: MutatingTool, args: BaseModel, ctx: ToolContext,
                 policy: Policy, now: datetime) -> list[str]:
    """Blast radius and partition scope: need the ledger's history and the cluster."""
    missing = [need for need in tool.requires if getattr(ctx, need, None) is None]
    if missing:
        what = {"slurm": "no Slurm cluster to act on (slurm.conf / scontrol)",
                "kube": "no Kubernetes API to act on (kubeconfig)"}
        return [f"{tool.name}: " + "; ".join(what.get(m, m) for m in missing)]
    try:
        reasons = tool.live_check(ctx, args)
    except Exception as exc:  # noqa: BLE001 - an unchecked argument is a refusal, not a crash
        return [f"{tool.name}: cannot check the target with the cluster: "
                f"{type(exc).__name__}: {exc}".splitlines()[0][:300]]
    target = tool.target(args)
    if not target.isolates:
        return reasons
    recent = _isolated_nodes(ledger, now - DAY)
    after = recent | set(target.nodes)
    cap = policy.limits.max_nodes_drained_per_day
    if len(after) > cap:
        reasons.append(f"blast radius: {len(after)} nodes drained/cordoned within 24 h would "
                       f"exceed the policy's {cap} ({', '.join(sorted(recent)) or 'none yet'})")
    partitions = getattr(tool, "partitions", None)
    scope = policy.tool(tool.name).scope.partitions
    if partitions is None:
        return reasons  # the tool's cluster lists no pools
    try:
        pools = partitions(ctx, args)  # (name, all nodes, nodes already out of service)
    except Exception as exc:  # noqa: BLE001 - an unchecked limit is a refusal, not a crash
        return [*reasons, f"blast radius cannot be checked: {type(exc).__name__}: {exc}"
                .splitlines()[0][:300]]
    known = {n for _, nodes, _ in pools for n in nodes}
    unknown = [n for n in target.nodes if n not in known]
    if unknown:
        reasons.append(f"{', '.join(unknown)}: not a node of any partition the cluster lists, "
                       "so no limit can be checked")
    for part in pools:
        name, nodes, out = part
        if scope and name not in scope:
            reasons.append(f"partition {name} is outside the policy's scope {scope}")
        frac = len(set(out) | set(target.nodes)) / max(len(nodes), 1)
        if frac > policy.limits.max_partition_fraction:
            reasons.append(f"blast radius: {frac:.0%} of partition {name} would be out of "
                           f"service (> {policy.limits.max_partition_fraction:.0%})")
    return reasons
