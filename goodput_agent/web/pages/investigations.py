"""Pages: the list of investigations, one investigation, one evidence item."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from goodput_agent.ledger import Ledger
from goodput_agent.ledger.records import conclusion_row
from goodput_agent.pictures.report_pictures import FAILURE_TIMELINE
from goodput_agent.web.chat import chat_settings, conversation
from goodput_agent.web.excerpt import source_view, trace_step
from goodput_agent.web.site import Site
from goodput_agent.web.views import (
    evidence_view,
    investigation_list,
    investigation_view,
    report_of,
)


class InvestigationPages:
    def __init__(self, site: Site) -> None:
        self.site = site

    def index(self, request: Request) -> Response:
        site = self.site
        return site.reading(request, lambda led, info: site.page(
            request, "list.html", {"rows": investigation_list(led), "info": info}))

    def investigation(self, request: Request) -> Response:
        site = self.site
        inv_id = request.path_params["inv_id"]

        def show(led: Ledger, info: Any) -> Response:
            view = investigation_view(led, inv_id)
            if view is None:
                return site.problem(request, 404,
                                    f"no investigation {inv_id} in {site.config.ledger}")
            rep = view["report"]
            has_timeline = bool(rep is not None and rep.kind == "failure" and rep.timeline)
            # the failure timeline has its own section: not shown twice (numbers kept for
            # /pictures/<n>)
            pictures = [(n, p) for n, p in enumerate(site.pictures_of(rep, inv_id))
                        if not (has_timeline and p.name == FAILURE_TIMELINE)]
            _, no_chat = chat_settings()
            return site.page(request, "investigation.html",
                             {**view, "info": info, "has_timeline": has_timeline,
                              "pictures": pictures,
                              "chat": conversation(led, inv_id), "no_chat": no_chat,
                              "chat_stopped": request.query_params.get("stopped")})
        return site.reading(request, show)

    def evidence(self, request: Request) -> Response:
        site = self.site
        inv_id, ev_id = request.path_params["inv_id"], request.path_params["ev_id"]

        def show(led: Ledger, info: Any) -> Response:
            view = evidence_view(led, inv_id, ev_id)
            if view is None:
                return site.problem(request, 404,
                                    f"no evidence {ev_id} in investigation {inv_id}")
            ev = view["ev"]
            src = source_view(view["inv"]["target"], ev["locator"], ev["excerpt"],
                              cwd=site.config.cwd)
            conc = conclusion_row(led, inv_id)
            rep = report_of(conc.model_dump() if conc else None)
            pictures = list(enumerate(site.pictures_of(rep, inv_id))) \
                if src.origin == "ledger" else []
            step = trace_step(ev["locator"])
            return site.page(request, "evidence.html",
                             {**view, "src": src, "info": info, "pictures": pictures,
                              "step": step})
        return site.reading(request, show)


def routes(site: Site) -> list[BaseRoute]:
    pages = InvestigationPages(site)
    return [
        Route("/", pages.index),
        Route("/inv/{inv_id}", pages.investigation),
        Route("/inv/{inv_id}/evidence/{ev_id:int}", pages.evidence),
    ]
