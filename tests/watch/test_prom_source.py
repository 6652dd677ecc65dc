"""The shipped alert rules (deploy/prometheus/goodput-alerts.yaml) in a REAL Prometheus over
backfilled DCGM and vLLM series (generated here, ending now), the poller of `/api/v1/alerts`
turning what fires into the right triggers, once, and a node trigger's bundle
(node_collect.py) investigated to the Xid it fired for.

Only change to the shipped rules: `for:` is cut to 0s, so the test does not wait the 5 real
minutes a throttling or latency alert must hold; what fires, and with which labels, is the
rules' own expressions."""

from __future__ import annotations

import json
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import requests
import yaml

from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import open_ledger
from goodput_agent.watch.alerts import fingerprint
from goodput_agent.watch.node_collect import collect_node_event
from goodput_agent.watch.prom_source import PrometheusAlertsSource
from goodput_agent.watch.trigger import SourceDown

RULES = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "goodput-alerts.yaml"
BUCKETS = (0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0)
STEP = 15


def dcgm_series(now: int) -> list[str]:
    """Xid 79 on gpu-node-07 GPU 3 (10 min ago); HwThermalSlowdown (0x40) on gpu-node-08
    GPU 1 and HwSlowdown (0x8, under the old field name) on old-node GPU 2; only SwPowerCap
    (0x4) + SyncBoost (0x10) on gpu-node-07 GPU 0, which is not alerted."""
    start = now - 40 * 60
    out = ["# TYPE DCGM_FI_DEV_XID_ERRORS gauge"]
    for host, gpu, code in (("gpu-node-07", "3", 79), ("gpu-node-09", "0", 0)):
        lbl = f'{{gpu="{gpu}",UUID="GPU-{host}-{gpu}",Hostname="{host}"}}'
        out += [f"DCGM_FI_DEV_XID_ERRORS{lbl} {code if t >= now - 600 else 0} {t}"
                for t in range(start, now, STEP)]
    for name, rows in (("DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
                        (("gpu-node-08", "1", 0x40 | 0x1), ("gpu-node-07", "0", 0x4 | 0x10))),
                       ("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", (("old-node", "2", 0x8),))):
        out.append(f"# TYPE {name} gauge")
        for host, gpu, mask in rows:
            lbl = f'{{gpu="{gpu}",UUID="GPU-{host}-{gpu}",Hostname="{host}"}}'
            out += [f"{name}{lbl} {mask if t >= now - 1200 else 0} {t}"
                    for t in range(start, now, STEP)]
    return out


def vllm_series(now: int) -> list[str]:
    """Two models; llama-70b's requests take 0.8 s until 15 min ago, then 15 s (p95 above
    the 10 s SLO); small-model's stay at 0.3 s."""
    family = "vllm:e2e_request_latency_seconds"
    out = [f"# TYPE {family} histogram"]
    for model, slow in (("llama-70b", 15.0), ("small-model", 0.3)):
        lbl = f'job="vllm",model_name="{model}"'
        counts, total, n = [0] * len(BUCKETS), 0.0, 0
        for t in range(now - 40 * 60, now, STEP):
            latency = slow if t >= now - 900 else (0.8 if model == "llama-70b" else 0.3)
            n += 10
            total += 10 * latency
            counts = [c + (10 if latency <= le else 0)
                      for c, le in zip(counts, BUCKETS, strict=True)]
            out += [f'{family}_bucket{{{lbl},le="{le}"}} {c} {t}'
                    for le, c in zip(BUCKETS, counts, strict=True)]
            out += [f'{family}_bucket{{{lbl},le="+Inf"}} {n} {t}',
                    f"{family}_count{{{lbl}}} {n} {t}", f"{family}_sum{{{lbl}}} {total} {t}"]
    return out


def rules_without_for(path: Path) -> Path:
    doc = yaml.safe_load(RULES.read_text())
    for group in doc["groups"]:
        group["interval"] = "1s"
        for rule in group["rules"]:
            rule.pop("for", None)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def firing(url: str, want: int, timeout_s: float = 60) -> list[dict]:
    deadline = time.monotonic() + timeout_s
    alerts: list[dict] = []
    while time.monotonic() < deadline:
        alerts = requests.get(f"{url}/api/v1/alerts", timeout=5).json()["data"]["alerts"]
        if len([a for a in alerts if a["state"] == "firing"]) >= want:
            return alerts
        time.sleep(0.5)
    raise AssertionError(f"{want} alerts did not fire: {json.dumps(alerts)[:600]}")


