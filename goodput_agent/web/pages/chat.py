"""The chat about one investigation: a question posted, answered into the ledger."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from goodput_agent.core.errors import BadInput
from goodput_agent.web.chat import ask as chat_ask
from goodput_agent.web.chat import chat_settings
from goodput_agent.web.security import SESSION_COOKIE
from goodput_agent.web.site import Site


class ChatPages:
    def __init__(self, site: Site) -> None:
        self.site = site

    async def chat(self, request: Request) -> Response:
        site, config = self.site, self.site.config
        inv_id = request.path_params["inv_id"]
        form = await request.form()
        data = {k: str(v) for k, v in form.items() if isinstance(v, str)}
        if not config.signer.csrf_ok(request.cookies.get(SESSION_COOKIE), data.get("csrf")):
            return PlainTextResponse("refused: missing or invalid CSRF token (reload the page)",
                                     status_code=403)
        settings, why_not = chat_settings()
        if settings is None:
            return site.problem(request, 409, f"chat is not configured: {why_not}")

        def talk() -> Response:
            try:
                spent = chat_ask(config.ledger, inv_id, data.get("question", ""), settings,
                                 cwd=config.cwd)
            except BadInput as exc:
                return site.problem(request, 400, str(exc))
            suffix = f"?stopped={spent}" if spent else ""
            return RedirectResponse(f"/inv/{inv_id}{suffix}#chat", status_code=303)
        return await run_in_threadpool(talk)


def routes(site: Site) -> list[BaseRoute]:
    return [Route("/inv/{inv_id}/chat", ChatPages(site).chat, methods=["POST"])]
