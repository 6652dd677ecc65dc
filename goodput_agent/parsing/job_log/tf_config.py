"""TensorFlow's cluster spec, TF_CONFIG, as a job script or launcher echoes it: every task's
host, and the task this process is (tf.distribute's multi-worker strategies read it), so a
worker's log names its host though no line of TensorFlow's own does."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

MARKER = b"TF_CONFIG"
_TF_CONFIG = re.compile(r"TF_CONFIG['\"]?\s*[=:]\s*['\"]?(?P<spec>\{.*\})")


@dataclass(frozen=True, slots=True)
class TfTask:
    """What one TF_CONFIG line says: the cluster's hosts and this task's own."""

    hosts: list[str]
    own: str | None


def tf_task(content: str) -> TfTask | None:
    m = _TF_CONFIG.search(content) if "TF_CONFIG" in content else None
    spec = _load(m["spec"]) if m else None
    cluster = spec.get("cluster") if isinstance(spec, dict) else None
    if not isinstance(cluster, dict):
        return None
    addrs = {kind: [str(a) for a in v] for kind, v in cluster.items() if isinstance(v, list)}
    hosts = list(dict.fromkeys(_host(a) for v in addrs.values() for a in v))
    task = spec.get("task") if isinstance(spec, dict) else None
    own = None
    if isinstance(task, dict) and str(task.get("index", "")).isdigit():
        mine = addrs.get(str(task.get("type")), [])
        index = int(task["index"])
        own = _host(mine[index]) if index < len(mine) else None
    return TfTask(hosts, own)


def _load(text: str) -> object:
    """JSON as exported, or a Python dict's repr as a script printed it."""
    for candidate in (text, text.replace("'", '"')):
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    return None


def _host(addr: str) -> str:
    """host:port, [IPv6]:port, or a bare host."""
    if addr.startswith("[") and "]" in addr:
        return addr[1:addr.index("]")]
    return addr.rsplit(":", 1)[0] if addr.count(":") == 1 else addr
