"""incident.yaml: the question a bundle comes with (optional)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from goodput_agent.core.errors import BadInput


class Window(BaseModel):
    start: datetime
    end: datetime

    @model_validator(mode="after")
    def _ordered(self) -> Window:
        if self.start.tzinfo is None and self.end.tzinfo is not None or \
                self.start.tzinfo is not None and self.end.tzinfo is None:
            raise ValueError("start and end must both carry a zone, or neither")
        if self.end < self.start:
            raise ValueError("end is before start")
        return self


class IncidentSpec(BaseModel):
    model_config = ConfigDict(extra="ignore")  # unknown keys are not carried into reports

    question: str | None = None
    job: str | None = None
    service: str | None = None  # the latency question: the model/service asked about
    window: Window | None = None
    timezone: str | None = None
    kind: str | None = None
    baseline: Window | str | None = None
    incident: Window | str | None = None

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, v: str | None) -> str | None:
        if v is not None and v.upper() != "UTC":
            try:
                ZoneInfo(v)
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(f"unknown time zone {v!r} (use an IANA name such as "
                                 "America/Chicago)") from None
        return v

    @model_validator(mode="after")
    def _windows_in_the_zone(self) -> IncidentSpec:
        """Window times without a zone are in the bundle's zone, as every zoneless time is."""
        zone = UTC if not self.timezone or self.timezone.upper() == "UTC" else \
            ZoneInfo(self.timezone)
        for name in ("window", "baseline", "incident"):
            w = getattr(self, name)
            if isinstance(w, Window) and w.start.tzinfo is None:
                setattr(self, name, Window(start=w.start.replace(tzinfo=zone),
                                           end=w.end.replace(tzinfo=zone)))
        return self

    @field_validator("job", mode="before")
    @classmethod
    def _job_as_text(cls, v: object) -> object:
        return str(v) if isinstance(v, int) else v


def load_incident(path: Path, rel: str) -> IncidentSpec:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8", errors="replace")) or {}
    except OSError as exc:
        raise BadInput(f"{rel}: cannot read: {exc.strerror}") from None
    except RecursionError:
        raise BadInput(f"{rel}: YAML nests too deeply (a self-referencing anchor?)") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise BadInput(f"{rel}:{where.strip() or 'parse'}: not valid YAML") from None
    if not isinstance(data, dict):
        raise BadInput(f"{rel}: expected a mapping at the top level")
    try:
        return IncidentSpec.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        msg = str(first['msg']).removeprefix('Value error, ')
        raise BadInput(f"{rel}: field '{field}': {msg}") from None
