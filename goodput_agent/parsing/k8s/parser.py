"""The registry's k8s_list parser: a List or a single Pod, Node or Event."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from goodput_agent.parsing.base import ParseContext, ParseError, ParseResult
from goodput_agent.parsing.json_positions import (
    JsonPath,
    JsonPositions,
    load_json_document,
)
from goodput_agent.parsing.k8s.document import (
    DocumentEvents,
    as_dict,
    as_str,
    keep_path,
)
from goodput_agent.parsing.k8s.nodes_events import read_event, read_node
from goodput_agent.parsing.k8s.pods import pytorch_masters, read_pod

_LIST_KINDS = {"List": None, "PodList": "Pod", "EventList": "Event", "NodeList": "Node"}
_OBJECT_KINDS = {"Pod", "Node", "Event"}
KIND_RE = re.compile(r'"kind"\s*:\s*"(List|PodList|EventList|NodeList|Pod|Node|Event)"')


def _item_kind(item: dict[str, Any], default: str | None) -> str | None:
    kind = item.get("kind")
    if isinstance(kind, str) and kind in _OBJECT_KINDS:
        return kind
    if default:
        return default
    if "involvedObject" in item or "regarding" in item:
        return "Event"
    status = as_dict(item.get("status"))
    if "containerStatuses" in status or "containers" in as_dict(item.get("spec")):
        return "Pod"
    if "nodeInfo" in status or "capacity" in status:
        return "Node"
    return None


class K8sListParser:
    format = "k8s_list"

    def sniff(self, head: str, name: str) -> bool:
        text = head.lstrip()
        if not text.startswith("{"):
            return False
        if KIND_RE.search(head) and '"apiVersion"' in head:
            return True
        return '"apiVersion"' in head and re.search(r'"items"\s*:\s*\[', head) is not None

    def parse(self, path: Path, ctx: ParseContext) -> ParseResult:
        doc, text = load_json_document(path, ctx, "Kubernetes JSON")
        if not isinstance(doc, dict):
            raise ParseError(f"{ctx.rel_path}: Kubernetes JSON is not an object")
        kind = as_str(doc.get("kind"))
        if isinstance(doc.get("items"), list):
            items, base, default = doc["items"], ("items",), _LIST_KINDS.get(kind)
        elif kind in _OBJECT_KINDS:
            items, base, default = [doc], None, kind
        else:
            raise ParseError(f"{ctx.rel_path}: JSON is neither a Kubernetes List nor a Pod, "
                             f"Node or Event (kind {kind or 'missing'})")
        builder = DocumentEvents(JsonPositions(text, keep_path), ctx)
        masters = pytorch_masters(items)
        facts: dict[str, Any] = {"pods": [], "nodes": [], "events": 0}
        skipped = 0
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                skipped += 1
                continue
            path: JsonPath = (*base, i) if base else ()
            item_kind = _item_kind(item, default)
            if item_kind == "Pod":
                facts["pods"].append(read_pod(builder, path, item, masters))
            elif item_kind == "Node":
                facts["nodes"].append(read_node(builder, path, item))
            elif item_kind == "Event":
                facts["events"] += 1
                read_event(builder, path, item)
            else:
                skipped += 1
        warnings = [f"{skipped} items of other kinds skipped"] if skipped else []
        return ParseResult(format=self.format, events=builder.events, facts=facts,
                           lines_read=text.count("\n") + 1, warnings=warnings)


K8S_LIST = K8sListParser()
PARSER = K8S_LIST
PARSERS = (K8S_LIST,)
