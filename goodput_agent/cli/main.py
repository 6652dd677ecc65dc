"""The `goodput` command line. Exit codes: 0 report written, 1 internal error, 2 bad input,
3 not enough evidence for a verdict (report still written, category unknown).

This module is the group (one line of error for any command, never a traceback) and the
investigating commands (investigate, demo) with what they share (the latency command too), plus
schema and tools; every other command is its own module under cli/, loaded on use (lazy.py)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from goodput_agent import __version__
from goodput_agent.cli.k8s import K8sArgs, investigate_k8s, k8s_options
from goodput_agent.cli.lazy import LazyGroup
from goodput_agent.cli.options import json_option, ledger_option, with_options
from goodput_agent.cli.planner_options import model_settings, planner_options
from goodput_agent.cli.ray_option import ray_option, ray_runner
from goodput_agent.cli.term import SETTINGS, add_output_options
from goodput_agent.core.errors import BadInput
from goodput_agent.core.logs import configure
from goodput_agent.core.untrusted import json_dumps, json_text, line

EXIT_BAD_INPUT = 2


def _fail(message: str, code: int = EXIT_BAD_INPUT) -> None:
    click.echo(f"goodput: error: {line(message)}", err=True)
    sys.exit(code)


class _Group(LazyGroup):
    """Turns BadInput anywhere into one line on stderr and exit 2 — never a traceback."""

    def make_context(self, info_name: str | None, args: list[str],  # type: ignore[override]
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        SETTINGS.__init__()  # type: ignore[misc] # each run starts plain (tests run many)
        return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise  # click's own: --help, usage errors (exit 2 with its usage message)
        except BadInput as exc:
            _fail(str(exc))
        except KeyboardInterrupt:
            _fail("interrupted", 130)
        except BrokenPipeError:  # `goodput ... | head`: the reader left, which is fine
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            sys.exit(0)
        except Exception as exc:  # a bug of ours: one line, the traceback only on request
            if os.environ.get("GOODPUT_DEBUG"):
                raise
            _fail(f"internal error: {type(exc).__name__}: {exc} (set GOODPUT_DEBUG=1 for the "
                  "traceback)".replace("\n", " "), 1)


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="goodput")
@click.option("--log-level", default="warning", show_default=True,
              type=click.Choice(["debug", "info", "warning", "error"]))
@click.option("--log-json", is_flag=True,
              help="Logs as JSON lines on a terminal too (they are whenever stderr is not one).")
def cli(log_level: str, log_json: bool) -> None:
    """Goodput investigates why GPU jobs fail, slow down or serve slowly — with evidence.

    Every command takes --wide and --no-color; those that print a document take --json and
    -o json|yaml|wide. The ledger is GOODPUT_LEDGER, else ~/.local/share/goodput/ledger.duckdb,
    or --ledger PATH.
    """
    configure(log_level, json_logs=True if log_json else None)


@contextmanager
def scan_progress(wanted: bool = True) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar on stderr for long scans, only when stderr is a terminal."""
    if not wanted or not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

    from goodput_agent.cli.render import TerminalConsole

    with Progress("scanning", BarColumn(), DownloadColumn(), TimeRemainingColumn(),
                  console=TerminalConsole(stderr=True), transient=True) as bar:
        task = bar.add_task("scan", total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


def _investigate(bundle: Path, ledger_path: Path | None, kind: str | None, as_json: bool,
                 pictures_dir: Path | None = None, claude: object = None,
                 ray_address: str | None = None) -> None:
    from goodput_agent.investigate import investigate_bundle
    from goodput_agent.ledger import open_ledger

    runner = ray_runner(ray_address)  # it shows its own progress: ranks done out of ranks
    with open_ledger(ledger_path) as ledger, scan_progress(runner is None) as progress:
        report = investigate_bundle(bundle, ledger, kind, progress=progress,
                                    pictures_dir=pictures_dir, claude=claude, runner=runner)
    _show(report, as_json)


def _show(report, as_json: bool) -> None:  # noqa: ANN001 - a Report
    from goodput_agent.cli.render import TerminalConsole
    from goodput_agent.cli.render_report import render_report
    from goodput_agent.investigate import exit_code

    if as_json:
        click.echo(json_text(report.to_json()))
    else:
        render_report(report, TerminalConsole())
    sys.exit(exit_code(report))


prometheus_options = [
    click.option("--prometheus", "prometheus_url", default=None, metavar="URL",
                 help="Ask a live Prometheus (the latency question) instead of a bundle."),
    click.option("--service", default=None, help="The model/service (model_name label)."),
    click.option("--tz", "tz_name", default=None, help="Zone of HH:MM windows (default UTC)."),
    click.option("--timeout", "timeout_s", default=30.0, show_default=True,
                 help="Seconds to wait for each Prometheus answer."),
]


pictures_option = click.option(
    "--pictures", "pictures_dir", type=click.Path(path_type=Path), default=None,
    help="Folder for the report's pictures (default: reports/<id>/ beside the ledger).")


def _live_latency(url: str, service: str | None, baseline: str | None, incident: str | None,
                  since_text: str | None, tz_name: str | None, timeout_s: float,
                  ledger_path: Path | None, as_json: bool, pictures_dir: Path | None = None
                  ) -> None:
    from goodput_agent.core.timespec import looking_back, parse_window
    from goodput_agent.investigate import investigate_prometheus
    from goodput_agent.ledger import open_ledger

    b = parse_window(baseline, tz_name=tz_name) if baseline else None
    i = parse_window(incident, tz_name=tz_name) if incident else None
    search = looking_back(since_text, tz_name=tz_name) if since_text else None
    with open_ledger(ledger_path) as ledger:
        report = investigate_prometheus(url, ledger, service, b, i, search, timeout_s,
                                        pictures_dir)
    _show(report, as_json)


@cli.command()
@click.argument("bundle", type=click.Path(path_type=Path), required=False)
@click.option("--kind", type=click.Choice(["failure", "slowdown", "latency"]), default=None,
              help="Override the kind of question inferred from the bundle.")
@pictures_option
@with_options(prometheus_options)
@click.option("--since", "since_text", default=None, metavar="WHEN",
              help="With --prometheus (also with --k8s-pod: a vLLM pod's series): look back "
                   "this far for the change (6h), or search this window (10:00-11:00, "
                   "START/END).")
@with_options(planner_options)
@click.option("--slurm-job", "slurm_job", default=None, metavar="ID",
              help="Collect this Slurm job into a bundle beside the ledger, then investigate it.")
@k8s_options
@ray_option
@json_option
@ledger_option
def investigate(bundle: Path | None, kind: str | None, pictures_dir: Path | None,
                prometheus_url: str | None, service: str | None, tz_name: str | None,
                timeout_s: float, since_text: str | None, as_json: bool,
                ledger_path: Path | None, planner: str, slurm_job: str | None = None,
                ray_address: str | None = None, **claude_flags: object) -> None:
    """Investigate an incident bundle (a directory or a .tar.gz of one), or a live Prometheus."""
    k8s = K8sArgs.pop(claude_flags)
    if ray_address and (k8s.wanted or slurm_job or prometheus_url):
        raise click.UsageError("--ray goes with a bundle (a directory or .tar.gz)")
    claude = model_settings(planner, claude_flags)  # None: the offline planner
    if k8s.wanted:
        k8s.prometheus = prometheus_url  # with it: the nodes' DCGM series too (a vLLM pod's)
        k8s.since, k8s.service, k8s.tz_name = since_text, service, tz_name
        _show(investigate_k8s(k8s, ledger_path, kind, pictures_dir, timeout_s, claude), as_json)
    if slurm_job:
        if bundle is not None or prometheus_url:
            raise click.UsageError("give a bundle, --slurm-job or --prometheus, one of them")
        from goodput_agent.cli.live import investigate_slurm_job

        _show(investigate_slurm_job(slurm_job, ledger_path, kind, pictures_dir, timeout_s,
                                    claude), as_json)
    if prometheus_url and claude is not None:
        raise click.UsageError("--planner claude investigates bundles; --prometheus runs the "
                               "offline planner")
    if prometheus_url:
        if bundle is not None:
            raise click.UsageError("give a bundle or --prometheus, not both")
        _live_latency(prometheus_url, service, None, None, since_text or "6h", tz_name,
                      timeout_s, ledger_path, as_json, pictures_dir)
    if bundle is None:
        raise click.UsageError("give a bundle (a directory or .tar.gz) or --prometheus URL")
    _investigate(bundle, ledger_path, kind, as_json, pictures_dir, claude, ray_address)


@cli.command()
@json_option
@ledger_option
def demo(as_json: bool, ledger_path: Path | None) -> None:
    """Investigate the bundled demo incident (offline, no API key)."""
    from goodput_agent.demo import demo_bundle_path

    _investigate(demo_bundle_path(), ledger_path, None, as_json)


@cli.group()
def schema() -> None:
    """JSON Schemas of Goodput's contracts."""


@schema.command("report")
def schema_report() -> None:
    """The JSON Schema of `goodput investigate --json` (goodput.report/v1)."""
    from goodput_agent.report import report_json_schema

    click.echo(json.dumps(report_json_schema(), indent=2))


@cli.command("tools")
@json_option
def tools_cmd(as_json: bool) -> None:
    """The tools planners can call, with their descriptions and input schemas."""
    from goodput_agent.toolkit import registry

    rows = [{"name": t.name, "read_only": t.read_only, "timeout_s": t.timeout_s,
             "description": t.description, "input_schema": t.input_model.model_json_schema()}
            for t in registry().values() if t.read_only]  # mutating ones: `goodput actions`
    if as_json:
        click.echo(json_dumps(rows))
        return
    from rich.padding import Padding
    from rich.text import Text

    from goodput_agent.cli.render import TerminalConsole

    console = TerminalConsole(highlight=False)
    for r in rows:
        console.print(Text(f"{r['name']}  (read-only: {r['read_only']}, timeout "
                           f"{r['timeout_s']:g}s)"))
        # the description's own line breaks are the source file's: re-flowed to the width
        console.print(Padding(Text(" ".join(r["description"].split())), (0, 0, 1, 2),
                              expand=False))


add_output_options(cli, "goodput")


def main() -> None:
    cli(prog_name="goodput")  # also as `python -m goodput_agent.cli`: usage lines, completion

