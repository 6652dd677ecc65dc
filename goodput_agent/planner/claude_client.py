"""The Messages API, called through the anthropic SDK with one retry policy (tenacity): 429, 529,
5xx and connection errors are retried with exponential backoff and jitter, honoring
`retry-after`; 4xx input errors are not. The SDK's own retries are off (max_retries=0).

With a deadline (the investigation's wall-time budget), each attempt's timeout is the smaller of
the per-call cap and the time left, no backoff sleeps past it, and an attempt the deadline cuts
raises DeadlineReached instead of being retried."""

from __future__ import annotations

import functools
import importlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anthropic
import structlog
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from goodput_agent.planner.claude_config import ClaudeSettings

log = structlog.get_logger(__name__)


@dataclass
class Turn:
    """One model answer and what it cost."""

    content: list[dict[str, Any]]
    stop_reason: str | None
    request_id: str | None
    input_tokens: int
    output_tokens: int
    cache_creation_tokens: int
    cache_read_tokens: int
    duration_ms: float


# error types the API sends inside a stream that has already answered 200
RETRYABLE_TYPES = frozenset({"overloaded_error", "api_error", "rate_limit_error"})


# A read that times out inside a stream that already answered 200 reaches us as the HTTP
# library's own exception, not the SDK's APITimeoutError. That library is the SDK's choice (httpx,
# then httpx2 in anthropic 2.x), so it is found through the class the SDK's public HTTP client
# extends instead of being imported by name: a name would be a dependency of ours, and one the
# SDK may not raise.
_TRANSPORT = importlib.import_module(next(
    c.__module__ for c in anthropic.DefaultHttpxClient.__mro__
    if not c.__module__.startswith("anthropic") and c is not object).partition(".")[0])
TIMEOUTS: tuple[type[BaseException], ...] = (anthropic.APITimeoutError,
                                             _TRANSPORT.TimeoutException)


class DeadlineReached(Exception):
    """The deadline passed before, or while, the Messages API answered."""


def retryable(exc: BaseException) -> bool:
    if isinstance(exc, (anthropic.APIConnectionError, *TIMEOUTS)):  # a stalled stream too
        return True
    if isinstance(exc, anthropic.APIStatusError):
        body = exc.body if isinstance(exc.body, dict) else {}
        error = body.get("error") if isinstance(body.get("error"), dict) else {}
        return (exc.status_code in (408, 409, 429) or exc.status_code >= 500
                or error.get("type") in RETRYABLE_TYPES)
    return False


def retry_after_s(exc: BaseException | None) -> float | None:
    response = getattr(exc, "response", None)
    if response is None:
        return None
    headers = response.headers
    try:
        if headers.get("retry-after-ms"):
            return float(headers["retry-after-ms"]) / 1000
        if headers.get("retry-after"):
            return float(headers["retry-after"])
    except ValueError:
        return None  # an HTTP date: fall back to the backoff
    return None


class ModelCallFailed(Exception):
    """A model server refused or failed a call in a way the user is told in one line."""


class ContextExceeded(ModelCallFailed):
    """The request was longer than the model's context window (a 400 that says so)."""


class ModelUnreachable(ModelCallFailed):
    """The server could not be reached, or kept failing, through every retry."""


def network_reason(exc: BaseException) -> str:
    """The innermost cause of a network error in a few words ("connection refused", "timed
    out", "name or service not known"), never a traceback."""
    inner: BaseException | None = exc
    while inner is not None:
        if isinstance(inner, OSError) and inner.strerror:
            return inner.strerror.lower()
        if isinstance(inner, (TimeoutError, *TIMEOUTS)):
            return "timed out"
        inner = inner.__cause__ or inner.__context__
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:120]


def unreachable(what: str, url: str, exc: BaseException) -> ModelUnreachable:
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return ModelUnreachable(f"{what} at {url} kept failing: HTTP {status} "
                                f"({type(exc).__name__})")
    return ModelUnreachable(f"cannot reach {what} at {url}: {network_reason(exc)}")


