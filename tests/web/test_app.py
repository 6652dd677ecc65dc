"""The review app in-process (Starlette's test client, no browser): pages read the ledger and
never write it; the two POSTs refuse without CSRF, on a stale preview, and for a person the
policy does not name; the access token guards every request when configured."""

from __future__ import annotations

import hashlib
import re
import time
from datetime import timedelta
from html import unescape
from pathlib import Path

import pytest
import yaml
from starlette.testclient import TestClient

from goodput_agent.ledger import Ledger
from goodput_agent.web.app import ServeConfig, create_app
from goodput_agent.web.security import Signer
from tests.web.conftest import BASE, Reviewed, token_for


def _client(r: Reviewed, token: str | None = None) -> tuple[TestClient, ServeConfig]:
    config = ServeConfig(ledger=r.ledger, policy_path=r.policy, token=token)
    return TestClient(base_url=BASE, app=create_app(config), follow_redirects=False), config


def _events(r: Reviewed) -> list[tuple]:
    with Ledger(r.ledger, read_only=True) as lg:
        return [tuple(row.values()) for row in lg.rows(
            "SELECT kind, actor, action_id FROM action_events ORDER BY id")]


def _form(html: str, name: str) -> str:
    m = re.search(rf'name="{name}" value="([^"]+)"', html)
    assert m, f"no {name} in the form"
    return m.group(1)


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_pages_show_the_investigation_and_never_write_the_ledger(reviewed: Reviewed) -> None:
    client, _ = _client(reviewed)
    before = _sha(reviewed.ledger)
    listing = client.get("/")
    assert listing.status_code == 200 and reviewed.inv_id in listing.text
    assert "gpu_hardware" in listing.text and "3 proposed" in listing.text
    page = client.get(f"/inv/{reviewed.inv_id}")
    assert page.status_code == 200
    assert 'id="verdict"' in page.text and "Xid 79" in page.text
    assert 'id="failure-timeline"' in page.text and 'id="tool-calls"' in page.text
    advice = page.text.split('id="advice"')[1].split("</ul>")[0]  # text only, no action
    assert "<b>gpu_service</b>" in advice and "/actions/" not in advice
    ev_ids = re.findall(rf'href="/inv/{reviewed.inv_id}/evidence/(\d+)"', page.text)
    assert ev_ids
    ev = client.get(f"/inv/{reviewed.inv_id}/evidence/{ev_ids[0]}")
    assert ev.status_code == 200 and "origin-bundle" in ev.text
    svg = client.get(f"/inv/{reviewed.inv_id}/failure-timeline.svg")
    assert svg.status_code == 200 and svg.headers["content-type"].startswith("image/svg+xml")
    assert "sandbox" in svg.headers["content-security-policy"]
    action = client.get(f"/actions/{reviewed.drain_action}")
    assert action.status_code == 200 and "scontrol update NodeName=gpu-node-03" in action.text
    assert 'id="decision">allowed' in action.text.replace("\n", "")
    assert client.get("/inv/no-such-id").status_code == 404
    assert _sha(reviewed.ledger) == before  # nothing written by reading
    assert _events(reviewed) == []


def test_evidence_falls_back_to_the_stored_excerpt_when_the_bundle_is_gone(
        reviewed: Reviewed) -> None:
    import shutil

    client, _ = _client(reviewed)
    page = client.get(f"/inv/{reviewed.inv_id}").text
    ev_id = re.findall(rf'/inv/{reviewed.inv_id}/evidence/(\d+)', page)[0]
    shutil.rmtree(reviewed.bundle)
    ev = client.get(f"/inv/{reviewed.inv_id}/evidence/{ev_id}")
    assert ev.status_code == 200
    assert "origin-ledger" in ev.text and "no longer readable" in ev.text
    assert "Xid" in ev.text  # the stored excerpt


def test_approval_without_csrf_is_refused_and_writes_nothing(reviewed: Reviewed) -> None:
    client, _ = _client(reviewed)
    client.headers["Authorization"] = f"Bearer {token_for(reviewed, 'alice')}"
    html = client.get(f"/actions/{reviewed.drain_action}").text
    shown = _form(html, "shown")
    url = f"/actions/{reviewed.drain_action}/approve"
    assert client.post(url, data={"shown": shown}).status_code == 403
    assert client.post(url, data={"shown": shown, "csrf": "0" * 64}).status_code == 403
    # another session's token does not pass in this session
    other, _ = _client(reviewed)
    other.cookies.set("goodput_session", "someone-else")
    other.headers["Authorization"] = client.headers["Authorization"]
    assert other.post(url, data={"shown": shown, "csrf": _form(html, "csrf")}).status_code == 403
    assert _events(reviewed) == []


