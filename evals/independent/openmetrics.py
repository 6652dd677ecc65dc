"""OpenMetrics text with timestamps, one family's samples together, `# EOF` at the end."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Family:
    name: str
    kind: str  # histogram | gauge | counter
    rows: list[tuple[str, dict[str, str], float, float]] = field(default_factory=list)

    def add(self, ts: float, labels: dict[str, str], value: float, suffix: str = "") -> None:
        if self.kind == "counter":
            suffix = "_total"
        self.rows.append((suffix, labels, value, ts))

    def observe_hist(self, ts: float, buckets: tuple, counts: list[float], total: float) -> None:
        for le, count in zip((*buckets, "+Inf"), counts, strict=True):
            self.rows.append(("_bucket", {"le": _num(le)}, count, ts))
        self.rows.append(("_sum", {}, total, ts))
        self.rows.append(("_count", {}, counts[-1], ts))


def _num(v: object) -> str:
    return v if isinstance(v, str) else (f"{float(v):g}" if "." in str(v) else f"{v}.0")


def _labels(labels: dict[str, str]) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def render(families: list[Family], common: dict[str, str]) -> str:
    out = []
    for fam in families:
        out.append(f"# TYPE {fam.name} {fam.kind}")
        # series by series, as a TSDB dump writes them
        series: dict[tuple, list[str]] = {}
        for suffix, labels, value, ts in fam.rows:
            key = (suffix, tuple(sorted(labels.items())))
            text = f"{fam.name}{suffix}{_labels(common | labels)} {value:.12g} {ts:.3f}"
            series.setdefault(key, []).append(text)
        for rows in series.values():
            out.extend(rows)
    out.append("# EOF")
    return "\n".join(out) + "\n"
