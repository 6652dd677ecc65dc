"""GPU clock throttling from DCGM series: clock-event (throttle) reasons and SM clock drops,
per GPU (Hostname + gpu labels). Bit values are NVML's nvmlClocksEventReasons (formerly
nvmlClocksThrottleReasons); GPU idle and application clock settings are not throttling."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, Field

from goodput_agent.events import Clock, Event, EventKind, Locator, Role
from goodput_agent.parsing.openmetrics import Series

REASON_METRICS = ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")
SM_CLOCK = "DCGM_FI_DEV_SM_CLOCK"
THROTTLE_BITS = {0x4: "SwPowerCap", 0x8: "HwSlowdown", 0x20: "SwThermalSlowdown",
                 0x40: "HwThermalSlowdown", 0x80: "HwPowerBrakeSlowdown"}
CLOCK_DROP = 0.85  # an SM clock below this share of the GPU's own peak (or its peers') is low
_HOST_LABELS = ("Hostname", "hostname", "node", "kubernetes_node", "instance")


class ThrottleFinding(BaseModel):
    node: str | None
    gpu: str | None
    reasons: list[str] = Field(default_factory=list)
    clock_ratio: float | None = None  # low SM clock / peak
    first: datetime | None = None
    last: datetime | None = None
    evidence: list[Event] = Field(default_factory=list)

    @property
    def throttled(self) -> bool:
        low_clock = self.clock_ratio is not None and self.clock_ratio < CLOCK_DROP
        return bool(self.reasons) or low_clock


def _key(s: Series) -> tuple[str | None, str | None]:
    node = next((s.labels[k].split(":")[0] for k in _HOST_LABELS if s.labels.get(k)), None)
    return node, s.labels.get("gpu")


def _when(t: float) -> datetime:
    return datetime.fromtimestamp(t, UTC)


def _evidence(s: Series, path: str, text: str, t0: float, t1: float) -> Event:
    label = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items())
                     if k in ("Hostname", "gpu", "UUID"))
    span = f"{s.name}{{{label}}} {_when(t0):%H:%M:%S}-{_when(t1):%H:%M:%S} UTC: {text}"
    return Event(kind=EventKind.metric_series, role=Role.primary, category="gpu_throttling",
                 ts=_when(t0), clock=Clock.absolute, node=_key(s)[0], gpu=_key(s)[1],
                 summary=f"{s.name} on {_key(s)[0]} GPU {_key(s)[1]}: {text}",
                 locator=Locator(path=path, line_start=0, line_end=0, span=span), excerpt=span)


def throttle_findings(series: list[Series], origin: dict[int, str] | None = None,
                      default_path: str = "metrics") -> list[ThrottleFinding]:
    """One finding per GPU that has clock metrics; `origin` maps id(series) to its file."""
    found: dict[tuple[str | None, str | None], ThrottleFinding] = {}
    clocks: dict[tuple[str | None, str | None], Series] = {}
    for s in series:
        key = _key(s)
        f = found.setdefault(key, ThrottleFinding(node=key[0], gpu=key[1]))
        path = (origin or {}).get(id(s), default_path)
        if s.name in REASON_METRICS:
            hits = [(t, int(v)) for t, v in s.points if int(v) & sum(THROTTLE_BITS)]
            if hits:
                bits = 0
                for _, v in hits:
                    bits |= v
                f.reasons = sorted({n for b, n in THROTTLE_BITS.items() if bits & b})
                f.first, f.last = _when(hits[0][0]), _when(hits[-1][0])
                f.evidence.append(_evidence(s, path, f"reasons {hex(bits)} "
                                            f"({', '.join(f.reasons)}) in {len(hits)} samples",
                                            hits[0][0], hits[-1][0]))
        elif s.name == SM_CLOCK and s.points:
            clocks[key] = s
    peers = sorted(max(v for _, v in s.points) for s in clocks.values())
    fleet_peak = peers[len(peers) // 2] if peers else 0.0
    for key, s in clocks.items():
        values = sorted(v for _, v in s.points)
        peak = max(values[-1], fleet_peak)
        low = values[len(values) // 4]  # the lower quartile: sustained, not one sample
        if peak <= 0:
            continue
        f = found[key]
        f.clock_ratio = low / peak
        if f.clock_ratio < CLOCK_DROP:
            lows = [t for t, v in s.points if v <= low]
            f.evidence.append(_evidence(s, (origin or {}).get(id(s), default_path),
                                        f"SM clock {low:.0f} MHz vs peak {peak:.0f} MHz",
                                        lows[0], lows[-1]))
    return [f for f in found.values() if f.evidence or f.clock_ratio is not None]