def test_a_stale_preview_cannot_be_approved(reviewed: Reviewed) -> None:
    client, config = _client(reviewed)
    client.headers["Authorization"] = f"Bearer {token_for(reviewed, 'alice')}"
    html = client.get(f"/actions/{reviewed.drain_action}").text
    csrf, shown = _form(html, "csrf"), _form(html, "shown")
    _, a_hash, ev_digest, _ = config.signer.read_shown(shown)
    stale = config.signer.shown(reviewed.drain_action, a_hash, ev_digest,
                                at=time.time() - 31 * 60)
    url = f"/actions/{reviewed.drain_action}/approve"
    res = client.post(url, data={"csrf": csrf, "shown": stale})
    assert res.status_code == 409 and "longer than an approval lives" in res.text
    forged = Signer.random().shown(reviewed.drain_action, a_hash, ev_digest)
    res = client.post(url, data={"csrf": csrf, "shown": forged})
    assert res.status_code == 400
    assert _events(reviewed) == []


def test_an_approval_on_the_page_is_the_one_the_gate_executes(reviewed: Reviewed) -> None:
    client, _ = _client(reviewed)
    aid = reviewed.config_action
    url = f"/actions/{aid}/approve"
    client.headers["Authorization"] = f"Bearer {token_for(reviewed, 'carol')}"
    html = client.get(f"/actions/{aid}").text
    assert 'id="as">You act as <b>carol</b> (token' in html
    # the policy names alice and bob: carol gets no Approve button, and the lines that
    # would let her; the page still lets her reject
    assert 'id="approve"' not in html and 'id="reject"' in html
    assert "may not approve config_change" in html.split('id="why-not-approve"')[1]
    fix = yaml.safe_load(unescape(html.split('id="policy-fix">')[1].split("</pre>")[0]))
    assert "carol" in fix["tools"]["config_change"]["approvers"]
    client.headers["Authorization"] = f"Bearer {token_for(reviewed, 'alice')}"
    html = client.get(f"/actions/{aid}").text
    assert 'id="approve">Approve and run' in html and 'id="policy-fix"' not in html
    form = {"csrf": _form(html, "csrf"), "shown": _form(html, "shown")}
    # a form carol did not get (alice's) posted as carol: the gate refuses, with a row
    client.headers["Authorization"] = f"Bearer {token_for(reviewed, 'carol')}"
    res = client.post(url, data=form)
    assert res.status_code == 409 and "carol&#39; may not approve config_change" in res.text
    client.headers["Authorization"] = f"Bearer {token_for(reviewed, 'alice')}"
    res = client.post(url, data=form)
    assert res.status_code == 303 and res.headers["location"] == f"/actions/{aid}?done=executed"
    assert "--mem=128G" in reviewed.script.read_text()
    assert _events(reviewed) == [("refusal", "carol", aid), ("approval", "alice", aid),
                                 ("execution_started", "alice", aid), ("execution", "alice", aid)]
    page = client.get(f"/actions/{aid}?done=executed").text
    assert 'id="status">executed' in page and "What ran (ok)" in page
    diff = page.split('id="diff">')[1].split("</pre>")[0]
    assert "-#SBATCH --mem=64G" in diff and "+#SBATCH --mem=128G" in diff  # what ran
    assert "<b>alice</b> (token" in page.split('id="approved-by">')[1].split("</p>")[0]
    assert 'id="approve"' not in page and 'id="decision"' not in page  # not judged again