class RetryingClient:
    """One retry policy for every model backend: which errors are retried is the backend's
    `retryable`; the backoff, `retry-after`, logging and the deadline are shared."""

    retryable: Callable[[BaseException], bool] = staticmethod(retryable)
    event = "messages_retry"

    def __init__(self, settings: ClaudeSettings, sleep: Callable[[float], None]):
        self.settings = settings
        self._sleep = sleep

    def _wait(self, state: RetryCallState, deadline: float | None = None) -> float:
        exc = state.outcome.exception() if state.outcome else None
        after = retry_after_s(exc)
        r = self.settings.retry
        if after is not None:
            wait = min(after, r.retry_after_cap_s)
        else:
            backoff = min(r.max_s, r.initial_s * 2 ** (state.attempt_number - 1))
            wait = backoff + random.uniform(0, r.jitter_s)
        # never sleep past the deadline: the next attempt then finds no time left
        return wait if deadline is None else max(0.0, min(wait, deadline - time.monotonic()))

    def _log_retry(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        log.warning(self.event, attempt=state.attempt_number,
                    status=getattr(exc, "status_code", None),
                    request_id=getattr(exc, "request_id", None),
                    wait_s=round(state.upcoming_sleep, 3), error=type(exc).__name__)

    def _retrying(self, deadline: float | None) -> Retrying:
        return Retrying(retry=retry_if_exception(type(self).retryable),
                        stop=stop_after_attempt(self.settings.retry.attempts),
                        wait=functools.partial(self._wait, deadline=deadline), sleep=self._sleep,
                        before_sleep=self._log_retry, reraise=True)

    def _timeout(self, deadline: float | None) -> tuple[float, bool]:
        """This attempt's timeout, and whether it is the deadline's (not the per-call cap)."""
        cap = self.settings.request_timeout_s
        if deadline is None:
            return cap, False
        left = deadline - time.monotonic()
        if left <= 0:
            raise DeadlineReached("no time was left for the call")
        return min(cap, left), left < cap


class MessagesClient(RetryingClient):
    def __init__(self, settings: ClaudeSettings,
                 sleep: Callable[[float], None] = time.sleep):
        super().__init__(settings, sleep)
        self.sdk = anthropic.Anthropic(api_key=settings.api_key, base_url=settings.base_url,
                                       max_retries=0, timeout=settings.request_timeout_s)

    def create(self, *, on_text: Callable[[str], None] | None = None,
               deadline: float | None = None, **request: Any) -> Turn:
        """One model turn; with `on_text`, streamed and each text piece handed over as it comes.
        `deadline` (time.monotonic()) bounds every attempt and the sleeps between them."""
        request = {"model": self.settings.model,
                   "max_tokens": self.settings.max_tokens_per_turn, **request}
        try:
            return self._create(request, on_text, deadline)
        except (anthropic.APIConnectionError, *TIMEOUTS) as exc:  # after every retry
            raise unreachable("the Claude API", self.url, exc) from exc
        except anthropic.APIStatusError as exc:
            if exc.status_code in (401, 403):
                raise ModelCallFailed(f"the Claude API at {self.url} refused the API key "
                                      f"(HTTP {exc.status_code}; check ANTHROPIC_API_KEY)"
                                      ) from exc
            if retryable(exc):
                raise unreachable("the Claude API", self.url, exc) from exc
            raise

    @property
    def url(self) -> str:
        return str(self.sdk.base_url).rstrip("/")

    def _create(self, request: dict[str, Any], on_text: Callable[[str], None] | None,
                deadline: float | None) -> Turn:
        for attempt in self._retrying(deadline):
            with attempt:
                timeout, by_deadline = self._timeout(deadline)
                t0 = time.perf_counter()
                try:
                    msg, request_id = self._send(request, timeout, on_text, deadline)
                except TIMEOUTS as exc:
                    if by_deadline:
                        raise DeadlineReached(f"the call was cut after {timeout:.3g} s") from exc
                    raise
                except anthropic.BadRequestError as exc:
                    if "prompt is too long" in str(exc).lower():
                        raise ContextExceeded(str(exc)[:200]) from exc
                    raise
        duration_ms = (time.perf_counter() - t0) * 1000
        u = msg.usage
        turn = Turn(content=[b.model_dump(mode="json", exclude_none=True) for b in msg.content],
                    stop_reason=msg.stop_reason, request_id=request_id,
                    input_tokens=u.input_tokens or 0, output_tokens=u.output_tokens or 0,
                    cache_creation_tokens=getattr(u, "cache_creation_input_tokens", 0) or 0,
                    cache_read_tokens=getattr(u, "cache_read_input_tokens", 0) or 0,
                    duration_ms=duration_ms)
        log.info("messages_call", request_id=request_id, model=request["model"],
                 stop_reason=turn.stop_reason, input_tokens=turn.input_tokens,
                 output_tokens=turn.output_tokens, ms=round(duration_ms, 1))
        return turn

    def _send(self, request: dict[str, Any], timeout: float,
              on_text: Callable[[str], None] | None,
              deadline: float | None) -> tuple[anthropic.types.Message, str | None]:
        if on_text is None:
            msg = self.sdk.messages.create(**request, timeout=timeout)
            return msg, msg._request_id
        with self.sdk.messages.stream(**request, timeout=timeout) as stream:
            # the timeout bounds each read; a stream still going at the deadline is cut here
            for piece in stream.text_stream:
                on_text(piece)
                if deadline is not None and time.monotonic() >= deadline:
                    raise DeadlineReached("the streamed answer was cut at the deadline")
            return stream.get_final_message(), stream.response.headers.get("request-id")
