"""Signing in with a personal token (`goodput token create`): given once on /login, the
browser then carries a signed cookie naming the token (not the token), checked against the
ledger on every request; /logout forgets it. People behind the team's sign-on proxy need
neither (web/people.py)."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from goodput_agent.ledger import Ledger
from goodput_agent.ledger.tokens import verify_token
from goodput_agent.web.people import PERSON_COOKIE, asker
from goodput_agent.web.site import Site


def _next(url: str | None) -> str:
    return url if url and url.startswith("/") and not url.startswith("//") else "/"


class LoginPages:
    def __init__(self, site: Site) -> None:
        self.site = site

    def form(self, request: Request) -> Response:
        def show(led: Ledger, info: object) -> Response:
            return self.site.page(request, "login.html", {
                "me": asker(request, self.site.config, led), "info": info,
                "next": _next(request.query_params.get("next"))})
        return self.site.reading(request, show)

    async def login(self, request: Request) -> Response:
        data = await self.site.posted_form(request)
        if isinstance(data, Response):
            return data

        def check() -> Response:
            with Ledger(self.site.config.ledger, read_only=True) as led:
                row, why = verify_token(led, data.get("token", ""))
            if row is None:
                return self.site.problem(request, 401, f"not signed in: {why}")
            response = RedirectResponse(_next(data.get("next")), status_code=303)
            response.set_cookie(PERSON_COOKIE, self.site.config.signer.person(row.id),
                                httponly=True, samesite="strict",
                                secure=request.url.scheme == "https")
            return response
        return await run_in_threadpool(check)

    async def logout(self, request: Request) -> Response:
        data = await self.site.posted_form(request)
        if isinstance(data, Response):
            return data
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(PERSON_COOKIE)
        return response


def routes(site: Site) -> list[BaseRoute]:
    pages = LoginPages(site)
    return [Route("/login", pages.form), Route("/login", pages.login, methods=["POST"]),
            Route("/logout", pages.logout, methods=["POST"])]
