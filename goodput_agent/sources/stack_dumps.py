"""Stack dumps of every rank of a running job, taken where the ranks run (read-only).

On Slurm: one `srun --overlap --jobid JOB -N<nodes> --ntasks-per-node=1 --label` step runs
NODE_SCRIPT on every node of the job (--overlap shares the job's resources with its running
step, so nothing is queued). On Kubernetes: the same script through `kubectl exec` (the API's
pods/exec) in each pod. The script finds the job's Python processes on its node (Slurm: the
processes whose environment says SLURM_JOB_ID=JOB on this SLURMD_NODENAME, outside the
script's own step, and under the same SLURM_CONF when one is set; a pod: every Python
process), prints each one's rank variables, and runs `py-spy dump --json` on it `samples`
times. py-spy needs ptrace rights over the ranks (the
job's own user where ptrace_scope is 0, else CAP_SYS_PTRACE): a refusal is that rank's error.

Nothing here decides: the dumps are parsed (parsing/pyspy_dump.py) and each failure (py-spy
absent, permission, process gone, a node that did not answer) is kept as that rank's or that
node's error, to be said in the evidence.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from goodput_agent.parsing.pyspy_dump import DumpError, ProcessDump, parse_dump

SOURCE = "stack_dumps"
RANK_VARS = ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")

# POSIX sh; "$1": slurm JOB | pod, "$2": samples, "$3": seconds between samples, "$4": py-spy
NODE_SCRIPT = r"""
mode="$1"; job="$2"; samples="$3"; pause="$4"; pyspy="${5:-py-spy}"
me="${SLURMD_NODENAME:-$(hostname)}"
echo "@@node $me"
if ! command -v "$pyspy" >/dev/null 2>&1; then
  echo "@@node-error py-spy not found on $me"; exit 0
fi
for d in /proc/[0-9]*; do
  pid="${d#/proc/}"
  exe=$(readlink "$d/exe" 2>/dev/null) || continue
  case "${exe##*/}" in python*) ;; *) continue ;; esac
  env=$(tr '\0' '\n' < "$d/environ" 2>/dev/null) || continue
  get() { printf '%s\n' "$env" | sed -n "s/^$1=//p" | head -n 1; }
  if [ "$mode" = slurm ]; then
    [ "$(get SLURM_JOB_ID)" = "$job" ] || continue
    [ "$(get SLURMD_NODENAME)" = "$me" ] || continue
    [ "$(get SLURM_STEP_ID)" = "$SLURM_STEP_ID" ] && continue
    # another cluster's job of the same id on this host (test clusters share one machine)
    [ -n "${SLURM_CONF:-}" ] && [ "$(get SLURM_CONF)" != "$SLURM_CONF" ] && continue
  fi
  ppid=$(sed -n 's/^PPid:[[:space:]]*//p' "$d/status" 2>/dev/null)
  vars=""
  for v in RANK SLURM_PROCID OMPI_COMM_WORLD_RANK PMI_RANK PMIX_RANK; do
    vars="$vars $v=$(get "$v")"
  done
  echo "@@proc pid=$pid ppid=$ppid$vars"
  i=0
  while [ "$i" -lt "$samples" ]; do
    echo "@@dump pid=$pid"
    "$pyspy" dump --pid "$pid" --json 2>&1
    echo "@@rc $?"
    i=$((i + 1))
    [ "$i" -lt "$samples" ] && sleep "$pause"
  done
done
echo "@@done"
"""


class RankDumps(BaseModel):
    """What the dump step found: each rank's dumps and node, and what failed where."""

    dumps: dict[int, list[ProcessDump]] = Field(default_factory=dict)
    rank_nodes: dict[int, str] = Field(default_factory=dict)
    rank_pids: dict[int, int] = Field(default_factory=dict)
    node_errors: dict[str, str] = Field(default_factory=dict)  # node -> why it gave nothing
    command: str = ""
    raw: dict[str, str] = Field(default_factory=dict)  # node -> the script's output, as is


@dataclass
class _Proc:
    pid: int
    ppid: int | None
    vars: dict[str, str]
    node: str
    samples: list[ProcessDump] = field(default_factory=list)


def _kv(text: str) -> dict[str, str]:
    return dict(re.findall(r"(\w+)=(\S*)", text))


_MARK = re.compile(r"^@@", re.M)


def _parse_node(text: str, node_hint: str) -> tuple[str, list[_Proc], str | None]:
    """The script's output, cut at its `@@` marks (a dump's body is many lines of JSON: it is
    sliced whole, never walked line by line)."""
    node, procs, error = node_hint, [], None
    current: _Proc | None = None
    body: str | None = None
    for chunk in _MARK.split(text)[1:]:
        head, _, rest = chunk.partition("\n")
        if head.startswith("node "):
            node = head[5:].strip() or node_hint
        elif head.startswith("node-error "):
            error = head[11:].strip()
        elif head.startswith("proc "):
            kv = _kv(head)
            current = _Proc(pid=int(kv.pop("pid")), node=node,
                            ppid=int(kv["ppid"]) if kv.get("ppid", "").isdigit() else None,
                            vars={k: v for k, v in kv.items() if v and k != "ppid"})
            procs.append(current)
        elif head.startswith("dump ") and current is not None:
            body = rest
        elif head.startswith("rc ") and current is not None and body is not None:
            current.samples.append(_dump(body, head[3:].strip(), current.pid))
            body = None
    return node, procs, error


