"""`goodput serve`: review investigations in a browser; `goodput failure-timeline`: the same
rank/node timeline picture as an SVG file."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from goodput_agent.cli.options import ledger_option, with_options
from goodput_agent.core.errors import BadInput


def _ledger(path: Path | None) -> Path:
    from goodput_agent.ledger import default_ledger_path

    return (path or default_ledger_path()).expanduser()


def read_secret(path: Path | None) -> str | None:
    from goodput_agent.watch.sources import read_token

    return read_token(path)


def _networks(cidrs: tuple[str, ...]) -> list[str]:
    import ipaddress

    for c in cidrs:
        try:
            ipaddress.ip_network(c, strict=False)
        except ValueError:
            raise BadInput(f"--trusted-proxy {c}: not an address or CIDR") from None
    return list(cidrs)


# what the review pages are told, beside where they listen: shared by `serve` and `watch --serve`
page_options = [
    click.option("--policy", "policy_path", type=click.Path(path_type=Path), default=None,
                 help="Approval policy YAML (default: $GOODPUT_POLICY, else the shipped one)."),
    click.option("--token-file", type=click.Path(path_type=Path), default=None,
                 help="File holding the shared access token (default: $GOODPUT_SERVE_TOKEN); "
                      "required beyond loopback. It lets a client read, not approve."),
    click.option("--proxy-secret-file", type=click.Path(path_type=Path), default=None,
                 help="Trust the sign-on proxy's user headers on requests carrying this "
                      "secret in X-Goodput-Proxy-Secret."),
    click.option("--trusted-proxy", "trusted_proxies", multiple=True, metavar="CIDR",
                 help="Trust the sign-on proxy's user headers from these addresses "
                      "(repeatable)."),
    click.option("--proxy-user-header", default="X-Forwarded-User", show_default=True),
    click.option("--proxy-groups-header", default="X-Forwarded-Groups", show_default=True),
]


def serve_config(ledger: Path, host: str, flags: dict[str, Any], slurm_conf: Path | None,
                 kubeconfig: Path | None) -> Any:
    """The pages' configuration from page_options' flags; BadInput on a broken one."""
    from goodput_agent.approval.policy import load_policy
    from goodput_agent.web.app import ServeConfig
    from goodput_agent.web.security import configured_token, require_token_for

    token = configured_token(flags.pop("token_file"))
    require_token_for(host, token)
    env = os.environ.get("GOODPUT_POLICY")
    policy = flags.pop("policy_path") or (Path(env) if env else None)
    load_policy(policy)  # a broken policy is one line now, not an error on the first click
    return ServeConfig(
        ledger=ledger, host=host, token=token, policy_path=policy,
        proxy_secret=read_secret(flags.pop("proxy_secret_file")),
        trusted_proxies=_networks(flags.pop("trusted_proxies")),
        proxy_user_header=flags.pop("proxy_user_header"),
        proxy_groups_header=flags.pop("proxy_groups_header"),
        slurm_conf=slurm_conf, kubeconfig=kubeconfig)


def start_pages(config: Any, port: int) -> Callable[[], None]:
    """The review pages in a thread of this process (`watch --serve`: they read through the
    watch's own sessions); returns what stops them."""
    import threading

    import uvicorn

    from goodput_agent.web.app import create_app

    server = uvicorn.Server(uvicorn.Config(create_app(config), host=config.host, port=port,
                                           log_level="warning", server_header=False))
    server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
    thread = threading.Thread(target=server.run, name="pages", daemon=True)
    thread.start()

    def stop() -> None:
        server.should_exit = True
        thread.join(timeout=10)
    return stop


@click.command("serve")
@ledger_option
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; anything but loopback needs an access token.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(1, 65535))
@with_options(page_options)
@click.option("--slurm-conf", type=click.Path(path_type=Path), default=None,
              help="slurm.conf of the cluster approved actions act on (default: $SLURM_CONF).")
@click.option("--kubeconfig", type=click.Path(path_type=Path), default=None,
              help="kubeconfig of the cluster approved actions act on (default: $KUBECONFIG).")
def serve_cmd(ledger_path: Path | None, host: str, port: int, slurm_conf: Path | None,
              kubeconfig: Path | None, **flags: Any) -> None:
    """Serve the review pages: investigations, evidence in context, pictures, and approvals by
    people the server authenticated (personal tokens, or a sign-on proxy in front)."""
    import uvicorn

    from goodput_agent.core.arenas import cap_malloc_arenas
    from goodput_agent.web.app import create_app

    cap_malloc_arenas()  # a long-running server whose request threads come and go
    ledger = _ledger(ledger_path)
    # who may reach the pages is checked first: it is wrong whatever the ledger holds
    config = serve_config(ledger, host, flags, slurm_conf, kubeconfig)
    if not ledger.is_file():
        raise BadInput(f"{ledger}: no ledger here (run `goodput investigate` first, or --ledger)")
    shown = "localhost" if host in ("127.0.0.1", "::1") else host
    click.echo(f"goodput: serving {ledger} on http://{shown}:{port}/"
               + (" (token required)" if config.token else ""), err=True)
    uvicorn.run(create_app(config), host=host, port=port, log_level="warning",
                server_header=False)


@click.command("failure-timeline")
@click.argument("investigation_id", required=False)
@ledger_option
@click.option("-o", "--output", "out", type=click.Path(path_type=Path), required=True,
              help="SVG file to write.")
@click.option("--json", "as_json", is_flag=True,
              help="Print what was drawn as JSON (the file and each entry) for scripts.")
def failure_timeline_cmd(investigation_id: str | None, ledger_path: Path | None,
                         out: Path, as_json: bool) -> None:
    """Every rank's first error of a failure on one clock (the latest investigation by default)."""
    from goodput_agent.ledger.reader import read_ledger
    from goodput_agent.pictures.failure_timeline import draw_failure_timeline
    from goodput_agent.web.views import report_of

    with read_ledger(_ledger(ledger_path)) as (led, _):
        inv_id = investigation_id or led.latest_investigation_id()
        if inv_id is None:
            raise BadInput(f"{led.path}: no investigations")
        rec = led.investigation(inv_id)
        if rec is None:
            raise BadInput(f"{led.path}: no investigation {inv_id}")
        report = report_of(rec.conclusion)
    if report is None or report.kind != "failure":
        raise BadInput(f"{inv_id}: not a concluded failure investigation")
    written = draw_failure_timeline(report, out)
    if written is None:
        raise BadInput(f"{inv_id}: no failure event has a time; nothing to draw")
    if as_json:
        from goodput_agent.core.untrusted import json_dumps

        click.echo(json_dumps({"investigation_id": inv_id, "svg": str(written.resolve()),
                               "entries": [e.model_dump(mode="json") for e in report.timeline],
                               "left_out": report.timeline_left_out}))
        return
    click.echo(str(written))
