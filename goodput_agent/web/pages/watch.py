"""The watch page (/watch): what `goodput watch` detected, queued, investigated and grouped, and
each source's health and lag. Read-only, like every page; a ledger no watch has run on says
so."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from goodput_agent.ledger import Ledger
from goodput_agent.watch.status import age, status_from

Reading = Callable[[Request, Callable[[Ledger, Any], Response]], Response]
Page = Callable[[Request, str, dict[str, Any]], Response]


def watch_routes(reading: Reading, page: Page) -> list[Route]:
    """The routes, given the app's own `reading` (a read-only ledger, busy/bad input as pages)
    and `page` (a template with the app's context)."""

    def watch(request: Request) -> Response:
        def show(led: Ledger, info: Any) -> Response:
            status = status_from(led)
            return page(request, "watch.html", {"status": status, "info": info, "age": age})
        return reading(request, show)

    return [Route("/watch", watch)]
