"""The review server: Starlette routes over the ledger, pages rendered on the server with
Jinja2, pictures as SVG from the CLI's renderers, static files served from the package.

Pages only read (a read-only connection per request, a snapshot when another process writes).
The two POSTs — approve and reject — go through the approval gate (goodput_agent.approval.gate)
and nothing else writes.
"""

from __future__ import annotations

import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import duckdb
import structlog
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from goodput_agent import __version__, untrusted
from goodput_agent.approval import store
from goodput_agent.approval.gate import (
    GateRefused,
    action_status,
    approve_action,
    preview_action,
    reject_action,
)
from goodput_agent.approval.policy import Policy, load_policy
from goodput_agent.errors import BadInput
from goodput_agent.ledger import Ledger
from goodput_agent.pictures.failure_timeline import failure_timeline_svg
from goodput_agent.pictures.report_pictures import FAILURE_TIMELINE
from goodput_agent.web import security
from goodput_agent.web.chat import ask as chat_ask
from goodput_agent.web.chat import chat_settings, conversation
from goodput_agent.web.excerpt import draw_trace_step, source_view, trace_step
from goodput_agent.web.reader import LedgerBusy, read_ledger
from goodput_agent.web.security import SESSION_COOKIE, TOKEN_COOKIE, Signer
from goodput_agent.web.views import (
    evidence_view,
    investigation_list,
    investigation_view,
    picture_paths,
    report_of,
)
from goodput_agent.web.watch_page import watch_routes

log = structlog.get_logger(__name__)
HERE = Path(__file__).parent
SVG_CSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox"
PAGE_CSP = ("default-src 'self'; img-src 'self'; style-src 'self'; script-src 'self'; "
            "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")


@dataclass(slots=True)
class ServeConfig:
    ledger: Path
    host: str = "127.0.0.1"
    token: str | None = None
    policy_path: Path | None = None
    signer: Signer = field(default_factory=Signer.random)
    cwd: Path = field(default_factory=Path.cwd)

    def policy(self) -> Policy:
        return load_policy(self.policy_path)

    def allowed_hosts(self) -> list[str]:
        """Host headers answered: on loopback only loopback names, so that a web page whose
        name was rebound to 127.0.0.1 (DNS rebinding) gets nothing; beyond loopback, any
        (the access token guards every request there)."""
        if security.is_loopback(self.host):
            return ["127.0.0.1", "localhost", "::1", "[::1]"]
        return ["*"]


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
        given = (given_query or (bearer[7:] if bearer.lower().startswith("bearer ") else None)
                 or request.cookies.get(TOKEN_COOKIE))
        if not security.token_ok(expected, given):
            return PlainTextResponse("a valid access token is required (?token=... once, or "
                                     "Authorization: Bearer ...)", status_code=401)
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


def _when(v: object) -> str:
    if isinstance(v, datetime):
        return v.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return "—" if v is None else str(v)


