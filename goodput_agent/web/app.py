"""The review server: Starlette routes over the ledger, pages rendered on the server with
Jinja2, pictures as SVG from the CLI's renderers, static files served from the package.

Pages only read (one short read session of the ledger per request, goodput_agent/ledger/).
Approve and reject — by a person the server authenticated (web/people.py) — go through the
approval gate on the CLI's own path (goodput_agent/approval/approve_then_execute.py); nothing
else writes.

Each page is a module (web/pages/*.py) with `routes(site) -> list[BaseRoute]`; a new page is one
new module and one line in PAGES (its routes function). What the pages share (templates, the
ledger lock, the picture cache, reading and writing the ledger) is web/site.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

from goodput_agent.core.errors import BadInput
from goodput_agent.ledger import Ledger
from goodput_agent.web import security
from goodput_agent.web.config import ServeConfig
from goodput_agent.web.pages import actions as routes_actions
from goodput_agent.web.pages import chat as routes_chat
from goodput_agent.web.pages import investigations as routes_investigations
from goodput_agent.web.pages import login as routes_login
from goodput_agent.web.pages import pictures as routes_pictures
from goodput_agent.web.pages.account import account_routes
from goodput_agent.web.pages.fleet import fleet_route
from goodput_agent.web.pages.watch import watch_routes
from goodput_agent.web.people import Asker, asker
from goodput_agent.web.security import SESSION_COOKIE, TOKEN_COOKIE
from goodput_agent.web.site import HERE, SVG_CSP, Site

__all__ = ["PAGES", "ServeConfig", "create_app"]

PAGE_CSP = ("default-src 'self'; img-src 'self'; style-src 'self'; script-src 'self'; "
            "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")

# the pages: one module each, whose routes(site) -> list[BaseRoute] goes here
PAGES: tuple[Callable[[Site], list[BaseRoute]], ...] = (
    routes_investigations.routes,
    routes_pictures.routes,
    routes_chat.routes,
    lambda site: account_routes(site.page, site.reading, SVG_CSP),
    routes_actions.routes,
    routes_login.routes,
    lambda site: [fleet_route(site.page, site.reading)],
    lambda site: watch_routes(site.reading, site.page),
)


class _Guard(BaseHTTPMiddleware):
    """The access token on every request (when configured), a session cookie for CSRF, and
    security headers on every answer."""

    def __init__(self, app: Any, config: ServeConfig):
        super().__init__(app)
        self.config = config

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        expected = self.config.token
        given_query = request.query_params.get("token")
        bearer = request.headers.get("authorization", "")
        given = [given_query, bearer[7:] if bearer.lower().startswith("bearer ") else None,
                 request.cookies.get(TOKEN_COOKIE)]  # the shared token, wherever it is
        if any(security.token_ok(expected, g) for g in given):
            return await self._answer(request, call_next)
        turn = await self._a_person(request)
        if turn is None:
            return PlainTextResponse("a valid access token is required (?token=... once, or "
                                     "Authorization: Bearer ...), or a person signed in",
                                     status_code=401)
        try:
            return await self._answer(request, call_next)
        finally:
            await run_in_threadpool(turn.close)

    async def _answer(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        expected = self.config.token
        given_query = request.query_params.get("token")
        if given_query and request.method == "GET":
            # keep the token out of the address bar and history: cookie, then the same page
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            url = request.url.path + (("?" + urlencode(rest)) if rest else "")
            response: Response = RedirectResponse(url, status_code=303)
        else:
            session = request.cookies.get(SESSION_COOKIE)
            if not session:
                session = security.new_session()
                request.state.new_session = session
            request.state.session = session
            response = await call_next(request)
        if given_query and expected:
            response.set_cookie(TOKEN_COOKIE, expected, httponly=True, samesite="strict")
        new = getattr(request.state, "new_session", None)
        if new:
            response.set_cookie(SESSION_COOKIE, new, httponly=True, samesite="strict")
        response.headers.setdefault("Content-Security-Policy", PAGE_CSP)
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["Cache-Control"] = "no-store"
        return response

    async def _a_person(self, request: Request) -> Ledger | None:
        """A person the server can name (a personal token, a trusted proxy's user) may read
        without the shared token. Their request is then answered in the turn at the ledger
        this check took (the handle returned: closed once answered), and the page asks
        people.py again for nothing (request.state.asker)."""

        def check() -> Ledger | None:
            try:
                led = Ledger(self.config.ledger, read_only=True, one_turn=True)
            except BadInput:
                return None
            try:
                found = asker(request, self.config, led)
            except BadInput:
                found = Asker()
            except BaseException:
                led.close()
                raise
            if found.who is None:
                led.close()
                return None
            request.state.asker = found
            return led
        return await run_in_threadpool(check)


def create_app(config: ServeConfig) -> Starlette:
    site = Site(config)
    routes: list[BaseRoute] = [route for page in PAGES for route in page(site)]
    routes.append(Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"))
    return Starlette(routes=routes, middleware=[
        Middleware(TrustedHostMiddleware, allowed_hosts=config.allowed_hosts()),
        Middleware(_Guard, config=config)])
