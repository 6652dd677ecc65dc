"""A latency report's own section in the terminal: the two windows compared, each number on its
own (percentiles of phases don't add), and the configuration that changed between them."""

from __future__ import annotations

from datetime import UTC, datetime

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from goodput_agent.core.untrusted import markup, visible


def _clock(iso: str | None) -> str:
    if not iso:
        return "—"
    try:
        return datetime.fromisoformat(iso).astimezone(UTC).strftime("%m-%d %H:%M:%S.%f")[:-3]
    except ValueError:
        return iso[:23]


_LATENCY_ROWS = (("e2e", "s"), ("queue", "s"), ("prefill", "s"), ("decode", "s"), ("ttft", "s"),
                 ("itl", "s"), ("prompt_tokens", "tok"), ("output_tokens", "tok"))
_LATENCY_SCALARS = (("request_rate", "req/s"), ("running_mean", "running"),
                    ("waiting_mean", "waiting"), ("kv_usage_mean", "KV cache used"),
                    ("kv_usage_max", "KV cache peak"), ("preemption_rate", "preemptions/s"),
                    ("gpu_util_mean", "GPU util (context only)"))


def _num(v: object, unit: str = "") -> str:
    if not isinstance(v, int | float):
        return "—"
    if unit == "s":
        return f"{v * 1000:.0f} ms" if v < 1 else f"{v:.2f} s"
    return f"{v:.0f}" if unit == "tok" else f"{v:.3g}"


def render_latency(lat: dict, console: Console) -> None:
    """The two windows compared, each number on its own (percentiles of phases don't add)."""
    w = lat.get("windows") or {}
    b, i = lat.get("baseline") or {}, lat.get("incident") or {}
    if not (b or i):
        return  # nothing was measured: the notes say why
    if w:
        console.print(Text.assemble(("Windows", "bold"), f" ({visible(w.get('how'))}, UTC): "
                                    f"baseline {_clock(w['baseline']['start'])}–"
                                    f"{_clock(w['baseline']['end'])}, incident "
                                    f"{_clock(w['incident']['start'])}–"
                                    f"{_clock(w['incident']['end'])}"))
    t = Table(title="Baseline vs incident", box=box.SIMPLE_HEAD, show_edge=False,
              pad_edge=False, title_justify="left")
    for col in ("metric", "baseline", "incident", "x"):
        t.add_column(col, justify="left" if col == "metric" else "right")
    for key, unit in _LATENCY_ROWS:
        for q in ("p50", "p90", "p99"):
            vb, vi = (b.get(key) or {}).get(q), (i.get(key) or {}).get(q)
            if vb is None and vi is None:
                continue
            ratio = f"{vi / vb:.2f}" if isinstance(vb, float) and vb and vi is not None else "—"
            t.add_row(f"{key} {q}", _num(vb, unit), _num(vi, unit), ratio)
    for key, label in _LATENCY_SCALARS:
        vb, vi = b.get(key), i.get(key)
        if vb is None and vi is None:
            continue
        ratio = f"{vi / vb:.2f}" if isinstance(vb, float) and vb and vi is not None else "—"
        t.add_row(label, _num(vb), _num(vi), ratio)
    console.print(t)
    for c in lat.get("config_diff") or []:
        console.print(f"config {markup(c['key'])}: {markup(str(c['baseline']))} -> "
                      f"{markup(str(c['incident']))} ({markup(c['source'])})")
