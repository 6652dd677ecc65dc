"""How a command's output is shaped, the same way for every command: `--wide`, `--no-color`
(beside the NO_COLOR variable), `-o json|yaml|wide` where a command prints a document, and the
exit codes its help lists. The options are added to every command by the group (cli/lazy.py),
so no command can miss one or spell it differently."""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass
from typing import Any

import click

WIDE_COLUMNS = 200  # `--wide` lays tables out as on a terminal this wide, or wider
FORMATS = ("json", "yaml", "wide")


@dataclass
class Output:
    wide: bool = False
    no_color: bool = False
    format: str | None = None  # json | yaml | wide, from -o


SETTINGS = Output()

# exit codes every command may return; a command's own are added in its help (EXTRA_EXIT)
EXIT_CODES = {0: "done", 1: "internal error (one line; GOODPUT_DEBUG=1 for the traceback)",
              2: "bad input (one line naming the file or option)"}
REPORT_EXIT = {3: "not enough evidence for a verdict (the report is still written, category "
                  "unknown)"}
EXTRA_EXIT: dict[str, dict[int, str]] = {
    "investigate": REPORT_EXIT, "latency": REPORT_EXIT, "demo": REPORT_EXIT,
    "check": {3: "cannot judge (too little history, or the metrics stopped)", 6: "a hang",
              7: "a slow node"},
    "watch": {4: "a source could not be read (--once)", 5: "an incident failed after its "
              "retries (--once)"},
    "status": {4: "a source of a running watch is down"},
    "verify": {3: "not measured: the after evidence cannot be compared"},
}


def exit_codes_epilog(name: str) -> str:
    codes = {**EXIT_CODES, **EXTRA_EXIT.get(name, {})}
    # \b keeps click from rewrapping the lines, so they are wrapped here: click indents the
    # epilog by 2, and help is read at 80 columns whenever it is piped
    lines = [ln for c, why in sorted(codes.items())
             for ln in textwrap.wrap(f"  {c}  {why}", width=78, subsequent_indent=" " * 5)]
    return "\b\nExit codes:\n" + "\n".join(lines)


def _set_wide(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        SETTINGS.wide = True


def _set_no_color(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        SETTINGS.no_color = True


def _set_format(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value:
        SETTINGS.format = value
        SETTINGS.wide = SETTINGS.wide or value == "wide"


def wide_option() -> click.Option:
    return click.Option(["--wide"], is_flag=True, expose_value=False, is_eager=True,
                        callback=_set_wide,
                        help="Lay tables out for a wide terminal (at least 200 columns) and "
                             "cut nothing (excerpts, timelines).")


def no_color_option() -> click.Option:
    return click.Option(["--no-color"], is_flag=True, expose_value=False, is_eager=True,
                        callback=_set_no_color, help="No colours (as NO_COLOR=1 does).")


def format_option() -> click.Option:
    return click.Option(["-o", "--output", "output_format"], type=click.Choice(FORMATS),
                        default=None, expose_value=False, is_eager=True, callback=_set_format,
                        metavar="json|yaml|wide",
                        help="Output format: json (as --json), yaml, or wide (as --wide).")


def wants_document(as_json: bool) -> bool:
    """--json, or -o json / -o yaml."""
    return as_json or SETTINGS.format in ("json", "yaml")


def emit(document: str | Any) -> None:  # noqa: ANN401 - a JSON text or JSON-ready data
    """Print a command's document as JSON, or YAML with -o yaml. The JSON text has already
    been through untrusted.json_text (control characters as visible escapes), and YAML keeps
    those escapes as the literal text they are."""
    from goodput_agent.core.untrusted import json_dumps, json_text

    text = json_text(document) if isinstance(document, str) else json_dumps(document)
    if SETTINGS.format == "yaml":
        import yaml

        click.echo(yaml.safe_dump(json.loads(text), sort_keys=False, allow_unicode=True,
                                  width=100).rstrip("\n"))
    else:
        click.echo(text)


def _documents(command: click.Command) -> bool:
    """A command that prints a document with --json, and has no -o of its own (a file)."""
    opts = {o for p in command.params for o in getattr(p, "opts", [])}
    return "--json" in opts and "-o" not in opts


def add_output_options(command: click.Command, name: str) -> click.Command:
    """--wide and --no-color on every command, -o on those that print a document (-o json
    and -o yaml then act as --json), and the exit codes at the end of its help. Subcommands
    of a group get theirs too. Idempotent: the group asks for a command more than once."""
    if getattr(command, "_goodput_output", False):
        return command
    command._goodput_output = True  # type: ignore[attr-defined]
    opts = {o for p in command.params for o in getattr(p, "opts", [])}
    if "--wide" not in opts:
        command.params.append(wide_option())
    if "--no-color" not in opts:
        command.params.append(no_color_option())
    if _documents(command):
        command.params.append(format_option())
        _json_follows_format(command)
    if isinstance(command, click.Group):
        for sub_name, sub in getattr(command, "commands", {}).items():
            add_output_options(sub, sub_name)
    if command.epilog is None:
        command.epilog = exit_codes_epilog(name)
    return command


def _json_follows_format(command: click.Command) -> None:
    callback = command.callback
    if callback is None:
        return

    def with_format(*args: Any, **kwargs: Any) -> Any:  # noqa: ANN401 - the command's own
        if "as_json" in kwargs and SETTINGS.format in ("json", "yaml"):
            kwargs["as_json"] = True
        return callback(*args, **kwargs)

    command.callback = with_format
