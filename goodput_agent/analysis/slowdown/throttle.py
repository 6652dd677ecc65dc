"""GPU clock throttling from DCGM series, per GPU (the Hostname and gpu labels).

Two signs, either one enough:
- the clock-event reason bitmask (`DCGM_FI_DEV_CLOCKS_EVENT_REASONS`, formerly
  `DCGM_FI_DEV_CLOCK_THROTTLE_REASONS`) has a throttling bit set. Bit values are NVML's
  nvmlClocksEventReasons (formerly nvmlClocksThrottleReasons): SwPowerCap 0x4, HwSlowdown 0x8,
  SwThermalSlowdown 0x20, HwThermalSlowdown 0x40 and HwPowerBrakeSlowdown 0x80 throttle; GpuIdle
  0x1, ApplicationsClocksSetting 0x2, SyncBoost 0x10 and DisplayClockSetting 0x100 are named
  but are not throttling.
- the SM clock (`DCGM_FI_DEV_SM_CLOCK`) stays below `CLOCK_DROP` of the reference clock for at
  least `MIN_LOW_SAMPLES` samples. The reference is the higher of the GPU's own usual clock
  (90th percentile of its busy samples) and the median of its peers' (every other GPU in the
  series), so a GPU slow over the whole window is still seen against its peers. Samples taken
  while the GPU idles (reason GpuIdle without a throttling bit, or, with no reason series, a
  clock under `IDLE_CLOCK` of the reference) are not counted: idle clocks are low by design.
Power (`DCGM_FI_DEV_POWER_USAGE`) and temperature (`DCGM_FI_DEV_GPU_TEMP`) over the throttled
stretch are cited beside it.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Mapping
from datetime import UTC, datetime

from pydantic import BaseModel, Field

from goodput_agent.core.events import Clock, Event, EventKind, Locator, Role
from goodput_agent.parsing.openmetrics import Series

REASON_METRICS = ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")
SM_CLOCK = "DCGM_FI_DEV_SM_CLOCK"
POWER = "DCGM_FI_DEV_POWER_USAGE"
TEMP = "DCGM_FI_DEV_GPU_TEMP"
METRICS = frozenset({*REASON_METRICS, SM_CLOCK, POWER, TEMP})
REASON_BITS = {0x1: "GpuIdle", 0x2: "ApplicationsClocksSetting", 0x4: "SwPowerCap",
               0x8: "HwSlowdown", 0x10: "SyncBoost", 0x20: "SwThermalSlowdown",
               0x40: "HwThermalSlowdown", 0x80: "HwPowerBrakeSlowdown",
               0x100: "DisplayClockSetting"}
THROTTLE_MASK = 0x4 | 0x8 | 0x20 | 0x40 | 0x80
GPU_IDLE = 0x1
CLOCK_DROP = 0.85  # an SM clock under this share of the reference is low
IDLE_CLOCK = 0.25  # without reasons, a clock under this share of the reference is idling
MIN_LOW_SAMPLES = 2
# how sure a throttled GPU is as the cause, by the signs that it costs step time (the trace
# path: candidates.throttle_candidates; a training log's: log_clocks.py)
WITH_TWO_SIGNS, WITH_ONE_SIGN, NO_SIGN = 0.9, 0.8, 0.45
_HOST_LABELS = ("Hostname", "hostname", "node", "kubernetes_node", "instance")

Key = tuple[str | None, str | None]


class ThrottleFinding(BaseModel):
    node: str | None
    gpu: str | None
    reasons: list[str] = Field(default_factory=list)  # throttling reasons seen
    other_reasons: list[str] = Field(default_factory=list)  # reasons that do not throttle
    clock_ratio: float | None = None  # the low SM clock / the reference clock
    reference_mhz: float | None = None
    low_mhz: float | None = None
    first: datetime | None = None  # the throttled stretch
    last: datetime | None = None
    max_temp_c: float | None = None  # over the stretch
    power_w: float | None = None  # median over the stretch
    evidence: list[Event] = Field(default_factory=list)

    @property
    def throttled(self) -> bool:
        return bool(self.reasons) or (self.clock_ratio is not None
                                      and self.clock_ratio < CLOCK_DROP)

    def describe(self) -> str:
        why = ", ".join(self.reasons) if self.reasons else "no throttle reason reported"
        if self.clock_ratio is not None and self.clock_ratio < CLOCK_DROP:
            why += (f"; SM clock {self.reference_mhz:.0f} -> {self.low_mhz:.0f} MHz "
                    f"({self.clock_ratio:.0%})")
        if self.max_temp_c is not None:
            why += f"; up to {self.max_temp_c:.0f} C"
        return why


def key_of(s: Series) -> Key:
    node = next((s.labels[k].split(":")[0] for k in _HOST_LABELS if s.labels.get(k)), None)
    return node, s.labels.get("gpu")


def _when(t: float) -> datetime:
    return datetime.fromtimestamp(t, UTC)


def _names(bits: int) -> list[str]:
    return [n for b, n in REASON_BITS.items() if bits & b]


def _evidence(s: Series, path: str, text: str, t0: float, t1: float) -> Event:
    node, gpu = key_of(s)
    label = ",".join(f"{k}={s.labels[k]}" for k in ("Hostname", "gpu") if k in s.labels)
    span = f"{s.name}{{{label}}} {_when(t0):%H:%M:%S}-{_when(t1):%H:%M:%S} UTC: {text}"
    return Event(kind=EventKind.metric_series, role=Role.primary, category="gpu_throttling",
                 ts=_when(t0), clock=Clock.absolute, node=node, gpu=gpu,
                 summary=f"{s.name} on {node} GPU {gpu}: {text}",
                 locator=Locator(path=path, line_start=0, line_end=0, span=span), excerpt=span)


def _high(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]


def _idle_at(reasons: Series | None) -> set[float]:
    if reasons is None:
        return set()
    return {t for t, v in reasons.points if int(v) & GPU_IDLE and not int(v) & THROTTLE_MASK}


def _within(s: Series | None, t0: float, t1: float) -> list[float]:
    return [v for t, v in s.points if t0 <= t <= t1] if s is not None else []


def throttle_findings(series: list[Series], paths: Mapping[str, str] | None = None,
                      default_path: str = "metrics") -> list[ThrottleFinding]:
    """One finding per GPU with clock or reason series; `paths` maps a metric name to the file
    it was read from (for the evidence locators)."""
    by_gpu: dict[Key, dict[str, Series]] = defaultdict(dict)
    for s in series:
        if s.name in METRICS and s.points:
            name = REASON_METRICS[0] if s.name in REASON_METRICS else s.name
            by_gpu[key_of(s)].setdefault(name, s)

    def where(s: Series) -> str:
        return (paths or {}).get(s.name, default_path)

    busy_high: dict[Key, float] = {}
    for key, m in by_gpu.items():
        clock = m.get(SM_CLOCK)
        if clock is not None:
            idle = _idle_at(m.get(REASON_METRICS[0]))
            values = [v for t, v in clock.points if t not in idle]
            if values:
                busy_high[key] = _high(values)
    out = []
    for key, m in by_gpu.items():
        f = ThrottleFinding(node=key[0], gpu=key[1])
        stretch: list[float] = []
        reasons = m.get(REASON_METRICS[0])
        if reasons is not None:
            seen = 0
            hits = []
            for t, v in reasons.points:
                seen |= int(v)
                if int(v) & THROTTLE_MASK:
                    hits.append(t)
            f.reasons = _names(seen & THROTTLE_MASK)
            f.other_reasons = _names(seen & ~THROTTLE_MASK)
            if hits:
                stretch += hits
                text = (f"{hex(seen & THROTTLE_MASK)} ({', '.join(f.reasons)}) in {len(hits)} "
                        f"of {len(reasons.points)} samples")
                f.evidence.append(_evidence(reasons, where(reasons), text, hits[0], hits[-1]))
        clock = m.get(SM_CLOCK)
        if clock is not None and key in busy_high:
            peers = [v for k, v in busy_high.items() if k != key]
            ref = max(busy_high[key], statistics.median(peers) if peers else 0.0)
            idle = _idle_at(reasons)
            low = [(t, v) for t, v in clock.points if t not in idle and v < CLOCK_DROP * ref
                   and (reasons is not None or v >= IDLE_CLOCK * ref)]
            if ref > 0:
                f.reference_mhz = ref
                if len(low) >= min(MIN_LOW_SAMPLES, len(clock.points)) and low:
                    f.low_mhz = statistics.median(v for _, v in low)
                    f.clock_ratio = f.low_mhz / ref
                    stretch += [t for t, _ in low]
                    f.evidence.append(_evidence(
                        clock, where(clock), f"{ref:.0f} -> {f.low_mhz:.0f} MHz "
                        f"({f.clock_ratio:.0%}) in {len(low)} of {len(clock.points)} samples",
                        low[0][0], low[-1][0]))
                else:
                    f.clock_ratio = 1.0
        if stretch and f.throttled:
            t0, t1 = min(stretch), max(stretch)
            f.first, f.last = _when(t0), _when(t1)
            temps, power = _within(m.get(TEMP), t0, t1), _within(m.get(POWER), t0, t1)
            if temps:
                f.max_temp_c = max(temps)
                f.evidence.append(_evidence(m[TEMP], where(m[TEMP]),
                                            f"up to {f.max_temp_c:.0f} C", t0, t1))
            if power:
                f.power_w = statistics.median(power)
                f.evidence.append(_evidence(m[POWER], where(m[POWER]),
                                            f"median {f.power_w:.0f} W", t0, t1))
        out.append(f)
    return out
