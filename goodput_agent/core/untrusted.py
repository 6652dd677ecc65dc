"""Untrusted text (from bundles, clusters, traces and models) shown to a person: the one place
that renders it for terminals and for HTML pages.

A log line can carry terminal escape sequences (an OSC that retitles the terminal or forges a
hyperlink, a CSI that clears the screen), C1 controls that some terminals obey, and bidi
overrides that make text read differently from what it is. None of them reaches a terminal or
a page as itself: each is shown as a visible escape (`\\x1b`, `\\u202e`). For rich, untrusted
text is also never markup: `[link=...]` or `[bold]` in a log line prints literally.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from rich.markup import escape
from rich.segment import Segment
from rich.text import Text

# C0 controls (newline and tab apart, kept in multi-line blocks), DEL, C1 controls, the bidi
# embeddings/overrides/isolates and marks, and lone surrogates (undecodable bytes kept by
# `surrogateescape`: a terminal cannot even encode them)
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_BLOCK = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}\ud800-\udfff]")
_LINE = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}\ud800-\udfff]")
# in a JSON document, C0 can only be the whitespace between tokens (a serializer escapes the
# others inside strings); what remains raw is C1, DEL and bidi, inside strings
_JSON = re.compile(f"[\x7f-\x9f{_BIDI}]")


def _escape_char(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: object, *, newlines: bool = True) -> str:
    """`text` with every control character shown as a visible escape. `newlines`: keep newline
    and tab (a multi-line block); without, one line (a log line, an error message)."""
    return (_BLOCK if newlines else _LINE).sub(_escape_char, str(text))


def line(text: object) -> str:
    """One line of untrusted text for plain output (click.echo): no control character at all,
    so it can neither move the cursor nor start a line that looks like ours."""
    return visible(text, newlines=False)


def markup(text: object, *, newlines: bool = True) -> str:
    """Untrusted text to embed in a rich markup string: visible controls, markup escaped."""
    return escape(visible(text, newlines=newlines))


def rich_text(text: object, style: str = "", *, newlines: bool = True) -> Text:
    """Untrusted text as a rich Text (never parsed as markup)."""
    return Text(visible(text, newlines=newlines), style=style)


_JSON_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|(.))")
_SHORT = {"b": 0x08, "f": 0x0C, "r": 0x0D}


def _json_escape(m: re.Match[str]) -> str:
    code = int(m.group(1), 16) if m.group(1) else _SHORT.get(m.group(2), -1)
    if code < 0 or not _LINE.match(chr(code)) or chr(code) in "\n\t":
        return m.group()  # \\, \", \n, \t, a printable \u escape: as they are
    return "\\" + _escape_char(re.match(".", chr(code), re.S))  # type: ignore[arg-type]


def json_text(document: str) -> str:
    """A JSON document for a terminal or a pipe: every control character inside a string
    (an escape such as \\u001b or \\r, or a raw C1, DEL or bidi character, which serializers
    leave raw) becomes its visible escape as text (`\\x1b`), as on the terminal: `jq -r`
    then prints `\\x1b`, never ESC. Newlines and tabs stay."""
    document = _JSON_ESCAPE.sub(_json_escape, document)
    return _JSON.sub(lambda m: "\\" + _escape_char(m), document)


def json_dumps(data: Any, **kwargs: Any) -> str:
    """json.dumps for output a person may pipe: indented, dates as text, controls visible."""
    import json

    return json_text(json.dumps(data, indent=2, default=str, **kwargs))


def html(value: Any) -> Any:  # noqa: ANN401 - whatever a template prints
    """Jinja's finalize for every printed value: strings with visible controls (autoescape
    then escapes HTML); Markup (already safe HTML, e.g. tojson) keeps its type."""
    if not isinstance(value, str):
        return value
    shown = visible(value)
    return value if shown == value else type(value)(shown)


def safe_segments(segments: Iterable[Segment]) -> Iterable[Segment]:
    """The last guard of every rich console: text segments with visible controls and without
    hyperlinks (ours print none, so any is forged), whatever a caller forgot to escape.
    Control segments (cursor moves of a progress bar) are the console's own and pass."""
    for seg in segments:
        if seg.control:
            yield seg
            continue
        style = seg.style
        if style is not None and style.link:
            style = style.update_link(None)
        text = visible(seg.text)
        if text == seg.text and style is seg.style:
            yield seg
        else:
            yield Segment(text, style, seg.control)
