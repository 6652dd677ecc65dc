"""Write PyTorch profiler (Kineto) traces the way Kineto writes them: the head (schemaVersion,
deviceProperties, distributedInfo with `"rank": N`), `traceEvents` one event per line group,
then traceName / displayTimeUnit / baseTimeNanoseconds. Streams to disk (gzip with mtime 0, so
the same events give the same bytes), so 100 MB+ traces cost little memory."""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

DEVICE = {"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85045379072,
          "computeMajor": 9, "computeMinor": 0, "maxThreadsPerBlock": 1024,
          "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 32,
          "sharedMemPerBlock": 49152, "numSms": 132}


def _event(e: dict[str, Any]) -> str:
    """One event as Kineto lays it out: `ph` first, args on their own lines."""
    args = e.pop("args", None)
    head = ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in e.items())
    if args is None:
        return "  {\n    " + head + "\n  }"
    body = ",\n".join(f"      {json.dumps(k)}: {json.dumps(v)}" for k, v in args.items())
    return "  {\n    " + head + ",\n    \"args\": {\n" + body + "\n    }\n  }"


def write_trace(path: Path, events: Iterable[dict[str, Any]], *, rank: int, world_size: int,
                trace_name: str, base_ns: int, devices: int = 8) -> int:
    """Write one rank's trace; returns the bytes written (uncompressed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = open(path, "wb")  # noqa: SIM115 - closed below, wrapped for gzip
    sink: io.BufferedIOBase = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") \
        if path.suffix == ".gz" else raw
    out = io.TextIOWrapper(sink, encoding="utf-8", newline="\n")
    size = 0

    def write(text: str) -> None:
        nonlocal size
        size += len(text)
        out.write(text)

    props = ",\n".join("    " + json.dumps({**DEVICE, "id": i}) for i in range(devices))
    write('{\n  "schemaVersion": 1,\n  "deviceProperties": [\n' + props + "\n  ],\n")
    write(f'  "distributedInfo": {{"backend": "nccl", "rank": {rank}, '
              f'"world_size": {world_size}}},\n  "record_shapes": 0,\n  "traceEvents": [\n')
    first = True
    for e in events:
        write(("" if first else ",\n") + _event(dict(e)))
        first = False
    write(f'\n  ],\n  "traceName": {json.dumps(trace_name)},\n  "displayTimeUnit": "ms",\n'
              f'  "baseTimeNanoseconds": {base_ns}\n}}\n')
    out.close()
    raw.close()
    return size