def test_approving_needs_a_person_the_server_authenticated(reviewed: Reviewed) -> None:
    """A typed name, a forged proxy header, a revoked or expired token and the shared
    token: each refused, each a ledger row, nothing executed."""
    shared = "shared-access-" + "t" * 20
    client, config = _client(reviewed, token=shared)
    aid = reviewed.config_action
    client.cookies.set("goodput_token", shared)  # what ?token= once leaves in the browser
    client.headers["Authorization"] = f"Bearer {shared}"
    html = client.get(f"/actions/{aid}").text
    assert 'id="sign-in-first"' in html and 'id="approve"' not in html
    # a form as a signed-in person's page had it (its preview binding still good)
    p_hash = re.search(r"hash <code>([^<]+)</code>", html).group(1)  # type: ignore[union-attr]
    digest = re.search(r"evidence digest <code>([^<]+)</code>", html).group(1)  # type: ignore[union-attr]
    form = {"csrf": _form(client.get("/login").text, "csrf"),
            "shown": config.signer.shown(aid, p_hash, digest)}
    url = f"/actions/{aid}/approve"
    revoked = token_for(reviewed, "alice")
    with Ledger(reviewed.ledger) as lg:
        from goodput_agent.ledger.tokens import revoke_token

        revoke_token(lg, revoked.split("_")[1])
    expired = token_for(reviewed, "alice", ttl=timedelta(seconds=-1))
    attempts = [({}, {"approver": "alice"}, "not signed in"),
                ({"X-Forwarded-User": "alice"}, {}, "not a trusted proxy"),
                ({"Authorization": f"Bearer {revoked}"}, {}, "is revoked"),
                ({"Authorization": f"Bearer {expired}"}, {}, "is expired")]
    for headers, extra, why in attempts:
        client.headers.update({"Authorization": f"Bearer {shared}", **headers})
        res = client.post(url, data={**form, **extra})
        assert res.status_code == 401 and why in res.text, (headers, res.text[:300])
        client.headers.pop("X-Forwarded-User", None)
    rows = _events(reviewed)
    assert [r[0] for r in rows] == ["refusal"] * 4 and all(r[1] is None for r in rows)
    assert "--mem=64G" in reviewed.script.read_text()


def test_a_trusted_proxy_vouches_for_the_person_and_their_groups(reviewed: Reviewed) -> None:
    secret = "proxy-shared-secret-" + "s" * 10
    config = ServeConfig(ledger=reviewed.ledger, policy_path=reviewed.policy,
                         proxy_secret=secret)
    client = TestClient(base_url=BASE, app=create_app(config), follow_redirects=False)
    client.headers.update({"X-Forwarded-User": "dave", "X-Forwarded-Groups": "sre,ml",
                           "X-Goodput-Proxy-Secret": secret})
    aid = reviewed.config_action
    html = client.get(f"/actions/{aid}").text
    assert 'You act as <b>dave</b> (proxy' in html
    res = client.post(f"/actions/{aid}/approve", data={"csrf": _form(html, "csrf"),
                                                       "shown": _form(html, "shown")})
    assert res.status_code == 303 and "--mem=128G" in reviewed.script.read_text()
    with Ledger(reviewed.ledger, read_only=True) as lg:
        detail = lg.rows("SELECT detail_json FROM action_events WHERE kind = 'approval'")[0]
    assert '"via":"proxy"' in detail["detail_json"] and '"sre"' in detail["detail_json"]


def test_the_two_person_rule_needs_another_person(reviewed: Reviewed) -> None:
    reviewed.policy.write_text(reviewed.policy.read_text().replace(
        "preconditions: {claim_names_target: false}",
        "preconditions: {claim_names_target: false}\n    approvals_required: 2"))
    client, _ = _client(reviewed)
    aid = reviewed.config_action
    url = f"/actions/{aid}/approve"
    buttons = {0: 'id="approve">Approve</button>', 2: 'id="approve">Approve and run'}
    form: dict[str, str] = {}
    for step, (person, status) in enumerate((("alice", 303), ("alice", 409), ("bob", 303))):
        client.headers["Authorization"] = f"Bearer {token_for(reviewed, person)}"
        html = client.get(f"/actions/{aid}").text
        if step == 1:  # no button for a second approval by the same person
            assert 'id="approve"' not in html
            assert "already approved it: another person must" in html
            assert "approved by alice" in html.split('id="approvers">')[1].split("</p>")[0]
        else:
            assert buttons[step] in html
            form = {"csrf": _form(html, "csrf"), "shown": _form(html, "shown")}
        res = client.post(url, data=form)  # step 1: alice's earlier form, posted again
        assert res.status_code == status, (person, res.text[:300])
        if person == "alice" and status == 303:
            assert res.headers["location"].endswith("done=approved")
            assert "--mem=64G" in reviewed.script.read_text()  # one person: nothing ran
        elif status == 409:
            assert "alice already approved this" in res.text
    kinds = [(k, who) for k, who, _ in _events(reviewed)]
    assert kinds == [("approval", "alice"), ("refusal", "alice"), ("approval", "bob"),
                     ("execution_started", "bob"), ("execution", "bob")]
    assert "--mem=128G" in reviewed.script.read_text()


