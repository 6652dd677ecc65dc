"""The fleet page (/fleet): `goodput fleet` over the served ledger for a period, with the drain
proposals already recorded for repeat offenders (each linking to its action page, where the
approval gate previews it). The page only reads: it never proposes.

Exposure (GPU-hours per node) comes from a sacct history the operator names when starting the
server (GOODPUT_FLEET_SACCT); a path from the URL is never read.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from goodput_agent.accounting.fleet import fleet_report
from goodput_agent.accounting.fleet_drain import DRAIN_TOOL, PLANNER
from goodput_agent.core.errors import BadInput
from goodput_agent.core.timespec import looking_back
from goodput_agent.ledger import Ledger
from goodput_agent.ledger.actions import proposals_by

SACCT_ENV = "GOODPUT_FLEET_SACCT"
DEFAULT_SINCE = "30d"

Page = Callable[..., Response]  # (request, template, context, status=200)
Reading = Callable[[Request, Any], Response]


def _proposals(led: Ledger) -> list[dict[str, Any]]:
    return proposals_by(led, PLANNER, DRAIN_TOOL)


def fleet_view(led: Ledger, since_text: str, sacct: Path | None) -> dict[str, Any]:
    since = looking_back(since_text).start
    report = fleet_report(led, since=since, sacct=sacct if sacct and sacct.is_file() else None)
    return {"report": report, "since_text": since_text, "proposals": _proposals(led),
            "sacct_missing": bool(sacct and not sacct.is_file())}


def fleet_route(page: Page, reading: Reading) -> Route:
    def fleet(request: Request) -> Response:
        since_text = request.query_params.get("since") or DEFAULT_SINCE
        sacct = Path(os.environ[SACCT_ENV]) if os.environ.get(SACCT_ENV) else None

        def show(led: Ledger, info: Any) -> Response:
            try:
                view = fleet_view(led, since_text, sacct)
            except BadInput as exc:
                return page(request, "problem.html", {"message": str(exc), "status": 400}, 400)
            return page(request, "fleet.html", {**view, "info": info})
        return reading(request, show)

    return Route("/fleet", fleet)
