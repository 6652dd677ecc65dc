"""One ledger, many hands: a real `goodput watch --slurm` works through a backlog of failed jobs
on the test cluster (tests/servers/slurm.py) while other processes list, investigate, approve,
reject and serve pages on the same ledger; processes are killed (SIGKILL) in the middle of a
write and started again; the ledger holds whole investigations only, each incident once, and
every person's decision, and says the same as a watch that ran alone.

"In the middle of a write" is made to happen, not caught (tests/servers/stopped.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from goodput_agent.ledger import Ledger
from tests.approval.conftest import make_investigation, policy_text, valid_args
from tests.servers.chromium import running_goodput_serve
from tests.servers.debian import free_port
from tests.servers.slurm import SlurmCluster, cluster_with_a_time_limit_job
from tests.servers.stopped import held_at_conclusion, stopped_mid_write
from tests.watch.test_slurm_watch import wait_accounted

JOBS = 12


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """A cluster of this module's own (the watch counts every job that ends on it)."""
    with cluster_with_a_time_limit_job(tmp_path_factory.mktemp("team-slurm")) as c:
        yield c


@pytest.fixture(scope="module")
def backlog(cluster: SlurmCluster) -> list[str]:
    jobs = [cluster.submit(f"#!/bin/bash\necho 'step {i} loss 2.1'\necho 'RuntimeError: shard "
                           f"{i} is corrupt' >&2; exit 1\n", "-w", f"gpu-node-0{1 + i % 3}",
                           name=f"team-{i}") for i in range(JOBS)]
    for j in jobs:
        cluster.wait_done(j)
    wait_accounted(cluster, jobs)
    return jobs


def goodput(*args: str, env: dict[str, str] | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "goodput_agent.cli", *args],
                          capture_output=True, text=True, timeout=timeout,
                          env=env or dict(os.environ))


def watch_args(ledger: Path, *more: str) -> list[str]:
    return ["watch", "--slurm", "--ledger", str(ledger), "--since", "3h", "--group-min", "1000",
            "--interval", "1", *more]


def verdicts(ledger: Path, jobs: list[str]) -> dict[str, str]:
    """Each job's concluded category, from the watch's rows."""
    with Ledger(ledger, read_only=True) as lg:
        rows = lg.rows("SELECT t.subject, c.category FROM watch_triggers t JOIN watch_runs r "
                       "ON r.trigger_key = t.key JOIN conclusions c ON c.investigation_id = "
                       "r.investigation_id WHERE t.question = 'failure'")
    out: dict[str, str] = {}
    for r in rows:
        if r["subject"] in jobs:
            assert r["subject"] not in out, f"job {r['subject']} concluded twice"
            out[r["subject"]] = r["category"]
    return out


def whole_investigations_only(ledger: Path) -> None:
    """Nothing half-written: an investigation without a conclusion has no rows at all."""
    with Ledger(ledger, read_only=True) as lg:
        half = lg.rows("SELECT i.id FROM investigations i LEFT JOIN conclusions c ON "
                       "c.investigation_id = i.id WHERE c.investigation_id IS NULL AND ("
                       "EXISTS (SELECT 1 FROM evidence e WHERE e.investigation_id = i.id) OR "
                       "EXISTS (SELECT 1 FROM claims x WHERE x.investigation_id = i.id))")
        dupes = lg.rows("SELECT key, count(*) AS n FROM watch_triggers GROUP BY key "
                        "HAVING count(*) > 1")
    assert half == [] and dupes == []


def _page(url: str) -> int:
    with urllib.request.urlopen(url, timeout=60) as resp:
        return resp.status