def test_promtool_accepts_the_shipped_rules():
    from tests.servers.prometheus import PrometheusUnavailable, ensure_prometheus

    try:
        _, promtool = ensure_prometheus()
    except PrometheusUnavailable as exc:
        pytest.skip(str(exc))
    proc = subprocess.run([str(promtool), "check", "rules", str(RULES)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS: 3 rules found" in proc.stdout


def test_the_rules_fire_and_the_poller_makes_the_triggers(tmp_path):
    from tests.servers.prometheus import (
        PrometheusUnavailable,
        ensure_prometheus,
        running_prometheus,
    )

    try:
        ensure_prometheus()
    except PrometheusUnavailable as exc:
        pytest.skip(str(exc))
    now = int(time.time())
    series = tmp_path / "series.om"
    series.write_text("\n".join([*dcgm_series(now), *vllm_series(now), "# EOF", ""]))
    (tmp_path / "prom").mkdir()
    rules = rules_without_for(tmp_path / "rules.yaml")
    with running_prometheus(tmp_path / "prom", [series], rule_files=[rules],
                            evaluation_interval="1s") as url:
        alerts = firing(url, want=4)
        src = PrometheusAlertsSource(url)
        first = src.poll(None)
        got = {(t.labels["alertname"], t.subject): t for t in first.triggers}
        assert set(got) == {("GpuXidError", "gpu-node-07"), ("GpuClockThrottled", "gpu-node-08"),
                            ("GpuClockThrottled", "old-node"),
                            ("VllmE2eLatencyAboveSlo", "VllmE2eLatencyAboveSlo llama-70b")}
        xid = got[("GpuXidError", "gpu-node-07")]
        assert (xid.question, xid.nodes, xid.labels["xid"]) == ("node", ["gpu-node-07"], "79")
        assert xid.collect == {"node": "gpu-node-07", "gpu": "3", "prometheus_url": url}
        latency = got[("VllmE2eLatencyAboveSlo", "VllmE2eLatencyAboveSlo llama-70b")]
        active = next(a for a in alerts if a["labels"]["alertname"] == "VllmE2eLatencyAboveSlo")
        at = datetime.fromisoformat(active["activeAt"].replace("Z", "+00:00")).astimezone(UTC)
        assert latency.question == "latency"
        assert latency.collect["prometheus_service"] == "llama-70b"
        assert latency.collect["window_end"] == at.isoformat()
        assert latency.collect["window_start"] == (at - timedelta(minutes=5)).isoformat()
        assert latency.collect["baseline_end"] == latency.collect["window_start"]
        assert latency.collect["baseline_start"] == (at - timedelta(minutes=10)).isoformat()
        assert latency.key == f"alert:{fingerprint(active['labels'])}:{at.isoformat()}"
        assert all(t.source == "prometheus" for t in first.triggers)

        again = src.poll(first.cursor)  # still firing: nothing new
        assert again.triggers == []
        assert json.loads(again.cursor)["firing"] == sorted(t.key for t in first.triggers)

        # the Xid trigger, collected (node_collect) and investigated as any bundle
        bundle = collect_node_event(xid.collect["node"], xid.occurred_at, tmp_path / "bundle",
                                    prometheus_url=url, state="Xid")
        assert (bundle / "metrics" / "dcgm" / "DCGM_FI_DEV_XID_ERRORS.json").is_file()
        with open_ledger(tmp_path / "ledger.duckdb") as ledger:
            report = investigate_bundle(bundle, ledger)
        assert report.root_cause.category == "gpu_hardware"
        assert "Xid 79" in report.root_cause.summary and "gpu-node-07" in \
            report.root_cause.summary


def test_a_prometheus_that_does_not_answer_is_source_down():
    from tests.servers.prometheus import mute_server

    with mute_server() as url, pytest.raises(SourceDown, match="unreachable"):
        PrometheusAlertsSource(url, timeout_s=0.5).poll(None)