def test_the_api_approves_with_a_personal_token(reviewed: Reviewed) -> None:
    client, _ = _client(reviewed)
    aid = reviewed.config_action
    preview = client.get(f"/api/actions/{aid}").json()
    assert preview["tool"] == "config_change" and "+#SBATCH --mem=128G" in preview["dry_run"]
    shown = {k: preview[k] for k in ("args_hash", "evidence_digest")}
    url = f"/api/actions/{aid}/approve"
    assert client.post(url, json=shown).status_code == 401
    res = client.post(url, json=shown,
                      headers={"Authorization": f"Bearer {token_for(reviewed, 'bob')}"})
    assert res.status_code == 200, res.text
    assert res.json()["status"] == "executed" and res.json()["execution"]["ok"] is True


def test_a_policy_broken_while_serving_is_a_one_line_refusal(reviewed: Reviewed) -> None:
    client, _ = _client(reviewed)
    client.headers["Authorization"] = f"Bearer {token_for(reviewed, 'alice')}"
    html = client.get(f"/actions/{reviewed.drain_action}").text
    form = {"csrf": _form(html, "csrf"), "shown": _form(html, "shown")}
    reviewed.policy.write_text("tools: [this is: not a policy\n")
    res = client.post(f"/actions/{reviewed.drain_action}/approve", data=form)
    assert res.status_code == 503 and "nothing was approved" in res.text
    assert str(reviewed.policy) in res.text and "Traceback" not in res.text
    assert _events(reviewed) == []


def test_reject_needs_a_reason(reviewed: Reviewed) -> None:
    client, _ = _client(reviewed)
    client.headers["Authorization"] = f"Bearer {token_for(reviewed, 'carol')}"
    html = client.get(f"/actions/{reviewed.drain_action}").text
    url = f"/actions/{reviewed.drain_action}/reject"
    base = {"csrf": _form(html, "csrf")}
    assert client.post(url, data={**base, "why": " "}).status_code == 400
    assert client.post(url, data={**base, "why": "wrong node"}).status_code == 303
    assert _events(reviewed) == [("rejection", "carol", reviewed.drain_action)]


@pytest.mark.parametrize("how", ["query", "header"])
def test_a_configured_token_guards_every_request(reviewed: Reviewed, how: str) -> None:
    token = "t0ken-" + "x" * 20
    client, _ = _client(reviewed, token=token)
    for path in ("/", f"/inv/{reviewed.inv_id}", "/static/style.css"):
        assert client.get(path).status_code == 401
    assert client.get("/", headers={"Authorization": "Bearer wrong-token-123456"})\
        .status_code == 401
    if how == "query":
        res = client.get(f"/inv/{reviewed.inv_id}?token={token}")
        assert res.status_code == 303 and "token" not in res.headers["location"]
        assert client.get(f"/inv/{reviewed.inv_id}").status_code == 200  # the cookie now
    else:
        assert client.get("/", headers={"Authorization": f"Bearer {token}"}).status_code == 200


def test_metric_evidence_shows_the_stored_query_and_the_charts(tmp_path: Path) -> None:
    from goodput_agent.investigate import investigate_bundle
    from goodput_agent.ledger import Ledger
    from tests.conftest import REPO

    case = REPO / "evals" / "latency_cases" / "l01-queueing-arrival-surge"
    ledger = tmp_path / "l.duckdb"
    with Ledger(ledger) as led:
        report = investigate_bundle(case, led)
    assert len(report.pictures) == 4  # latency, waiting, KV cache over time; phases
    client = TestClient(base_url=BASE, app=create_app(ServeConfig(ledger=ledger)))
    page = client.get(f"/inv/{report.investigation_id}").text
    assert page.count('class="picture"') == 4 and 'id="failure-timeline"' not in page
    svg = client.get(f"/inv/{report.investigation_id}/pictures/0")
    assert svg.status_code == 200 and svg.content == Path(report.pictures[0]).read_bytes()
    assert client.get(f"/inv/{report.investigation_id}/pictures/4").status_code == 404
    ev_id = re.findall(rf'/inv/{report.investigation_id}/evidence/(\d+)', page)[0]
    ev = client.get(f"/inv/{report.investigation_id}/evidence/{ev_id}").text
    assert "origin-ledger" in ev and "histogram_quantile" in ev
    assert ev.count('class="picture"') == 4  # the charts stand in for file lines
    # the picture files gone: the latency charts are drawn again from the stored numbers
    import shutil

    shutil.rmtree(tmp_path / "reports")
    page = client.get(f"/inv/{report.investigation_id}").text
    assert page.count('class="picture"') == 4
    again = client.get(f"/inv/{report.investigation_id}/pictures/0")
    assert again.status_code == 200 and b"End-to-end request latency" in again.content


