"""`goodput node-health`: this host's GPUs as NVML reads them, and the Xids in its kernel log.

Run it on a GPU node (`--json` is what a fixture capture or a script reads). Without an NVIDIA
driver it prints one line, "nvml: no NVIDIA driver here (...)", and exits 2. A kernel
log that cannot be read (no journal, dmesg restricted) is noted, not fatal.
"""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console
from rich.table import Table

from goodput_agent.cli.render import TerminalConsole
from goodput_agent.core.untrusted import json_dumps, json_text, markup, visible
from goodput_agent.metrics.source import TimeWindow
from goodput_agent.parsing.kernel_log import match_xid, norm_pci
from goodput_agent.sources.errors import SourceError
from goodput_agent.sources.nvml import NodeHealth, read_node

MAX_KERNEL_XIDS = 200


def kernel_xids(text: str, health: NodeHealth) -> list[dict[str, Any]]:
    """Xid lines of a kernel log (the project's kernel-log parser decides what is one), with
    the GPU index where the line's PCI address is one of this host's GPUs."""
    by_pci = {norm_pci(g.pci_bus_id): g.index for g in health.gpus if g.pci_bus_id}
    out = []
    for line in text.splitlines():
        if "Xid" not in line or (finding := match_xid(line)) is None:
            continue
        pci = finding.detail.get("pci")
        out.append({"xid": finding.detail.get("xid"), "pci": pci,
                    "gpu_index": by_pci.get(pci), "summary": finding.summary,
                    "line": line.strip()[:400]})
    return out[-MAX_KERNEL_XIDS:]


def add_kernel_xids(health: NodeHealth, window: TimeWindow) -> None:
    from goodput_agent.sources.kernel_log import KernelLog

    try:
        log = KernelLog().read(window)
    except SourceError as exc:
        health.kernel_log_error = str(exc)
        return
    health.kernel_xids = kernel_xids(log.text, health)


def _fmt(value: Any, field: str, gpu: Any) -> str:
    if value is not None:
        return str(value)
    if field in gpu.not_supported:
        return "n/a"
    return "error" if field in gpu.errors else "-"


def render(health: NodeHealth, console: Console) -> None:
    console.print(f"[bold]{markup(health.host)}[/]  driver {markup(health.driver_version or '?')}"
                  f"  NVML {markup(health.nvml_version or '?')}  {len(health.gpus)} GPUs")
    table = Table(show_lines=False)
    for col in ("GPU", "name", "bus id", "temp C", "power W", "SM MHz", "throttle",
                "ECC vol unc/agg unc", "remapped rows", "NVLink up"):
        table.add_column(col)
    for g in health.gpus:
        ecc = "n/a" if "ecc_volatile" in g.not_supported else (
            f"{(g.ecc_volatile or {}).get('uncorrected', '-')}/"
            f"{(g.ecc_aggregate or {}).get('uncorrected', '-')}")
        rows = _fmt(g.remapped_rows and f"{g.remapped_rows['uncorrectable']} unc"
                    + (" PENDING" if g.remapped_rows["pending"] else "")
                    + (" FAILED" if g.remapped_rows["failure"] else ""), "remapped_rows", g)
        links = _fmt(g.nvlinks and f"{sum(1 for x in g.nvlinks if x['active'])}/"
                     f"{len(g.nvlinks)}", "nvlinks", g)
        table.add_row(str(g.index), markup(_fmt(g.name, "name", g)),
                      markup(_fmt(g.pci_bus_id, "pci_bus_id", g)),
                      _fmt(g.temperature_c, "temperature_c", g),
                      _fmt(g.power_w and round(g.power_w), "power_w", g),
                      _fmt(g.sm_clock_mhz, "sm_clock_mhz", g),
                      markup(_fmt(g.throttle_reasons is not None and (
                          ", ".join(g.throttle_reasons) or "none") or None, "throttle_reasons", g)),
                      ecc, rows, links)
    console.print(table)
    for g in health.gpus:
        for p in g.problems:
            console.print(f"[red]GPU {g.index}[/] {markup(p)}")
        for field, err in g.errors.items():
            console.print(f"[yellow]GPU {g.index}[/] {markup(field)}: NVML error {markup(err)}")
    listened = f"listened {health.xid_listen_ms} ms for Xid events: {len(health.xid_events)}"
    console.print(listened + (f" ({markup(health.xid_listen_error)})"
                              if health.xid_listen_error else ""))
    if health.kernel_log_error:
        console.print(f"kernel log not read: {markup(health.kernel_log_error)}")
    for x in health.kernel_xids:
        console.print(f"kernel: {visible(x['line'], newlines=False)}", markup=False,
                      highlight=False)


