"""Per-file work as Ray tasks (`--ray auto|ADDRESS`): past one machine.

Each job is one task (`num_cpus=1`, retried by Ray when its worker dies), given the file's path
on the shared filesystem, never its bytes. A file whose path names a host (a bundle's
`nodes/<node>/`, a trace written as `<host>_<pid>...`) is scheduled on the Ray node of that host
name or address when the cluster has one (soft: elsewhere when that node is busy or gone); an
unpacked archive lives on this machine only, so its tasks are pinned to the driver's node.
Results come back as they finish; progress is the number of files done out of all.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from goodput_agent.core.errors import BadInput
from goodput_agent.core.parallel import OnDone, biggest_first

RETRIES = 3  # a task whose worker or node dies runs again, this many times at most
INSTALL_HINT = "pip install 'goodput[ray]'"


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise BadInput(f"--ray: Ray is not installed here ({INSTALL_HINT})") from None
    return ray


def _short(host: str) -> str:
    """A host name without its domain; an address as it is."""
    if ":" in host or host.replace(".", "").isdigit():
        return host
    return host.split(".")[0].lower()


class ClusterFailure(RuntimeError):
    """A task lost with its retries spent (its node died again and again): one line."""


def _result(ray: Any, ref: Any, job: tuple[Any, ...]) -> Any:
    """The task's return value; its own exception raised here as it would be locally."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        raise exc.as_instanceof_cause() from None
    except ray.exceptions.RayError as exc:
        what = next((str(a) for a in job if isinstance(a, str)), "a file")
        raise ClusterFailure(f"ray: the task for {what} was lost after {RETRIES} retries "
                             f"({type(exc).__name__})") from None


class RayRunner:
    name = "ray"

    def __init__(self, address: str, progress: bool = True):
        ray = _ray()
        try:
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False,
                     logging_level="ERROR", configure_logging=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise BadInput(f"--ray {address}: cannot connect ({exc})".splitlines()[0]) from None
        self.address = address
        self.progress = progress
        self.jobs_done = 0
        self._here = ray.get_runtime_context().get_node_id()
        self._nodes: dict[str, str] = {}  # host name, short name or address -> node id
        for node in ray.nodes():
            if node.get("Alive"):
                for key in (node.get("NodeManagerHostname"), node.get("NodeManagerAddress")):
                    if key:
                        self._nodes.setdefault(str(key).lower(), node["NodeID"])
                        self._nodes.setdefault(_short(str(key)), node["NodeID"])

    def node_of(self, host: str | None) -> str | None:
        """The Ray node id of a host named by a file's path, if the cluster has that node."""
        if not host:
            return None
        return self._nodes.get(host.lower()) or self._nodes.get(_short(host))

    def _options(self, host: str | None, here_only: bool) -> dict[str, Any]:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        opts: dict[str, Any] = {"num_cpus": 1, "max_retries": RETRIES}
        node, soft = (self._here, False) if here_only else (self.node_of(host), True)
        if node is not None:
            opts["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id=node, soft=soft)
        return opts

    def map_files(self, fn: Callable[..., Any], jobs: Sequence[tuple[Any, ...]], *,
                  where: Sequence[str | None] | None = None, sizes: Sequence[int] | None = None,
                  on_done: OnDone | None = None, here_only: bool = False,
                  label: str = "files") -> list[Any]:
        ray = _ray()
        task = ray.remote(fn)
        refs: dict[Any, int] = {}
        for i in biggest_first(len(jobs), sizes):
            opts = self._options(where[i] if where else None, here_only)
            refs[task.options(**opts).remote(*jobs[i])] = i
        out: list[Any] = [None] * len(jobs)
        with _Count(len(jobs), label, self.progress) as count:
            pending = list(refs)
            while pending:
                # whatever finished within a moment, not one at a time: one wait per result
                # would cost O(tasks) each over thousands of ranks
                ready, pending = ray.wait(pending, num_returns=len(pending), timeout=0.2)
                for ref in ready:
                    i = refs[ref]
                    out[i] = _result(ray, ref, jobs[i])
                    count.tick()
                    self.jobs_done += 1
                    if on_done:
                        on_done(i)
        return out


    def run_on(self, hosts: Sequence[str], fn: Callable[..., Any], *args: Any) -> Any | None:
        """`fn(*args)` as one task on the node named by any of `hosts`, and only there (it reads
        that machine's own state); None when the cluster has no such node."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        ray = _ray()
        node = next((n for h in hosts if (n := self.node_of(h))), None)
        if node is None:
            return None
        task = ray.remote(fn).options(
            num_cpus=1, max_retries=RETRIES,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node, soft=False))
        return _result(ray, task.remote(*args), (hosts[0],))


class _Count:
    """Jobs (files, ranks) done out of all, on stderr: a rich bar on a terminal, else one line
    every tenth of the way, so that logs stay short."""

    def __init__(self, total: int, label: str, show: bool):
        self.total, self.done, self.show = total, 0, show and total > 0
        self.label = label
        self._bar: Any = None

    def __enter__(self) -> _Count:
        if self.show and sys.stderr.isatty():
            from rich.progress import BarColumn, MofNCompleteColumn, Progress

            self._bar = Progress(f"ray: {self.label}", BarColumn(), MofNCompleteColumn(),
                                 transient=True)
            self._bar.__enter__()
            self._task = self._bar.add_task("files", total=self.total)
        return self

    def tick(self) -> None:
        self.done += 1
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done)
        elif self.show and (self.done == self.total or
                            self.done % max(1, self.total // 10) == 0):
            print(f"ray: {self.done}/{self.total} {self.label} done", file=sys.stderr, flush=True)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