def test_pictures_come_from_the_stored_list_wherever_they_were_drawn(tmp_path: Path) -> None:
    """--pictures elsewhere: only the stored report says where they are (no reports/<id>/)."""
    from goodput_agent.investigate import investigate_bundle
    from goodput_agent.ledger import Ledger
    from tests.conftest import REPO

    ledger = tmp_path / "l.duckdb"
    with Ledger(ledger) as led:
        report = investigate_bundle(REPO / "evals" / "slowdown_cases" / "s01-input-stall", led,
                                    pictures_dir=tmp_path / "elsewhere")
    assert not (tmp_path / "reports").exists() and len(report.pictures) == 2
    client = TestClient(base_url=BASE, app=create_app(ServeConfig(ledger=ledger)))
    page = client.get(f"/inv/{report.investigation_id}").text
    assert page.count('class="picture"') == 2
    for n, path in enumerate(report.pictures):
        assert client.get(f"/inv/{report.investigation_id}/pictures/{n}").content == \
            Path(path).read_bytes()


def test_the_failure_timeline_picture_is_shown_once(reviewed: Reviewed) -> None:
    client, _ = _client(reviewed)
    page = client.get(f"/inv/{reviewed.inv_id}").text
    # stored as the investigation's picture 0, drawn under its own heading, not again below
    assert page.count('id="failure-timeline"') == 1 and 'class="picture"' not in page
    svg = client.get(f"/inv/{reviewed.inv_id}/pictures/0")
    assert svg.status_code == 200 and b"Failure timeline" in svg.content


def test_a_rebound_name_gets_nothing_on_loopback(reviewed: Reviewed) -> None:
    """DNS rebinding: a page at evil.example resolved to 127.0.0.1 sends its own Host."""
    config = ServeConfig(ledger=reviewed.ledger, policy_path=reviewed.policy)
    evil = TestClient(create_app(config), base_url="http://evil.example:8765")
    res = evil.get("/")
    assert res.status_code == 400 and reviewed.inv_id not in res.text
    assert TestClient(create_app(config), base_url="http://localhost:8765").get("/")\
        .status_code == 200
    wide = ServeConfig(ledger=reviewed.ledger, host="0.0.0.0", token="t" * 20)
    assert TestClient(create_app(wide), base_url="http://gpu-box:8765").get("/")\
        .status_code == 401  # any name beyond loopback, but only with the token


def test_trace_evidence_opens_its_own_step_drawn_from_the_bundle(tmp_path: Path) -> None:
    import shutil

    from tests.web.conftest import served_slowdown_case

    case, report, client = served_slowdown_case(tmp_path, "s01-input-stall")
    inv = report.investigation_id
    page = client.get(f"/inv/{inv}").text
    ev_ids = re.findall(rf'/inv/{inv}/evidence/(\d+)', page)
    ev = client.get(f"/inv/{inv}/evidence/{ev_ids[0]}").text
    step = re.search(r"<h2>Step (\d+) of <code>([^<]+)</code>", ev)
    assert step is not None and 'id="trace-step"' in ev
    svg = client.get(f"/inv/{inv}/evidence/{ev_ids[0]}/step.svg")
    assert svg.status_code == 200
    assert f"step {step.group(1)}".encode() in svg.content.lower()
    assert ev.count('class="picture"') == 2  # and the breakdown pictures of the investigation
    shutil.rmtree(case)
    gone = client.get(f"/inv/{inv}/evidence/{ev_ids[1]}/step.svg")
    assert gone.status_code == 404 and "not readable" in gone.text


def test_advice_has_no_approve_button_for_anyone(reviewed: Reviewed) -> None:
    """A row an older version recorded for what no tool runs: advice, whoever asks."""
    with Ledger(reviewed.ledger) as lg:
        claim = lg.rows("SELECT id FROM claims WHERE investigation_id = ?",
                        [reviewed.inv_id])[0]["id"]
        advice = lg.record_action(reviewed.inv_id, "gpu_service", {"node": "gpu-node-03"},
                                  True, "send the GPU for service", [claim])
    client, _ = _client(reviewed)
    client.headers["Authorization"] = f"Bearer {token_for(reviewed, 'alice')}"
    page = client.get(f"/actions/{advice}").text
    assert 'id="advice"' in page and 'id="approve"' not in page and 'id="decision"' not in page
    assert "advice for a person" in page.split('id="why-not-approve"')[1]
    queue = client.get("/actions").text
    assert f'<tr data-id="{advice}">' not in queue and f'href="/actions/{advice}"' in queue
    assert client.get(f"/api/actions/{advice}").json()["can_approve"] is False
