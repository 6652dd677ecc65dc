"""The account page: where the GPU-hours of an investigation's job went (`goodput account`,
read-only: causes come from the ledger, nothing is investigated from a page).

The job's bundle is the investigation's target, or, for the investigation of one attempt, the
bundle the attempt was cut from (its incident.yaml names it: account_of).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from goodput_agent.accounting.account import AccountOptions, account_bundle
from goodput_agent.accounting.model import JobAccount
from goodput_agent.core.errors import BadInput
from goodput_agent.ledger import Ledger
from goodput_agent.pictures.account_attempts import LABELS, draw_account

Page = Callable[[Request, str, dict[str, Any]], Response]
Reading = Callable[[Request, Callable[[Ledger, Any], Response]], Response]


def job_bundle(target: str) -> Path | None:
    """The job's bundle behind an investigation's target, when it is a bundle folder."""
    path = Path(target)
    if not path.is_dir():
        return None
    spec = path / "incident.yaml"
    try:
        data = yaml.safe_load(spec.read_text()) if spec.is_file() else None
    except (OSError, yaml.YAMLError):
        data = None
    if isinstance(data, dict) and isinstance(data.get("account_of"), str):
        origin = Path(data["account_of"])  # a folder, or the .tar.gz it was given as
        return origin if origin.exists() else None
    return path


def job_account(ledger: Ledger, inv_id: str) -> JobAccount:
    rec = ledger.investigation(inv_id)
    if rec is None:
        raise BadInput(f"no investigation {inv_id}")
    target = str(rec.investigation.get("target") or "")
    bundle = job_bundle(target)
    if bundle is None:
        raise BadInput(f"{target}: not a job's bundle on this machine: nothing to account")
    return account_bundle(bundle, ledger, AccountOptions(investigate=False))


def account_routes(page: Page, reading: Reading, svg_csp: str) -> list[Route]:
    """The page and its picture; a target that is not a job's bundle is BadInput, which
    `reading` shows as a 404 page."""
    def account(request: Request) -> Response:
        inv_id = request.path_params["inv_id"]

        def show(led: Ledger, info: Any) -> Response:
            acct = job_account(led, inv_id)
            return page(request, "account.html", {"acct": acct, "inv_id": inv_id, "info": info,
                                                  "labels": LABELS})
        return reading(request, show)

    def picture(request: Request) -> Response:
        inv_id = request.path_params["inv_id"]

        def send(led: Ledger, info: Any) -> Response:
            acct = job_account(led, inv_id)
            with tempfile.TemporaryDirectory(prefix="goodput-account-") as d:
                body = draw_account(acct, Path(d) / "account.svg").read_bytes()
            return Response(body, media_type="image/svg+xml",
                            headers={"Content-Security-Policy": svg_csp})
        return reading(request, send)

    return [Route("/inv/{inv_id}/account", account),
            Route("/inv/{inv_id}/account.svg", picture)]
