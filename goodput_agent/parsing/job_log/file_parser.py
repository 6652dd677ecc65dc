"""One file's lines routed through the readers; ranks, hosts and GPUs resolved at the end."""

from __future__ import annotations

import re

from goodput_agent.core.events import Event, Locator
from goodput_agent.parsing.base import ParseResult
from goodput_agent.parsing.job_log.classify import bus_id_to_pci
from goodput_agent.parsing.job_log.elastic_summary import ElasticSummary
from goodput_agent.parsing.job_log.iterations import (
    MAX_POINTS,
    iteration_parts,
    iteration_point,
)
from goodput_agent.parsing.job_log.nccl_lines import NcclLines
from goodput_agent.parsing.job_log.platform_tasks import PlatformTasks
from goodput_agent.parsing.job_log.prefixes import (
    HEAD_TS,
    SYSLOG_TS,
    LinePrefix,
    split_prefix,
    strip_runtime_ts,
)
from goodput_agent.parsing.job_log.ranks import RankResolver, rank_offsets
from goodput_agent.parsing.job_log.slurm_lines import SlurmLines
from goodput_agent.parsing.job_log.state import FORMAT, Pending, Stream
from goodput_agent.parsing.job_log.tf_config import tf_task

_WORLD = re.compile(r"(?i)\bworld[_ ]size\b[\"']?\s*[:=]\s*(\d+)")
_NCCL_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)")


