"""What every page of the review server shares: its config, the templates, the one ledger
connection at a time, the picture cache, and the ways a page reads or writes the ledger."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.templating import Jinja2Templates

from goodput_agent import __version__
from goodput_agent.core import untrusted
from goodput_agent.core.errors import BadInput
from goodput_agent.ledger import Ledger, LedgerError
from goodput_agent.ledger.reader import LedgerBusy, read_ledger
from goodput_agent.web.config import ServeConfig
from goodput_agent.web.security import SESSION_COOKIE
from goodput_agent.web.views import picture_paths

log = structlog.get_logger(__name__)
HERE = Path(__file__).parent
SVG_CSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox"


def _when(v: object) -> str:
    if isinstance(v, datetime):
        return v.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return "—" if v is None else str(v)


def _json(v: Any) -> str:  # noqa: ANN401 - whatever a template prints
    import json

    return json.dumps(v, ensure_ascii=False, sort_keys=True, default=str)


class Site:
    """The state the pages share; one per app."""

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.templates = Jinja2Templates(directory=str(HERE / "templates"))
        self.templates.env.filters["when"] = _when
        # arguments as a person writes JSON (a quote is a quote, not \u0027 as tojson writes
        # it for scripts); autoescape makes it safe in the page
        self.templates.env.filters["json"] = _json
        # every printed value: control characters from bundles shown (autoescape escapes HTML)
        self.templates.env.finalize = untrusted.html
        self.templates.env.globals["version"] = __version__
        self.cache = Path(tempfile.mkdtemp(prefix="goodput-web-pictures-"))

    def pictures_of(self, rep: Any, inv_id: str) -> list[Path]:
        return picture_paths(rep, self.config.ledger, inv_id, self.cache)

    def page(self, request: Request, name: str, ctx: dict[str, Any],
             status: int = 200) -> Response:
        session = request.state.session
        return self.templates.TemplateResponse(
            request, name, {"csrf": self.config.signer.csrf(session),
                            "ledger": self.config.ledger, **ctx}, status_code=status)

    def problem(self, request: Request, status: int, message: str) -> Response:
        return self.page(request, "problem.html", {"message": message, "status": status},
                         status)

    def reading(self, request: Request, fn: Any) -> Response:
        """Run `fn(ledger, info)` on a read-only ledger; busy and bad input become pages."""
        config = self.config
        try:
            with read_ledger(config.ledger) as (ledger, info):
                return fn(ledger, info)
        except LedgerBusy as exc:
            return self.problem(request, 503, str(exc))
        except BadInput as exc:
            return self.problem(request, 404, str(exc))
        except LedgerError as exc:  # e.g. a ledger file that is not one
            return self.problem(request, 500, f"{config.ledger}: {str(exc).splitlines()[0]}")

    def writing(self, request: Request, fn: Any) -> Response:
        try:
            with Ledger(self.config.ledger) as led:
                return fn(led)
        except BadInput as exc:  # held by another process past the wait, or unreadable
            return self.problem(request, 503, str(exc))

    async def posted_form(self, request: Request) -> dict[str, str] | Response:
        """The posted form when its CSRF token is good (who posts it is people.py's)."""
        form = await request.form()
        data = {k: str(v) for k, v in form.items() if isinstance(v, str)}
        if not self.config.signer.csrf_ok(request.cookies.get(SESSION_COOKIE),
                                          data.get("csrf")):
            log.warning("csrf_refused", path=request.url.path)
            return PlainTextResponse("refused: missing or invalid CSRF token (reload the page)",
                                     status_code=403)
        return data
