"""Measure (not part of the suite: ~70 s): every generated latency case served as one vLLM pod
(tests/collect/vllm_pod_fixture.py: the fixture API server and a real Prometheus backfilled
with the case's series under the pod's target labels), investigated with
`goodput investigate --k8s-pod ... --prometheus URL`, against the case's expected category and
the verdict on the shipped case bundle. The pod runs with the case's first engine arguments
(a redeploy would be another pod).

    .venv/bin/python -m tests.collect.measure_vllm_pods
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import yaml
from click.testing import CliRunner

from goodput_agent.cli import cli
from goodput_agent.evals.latency_generator import plan_latency_suite, render_vllm_metrics
from tests.collect import vllm_pod_fixture as F
from tests.conftest import REPO
from tests.servers.kube_api import running_kube_api
from tests.servers.prometheus import running_prometheus

CASES = REPO / "evals" / "latency_cases"


def _category(args: list[str]) -> str:
    result = CliRunner().invoke(cli, [*args, "--json"])
    return json.loads(result.stdout)["root_cause"]["category"]


def main() -> None:
    rows = []
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ledger = str(root / "ledger.duckdb")
        for spec in plan_latency_suite(11):
            work = root / spec.case_id
            work.mkdir()
            model = spec.models[0]
            argv = model.before.engine_args(model.name)
            pod = F.pod("vllm-0", "10.2.0.5", [{"name": "vllm", "image": "vllm/vllm-openai",
                                                "command": argv[:2], "args": argv[2:]}])
            series = work / "series.om"
            series.write_text(F.labelled(render_vllm_metrics(spec), F.target_labels(pod)))
            inc = yaml.safe_load((CASES / spec.case_id / "incident.yaml").read_text())
            w = inc["window"]
            windows = ["--since", f"{w['start']}/{w['end']}"]
            if inc.get("baseline"):
                b, i = inc["baseline"], inc["incident"]
                windows = ["--baseline", f"{b['start']}/{b['end']}",
                           "--incident", f"{i['start']}/{i['end']}"]
            with running_prometheus(work, [series]) as url, \
                    running_kube_api(F.cluster(pod)) as srv:
                live = _category(["investigate", "--k8s-pod", "serving/vllm-0", "--prometheus",
                                  url, *windows, "--service", inc["service"], "--kubeconfig",
                                  str(srv.kubeconfig(work / "kc")), "--ledger", ledger])
            shipped = _category(["investigate", str(CASES / spec.case_id), "--ledger", ledger])
            rows.append((spec.case_id, spec.category, shipped, live))
            print(*rows[-1], flush=True)
    n = len(rows)
    print(f"{time.monotonic() - t0:.0f} s; pod verdict = expected {sum(r[1] == r[3] for r in rows)}"
          f"/{n}; shipped bundle = expected {sum(r[1] == r[2] for r in rows)}/{n}; "
          f"pod = shipped bundle {sum(r[2] == r[3] for r in rows)}/{n}")


if __name__ == "__main__":
    main()