class FileParser(ElasticSummary, NcclLines, SlurmLines, PlatformTasks):
    """Feeds decoded lines through the matchers; resolves ranks and hosts at the end."""

    def feed(self, lineno: int, line: str | None, ts_line: str | None) -> None:
        if ts_line:
            runtime_ts, ts_line = strip_runtime_ts(ts_line)
            m = HEAD_TS.match(split_prefix(ts_line)[1])
            if m or runtime_ts:
                self.time_src = m["ts"] if m else runtime_ts
        if line is None:
            return
        runtime_ts, stripped = strip_runtime_ts(line)
        prefix, content = split_prefix(stripped)
        m = HEAD_TS.match(content)
        # a syslog header split_prefix took off before a launcher prefix: its time is the line's
        sm = SYSLOG_TS.match(stripped) if m is None and runtime_ts is None \
            and prefix != LinePrefix() and content is not stripped else None
        self.own_time = m is not None or runtime_ts is not None or sm is not None
        if m:
            self.time_src = m["ts"]
        elif runtime_ts:
            self.time_src = runtime_ts
        elif sm:
            self.time_src = sm["ts"]
        self.lineno, self.line, self.prefix = lineno, line, prefix
        self._note_prefix(prefix)
        self._facts(content)
        stream = self.streams.setdefault(prefix.key, Stream())
        if self._traceback(stream, content):
            return
        if self._elastic_block(stream, content):
            return
        self._watchdog_continuation(stream, content)
        self._match(stream, content)

    def _note_prefix(self, p: LinePrefix) -> None:
        if p != LinePrefix():
            self.prefixed = True
        if p.local is not None:
            self.locals_seen.add(p.local)
            if p.label is not None:
                self.labels_are_nodes = True
            if p.rank is not None:
                self.pairs.add((p.label, p.local, p.rank))

    def _facts(self, content: str) -> None:
        if (point := iteration_point(content)) is not None:
            points = self.facts.setdefault("iterations", [])
            if len(points) < MAX_POINTS:
                # a launcher's label or local rank is resolved at the end, as events' are
                rank = self.prefix.rank if self.prefix.rank is not None else self.ctx.rank_hint
                who: int | LinePrefix | None = rank if rank is not None or \
                    self.prefix == LinePrefix() else self.prefix
                points.append([*point, who, self.lineno])
                if named := iteration_parts(content):
                    parts = self.facts.setdefault("iteration_parts", [])
                    if len(parts) < MAX_POINTS * 4:
                        parts += [[point[0], name, ms, who, self.lineno] for name, ms in named]
        self.timers.feed(content, self.lineno)
        if "orld" in content and (m := _WORLD.search(content)):
            self.world.add(int(m[1]))
        if "NCCL version" in content and (m := _NCCL_VERSION.search(content)):
            self.facts.setdefault("nccl_version", m[1])
        if "TF_CONFIG" in content and (tf := tf_task(content)):
            hosts = self.facts.setdefault("cluster_hosts", [])
            hosts += [h for h in tf.hosts if h not in hosts]
            if tf.own:
                self.tf_own.add(tf.own)

    def _match(self, stream: Stream, c: str) -> None:
        for matcher in (self._m_watchdog, self._m_progress, self._m_nccl_line, self._m_ib,
                        self._m_kernel, self._m_gpu_lost, self._m_host_memory, self._m_oom,
                        self._m_cuda, self._m_socket, self._m_conn,
                        self._m_nccl_code, self._m_slurm, self._m_elastic_agent, self._m_crash,
                        self._m_platform_task, self._m_argparse, self._m_bare_exception):
            if matcher(stream, c):
                return

    def finish(self) -> ParseResult:
        for stream in self.streams.values():
            self._flush_entry(stream)
        world = max((n for *_, n, _c, _b, _p in self.comm_inits), default=None)
        world_size = max(self.world | ({world} if world else set()), default=None)
        res = ParseResult(format=FORMAT, lines_read=self.lines_read)
        pid_rank: dict[tuple[str, int], int] = {}
        for host, pid, rank, n, cuda, bus, prefix in sorted(self.comm_inits, key=str):
            if n != world:
                continue
            pid_rank[(host, pid)] = rank
            res.rank_hosts.setdefault(rank, host)
            res.rank_gpus.setdefault(rank, bus_id_to_pci(bus) if bus else str(cuda))
            if prefix.local is not None:
                self.pairs.add((prefix.label, prefix.local, rank))
        offsets = rank_offsets(self.pairs)
        single_node = bool(world_size and self.locals_seen
                           and max(self.locals_seen) + 1 == world_size)
        if pid_rank:  # lets a kernel OOM kill's pid name its rank
            res.facts["rank_pids"] = {f"{h}:{pid}": r for (h, pid), r in pid_rank.items()}
        # one process's log (no prefixes, one world communicator): its rank is the file's
        sole = set(pid_rank.values())
        file_rank = next(iter(sole)) if len(sole) == 1 and not self.prefixed else None
        resolve = RankResolver(self.ctx, offsets, single_node, self.labels_are_nodes, pid_rank,
                               file_rank)
        bare_hosts = {h for p, h, _pid, _dev in self.prefixed_hosts if p == LinePrefix()}
        for prefix, host, pid, dev in sorted(self.prefixed_hosts, key=str):
            rank = resolve.prefix_rank(prefix)
            if rank is None:
                rank = pid_rank.get((host, pid))
            if rank is None and prefix == LinePrefix() and len(bare_hosts) == 1:
                # one process's file (its NCCL lines name one host), named after its rank: a
                # rank that failed before NCCL's Init COMPLETE line still has its host
                rank = self.ctx.rank_hint
            if rank is not None:
                res.rank_hosts.setdefault(rank, host)
                res.rank_gpus.setdefault(rank, dev)
        if not self.labels_are_nodes and self.srun_task_hosts:
            # srun task ids are ranks only when srun launched one task per rank: a weaker
            # source than NCCL's own lines, used by the analysis only to fill gaps
            res.facts["srun_task_hosts"] = {str(k): v for k, v in self.srun_task_hosts.items()}
        if len(self.tf_own) == 1:  # one task's spec: the file is that process's output
            res.facts["process_host"] = next(iter(self.tf_own))
        for rank, host in self.elastic_hosts.items():
            res.rank_hosts.setdefault(rank, host)  # torchelastic's host is socket.getfqdn()
        if self.labels_are_nodes and self.locals_seen:
            # srun -l running one torchrun per node: a node task's ranks share its host, so
            # one rank's known host places the others, also one that never printed a line
            per_node = max(self.locals_seen) + 1
            for offset in offsets.values():
                ranks = range(offset, offset + per_node)
                hosts = {res.rank_hosts[r] for r in ranks if r in res.rank_hosts}
                if len(hosts) == 1:
                    for r in ranks:
                        res.rank_hosts.setdefault(r, next(iter(hosts)))
        for p in self.pending:
            res.events.append(self._event(p, resolve, res))
        self._rank_series(resolve)
        self.locate_platform_verdicts(res.events)
        if world_size:
            res.facts["world_size"] = world_size
        res.facts.update(self.facts)
        if timer_blocks := self.timers.facts():
            res.facts["timers"] = timer_blocks
        ranks = sorted({e.rank for e in res.events if e.rank is not None} | set(res.rank_hosts))
        if ranks:
            res.facts["ranks_seen"] = ranks
        if offsets:
            res.facts["local_rank_offsets"] = {str(k): v for k, v in offsets.items()}
        return res

    def _rank_series(self, resolve: RankResolver) -> None:
        """The rank of each iteration time a launcher's prefix gave (its label or local rank)."""
        for key, at in (("iterations", 2), ("iteration_parts", 3)):
            for row in self.facts.get(key, []):
                if isinstance(row[at], LinePrefix):
                    row[at] = resolve.prefix_rank(row[at])

    def _event(self, p: Pending, resolve: RankResolver, res: ParseResult) -> Event:
        rank = p.rank if p.rank is not None else resolve.rank(p)
        detail = dict(p.detail)
        local = p.local if p.local is not None else p.prefix.local
        if local is not None:
            detail.setdefault("local_rank", local)
        if p.prefix.label is not None and rank != p.prefix.label:
            detail.setdefault("task", p.prefix.label)
        if rank is None and p.msg_rank is not None and self.ctx.rank_hint is None:
            rank = p.msg_rank
            detail["rank_from"] = "message"
        node = p.node or (res.rank_hosts.get(rank) if rank is not None else None) \
            or p.prefix.host or self.ctx.node_hint
        gpu = res.rank_gpus.get(rank) if rank is not None else None
        if gpu is None and detail.get("gpu_index") is not None:
            gpu = str(detail["gpu_index"])
        gpu = detail.pop("gpu_pci", None) or gpu  # the PCI id the kernel's Xid lines use
        return Event(kind=p.kind, role=p.role, category=p.category, ts=p.ts, clock=p.clock,
                     node=node, rank=rank, gpu=gpu, summary=p.summary,
                     locator=Locator(path=self.ctx.rel_path, line_start=p.line_start,
                                     line_end=p.line_end),
                     excerpt=p.excerpt, detail=detail)
