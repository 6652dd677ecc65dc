"""Settings of the Claude planner: model, endpoint, budgets, retries and prices.

Precedence, lowest first: defaults < config file (`$GOODPUT_CONFIG`, else
`~/.config/goodput/config.yaml`, section `claude:`) < environment (ANTHROPIC_API_KEY,
ANTHROPIC_BASE_URL, GOODPUT_MODEL) < command-line flags.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, Field, ValidationError

from goodput_agent.core.errors import BadInput

DEFAULT_MODEL = "claude-sonnet-4-5"


class Budgets(BaseModel):
    """Per investigation (or per chat answer). Hitting one ends the run with a partial report."""

    max_turns: int = Field(default=24, ge=1)
    max_tool_calls: int = Field(default=40, ge=1)
    max_input_tokens: int = Field(default=600_000, ge=1)
    max_output_tokens: int = Field(default=40_000, ge=1)
    max_wall_s: float = Field(default=600.0, gt=0)


class RetryPolicy(BaseModel):
    attempts: int = Field(default=5, ge=1)
    initial_s: float = Field(default=1.0, ge=0)
    max_s: float = Field(default=60.0, ge=0)
    jitter_s: float = Field(default=1.0, ge=0)
    retry_after_cap_s: float = Field(default=120.0, ge=0)


class Price(BaseModel):
    """US dollars per million tokens."""

    input: float
    output: float
    cache_write: float | None = None  # default 1.25 x input (5-minute cache)
    cache_read: float | None = None  # default 0.1 x input


# list prices per model family (prefix match, longest first); the config file may override
DEFAULT_PRICES: dict[str, Price] = {
    "claude-opus-4-5": Price(input=5.0, output=25.0),
    "claude-opus-4": Price(input=15.0, output=75.0),
    "claude-sonnet-4": Price(input=3.0, output=15.0),
    "claude-3-7-sonnet": Price(input=3.0, output=15.0),
    "claude-haiku-4": Price(input=1.0, output=5.0),
    "claude-3-5-haiku": Price(input=0.8, output=4.0),
}


class ClaudeSettings(BaseModel):
    model: str = DEFAULT_MODEL
    base_url: str | None = None
    api_key: str | None = Field(default=None, repr=False)
    max_tokens_per_turn: int = Field(default=4096, ge=1)
    request_timeout_s: float = Field(default=120.0, gt=0)
    budgets: Budgets = Field(default_factory=Budgets)
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    # a tool result shown to the model is cut to about this many characters
    result_chars: int = Field(default=6000, ge=500)
    # history is compacted once a request's input nears this many tokens
    context_tokens: int = Field(default=150_000, ge=1000)
    repair_attempts: int = Field(default=2, ge=0)
    prices: dict[str, Price] = Field(default_factory=dict)

    def price(self) -> Price | None:
        table = {**DEFAULT_PRICES, **self.prices}
        for prefix in sorted(table, key=len, reverse=True):
            if self.model.startswith(prefix):
                return table[prefix]
        return None

    def cost_usd(self, input_tokens: int, output_tokens: int, cache_write: int,
                 cache_read: int) -> float | None:
        p = self.price()
        if p is None:
            return None
        cw = p.cache_write if p.cache_write is not None else p.input * 1.25
        cr = p.cache_read if p.cache_read is not None else p.input * 0.1
        return (input_tokens * p.input + output_tokens * p.output + cache_write * cw
                + cache_read * cr) / 1e6


def config_path() -> Path:
    env = os.environ.get("GOODPUT_CONFIG")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "goodput" / "config.yaml"


def _file_settings(path: Path, name: str = "claude") -> dict[str, Any]:
    if not path.is_file():
        if os.environ.get("GOODPUT_CONFIG"):
            raise BadInput(f"{path}: GOODPUT_CONFIG names a file that does not exist")
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise BadInput(f"{path}:{where} not valid YAML") from None
    if not isinstance(data, dict):
        raise BadInput(f"{path}: expected a mapping at the top")
    section = data.get(name, {})
    if not isinstance(section, dict):
        raise BadInput(f"{path}: `{name}:` must be a mapping")
    return section


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` wins where it says something; None (a flag not given) says nothing."""
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict):
            out[k] = _merge(out[k] if isinstance(out.get(k), dict) else {}, v)
        elif v is not None:
            out[k] = v
    return out


def load_settings(overrides: dict[str, Any] | None = None,
                  path: Path | None = None) -> ClaudeSettings:
    """Defaults, then the config file, then the environment, then `overrides` (flags)."""
    where = path or config_path()
    data = _file_settings(where)
    env = {"api_key": os.environ.get("ANTHROPIC_API_KEY") or None,
           "base_url": os.environ.get("ANTHROPIC_BASE_URL") or None,
           "model": os.environ.get("GOODPUT_MODEL") or None}
    return validated(ClaudeSettings, _merge(_merge(data, env), overrides or {}), where, "claude")


S = TypeVar("S", bound=BaseModel)


def validated(model: type[S], data: dict[str, Any], where: Path, name: str) -> S:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        raise BadInput(f"{where}: {name}.{loc}: {err['msg']}") from None


def require_key(settings: ClaudeSettings) -> None:
    if not settings.api_key:
        raise BadInput("the Claude planner needs an Anthropic API key (ANTHROPIC_API_KEY, or "
                       f"claude.api_key in {config_path()}); without one use the offline "
                       "planner (--planner offline, the default)")
