"""An action's page, and the two POSTs that write: approve and reject, through the gate."""

from __future__ import annotations

import time
from typing import Any

import structlog
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from goodput_agent.approval import store
from goodput_agent.approval.gate import (
    GateRefused,
    action_status,
    approve_action,
    preview_action,
    reject_action,
)
from goodput_agent.errors import BadInput
from goodput_agent.ledger import Ledger
from goodput_agent.web.site import Site

log = structlog.get_logger(__name__)


class ActionPages:
    def __init__(self, site: Site) -> None:
        self.site = site

    def action(self, request: Request) -> Response:
        site = self.site
        aid = request.path_params["action_id"]
        try:
            policy = site.config.policy()
        except BadInput as exc:
            return site.problem(request, 500, str(exc))

        def show(led: Ledger, info: Any) -> Response:
            try:
                preview = preview_action(led, aid, policy)
                events = store.events(led, aid)
            except BadInput as exc:
                return site.problem(request, 404, str(exc))
            shown = site.config.signer.shown(aid, preview.args_hash, preview.evidence_digest)
            return site.page(request, "action.html",
                             {"p": preview, "events": events, "shown": shown, "info": info,
                              "done": request.query_params.get("done")})
        return site.reading(request, show)

    async def approve(self, request: Request) -> Response:
        site = self.site
        aid = request.path_params["action_id"]
        data = await site.approver_form(request)
        if isinstance(data, Response):
            return data
        try:
            policy = site.config.policy()
        except BadInput as exc:  # edited into a broken file while serve runs
            return site.problem(request, 503, f"nothing was approved: the approval policy "
                                              f"cannot be read: {exc}")
        shown = site.config.signer.read_shown(data.get("shown"))
        max_age = policy.approval.expires_after.total_seconds()
        if shown is None or shown[0] != aid:
            return site.problem(request, 400, "refused: the form does not say which preview "
                                              "was shown; reload the action's page")
        age = time.time() - shown[3]
        if age > max_age or age < -60:
            return site.problem(request, 409, f"refused: this preview was shown "
                                              f"{age / 60:.0f} min ago, longer than an approval "
                                              f"lives ({max_age / 60:.0f} min); reload and "
                                              f"review again")

        def act(led: Ledger) -> Response:
            current = preview_action(led, aid, policy)
            if (current.args_hash, current.evidence_digest) != (shown[1], shown[2]):
                return site.problem(request, 409, "refused: the action or its evidence changed "
                                                  "since the page was shown; reload and review "
                                                  "again")
            try:
                approval = approve_action(led, aid, data["approver"], policy)
            except GateRefused as exc:
                return site.problem(request, 409, f"the gate refused: {exc.reason}")
            log.info("approved_from_web", action=aid, approval=approval.id,
                     approver=approval.actor)
            return RedirectResponse(f"/actions/{aid}?done=approved", status_code=303)
        return await run_in_threadpool(site.writing, request, act)

    async def reject(self, request: Request) -> Response:
        site = self.site
        aid = request.path_params["action_id"]
        data = await site.approver_form(request)
        if isinstance(data, Response):
            return data

        def act(led: Ledger) -> Response:
            if action_status(led, aid) in ("executed", "failed", "verified", "rejected"):
                return site.problem(request, 409, f"action {aid} is already "
                                                  f"{action_status(led, aid)}")
            try:
                reject_action(led, aid, data["approver"], data.get("why", ""))
            except BadInput as exc:
                return site.problem(request, 400, str(exc))
            return RedirectResponse(f"/actions/{aid}?done=rejected", status_code=303)
        return await run_in_threadpool(site.writing, request, act)


def routes(site: Site) -> list[BaseRoute]:
    pages = ActionPages(site)
    return [
        Route("/actions/{action_id:int}", pages.action),
        Route("/actions/{action_id:int}/approve", pages.approve, methods=["POST"]),
        Route("/actions/{action_id:int}/reject", pages.reject, methods=["POST"]),
    ]
