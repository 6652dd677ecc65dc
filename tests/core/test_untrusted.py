"""The one renderer of untrusted text: control characters shown, never obeyed; markup literal."""

import io
import json

import pytest
from jinja2 import Environment
from rich.text import Text

from goodput_agent.cli.render import TerminalConsole
from goodput_agent.core.logs import visible_values
from goodput_agent.core.untrusted import html, json_text, line, markup, rich_text, visible
from tests.terminal_text import raw_controls

OSC_TITLE = "\x1b]0;pwned\x07"
HOSTILE = (f"{OSC_TITLE} \x1b[2J \x1b]8;;http://evil.example/\x1b\\here\x1b]8;;\x1b\\ \x9b31m "
           "\u202etxt.exe \x7f [link=http://x]click[/link] [bold red]alert[/]")


def test_every_control_is_a_visible_escape() -> None:
    shown = visible(HOSTILE)
    assert not raw_controls(shown)
    for escaped in ("\\x1b]0;pwned\\x07", "\\x1b[2J", "\\x9b31m", "\\u202etxt.exe", "\\x7f"):
        assert escaped in shown


def test_newline_and_tab_kept_in_a_block_and_escaped_in_a_line() -> None:
    assert visible("a\nb\tc\rd") == "a\nb\tc\\x0dd"
    assert line("a\nb\tc") == "a\\x0ab\\x09c"


def test_lone_surrogates_are_shown_not_crashed_on() -> None:
    undecodable = b"name=\xff\xfe".decode("utf-8", "surrogateescape")
    assert visible(undecodable) == "name=\\udcff\\udcfe"
    visible(undecodable).encode("utf-8")  # a terminal can write it


def _printed(*renderables: object, width: int = 200) -> str:
    out = io.StringIO()
    console = TerminalConsole(file=out, width=width, force_terminal=True, color_system="truecolor")
    for r in renderables:
        console.print(r)
    return out.getvalue()


def test_rich_markup_in_untrusted_text_prints_literally() -> None:
    out = _printed(f"[bold]ours[/] {markup(HOSTILE)}", rich_text(HOSTILE, "red"))
    plain = out.replace("\x1b[", "")  # rich's own colour codes are the only ESC allowed
    assert "[link=http://x]click[/link]" in plain
    assert "[bold red]alert[/]" in plain
    assert "\x1b]8;" not in out  # no hyperlink, forged or otherwise


def test_the_console_guards_what_a_caller_forgot_to_escape() -> None:
    out = _printed(Text(HOSTILE), "[link=http://x]click[/link]")
    esc_uses = out.count("\x1b")
    sgr_uses = out.count("\x1b[")  # rich's styling (CSI ... m) only
    assert esc_uses == sgr_uses
    assert "\x1b]" not in out and "\x9b" not in out and "\u202e" not in out
    assert "\\x1b]0;pwned" in out  # (rich itself drops the BEL of a Text it is given)
    assert "click\n" in out  # the forgotten markup link: its text, without the link


def test_plain_console_output_has_no_escape_at_all() -> None:
    out = io.StringIO()
    TerminalConsole(file=out, width=120).print(f"x {markup(HOSTILE)}", Text(HOSTILE))
    assert not raw_controls(out.getvalue().replace("\n", ""))


@pytest.mark.parametrize("ascii_only", [False, True])
def test_json_for_a_terminal_holds_visible_escapes_even_once_decoded(ascii_only: bool) -> None:
    """`jq -r` decodes \\u001b into ESC: the strings themselves carry the visible escape,
    exactly as the terminal shows them; the document is still JSON of the same shape."""
    doc = json.dumps({"line": HOSTILE, "k": [1, "\u202e"], "ok": "a\\u001b\nb\tc \\"},
                     ensure_ascii=ascii_only, indent=2)
    parsed = json.loads(json_text(doc))
    assert parsed == {"line": visible(HOSTILE), "k": [1, "\\u202e"], "ok": "a\\u001b\nb\tc \\"}
    assert not raw_controls(json_text(doc).replace("\n", ""))
    assert not raw_controls(parsed["line"] + parsed["k"][1])


def test_html_finalize_shows_controls_and_autoescape_still_escapes() -> None:
    env = Environment(autoescape=True, finalize=html)
    page = env.from_string("<p>{{ t }}</p><code>{{ j | tojson }}</code>{{ n }}").render(
        t=f"<b>{OSC_TITLE}</b>\u202e", j={"a": "\x9b"}, n=3)
    assert not raw_controls(page)
    assert "&lt;b&gt;\\x1b]0;pwned\\x07&lt;/b&gt;\\u202e" in page
    assert '"\\u009b"' in page and page.endswith("3")


def test_console_log_values_are_one_line_with_visible_controls() -> None:
    event = visible_values(None, "warning", {"event": "unread", "path": f"a\n{OSC_TITLE}",
                                             "n": 3})
    assert event == {"event": "unread", "path": "a\\x0a\\x1b]0;pwned\\x07", "n": 3}


def test_console_logs_on_a_terminal_go_through_it(capsys) -> None:  # noqa: ANN001
    import structlog

    from goodput_agent.core.logs import configure

    configure("warning", json_logs=False)  # what a terminal on stderr gets
    try:
        structlog.get_logger("t").warning("unread", path=f"kern.log{OSC_TITLE}\nforged")
    finally:
        configure("warning", json_logs=True)
    err = capsys.readouterr().err
    assert not raw_controls(err) and err.count("\n") == 1
    assert "kern.log\\x1b]0;pwned\\x07\\x0aforged" in err
