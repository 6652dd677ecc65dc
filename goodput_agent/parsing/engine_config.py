"""An inference engine's arguments (vLLM): a YAML/JSON file of deployment revisions
(`revisions: [{from: TIME, args: [vllm, serve, MODEL, --max-num-seqs, '128', ...]}]`, as
`goodput collect --k8s-pod` writes from the pod spec) or one command line (`vllm serve MODEL
--max-num-seqs 128`, backslash continuations allowed). Not events: the configuration the latency
analysis weighs (metrics/engine_args.py load_engine_args reads the values). Read here so that the
inventory accounts for it and the tools find it by format."""

from __future__ import annotations

import re
from pathlib import Path

from goodput_agent.parsing.base import ParseContext, ParseResult
from goodput_agent.parsing.lines import read_whole_text

_ENGINE = re.compile(r"\bvllm\b|vllm\.entrypoints", re.I)
_FLAG = re.compile(r"(?:^|[\s'\"])--[a-z][a-z0-9-]+", re.M)
_REVISIONS = re.compile(r"^\s*(?:revisions\s*:|-\s+(?:from|args)\s*:|\"revisions\"\s*:)", re.M)
_MAX_COMMAND_LINES = 12  # a command line, not a log that mentions one


class EngineConfigParser:
    format = "engine_config"

    def sniff(self, head: str, name: str) -> bool:
        if "vllm" not in head.lower() or not (_ENGINE.search(head) and _FLAG.search(head)):
            return False
        if _REVISIONS.search(head):
            return True
        lines = [ln for ln in head.replace("\\\n", " ").splitlines()
                 if ln.strip() and not ln.lstrip().startswith("#")]
        return len(lines) <= _MAX_COMMAND_LINES and any(
            _ENGINE.search(ln) and _FLAG.search(ln) for ln in lines)

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        text = read_whole_text(path)
        return ParseResult(format=self.format, lines_read=text.count("\n"),
                           facts={"engine_config": ctx.rel_path})


PARSER = EngineConfigParser()
