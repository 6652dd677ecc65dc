"""`goodput check --k8s-job` against the project's fixture Kubernetes API server (no
kube-apiserver is installable here; tests/servers/kube_api.py serves the real API shapes to
the real kubernetes client): the pods by the Job's labels, progress from their logs with the
kubelet's timestamps, a stall judged from them. The stacks go through `kubectl exec`, which
the fixture server does not serve: here a kubectl that fails says so in the evidence (the
culprit stays unknown), and a stand-in kubectl (a fixture: it prints what the dump script
prints in two pods) checks that ranks land on their pods' nodes."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from goodput_agent.detect.k8s_job import KubectlSettings, kubectl_argv, pod_stacks
from goodput_agent.detect.slurm_job import DumpSettings
from tests.servers.kube_api import FixtureCluster, running_kube_api
from tests.watch.k8s_objects import job, pod

LABELS = {"batch.kubernetes.io/job-name": "llama", "job-name": "llama"}


def cluster(now: float) -> FixtureCluster:
    c = FixtureCluster()
    c.add(job("batch/v1", "Job", "llama"))
    for i in range(4):
        c.add(pod(f"llama-{i}", node=f"gpu-{i // 2 + 1}", labels=LABELS))
    lines = []
    for step in range(1, 41):
        t = datetime.fromtimestamp(now - 200 + step, UTC).isoformat().replace("+00:00", "Z")
        lines.append(f"{t} iteration {step} | loss {1 / step:.4f}")
    c.add_log("train", "llama-0", "main", "\n".join(lines) + "\n")
    c.add_log("train", "llama-1", "main", "")
    return c


def test_a_stalled_k8s_job_without_exec_is_stalled_culprit_unknown(tmp_path: Path) -> None:
    with running_kube_api(cluster(time.time())) as srv:
        kubeconfig = srv.kubeconfig(tmp_path / "kubeconfig", namespace="train")
        out = subprocess.run(
            [sys.executable, "-m", "goodput_agent.cli", "check", "--k8s-job", "train/llama",
             "--kubeconfig", str(kubeconfig), "--kubectl", "false", "--ledger",
             str(tmp_path / "l.duckdb"), "--json"],
            capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 6, out.stderr
    doc = json.loads(out.stdout)
    f = doc["finding"]
    assert f["kind"] == "hang" and f["rank"] is None and f["stall"]["last_progress"]
    assert "culprit unknown" in f["summary"] and f["stall"]["silent_s"] > 150
    unknowns = " ".join(doc["report"]["unknowns"])
    assert "stacks of llama-0: kubectl exec rc 1" in unknowns
    assert doc["report"]["root_cause"]["category"] == "hang"
    assert any("logs/llama-0.log:40" in e["locator"]
               for e in doc["report"]["root_cause"]["evidence"])


def test_ranks_land_on_their_pods_nodes(tmp_path: Path) -> None:
    dump = ('[{"pid": 7, "thread_name": "MainThread", "active": false, "frames": '
            '[{"name": "all_reduce", "short_filename": "torch/distributed/distributed_c10d.py",'
            ' "line": 1}]}]')
    stand_in = tmp_path / "kubectl"  # a fixture: prints the dump script's output of its pod
    stand_in.write_text(
        "#!/bin/sh\nwhile [ \"$1\" != exec ]; do shift; done\npod=\"$4\"\n"
        "rank=$(echo \"$pod\" | sed 's/.*-//')\n"
        f"printf '@@node %s\\n@@proc pid=7 ppid=1 RANK=%s\\n@@dump pid=7\\n%s\\n@@rc 0\\n"
        f"@@done\\n' \"$pod\" \"$rank\" '{dump}'\n")
    stand_in.chmod(0o755)
    pods = [{"name": f"llama-{i}", "node": f"gpu-{i // 2 + 1}", "container": "main"}
            for i in range(4)]
    got = pod_stacks("train", pods, DumpSettings(), KubectlSettings(kubectl=str(stand_in)))
    assert got.rank_nodes == {0: "gpu-1", 1: "gpu-1", 2: "gpu-2", 3: "gpu-2"}
    assert all(d[0].error is None for d in got.dumps.values()) and not got.node_errors
    argv = kubectl_argv("train", "llama-0", "main", DumpSettings(samples=3),
                        KubectlSettings(kubeconfig="/k", context="c"))
    assert argv[:8] == ["kubectl", "--kubeconfig=/k", "--context=c", "exec", "-n", "train",
                        "llama-0", "-c"] and argv[9:12] == ["--", "sh", "-c"]


def test_watch_k8s_live_investigates_the_stalled_job_once(tmp_path: Path) -> None:
    """`goodput watch --k8s --live --once` over the fixture API server: the running Job's
    pods found by their job label, the stall judged from the logs, one live incident
    investigated (culprit unknown: the fixture serves no exec), and none for a job that
    progresses."""
    from goodput_agent.ledger.reader import read_ledger

    now = time.time()
    c = cluster(now)
    lively = {"batch.kubernetes.io/job-name": "fresh", "job-name": "fresh"}
    c.add(job("batch/v1", "Job", "fresh"))
    c.add(pod("fresh-0", node="gpu-3", labels=lively))
    c.add_log("train", "fresh-0", "main", "\n".join(
        f"{datetime.fromtimestamp(now - 40 + s, UTC).isoformat()} iteration {s}"
        for s in range(1, 40)) + "\n")
    ledger = tmp_path / "l.duckdb"
    with running_kube_api(c) as srv:
        kubeconfig = srv.kubeconfig(tmp_path / "kubeconfig", namespace="train")
        argv = [sys.executable, "-m", "goodput_agent.cli", "watch", "--k8s", "--live",
                "--once", "--namespace", "train", "--kubeconfig", str(kubeconfig),
                "--kubectl", "false", "--ledger", str(ledger)]
        for _ in range(2):
            out = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                                 check=False)
            assert out.returncode == 0, out.stderr
    with read_ledger(ledger) as (lg, _):
        rows = lg.rows("SELECT t.key, t.status, c.category FROM watch_triggers t JOIN "
                       "conclusions c ON c.investigation_id = t.investigation_id "
                       "WHERE t.question = 'live'")
    assert len(rows) == 1 and rows[0]["status"] == "done" and rows[0]["category"] == "hang"
    assert rows[0]["key"].startswith("live:k8s:train/job/llama:stall:")
