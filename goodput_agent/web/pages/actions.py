"""An action's page, and what writes: approve and reject, by an authenticated person, through
the one path the CLI takes too (approval/approve_then_execute.py): the approval is recorded
and, once the approvals the policy asks for stand, the gate executes and the page shows what
ran. The API (`POST /api/actions/N/approve`, a personal token as Bearer) is the same path in
JSON."""

from __future__ import annotations

import time
from typing import Any

import structlog
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from goodput_agent.approval import store
from goodput_agent.approval.approve_then_execute import approve_and_execute, live_context
from goodput_agent.approval.decision import view_action
from goodput_agent.approval.gate import (
    GateRefused,
    action_status,
    preview_action,
    record_refusal,
    reject_action,
)
from goodput_agent.approval.gate_checks import now_or_utc
from goodput_agent.approval.identity import Identity
from goodput_agent.approval.queue import pending
from goodput_agent.core.errors import BadInput
from goodput_agent.core.untrusted import json_dumps
from goodput_agent.ledger import Ledger
from goodput_agent.web.people import asker
from goodput_agent.web.site import Site

log = structlog.get_logger(__name__)


class ActionPages:
    def __init__(self, site: Site) -> None:
        self.site = site

    def queue(self, request: Request) -> Response:
        """What waits for a decision across investigations, oldest first (approval/queue.py),
        judged for the person asking; `/api/actions` is the same in JSON."""
        site = self.site
        api = request.url.path.startswith("/api/")
        try:
            policy = site.config.policy()
        except BadInput as exc:
            return site.problem(request, 500, str(exc))

        def show(led: Ledger, info: Any) -> Response:
            me = asker(request, site.config, led, cookies=not api)
            q = pending(led, policy, me.who)
            if api:
                return Response(json_dumps(q.model_dump(mode="json")),
                                media_type="application/json")
            return site.page(request, "queue.html", {"q": q, "info": info, "me": me})
        return site.reading(request, show)

    def action(self, request: Request) -> Response:
        """The action's decision for the person asking (approval/decision.py): only the
        buttons that can succeed; a decided action is shown as the ledger recorded it."""
        site = self.site
        aid = request.path_params["action_id"]
        try:
            policy = site.config.policy()
        except BadInput as exc:
            return site.problem(request, 500, str(exc))

        def show(led: Ledger, info: Any) -> Response:
            me = asker(request, site.config, led)
            try:
                view = view_action(led, aid, policy, me.who)
                events = store.events(led, aid)
            except BadInput as exc:
                return site.problem(request, 404, str(exc))
            shown = site.config.signer.shown(aid, view.args_hash, view.evidence_digest)
            return site.page(request, "action.html",
                             {"p": view, "events": events, "shown": shown, "info": info,
                              "me": me, "done": request.query_params.get("done")})
        return site.reading(request, show)

    def _person(self, request: Request, led: Ledger, aid: int) -> Identity | Response:
        """The authenticated person, or a refusal row and a page saying how to sign in."""
        me = asker(request, self.site.config, led)
        if me.who is not None:
            return me.who
        record_refusal(led, store.action_row(led, aid), None, [me.why_not or "no person"],
                       now_or_utc(None), stage="authenticate",
                       client=request.client.host if request.client else None)
        return self.site.problem(request, 401, f"refused: {me.why_not}")

    async def approve(self, request: Request) -> Response:
        site = self.site
        aid = request.path_params["action_id"]
        data = await site.posted_form(request)
        if isinstance(data, Response):
            return data
        try:
            policy = site.config.policy()
        except BadInput as exc:  # edited into a broken file while serve runs
            return site.problem(request, 503, f"nothing was approved: the approval policy "
                                              f"cannot be read: {exc}")
        stale = self._stale(request, aid, data.get("shown"), policy)
        if stale is not None:
            return stale

        def act(led: Ledger) -> Response:
            who = self._person(request, led, aid)
            if isinstance(who, Response):
                return who
            current = preview_action(led, aid, policy)
            shown = site.config.signer.read_shown(data.get("shown"))
            if shown is None or (current.args_hash, current.evidence_digest) != shown[1:3]:
                return site.problem(request, 409, "refused: the action or its evidence changed "
                                                  "since the page was shown; reload and review "
                                                  "again")
            return self._decide(request, led, aid, who, policy)
        return await run_in_threadpool(site.writing, request, act)

    def _stale(self, request: Request, aid: int, token: str | None, policy: Any
               ) -> Response | None:
        shown = self.site.config.signer.read_shown(token)
        max_age = policy.approval.expires_after.total_seconds()
        if shown is None or shown[0] != aid:
            return self.site.problem(request, 400, "refused: the form does not say which "
                                                   "preview was shown; reload the action's page")
        age = time.time() - shown[3]
        if age > max_age or age < -60:
            return self.site.problem(request, 409, f"refused: this preview was shown "
                                                   f"{age / 60:.0f} min ago, longer than an "
                                                   f"approval lives ({max_age / 60:.0f} min); "
                                                   "reload and review again")
        return None

    def _decide(self, request: Request, led: Ledger, aid: int, who: Identity,
                policy: Any) -> Response:
        config = self.site.config
        ctx = live_context(store.action_row(led, aid).tool, config.slurm_conf, config.kubeconfig)
        try:
            decision = approve_and_execute(led, aid, who, policy, ctx)
        except GateRefused as exc:
            return self.site.problem(request, 409, f"the gate refused: {exc.reason}")
        log.info("approved_from_web", action=aid, approver=who.person, via=who.via,
                 status=decision.status)
        return RedirectResponse(f"/actions/{aid}?done={decision.status}", status_code=303)

    async def reject(self, request: Request) -> Response:
        site = self.site
        aid = request.path_params["action_id"]
        data = await site.posted_form(request)
        if isinstance(data, Response):
            return data

        def act(led: Ledger) -> Response:
            who = self._person(request, led, aid)
            if isinstance(who, Response):
                return who
            if action_status(led, aid) in ("executed", "failed", "verified", "rejected"):
                return site.problem(request, 409, f"action {aid} is already "
                                                  f"{action_status(led, aid)}")
            try:
                reject_action(led, aid, who, data.get("why", ""))
            except BadInput as exc:
                return site.problem(request, 400, str(exc))
            return RedirectResponse(f"/actions/{aid}?done=rejected", status_code=303)
        return await run_in_threadpool(site.writing, request, act)

    def api_action(self, request: Request) -> Response:
        """JSON: the decision a script shows its person before approving (its args_hash and
        evidence_digest are what POST .../approve binds); a decided action, what ran."""
        site, aid = self.site, request.path_params["action_id"]

        def show(led: Ledger, info: Any) -> Response:
            try:
                view = view_action(led, aid, site.config.policy(),
                                   asker(request, site.config, led, cookies=False).who)
            except BadInput as exc:
                return JSONResponse({"error": str(exc)}, status_code=404)
            return Response(json_dumps(view.model_dump(mode="json")),
                            media_type="application/json")
        return site.reading(request, show)

    async def api_approve(self, request: Request) -> Response:
        """JSON: {"args_hash", "evidence_digest"} of the preview the client showed; the person
        is the Bearer personal token's."""
        site, aid = self.site, request.path_params["action_id"]
        try:
            body = await request.json()
            seen = (str(body["args_hash"]), str(body["evidence_digest"]))
        except (ValueError, KeyError, TypeError):
            return JSONResponse({"error": "a JSON body with args_hash and evidence_digest"},
                                status_code=400)

        def act(led: Ledger) -> Response:
            me = asker(request, site.config, led, cookies=False)
            if me.who is None:
                record_refusal(led, store.action_row(led, aid), None, [me.why_not or "?"],
                               now_or_utc(None), stage="authenticate")
                return JSONResponse({"error": me.why_not}, status_code=401)
            policy = site.config.policy()
            current = preview_action(led, aid, policy)
            if (current.args_hash, current.evidence_digest) != seen:
                return JSONResponse({"error": "the action or its evidence changed"}, 409)
            ctx = live_context(current.tool, site.config.slurm_conf, site.config.kubeconfig)
            try:
                decision = approve_and_execute(led, aid, me.who, policy, ctx)
            except GateRefused as exc:
                return JSONResponse({"refused": exc.reason}, status_code=409)
            return Response(json_dumps(decision.model_dump(mode="json")),
                            media_type="application/json")
        return await run_in_threadpool(site.writing, request, act)


def routes(site: Site) -> list[BaseRoute]:
    pages = ActionPages(site)
    return [
        Route("/actions", pages.queue),
        Route("/api/actions", pages.queue),
        Route("/actions/{action_id:int}", pages.action),
        Route("/actions/{action_id:int}/approve", pages.approve, methods=["POST"]),
        Route("/actions/{action_id:int}/reject", pages.reject, methods=["POST"]),
        Route("/api/actions/{action_id:int}", pages.api_action),
        Route("/api/actions/{action_id:int}/approve", pages.api_approve, methods=["POST"]),
    ]