def create_app(config: ServeConfig) -> Starlette:
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.filters["when"] = _when
    # every printed value: control characters from bundles shown (autoescape escapes HTML)
    templates.env.finalize = untrusted.html
    templates.env.globals["version"] = __version__
    lock = threading.RLock()  # one ledger connection at a time in this process
    chatting = threading.Event()  # a chat holds the ledger for writing: pages read snapshots
    cache = Path(tempfile.mkdtemp(prefix="goodput-web-pictures-"))

    def pictures_of(rep: Any, inv_id: str) -> list[Path]:
        return picture_paths(rep, config.ledger, inv_id, cache)

    def page(request: Request, name: str, ctx: dict[str, Any], status: int = 200) -> Response:
        session = request.state.session
        return templates.TemplateResponse(
            request, name, {"csrf": config.signer.csrf(session), "ledger": config.ledger,
                            **ctx}, status_code=status)

    def problem(request: Request, status: int, message: str) -> Response:
        return page(request, "problem.html", {"message": message, "status": status}, status)

    def reading(request: Request, fn: Any) -> Response:
        """Run `fn(ledger, info)` on a read-only ledger; busy and bad input become pages."""
        try:
            if chatting.is_set():
                with read_ledger(config.ledger, snapshot=True) as (ledger, info):
                    return fn(ledger, info)
            with lock, read_ledger(config.ledger) as (ledger, info):
                return fn(ledger, info)
        except LedgerBusy as exc:
            return problem(request, 503, str(exc))
        except BadInput as exc:
            return problem(request, 404, str(exc))
        except duckdb.Error as exc:  # e.g. a ledger from before approvals existed
            return problem(request, 500, f"{config.ledger}: {str(exc).splitlines()[0]}")

    def index(request: Request) -> Response:
        return reading(request, lambda led, info: page(
            request, "list.html", {"rows": investigation_list(led), "info": info}))

    def investigation(request: Request) -> Response:
        inv_id = request.path_params["inv_id"]

        def show(led: Ledger, info: Any) -> Response:
            view = investigation_view(led, inv_id)
            if view is None:
                return problem(request, 404, f"no investigation {inv_id} in {config.ledger}")
            rep = view["report"]
            has_timeline = bool(rep is not None and rep.kind == "failure" and rep.timeline)
            # the failure timeline has its own section: not shown twice (numbers kept for
            # /pictures/<n>)
            pictures = [(n, p) for n, p in enumerate(pictures_of(rep, inv_id))
                        if not (has_timeline and p.name == FAILURE_TIMELINE)]
            _, no_chat = chat_settings()
            return page(request, "investigation.html",
                        {**view, "info": info, "has_timeline": has_timeline,
                         "pictures": pictures,
                         "chat": conversation(led, inv_id), "no_chat": no_chat,
                         "chat_stopped": request.query_params.get("stopped")})
        return reading(request, show)

    def evidence(request: Request) -> Response:
        inv_id, ev_id = request.path_params["inv_id"], request.path_params["ev_id"]

        def show(led: Ledger, info: Any) -> Response:
            view = evidence_view(led, inv_id, ev_id)
            if view is None:
                return problem(request, 404, f"no evidence {ev_id} in investigation {inv_id}")
            ev = view["ev"]
            src = source_view(view["inv"]["target"], ev["locator"], ev["excerpt"],
                              cwd=config.cwd)
            conc = led.rows("SELECT * FROM conclusions WHERE investigation_id = ?", [inv_id])
            rep = report_of(conc[0] if conc else None)
            pictures = list(enumerate(pictures_of(rep, inv_id))) \
                if src.origin == "ledger" else []
            step = trace_step(ev["locator"])
            return page(request, "evidence.html",
                        {**view, "src": src, "info": info, "pictures": pictures,
                         "step": step})
        return reading(request, show)

    def step_svg(request: Request) -> Response:
        """The trace step an evidence item names, drawn from the bundle (cached per item)."""
        inv_id, ev_id = request.path_params["inv_id"], request.path_params["ev_id"]
        try:
            with lock, read_ledger(config.ledger) as (led, _):
                view = evidence_view(led, inv_id, ev_id)
        except (LedgerBusy, BadInput) as exc:
            return PlainTextResponse(str(exc), status_code=503)
        if view is None:
            return PlainTextResponse("no such evidence", status_code=404)
        out = cache / inv_id / f"evidence-{ev_id}-step.svg"
        try:
            drawn = draw_trace_step(view["inv"]["target"], view["ev"]["locator"], out,
                                    cwd=config.cwd)
        except BadInput as exc:
            return PlainTextResponse(str(exc), status_code=404)
        if drawn is None:
            return PlainTextResponse("the trace is not readable here any more",
                                     status_code=404)
        return Response(drawn.read_bytes(), media_type="image/svg+xml",
                        headers={"Content-Security-Policy": SVG_CSP})

    def failure_svg(request: Request) -> Response:
        inv_id = request.path_params["inv_id"]

        def draw(led: Ledger, info: Any) -> Response:
            view = investigation_view(led, inv_id)
            rep = view["report"] if view else None
            svg = failure_timeline_svg(rep) if rep is not None else None
            if svg is None:
                return PlainTextResponse("no timed failure events", status_code=404)
            return Response(svg.render(), media_type="image/svg+xml",
                            headers={"Content-Security-Policy": SVG_CSP})
        return reading(request, draw)

    def picture(request: Request) -> Response:
        inv_id, n = request.path_params["inv_id"], request.path_params["n"]

        def send(led: Ledger, info: Any) -> Response:
            view = investigation_view(led, inv_id)
            rep = view["report"] if view else None
            # only one of the investigation's own SVG files (never a path from the request)
            paths = pictures_of(rep, inv_id) if view else []
            if not 0 <= n < len(paths):
                return PlainTextResponse("no such picture", status_code=404)
            path = paths[n]
            return Response(path.read_bytes(), media_type="image/svg+xml",
                            headers={"Content-Security-Policy": SVG_CSP})
        return reading(request, send)

    def action(request: Request) -> Response:
        aid = request.path_params["action_id"]
        try:
            policy = config.policy()
        except BadInput as exc:
            return problem(request, 500, str(exc))

        def show(led: Ledger, info: Any) -> Response:
            try:
                preview = preview_action(led, aid, policy)
                events = store.events(led, aid)
            except BadInput as exc:
                return problem(request, 404, str(exc))
            shown = config.signer.shown(aid, preview.args_hash, preview.evidence_digest)
            return page(request, "action.html",
                        {"p": preview, "events": events, "shown": shown, "info": info,
                         "done": request.query_params.get("done")})
        return reading(request, show)

    async def _form(request: Request) -> dict[str, str] | Response:
        form = await request.form()
        data = {k: str(v) for k, v in form.items() if isinstance(v, str)}
        if not config.signer.csrf_ok(request.cookies.get(SESSION_COOKIE), data.get("csrf")):
            log.warning("csrf_refused", path=request.url.path)
            return PlainTextResponse("refused: missing or invalid CSRF token (reload the page)",
                                     status_code=403)
        if not data.get("approver", "").strip():
            return PlainTextResponse("refused: an approver name is required", status_code=400)
        return data

    def writing(request: Request, fn: Any) -> Response:
        try:
            with lock, Ledger(config.ledger) as led:
                return fn(led)
        except BadInput as exc:  # held by another process past the wait, or unreadable
            return problem(request, 503, str(exc))

    async def approve(request: Request) -> Response:
        aid = request.path_params["action_id"]
        data = await _form(request)
        if isinstance(data, Response):
            return data
        policy = config.policy()
        shown = config.signer.read_shown(data.get("shown"))
        max_age = policy.approval.expires_after.total_seconds()
        if shown is None or shown[0] != aid:
            return problem(request, 400, "refused: the form does not say which preview was "
                                         "shown; reload the action's page")
        age = time.time() - shown[3]
        if age > max_age or age < -60:
            return problem(request, 409, f"refused: this preview was shown {age / 60:.0f} min "
                                         f"ago, longer than an approval lives "
                                         f"({max_age / 60:.0f} min); reload and review again")

        def act(led: Ledger) -> Response:
            current = preview_action(led, aid, policy)
            if (current.args_hash, current.evidence_digest) != (shown[1], shown[2]):
                return problem(request, 409, "refused: the action or its evidence changed "
                                             "since the page was shown; reload and review again")
            try:
                approval = approve_action(led, aid, data["approver"], policy)
            except GateRefused as exc:
                return problem(request, 409, f"the gate refused: {exc.reason}")
            log.info("approved_from_web", action=aid, approval=approval.id,
                     approver=approval.actor)
            return RedirectResponse(f"/actions/{aid}?done=approved", status_code=303)
        return await run_in_threadpool(writing, request, act)

    async def reject(request: Request) -> Response:
        aid = request.path_params["action_id"]
        data = await _form(request)
        if isinstance(data, Response):
            return data

        def act(led: Ledger) -> Response:
            if action_status(led, aid) in ("executed", "failed", "verified", "rejected"):
                return problem(request, 409, f"action {aid} is already "
                                             f"{action_status(led, aid)}")
            try:
                reject_action(led, aid, data["approver"], data.get("why", ""))
            except BadInput as exc:
                return problem(request, 400, str(exc))
            return RedirectResponse(f"/actions/{aid}?done=rejected", status_code=303)
        return await run_in_threadpool(writing, request, act)

    async def chat(request: Request) -> Response:
        inv_id = request.path_params["inv_id"]
        form = await request.form()
        data = {k: str(v) for k, v in form.items() if isinstance(v, str)}
        if not config.signer.csrf_ok(request.cookies.get(SESSION_COOKIE), data.get("csrf")):
            return PlainTextResponse("refused: missing or invalid CSRF token (reload the page)",
                                     status_code=403)
        settings, why_not = chat_settings()
        if settings is None:
            return problem(request, 409, f"chat is not configured: {why_not}")

        def talk() -> Response:
            chatting.set()
            try:
                with lock:
                    spent = chat_ask(config.ledger, inv_id, data.get("question", ""),
                                     settings, cwd=config.cwd)
            except BadInput as exc:
                return problem(request, 400, str(exc))
            finally:
                chatting.clear()
            suffix = f"?stopped={spent}" if spent else ""
            return RedirectResponse(f"/inv/{inv_id}{suffix}#chat", status_code=303)
        return await run_in_threadpool(talk)

    routes = [
        Route("/", index),
        Route("/inv/{inv_id}", investigation),
        Route("/inv/{inv_id}/evidence/{ev_id:int}", evidence),
        Route("/inv/{inv_id}/evidence/{ev_id:int}/step.svg", step_svg),
        Route("/inv/{inv_id}/failure-timeline.svg", failure_svg),
        Route("/inv/{inv_id}/chat", chat, methods=["POST"]),
        Route("/inv/{inv_id}/pictures/{n:int}", picture),
        Route("/actions/{action_id:int}", action),
        Route("/actions/{action_id:int}/approve", approve, methods=["POST"]),
        Route("/actions/{action_id:int}/reject", reject, methods=["POST"]),
        *watch_routes(reading, page),  # /watch (web/watch_page.py)
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    return Starlette(routes=routes, middleware=[
        Middleware(TrustedHostMiddleware, allowed_hosts=config.allowed_hosts()),
        Middleware(_Guard, config=config)])
