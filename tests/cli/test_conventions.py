"""The CLI's conventions, over every command (the lazy ones loaded): one spelling per option
(a short flag means the same long option everywhere), --since with one metavar, --wide,
--no-color and the exit codes in every help, --json wherever a document is printed (-o json|
yaml beside it unless -o names a file there), and `goodput completion`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import yaml
from click.testing import CliRunner

from goodput_agent.cli import cli
from goodput_agent.cli.lazy import LAZY_COMMANDS


def commands() -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(cli)
    for name in sorted(set(cli.list_commands(ctx)) | set(LAZY_COMMANDS)):
        cmd = cli.get_command(ctx, name)
        assert cmd is not None, name
        yield from _walk(name, cmd)


def _walk(path: str, cmd: click.Command) -> Iterator[tuple[str, click.Command]]:
    yield path, cmd
    if isinstance(cmd, click.Group):
        for sub_name, sub in cmd.commands.items():
            yield from _walk(f"{path} {sub_name}", sub)


def options(cmd: click.Command) -> list[click.Option]:
    return [p for p in cmd.params if isinstance(p, click.Option)]


def test_a_short_flag_means_one_long_option_everywhere() -> None:
    longs_of: dict[str, set[str]] = {}
    for _, cmd in commands():
        for o in options(cmd):
            shorts = [x for x in o.opts if not x.startswith("--")]
            longs = sorted(x for x in o.opts if x.startswith("--"))
            for s in shorts:
                longs_of.setdefault(s, set()).add(longs[0] if longs else "")
    mixed = {s: sorted(v) for s, v in longs_of.items() if len(v) > 1}
    assert mixed == {}


def test_since_has_one_metavar() -> None:
    seen = {(path, o.metavar) for path, cmd in commands() for o in options(cmd)
            if "--since" in o.opts}
    assert len(seen) >= 7 and {m for _, m in seen} == {"WHEN"}


def test_every_help_has_wide_no_color_and_exit_codes() -> None:
    runner = CliRunner()
    for path, cmd in commands():
        names = {x for o in options(cmd) for x in o.opts}
        assert {"--wide", "--no-color"} <= names, path
        text = runner.invoke(cli, [*path.split(), "--help"], env={"COLUMNS": "100"}).output
        assert "Exit codes:" in text and "  2  bad input" in text, path


def test_json_where_a_document_is_printed() -> None:
    by_path = dict(commands())
    for path in ("chat", "failure-timeline", "trace timeline", "ledger list", "ledger show",
                 "actions", "fleet", "watch status", "investigate", "latency", "account"):
        names = {x for o in options(by_path[path]) for x in o.opts}
        assert "--json" in names, path
        if "-o" in names:  # -o is either the document's format or this command's file
            (o,) = [o for o in options(by_path[path]) if "-o" in o.opts]
            assert o.opts == ["-o", "--output"], path


def test_o_yaml_is_the_json_document(tmp_path: Path, demo_bundle: Path) -> None:
    ledger = str(tmp_path / "l.duckdb")
    runner = CliRunner()
    runner.invoke(cli, ["investigate", str(demo_bundle), "--ledger", ledger, "--json"])
    as_json = runner.invoke(cli, ["ledger", "list", "--json", "--ledger", ledger])
    as_yaml = runner.invoke(cli, ["ledger", "list", "-o", "yaml", "--ledger", ledger])
    assert as_json.exit_code == as_yaml.exit_code == 0
    assert yaml.safe_load(as_yaml.stdout) == json.loads(as_json.stdout)


def test_completion_scripts_complete_commands() -> None:
    for shell in ("bash", "zsh", "fish"):
        r = CliRunner().invoke(cli, ["completion", shell])
        assert r.exit_code == 0 and "_GOODPUT_COMPLETE" in r.stdout, shell
    env = {**os.environ, "COMP_WORDS": "goodput watch st", "COMP_CWORD": "2",
           "_GOODPUT_COMPLETE": "bash_complete"}
    proc = subprocess.run([sys.executable, "-c", "from goodput_agent.cli import main; main()"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert "status" in proc.stdout.split(",") or "plain,status" in proc.stdout


def test_every_help_reads_at_80_columns() -> None:
    """Help is read at 80 columns whenever it is piped: no line wider, the exit codes too (they
    are laid out by hand, click does not rewrap them)."""
    runner = CliRunner()
    for path, _ in commands():
        text = runner.invoke(cli, [*path.split(), "--help"], env={"COLUMNS": "80"}).output
        wide = [ln for ln in text.splitlines() if len(ln) > 80]
        assert not wide, (path, wide)
