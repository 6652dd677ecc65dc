"""Pictures as SVG: an evidence item's trace step, the failure timeline, a report's pictures."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from goodput_agent.core.errors import BadInput
from goodput_agent.ledger import Ledger
from goodput_agent.ledger.reader import LedgerBusy, read_ledger
from goodput_agent.pictures.failure_timeline import failure_timeline_svg
from goodput_agent.web.excerpt import draw_trace_step
from goodput_agent.web.site import SVG_CSP, Site
from goodput_agent.web.views import evidence_view, investigation_view


class PicturePages:
    def __init__(self, site: Site) -> None:
        self.site = site

    def step_svg(self, request: Request) -> Response:
        """The trace step an evidence item names, drawn from the bundle (cached per item)."""
        site = self.site
        inv_id, ev_id = request.path_params["inv_id"], request.path_params["ev_id"]
        try:
            with read_ledger(site.config.ledger) as (led, _):
                view = evidence_view(led, inv_id, ev_id)
        except (LedgerBusy, BadInput) as exc:
            return PlainTextResponse(str(exc), status_code=503)
        if view is None:
            return PlainTextResponse("no such evidence", status_code=404)
        out = site.cache / inv_id / f"evidence-{ev_id}-step.svg"
        try:
            drawn = draw_trace_step(view["inv"]["target"], view["ev"]["locator"], out,
                                    cwd=site.config.cwd)
        except BadInput as exc:
            return PlainTextResponse(str(exc), status_code=404)
        if drawn is None:
            return PlainTextResponse("the trace is not readable here any more",
                                     status_code=404)
        return Response(drawn.read_bytes(), media_type="image/svg+xml",
                        headers={"Content-Security-Policy": SVG_CSP})

    def failure_svg(self, request: Request) -> Response:
        inv_id = request.path_params["inv_id"]

        def draw(led: Ledger, info: Any) -> Response:
            view = investigation_view(led, inv_id)
            rep = view["report"] if view else None
            svg = failure_timeline_svg(rep) if rep is not None else None
            if svg is None:
                return PlainTextResponse("no timed failure events", status_code=404)
            return Response(svg.render(), media_type="image/svg+xml",
                            headers={"Content-Security-Policy": SVG_CSP})
        return self.site.reading(request, draw)

    def picture(self, request: Request) -> Response:
        site = self.site
        inv_id, n = request.path_params["inv_id"], request.path_params["n"]

        def send(led: Ledger, info: Any) -> Response:
            view = investigation_view(led, inv_id)
            rep = view["report"] if view else None
            # only one of the investigation's own SVG files (never a path from the request)
            paths = site.pictures_of(rep, inv_id) if view else []
            if not 0 <= n < len(paths):
                return PlainTextResponse("no such picture", status_code=404)
            path = paths[n]
            return Response(path.read_bytes(), media_type="image/svg+xml",
                            headers={"Content-Security-Policy": SVG_CSP})
        return site.reading(request, send)


def routes(site: Site) -> list[BaseRoute]:
    pages = PicturePages(site)
    return [
        Route("/inv/{inv_id}/evidence/{ev_id:int}/step.svg", pages.step_svg),
        Route("/inv/{inv_id}/failure-timeline.svg", pages.failure_svg),
        Route("/inv/{inv_id}/pictures/{n:int}", pages.picture),
    ]
