"""Host-memory kills announced by someone other than the kernel, and shared memory running out.

The kernel's OOM killer writes its own record (`Out of memory: Killed process N`) to the node's
kernel log; a job's output often holds only what others say about the kill:
- Ray's memory monitor, which kills a worker itself before the kernel would, with the node's
  figures (`ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on
  memory. Memory on the node (IP: ...) ... was 59.49GB / 62.58GB (0.950744), which exceeds the
  memory usage threshold of 0.95`; the raylet's `N Workers (tasks / actors) killed due to memory
  pressure (OOM)`; its earlier `System memory low at node with IP ...`; Ray < 2.2's
  `RayOutOfMemoryError: More than 95% of the memory on node ...`):
  the monitor's own record, as decisive as the kernel's;
- PyTorch's `DataLoader worker (pid N) is killed by signal: Killed.`, a shell's `Killed` (or
  its translation), an exit status 137 / -9: a SIGKILL from outside, whose usual sender is the
  OOM killer, but the kernel's record that would say so is missing (`kernel_record_missing`):
  the analysis keeps such a verdict at a confidence that says it is unconfirmed;
- shared memory: a DataLoader worker's `Bus error` ("out of shared memory"), PyTorch's
  `ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient
  shared memory (shm)`, `unable to write to file </torch_...>` (a tensor could not be placed in
  /dev/shm), NCCL's `misc/shmutils.cc ... NCCL WARN Error: failed to extend /dev/shm/nccl-X to
  N bytes` (NCCL >= 2.19 adds `, error: No space left on device (28)`; older NCCL's
  `Call to posix_fallocate failed : No space left on device`), NVIDIA/nccl-tests#166,
  NVIDIA/nccl#290: host memory too, with its own remedy (`--shm-size`, `--ipc=host`, fewer
  workers). NCCL's next line, `Error while creating shared memory segment`, is not read: NCCL
  prints it after other failures too (a CUDA `invalid argument`, NVIDIA/nccl#1518).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from goodput_agent.core.events import EventKind
from goodput_agent.parsing.k8s.verdicts import KUBELET_MEMORY_EVICTION

_RAY_TASK = re.compile(r"(?:OutOfMemoryError: )?Task was killed due to the node running low on "
                       r"memory")
_RAY_NODE = re.compile(r"Memory on the node \(IP: (?P<ip>[\d.]+)[^)]*\)[^\n]*? was "
                       r"(?P<used>[\d.]+)GB / (?P<total>[\d.]+)GB")
_RAYLET = re.compile(r"(?P<n>\d+) Workers? \(tasks / actors\) killed due to memory pressure "
                     r"\(OOM\)(?:[^\n]*?IP: (?P<ip>[\d.]+))?")
# the raylet's own line when its memory monitor kills, in an earlier wording
_RAY_SYSTEM_LOW = re.compile(r"System memory low at node with IP (?P<ip>[\d.]+)\.(?: Used memory "
                             r"\((?P<used>[\d.]+)GB\) / total capacity \((?P<total>[\d.]+)GB\))?")
_RAY_LEGACY = re.compile(r"RayOutOfMemoryError: More than (?P<pct>\d+)% of the memory on node "
                         r"(?P<node>\S+) is used \((?P<used>[\d.]+) / (?P<total>[\d.]+) GB\)")
_WORKER = re.compile(r"worker \(pid\(?s?\)?:? ?(?P<pid>\d+)\)? (?:is killed|exited unexpectedly) "
                     r"by signal: (?P<sig>[A-Za-z ]+)")
_SHM = re.compile(r"insufficient shared memory|out of shared memory|"
                  r"unable to write to file </torch_|/dev/shm[^\n]*No space left|"
                  r"No space left on device[^\n]*/dev/shm|"
                  r"failed to extend /dev/shm/\S+ to \d+ bytes|"
                  r"posix_fallocate failed ?: No space left")
# the kubelet's eviction manager in its own words, wherever its message is pasted (yq of a
# pod's status.message, a describe fragment, an events row): like Ray's, a memory monitor
_KUBELET_EVICTION = re.compile(r"node was low on resource: memory\b")
# a shell or IDE reporting the SIGKILL: "Killed", "bash: line 27: 318 Killed  sh start.sh",
# "...it/s]Killed", "**Killed**", zh "已杀死", "exit code 137 (interrupted by signal 9: SIGKILL)"
_SHELL_KILLED = re.compile(r"(?:^|\]|\s|\*\*)(?:Killed|已杀死)(?:\*\*)?\s*$|"
                           r"^(?:.{0,40}?\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\]?\s+)?"  # its time, if any
                           r"(?:\S+: )?(?:line \d+: +)?\d+ Killed\s+\S")
_EXIT_137 = re.compile(r"exit(?:ed with)? (?:code|status) 137\b|"
                       r"interrupted by signal 9: ?SIGKILL|return code = -9\b")

# a training platform's own exit diagnostics (not kubectl's): its memory verdict, or exit 137
# (Torque/PBS's MoM: "job 3132467 exceeded MEM usage hard limit (2528 > 1126)")
_PLATFORM_OOM = re.compile(r"(?i)\breason\W{1,4}OOMKilled\b|exceeded the (?:request(?:ed)? )?"
                           r"memory|container init was OOM-killed|"
                           r"exceeded MEM usage hard limit")
_PLATFORM_137 = re.compile(r"(?i)\bexit_?code\W{1,4}137\b|_job_complete: JobId=\d+ WTERMSIG 9\b")

KERNEL_RECORD = ("the node's kernel log (journalctl -k / dmesg: 'Out of memory: Killed process' "
                 "or a memory-cgroup OOM line) or the job's memory accounting would confirm it")


@dataclass(frozen=True, slots=True)
class HostMemory:
    kind: EventKind
    summary: str
    detail: dict[str, Any]


def host_memory_message(text: str) -> HostMemory | None:
    """What an exception or log line says of host memory running out, else None."""
    if "emory" in text and (hit := _ray(text)):
        return hit
    if _KUBELET_EVICTION.search(text):
        return HostMemory(EventKind.host_oom_kill, "the kubelet evicted a pod: the node was low "
                          "on memory", dict(KUBELET_MEMORY_EVICTION))
    if m := _WORKER.search(text):
        sig = m["sig"].strip()
        if sig.startswith("Bus error") or "shared memory" in text:
            return HostMemory(EventKind.python_exception, "DataLoader worker killed by a bus "
                              "error: shared memory (/dev/shm) ran out",
                              {"pid": int(m["pid"]), "signal_name": "SIGBUS", "shm": True,
                               "weight": 0.85})
        if sig == "Killed":
            return HostMemory(EventKind.signal, "DataLoader worker SIGKILLed (host memory, "
                              "the kernel's record is not in the bundle)",
                              {"pid": int(m["pid"]), "signal_name": "SIGKILL", "weight": 0.6,
                               "kernel_record_missing": True})
        return None
    if _SHM.search(text):
        return HostMemory(EventKind.python_exception, "shared memory (/dev/shm) ran out",
                          {"shm": True, "weight": 0.85})
    return None


def _ray(text: str) -> HostMemory | None:
    if _RAY_TASK.search(text) or ("exceeds the memory usage threshold" in text
                                  and _RAY_NODE.search(text)):
        d: dict[str, Any] = {"monitor": "ray", "weight": 0.9}
        summary = "Ray's memory monitor killed a task: the node ran low on memory"
        if m := _RAY_NODE.search(text):
            d.update(node_ip=m["ip"], used_gb=float(m["used"]), total_gb=float(m["total"]))
            summary += f" ({m['used']} of {m['total']} GB used on {m['ip']})"
        return HostMemory(EventKind.host_oom_kill, summary, d)
    if m := _RAY_SYSTEM_LOW.search(text):
        d = {"monitor": "ray", "weight": 0.9, "node_ip": m["ip"]}
        summary = f"Ray's memory monitor killed a task: memory low on {m['ip']}"
        if m["used"]:
            d.update(used_gb=float(m["used"]), total_gb=float(m["total"]))
            summary += f" ({m['used']} of {m['total']} GB used)"
        return HostMemory(EventKind.host_oom_kill, summary, d)
    if m := _RAYLET.search(text):
        d = {"monitor": "ray", "weight": 0.9, "workers_killed": int(m["n"])}
        if m["ip"]:
            d["node_ip"] = m["ip"]
        return HostMemory(EventKind.host_oom_kill, f"Ray's raylet killed {m['n']} worker(s) "
                          "due to memory pressure (OOM)", d)
    if m := _RAY_LEGACY.search(text):
        return HostMemory(EventKind.host_oom_kill, f"Ray: more than {m['pct']}% of the memory "
                          f"on node {m['node']} is used ({m['used']} / {m['total']} GB)",
                          {"monitor": "ray", "weight": 0.9, "node_name": m["node"]})
    return None


def shell_kill(text: str) -> HostMemory | None:
    """A shell, IDE, launcher or platform saying a process got SIGKILL (exit 137 / -9), or a
    platform's own memory verdict on its container."""
    if _PLATFORM_OOM.search(text):
        return HostMemory(EventKind.cgroup_oom, "the platform says the container ran out of its "
                          "memory limit", {"weight": 0.85, "platform": True})
    if _SHELL_KILLED.search(text) or _EXIT_137.search(text) or _PLATFORM_137.search(text):
        return HostMemory(EventKind.signal, "Process killed with SIGKILL (host memory is the "
                          "usual sender; the kernel's record is not in the bundle)",
                          {"signal_name": "SIGKILL", "weight": 0.5,
                           "kernel_record_missing": True})
    return None
