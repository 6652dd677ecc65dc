"""Secrets planted at the end of every log line of a shipped case never appear on any surface:
the terminal report, `--json`, the ledger's stored text, and the review pages (index,
investigation, every evidence page, which re-reads the bundle's lines around the excerpt)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from click.testing import CliRunner
from starlette.testclient import TestClient

from goodput_agent.cli import cli
from goodput_agent.evals.scorer import suite_dir
from goodput_agent.ledger import Ledger
from goodput_agent.web.app import ServeConfig, create_app
from tests.web.conftest import BASE

# real token formats (providers' documented examples and shapes), one family each
SECRETS = {
    "aws_secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "slack_hook": "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    "openai_project": "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z_Ab3dEf6hIj9",
    "google": "AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe",
    "stripe": "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "gitlab": "glpat-8Jn2_kD9fQxR4vZ1mT6s",
    "npm": "npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "db_pass": "hunter2-db-pass",
}
LINE_TAIL = (f" aws={SECRETS['aws_secret']} hook={SECRETS['slack_hook']} "
             f"key {SECRETS['openai_project']} {SECRETS['google']} {SECRETS['stripe']} "
             f"{SECRETS['gitlab']} {SECRETS['npm']} DB_PASS={SECRETS['db_pass']}")
# the distinctive part of each, as it would show even if cut
NEEDLES = [s[8:28] if s.startswith("https") else s[-16:] for s in SECRETS.values()]


def _planted_case(dest: Path) -> Path:
    shutil.copytree(suite_dir("failure") / "c04-application-error-dataset-keyerror", dest)
    for path in dest.rglob("*"):
        if path.is_file() and path.suffix in (".log", ".out", ".err", "") and \
                path.name != "incident.yaml":
            text = path.read_text(errors="surrogateescape")
            path.write_text("".join(f"{ln}{LINE_TAIL}\n" if ln.strip() else "\n"
                                    for ln in text.splitlines()), errors="surrogateescape")
    return dest


def _leaks(text: str) -> list[str]:
    return [n for n in NEEDLES if n in text]


def test_no_planted_secret_reaches_any_surface(tmp_path: Path) -> None:
    bundle = _planted_case(tmp_path / "bundle")
    ledger = tmp_path / "ledger.duckdb"
    runner = CliRunner()
    env = {"COLUMNS": "200"}
    terminal = runner.invoke(cli, ["investigate", str(bundle), "--ledger", str(ledger)], env=env)
    assert terminal.exit_code in (0, 3), terminal.output
    assert "[REDACTED]" in terminal.output or "REDACTED" in terminal.output
    as_json = runner.invoke(cli, ["investigate", str(bundle), "--json", "--ledger", str(ledger)],
                            env=env)
    shown = runner.invoke(cli, ["ledger", "show", "--json", "--ledger", str(ledger)], env=env)
    for name, out in (("terminal", terminal.output), ("--json", as_json.output),
                      ("ledger show", shown.output)):
        assert not _leaks(out), f"{name}: {_leaks(out)}"
    with Ledger(ledger, read_only=True) as lg:
        for table in ("evidence", "claims", "actions", "conclusions", "tool_calls"):
            for row in lg.rows(f"SELECT * FROM {table}"):
                assert not _leaks(repr(row)), f"{table}: {_leaks(repr(row))}"
        inv = lg.latest_investigation_id()
    client = TestClient(base_url=BASE, app=create_app(ServeConfig(ledger=ledger)))
    page = client.get(f"/inv/{inv}").text
    evidence = sorted(set(re.findall(rf"/inv/{inv}/evidence/(\d+)", page)))
    assert evidence
    for url in ["/", f"/inv/{inv}", *(f"/inv/{inv}/evidence/{e}" for e in evidence)]:
        html = client.get(url).text
        assert not _leaks(html), f"{url}: {_leaks(html)}"