@pytest.fixture(scope="module")
def expected(cluster: SlurmCluster, backlog: list[str],
             tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """What a watch alone on its own ledger concludes of each job of the backlog."""
    reference = tmp_path_factory.mktemp("alone") / "alone.duckdb"
    alone = goodput(*watch_args(reference, "--once"), env=cluster.env, timeout=600)
    assert alone.returncode == 0, alone.stderr
    found = verdicts(reference, backlog)
    assert set(found) == set(backlog), (alone.stdout[-2000:], alone.stderr[-2000:])
    return found


def test_a_team_on_one_ledger_while_the_watch_works(cluster: SlurmCluster, backlog: list[str],
                                                    expected: dict[str, str], tmp_path: Path,
                                                    demo_bundle: Path) -> None:
    ledger = tmp_path / "team.duckdb"
    env = cluster.env
    policy = tmp_path / "policy.yaml"
    policy.write_text(policy_text())
    args = valid_args(tmp_path)
    second = tmp_path / "second.sbatch"
    second.write_text("#!/bin/bash\n#SBATCH --mem=64G\nsrun python train.py\n")
    by_page = {"path": str(second), "edits": [{"old": "--mem=64G", "new": "--mem=160G"}]}
    with Ledger(ledger) as lg:
        _, ids = make_investigation(lg, "gpu_oom", {"config_change": args["config_change"],
                                                    "slurm_hold_job": {"job": backlog[0]}})
        _, more = make_investigation(lg, "gpu_oom", {"config_change": by_page}, target="b2")
    ids["by_page"] = more["config_change"]
    secret = tmp_path / "proxy.secret"
    secret.write_text("proxy-shared-secret-" + "p" * 12)
    # the watch, killed inside one of its writes, then running for good
    stopped_mid_write(tmp_path / "watch.marker", 6, *watch_args(ledger, "--concurrency", "2"),
                      env=env)
    whole_investigations_only(ledger)
    watch = subprocess.Popen([sys.executable, "-m", "goodput_agent.cli",
                              *watch_args(ledger, "--concurrency", "2")], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        with running_goodput_serve(ledger, tmp_path, ["--policy", str(policy),
                                                      "--proxy-secret-file", str(secret)]) as url:
            others = people_meanwhile(ledger, policy, ids, demo_bundle, tmp_path, env, url)
            approve_in_a_browser_as_the_proxys_user(url, ids["by_page"], secret.read_text())
            assert watch.poll() is None, "the watch ran all along"
    finally:
        watch.send_signal(signal.SIGTERM)
        _, err = watch.communicate(timeout=120)
    assert watch.returncode == 0, err[-2000:]
    finish = goodput(*watch_args(ledger, "--once"), env=env, timeout=600)
    assert finish.returncode == 0, finish.stderr
    whole_investigations_only(ledger)
    assert verdicts(ledger, backlog) == expected  # what a watch alone would have said
    check_decisions(ledger, ids, others)


def test_the_watch_serves_its_pages_and_executes_an_approval_posted_there_mid_backlog(
        cluster: SlurmCluster, backlog: list[str], expected: dict[str, str],
        tmp_path: Path) -> None:
    """`goodput watch --serve` (the deployment's one process), held just before its fourth
    conclusion with the rest of its backlog queued: its own pages answer, a person behind the
    sign-on proxy approves there and the gate executes, another process reads the ledger and
    sees nothing of the investigation in progress; then the watch finishes its backlog."""
    ledger, policy, script = (tmp_path / n for n in ("served.duckdb", "policy.yaml", "a.sbatch"))
    policy.write_text(policy_text())
    script.write_text("#!/bin/bash\n#SBATCH --mem=64G\nsrun python train.py\n")
    with Ledger(ledger) as lg:
        _, ids = make_investigation(lg, "gpu_oom", {"config_change": {
            "path": str(script), "edits": [{"old": "--mem=64G", "new": "--mem=160G"}]}})
    secret = tmp_path / "proxy.secret"
    secret.write_text("proxy-shared-secret-" + "w" * 12)
    url = f"http://127.0.0.1:{free_port()}"
    args = watch_args(ledger, "--once", "--concurrency", "1", "--serve", url[7:], "--policy",
                      str(policy), "--proxy-secret-file", str(secret))
    with held_at_conclusion(tmp_path, 4, *args, env=cluster.env,
                            ready=f"{url}/static/style.css") as (watch, in_progress):
        status = goodput("watch", "status", "--json", "--ledger", str(ledger))
        queue = json.loads(status.stdout)["queue"]
        assert queue["running"] == 1 and queue["queued"] >= 1 and queue["done"] >= 1, queue
        with Ledger(ledger, read_only=True) as lg:
            seen = lg.investigation(in_progress)
            lg.release()
        assert seen is not None and seen.conclusion is None and seen.evidence == []
        shown = approve_on_the_page(url, ids["config_change"], secret.read_text())
        assert "+#SBATCH --mem=160G" in shown and "--mem=160G" in script.read_text()
    watch.wait(timeout=600)
    assert watch.returncode == 0, (tmp_path / "held.stderr").read_text()[-2000:]
    assert verdicts(ledger, backlog) == expected
    whole_investigations_only(ledger)
    with Ledger(ledger, read_only=True) as lg:
        kinds = [(r["kind"], r["actor"]) for r in lg.rows(
            "SELECT kind, actor FROM action_events WHERE action_id = ? ORDER BY id",
            [ids["config_change"]])]
        finished = lg.investigation(in_progress)
    assert kinds == [("approval", "dave"), ("execution_started", "dave"), ("execution", "dave")]
    assert finished is not None and finished.conclusion is not None and finished.evidence


def approve_on_the_page(url: str, action: int, secret: str) -> str:
    """What the sign-on proxy sends for dave (group sre): the action's page, then its approve
    form posted; returns the page the post leads to (the result of the execution)."""
    from http.cookiejar import CookieJar

    from tests.web.test_app import _form

    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
    opener.addheaders = [("X-Forwarded-User", "dave"), ("X-Forwarded-Groups", "sre"),
                         ("X-Goodput-Proxy-Secret", secret)]
    with opener.open(f"{url}/actions/{action}", timeout=60) as resp:
        html = resp.read().decode()
    form = urllib.parse.urlencode({"csrf": _form(html, "csrf"), "shown": _form(html, "shown")})
    with opener.open(f"{url}/actions/{action}/approve", form.encode(), timeout=120) as resp:
        assert resp.url.endswith("?done=executed"), resp.url
        return resp.read().decode()


def people_meanwhile(ledger: Path, policy: Path, ids: dict[str, int], bundle: Path,
                     tmp_path: Path, env: dict[str, str], url: str) -> dict[str, object]:
    """Everything a team does while the watch works, each a separate process."""
    base = ["--ledger", str(ledger)]
    listed = goodput("ledger", "list", "--json", *base)
    assert listed.returncode == 0, listed.stderr
    assert goodput("actions", "--json", *base).returncode == 0
    rejected = goodput("reject", str(ids["slurm_hold_job"]), "--why", "job already gone", *base)
    assert rejected.returncode == 0, rejected.stderr
    forged = goodput("approve", str(ids["config_change"]), "--as", "mallory", "--yes",
                     "--policy", str(policy), *base)
    assert forged.returncode == 2 and "not mallory" in forged.stderr
    approved = goodput("approve", str(ids["config_change"]), "--yes", "--json", "--policy",
                       str(policy), *base)
    assert approved.returncode == 0, approved.stderr
    # an investigation killed inside its final insert: it stays interrupted, with no rows
    stopped_mid_write(tmp_path / "inv.marker", 2, "investigate", str(bundle), *base, env=env)
    done = goodput("investigate", str(bundle), "--json", *base)
    assert done.returncode in (0, 3), done.stderr
    pages = [_page(f"{url}/"), _page(f"{url}/actions/{ids['config_change']}"),
             _page(f"{url}/watch")]
    assert pages == [200, 200, 200]
    return {"investigated": json.loads(done.stdout)["investigation_id"]}


def approve_in_a_browser_as_the_proxys_user(url: str, action: int, secret: str) -> None:
    """What a person behind the team's sign-on proxy does: the proxy adds who they are
    (dave, in the policy's group sre) and its secret to every request of the browser."""
    from tests.servers.chromium import ChromiumUnavailable, launched_browser

    headers = {"X-Forwarded-User": "dave", "X-Forwarded-Groups": "sre",
               "X-Goodput-Proxy-Secret": secret}
    try:
        with launched_browser() as browser:
            ctx = browser.new_context(extra_http_headers=headers)  # type: ignore[attr-defined]
            page = ctx.new_page()
            page.goto(f"{url}/actions/{action}")
            assert "You act as dave (proxy" in page.locator("#as").inner_text()
            page.on("dialog", lambda d: d.accept())
            page.locator("#approve").click()
            page.wait_for_url("**?done=executed")
            assert "+#SBATCH --mem=160G" in page.locator(".execution").inner_text()
            ctx.close()
    except ChromiumUnavailable as exc:
        pytest.skip(f"the browser step: {exc}")


def check_decisions(ledger: Path, ids: dict[str, int], others: dict[str, object]) -> None:
    with Ledger(ledger, read_only=True) as lg:
        kinds = {aid: [(r["kind"], r["actor"]) for r in lg.rows(
            "SELECT kind, actor FROM action_events WHERE action_id = ? ORDER BY id", [aid])]
            for aid in ids.values()}
        listed = {r["id"]: r["status"] for r in lg.investigations(limit=10_000)}
    me = os.environ.get("USER") or __import__("getpass").getuser()
    assert kinds[ids["slurm_hold_job"]] == [("rejection", me)]
    assert kinds[ids["config_change"]] == [("refusal", me), ("approval", me),
                                           ("execution_started", me), ("execution", me)]
    assert kinds[ids["by_page"]] == [("approval", "dave"), ("execution_started", "dave"),
                                     ("execution", "dave")]
    assert listed[str(others["investigated"])] == "concluded"
    assert "interrupted" in listed.values()  # the killed investigation, rows and all gone