def _dump(body: str, rc: str, pid: int) -> ProcessDump:
    text = body.strip()
    if rc != "0":
        last = text.splitlines()[-1] if text else "no output"
        return ProcessDump(pid=pid, error=f"py-spy exit {rc}: {last.strip()[:300]}")
    try:
        dump = parse_dump(text)
    except DumpError as exc:
        return ProcessDump(pid=pid, error=f"unreadable py-spy output: {exc}")
    if dump.pid is None:
        dump.pid = pid
    return dump


def _rank_of(p: _Proc, var: str) -> int | None:
    value = p.vars.get(var, "")
    return int(value) if value.isdigit() else None


def assemble(outputs: dict[str, str], command: str = "") -> RankDumps:
    """Each node's script output -> ranks. The rank variable is the first of RANK_VARS that
    any process has (torchrun's workers have RANK, its agent only SLURM_PROCID); a process
    whose parent has the same rank is a child of that rank (a data-loader worker): skipped."""
    out = RankDumps(command=command, raw=outputs)
    procs: list[_Proc] = []
    for hint, text in outputs.items():
        node, found, error = _parse_node(text, hint)
        if error:
            out.node_errors[node] = error
        elif "@@done" not in text:
            out.node_errors[node] = "the dump script did not finish: " + (
                text.strip().splitlines()[-1][:200] if text.strip() else "no output")
        procs.extend(found)
    var = next((v for v in RANK_VARS if any(_rank_of(p, v) is not None for p in procs)), None)
    if var is None:
        return out
    by_pid = {(p.node, p.pid): p for p in procs}
    for p in procs:
        rank = _rank_of(p, var)
        parent = by_pid.get((p.node, p.ppid)) if p.ppid else None
        if rank is None or (parent is not None and _rank_of(parent, var) == rank):
            continue
        if rank in out.dumps:  # two processes claim one rank: keep the first, say so
            out.node_errors.setdefault(p.node, f"rank {rank} claimed by pids "
                                                f"{out.rank_pids[rank]} and {p.pid}")
            continue
        out.dumps[rank] = p.samples or [ProcessDump(pid=p.pid, error="no dump taken")]
        out.rank_nodes[rank] = p.node
        out.rank_pids[rank] = p.pid
    return out


def slurm_argv(job_id: str, nodes: list[str], samples: int, pause_s: float,
               pyspy: str = "py-spy") -> list[str]:
    if not re.fullmatch(r"\d+(_\d+)?", job_id):
        raise ValueError(f"{job_id!r} is not a Slurm job id")
    return ["srun", "--overlap", f"--jobid={job_id}", f"--nodes={len(nodes)}",
            f"--ntasks={len(nodes)}", "--ntasks-per-node=1", f"--nodelist={','.join(nodes)}",
            "--label", "--kill-on-bad-exit=0", "sh", "-c", NODE_SCRIPT, "goodput-stacks",
            "slurm", job_id, str(samples), f"{pause_s:g}", pyspy]


def _split_labels(text: str, nodes: list[str]) -> dict[str, str]:
    """srun --label prefixes each line with its task number: one task per node, in order."""
    per: dict[str, list[str]] = {}
    for line in text.splitlines():
        m = re.match(r"^\s*(\d+): ?(.*)$", line)
        if not m:
            continue
        task = int(m.group(1))
        node = nodes[task] if task < len(nodes) else f"task-{task}"
        per.setdefault(node, []).append(m.group(2))
    return {n: "\n".join(lines) for n, lines in per.items()}


Runner = Callable[[list[str], float], tuple[int, str, str]]


def run_command(argv: list[str], timeout_s: float, env: dict[str, str] | None = None
                ) -> tuple[int, str, str]:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, env=env,
                           check=False)
    except FileNotFoundError:
        return 127, "", f"{argv[0]}: not installed here"
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else ""
        return 124, out or "", f"timed out after {timeout_s:g} s"
    return p.returncode, p.stdout, p.stderr


def slurm_stacks(job_id: str, nodes: list[str], *, samples: int = 1, pause_s: float = 0.3,
                 timeout_s: float = 60.0, pyspy: str = "py-spy",
                 env: dict[str, str] | None = None) -> RankDumps:
    argv = slurm_argv(job_id, nodes, samples, pause_s, pyspy)
    shown = shlex.join([*argv[:8], "sh", "-c", "<dump script>", *argv[11:]])
    rc, out, err = run_command(argv, timeout_s, env)
    per_node = _split_labels(out, nodes)
    dumps = assemble(per_node, shown)
    for node in nodes:
        if node not in per_node:
            dumps.node_errors.setdefault(node, f"srun rc {rc}: " + (
                " ".join(err.split())[:300] or "no output from this node"))
    return dumps


def pod_script_argv(samples: int, pause_s: float, pyspy: str = "py-spy") -> list[str]:
    """The command `kubectl exec POD -- ...` runs (the API's pods/exec, create)."""
    return ["sh", "-c", NODE_SCRIPT, "goodput-stacks", "pod", "-", str(samples),
            f"{pause_s:g}", pyspy]
