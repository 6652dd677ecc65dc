"""The whole act step, on the surfaces a team uses: a person proposes an exact change
(`goodput propose`), `goodput policy init` writes the policy beside the ledger, the queue
(`goodput actions --pending` and `/actions`) lists it with who may approve, alice approves
on the action's page, the gate executes it, `goodput verify` measures the after bundle, and
the executed page and `goodput ledger show` say exactly what ran: the diff, who approved and
how, the verification. Every surface judges by the one policy beside the ledger."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from html import unescape
from pathlib import Path

from click.testing import CliRunner
from starlette.testclient import TestClient

from evals.verify_generator import failure_pairs
from goodput_agent.cli import cli
from goodput_agent.investigate import investigate_bundle
from goodput_agent.ledger import Ledger
from goodput_agent.ledger.tokens import create_token
from goodput_agent.web.app import ServeConfig, create_app

BASE = "http://127.0.0.1"
SCRIPT = "#!/bin/bash\n#SBATCH --nodes=4\nsrun python train.py\n"


def _goodput(*args: str) -> str:
    r = CliRunner().invoke(cli, list(args))
    assert r.exit_code == 0, r.output
    return r.output


def _form(html: str, name: str) -> str:
    m = re.search(rf'name="{name}" value="([^"]+)"', html)
    assert m, f"no {name} in the form"
    return m.group(1)


def _block(html: str, element_id: str, end: str) -> str:
    return unescape(html.split(f'id="{element_id}"')[1].split(end)[0])


def test_propose_queue_approve_on_the_page_execute_verify(tmp_path: Path) -> None:
    pairs = {p.pair_id: p for p in failure_pairs(tmp_path / "pairs", seed=7)}
    case = pairs["failure-gpu-hardware-recovered"]
    ledger = tmp_path / "team" / "ledger.duckdb"
    ledger.parent.mkdir()
    with Ledger(ledger) as lg:
        inv = investigate_bundle(tmp_path / "pairs" / case.before, lg).investigation_id or ""
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    script = jobs / "train.sbatch"
    script.write_text(SCRIPT)
    base = ["--ledger", str(ledger)]

    exclude = "#SBATCH --nodes=4\n#SBATCH --exclude=nid00034\n"
    edit = {"path": str(script), "edits": [{"old": "#SBATCH --nodes=4\n", "new": exclude}]}
    proposed = json.loads(_goodput("propose", inv, "config_change", "--args", json.dumps(edit),
                                   "--why", "resubmit without the node whose GPU fell off the bus",
                                   "--json", *base))
    aid = proposed["action_id"]
    assert script.read_text() == SCRIPT  # proposing runs nothing
    _goodput("policy", "init", "--approver", "alice", "--tool", "config_change",
             "--path", f"{jobs}/*", *base)
    site_policy = str(ledger.parent / "policy.yaml")

    # the queue, in the terminal: across investigations, oldest first, this one last
    queue = json.loads(_goodput("actions", "--pending", "--json", *base))
    assert queue["policy"] == site_policy
    items = [w["view"] for w in queue["items"]]
    assert items[-1]["action_id"] == aid and [w["proposed_at"] for w in queue["items"]] == \
        sorted(w["proposed_at"] for w in queue["items"])
    assert items[-1]["approvers"] == ["alice"] and items[-1]["approvals_required"] == 1
    assert items[-1]["evidence_digest"].startswith("sha256:")

    with Ledger(ledger) as lg:
        alice = create_token(lg, "alice", timedelta(hours=1), "test admin")[1]
    client = TestClient(base_url=BASE, app=create_app(ServeConfig(ledger=ledger)),
                        follow_redirects=False)
    client.headers["Authorization"] = f"Bearer {alice}"
    page = client.get("/actions").text  # the same queue, judged for alice, same policy
    assert site_policy in page
    row = page.split(f'<tr data-id="{aid}">')[1].split("</tr>")[0]
    assert "you may approve" in row and items[-1]["evidence_digest"] in row
    api = client.get("/api/actions").json()
    assert [w["view"]["action_id"] for w in api["items"]] == [v["action_id"] for v in items]

    # approve on the action's page: the dry run is the diff that will be written
    html = client.get(f"/actions/{aid}").text
    assert "+#SBATCH --exclude=nid00034" in _block(html, "dry-run", "</pre>")
    res = client.post(f"/actions/{aid}/approve",
                      data={"csrf": _form(html, "csrf"), "shown": _form(html, "shown")})
    assert res.status_code == 303 and res.headers["location"].endswith("done=executed")
    assert script.read_text() == SCRIPT.replace("=4\n", "=4\n#SBATCH --exclude=nid00034\n")
    assert aid not in [w["view"]["action_id"] for w in client.get("/api/actions").json()["items"]]

    verified = json.loads(_goodput("verify", inv, "--after", str(tmp_path / "pairs" / case.after),
                                   "--json", *base))
    assert verified["verdict"] == "recovered"

    # the executed page: exactly what ran, who approved it and how, under which policy
    page = client.get(f"/actions/{aid}").text
    assert 'id="status">verified' in page and 'id="approve"' not in page
    diff = _block(page, "diff", "</pre>")
    assert "+#SBATCH --exclude=nid00034" in diff and str(script) in diff
    approved = _block(page, "approved-by", "</p>")
    assert "alice" in approved and "(token" in approved and site_policy in approved
    assert "recovered" in _block(page, "verification", "</ul>")
    # nothing judged again: a policy that allows nothing leaves the executed page as it was
    (ledger.parent / "policy.yaml").write_text("version: 1\ntools: {}\n")
    assert _block(client.get(f"/actions/{aid}").text, "diff", "</pre>") == diff

    shown = _goodput("ledger", "show", inv, *base)
    assert f"What ran: action #{aid} config_change" in shown
    assert "+#SBATCH --exclude=nid00034" in shown and "recovered" in shown
