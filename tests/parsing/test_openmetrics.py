"""Metrics files: identified, and DCGM's Xid gauge read as Xid events."""

import json
from pathlib import Path

from goodput_agent.parsing.base import ParseContext
from goodput_agent.parsing.openmetrics import PARSERS

OPENMETRICS, PROM_API = PARSERS[1], PARSERS[0]
LABELS = ('gpu="3",UUID="GPU-1",pci_bus_id="00000000:9B:00.0",device="nvidia3",'
          'Hostname="gpu-07"')


def test_dcgm_xid_gauge_becomes_one_event_per_change(tmp_path: Path) -> None:
    p = tmp_path / "dcgm.om"
    p.write_text("# TYPE DCGM_FI_DEV_XID_ERRORS gauge\n"
                 f"DCGM_FI_DEV_XID_ERRORS{{{LABELS}}} 0 1714557600.000\n"
                 f"DCGM_FI_DEV_XID_ERRORS{{{LABELS}}} 79 1714557660.000\n"
                 f"DCGM_FI_DEV_XID_ERRORS{{{LABELS}}} 79 1714557720.000\n"
                 "# EOF\n")
    assert OPENMETRICS.sniff(p.read_text(), p.name)
    r = OPENMETRICS.parse(p, ParseContext(rel_path="dcgm.om"))
    assert [(e.detail["xid"], e.node, e.gpu, e.locator.line_start, e.category)
            for e in r.events] == [(79, "gpu-07", "0000:9b:00", 3, "gpu_hardware")]
    assert r.events[0].ts is not None and r.events[0].ts.timestamp() == 1714557660


def test_prometheus_query_range_json(tmp_path: Path) -> None:
    doc = {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": "DCGM_FI_DEV_XID_ERRORS", "Hostname": "gpu-02",
                    "pci_bus_id": "00000000:18:00.0"},
         "values": [[1714557600, "0"], [1714557615, "48"]]}]}}
    p = tmp_path / "q.json"
    p.write_text(json.dumps(doc))
    assert PROM_API.sniff(p.read_text(), p.name)
    r = PROM_API.parse(p, ParseContext(rel_path="q.json"))
    assert [(e.detail["xid"], e.node, e.gpu) for e in r.events] == [(48, "gpu-02", "0000:18:00")]
