"""A Kubernetes workload manifest in YAML (a Deployment or StatefulSet, as applied with
`kubectl apply -f`): not evidence of what happened, but the file a config change edits. Read so
that it is accounted for (not "format not recognized"); it yields no events."""

from __future__ import annotations

import re
from pathlib import Path

from goodput_agent.parsing.base import ParseContext, ParseResult
from goodput_agent.parsing.lines import read_whole_text

_KIND = re.compile(r"^kind:\s*['\"]?(Deployment|StatefulSet)\b", re.M)
_API = re.compile(r"^apiVersion:\s*['\"]?apps/v1\b", re.M)


class K8sManifestParser:
    format = "k8s_manifest"

    def sniff(self, head: str, name: str) -> bool:
        return name.endswith((".yaml", ".yml")) and bool(_KIND.search(head)) \
            and bool(_API.search(head))

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        text = read_whole_text(path)
        return ParseResult(format=self.format, lines_read=text.count("\n"),
                           facts={"manifest": ctx.rel_path, "kinds": _KIND.findall(text)})


PARSER = K8sManifestParser()