@click.command("node-health")
@click.option("--json", "as_json", is_flag=True, help="One JSON object (NodeHealth).")
@click.option("--xid-wait", "xid_wait_s", type=click.FloatRange(0, 60), default=0.2,
              show_default=True, help="Seconds to listen for Xid events.")
@click.option("--since", "since_text", default="24h", show_default=True, metavar="WHEN",
              help="Kernel log window searched for Xid lines (6h, or START/END).")
@click.option("--no-kernel-log", is_flag=True, help="Do not read the kernel log.")
@click.option("--prometheus", "prometheus_url", default=None, metavar="URL",
              help="Instead of this host's NVML: DCGM exporter series from this Prometheus "
                   "over --since, for --node (all nodes when none).")
@click.option("--node", "nodes", multiple=True, metavar="NAME",
              help="With --prometheus: a node (DCGM's Hostname label); repeatable.")
def node_health(as_json: bool, xid_wait_s: float, since_text: str, no_kernel_log: bool,
                prometheus_url: str | None, nodes: tuple[str, ...]) -> None:
    """This host's GPUs (NVML): temperature, power, clocks and throttle reasons, ECC, retired
    pages / remapped rows, NVLink, Xid events; and Xid lines from the kernel log. With
    --prometheus: any node's GPUs over a window, from DCGM exporter series."""
    from goodput_agent.core.timespec import looking_back

    window = looking_back(since_text)
    if prometheus_url:
        _dcgm(prometheus_url, window, set(nodes) or None, as_json)
        return
    if nodes:
        raise click.UsageError("--node goes with --prometheus (NVML reads this host only)")
    health = read_node(xid_wait_ms=int(xid_wait_s * 1000))
    if not no_kernel_log:
        add_kernel_xids(health, window)
    if as_json:
        click.echo(json_dumps(health.model_dump(mode="json")))
        return
    render(health, TerminalConsole())


def _dcgm(url: str, window: TimeWindow, nodes: set[str] | None, as_json: bool) -> None:
    from goodput_agent.core.errors import BadInput
    from goodput_agent.metrics.dcgm_health import gpu_health
    from goodput_agent.metrics.prometheus import PrometheusSource

    health = gpu_health(PrometheusSource(url, horizon=window), window, nodes)
    if health.errors and not health.gpus:
        raise BadInput(health.errors[0])
    if as_json:
        click.echo(json_text(health.model_dump_json(indent=2)))
        return
    console = TerminalConsole()
    console.print(f"DCGM from {markup(url)}, {window.start.isoformat()} .. "
                  f"{window.end.isoformat()}: "
                  f"{len(health.gpus)} GPUs", highlight=False)
    table = Table()
    for col in ("node", "GPU", "Xids", "temp max C", "power max W", "SM clock min MHz",
                "problems"):
        table.add_column(col)
    for g in health.gpus:
        v = g.values
        table.add_row(markup(g.host), markup(g.gpu), ", ".join(str(x.xid) for x in g.xids) or "-",
                      f"{v['temp_max']:g}" if "temp_max" in v else "-",
                      f"{v['power_max']:g}" if "power_max" in v else "-",
                      f"{v['sm_clock_min']:g}" if "sm_clock_min" in v else "-",
                      str(len(g.problems)))
    console.print(table)
    for g in health.gpus:
        for p in g.problems:
            console.print(f"[red]{markup(g.host)} GPU {markup(g.gpu)}[/] {markup(p)}",
                          highlight=False)
    for f in health.absent:
        console.print(f"no series: {markup(f)}", highlight=False)
    for e in health.errors:
        console.print(f"[yellow]error:[/] {markup(e)}", highlight=False)
