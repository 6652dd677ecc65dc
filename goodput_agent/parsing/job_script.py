"""A job's batch script (`scontrol write batch_script JOB -`, or an sbatch script copied into
the bundle): not evidence of what happened, but the file a config change edits. Read so that
its `echo` lines are never mistaken for the job's own output; it yields no events."""

from __future__ import annotations

import re
from pathlib import Path

from goodput_agent.parsing.base import ParseContext, ParseResult
from goodput_agent.parsing.lines import read_whole_text

_SBATCH = re.compile(r"^#SBATCH\s", re.M)
_NAME = re.compile(r"^batch_script-\d+(?:_\d+)?\.sh$")


class JobScriptParser:
    format = "job_script"

    def sniff(self, head: str, name: str) -> bool:
        return bool(_NAME.match(name)) or (head.startswith("#!") and bool(_SBATCH.search(head)))

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        text = read_whole_text(path)
        return ParseResult(format=self.format, lines_read=text.count("\n"),
                           facts={"job_script": ctx.rel_path, "sbatch": [
                               ln for ln in text.splitlines() if ln.startswith("#SBATCH")]})


PARSER = JobScriptParser()
