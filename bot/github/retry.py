"""The retry policy and the secret scrubbing that every GitHub client shares: the reading one
(`opdrift.github.api`) and the posting one (`opdrift.publish.github`).

Pure: what to wait after an answer, never the waiting. A rate limit (403 or 429 that GitHub means as
"slow down") follows ``Retry-After`` / ``x-ratelimit-reset``, or waits at least a minute when it names
no time; a 5xx backs off exponentially (or as long as its ``Retry-After`` asks); anything else cannot
be helped by asking again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DEFAULT_API_URL = "https://api.github.com"
RATE_LIMIT_MIN_WAIT = 60.0  # seconds, for a rate limit that names no time to wait


@dataclass(frozen=True)
class RetryPolicy:
    """How long to keep trying. Waits double from `first_delay` up to `max_delay`."""

    total_seconds: float = 300.0  # the whole budget for waiting, per publish call
    first_delay: float = 2.0
    max_delay: float = 60.0
    max_attempts: int = 8

    def backoff(self, attempt: int) -> float:
        return float(min(self.max_delay, self.first_delay * 2 ** (attempt - 1)))


def header(headers: Any, name: str) -> str | None:
    if not headers:
        return None
    for key, value in dict(headers).items():
        if str(key).lower() == name:
            return str(value)
    return None


def error_message(data: Any) -> str:
    if isinstance(data, dict):
        return str(data.get("message") or "")
    return ""


def is_rate_limit(status: int, headers: Any, message: str) -> bool:
    """403/429 that GitHub means as "slow down" rather than "not allowed"."""
    if status not in (403, 429):
        return False
    return (
        status == 429
        or header(headers, "retry-after") is not None
        or header(headers, "x-ratelimit-remaining") == "0"
        or "rate limit" in message.lower()
    )


def retry_delay(
    status: int, headers: Any, message: str, attempt: int, policy: RetryPolicy, now: float
) -> float | None:
    """Seconds to wait before retrying after this response, or None when retrying cannot help.

    `now` is wall-clock time (``x-ratelimit-reset`` is a Unix timestamp).
    """
    if is_rate_limit(status, headers, message):
        # GitHub: without a retry-after or reset header, wait at least a minute (secondary limits
        # answer a client that keeps retrying sooner with a longer block).
        headerless = max(policy.backoff(attempt), RATE_LIMIT_MIN_WAIT)
        after = header(headers, "retry-after")
        if after is not None:
            try:
                return max(0.0, float(after))
            except ValueError:
                return headerless
        reset = header(headers, "x-ratelimit-reset")
        if header(headers, "x-ratelimit-remaining") == "0" and reset is not None:
            try:
                return max(float(reset) - now, 0.0) + 0.5
            except ValueError:
                return headerless
        return headerless
    if status >= 500:
        # A 503 may say when to come back; wait that long (the caller still holds the time budget).
        after = header(headers, "retry-after")
        try:
            return (
                max(policy.backoff(attempt), float(after)) if after is not None else policy.backoff(attempt)
            )
        except ValueError:
            return policy.backoff(attempt)
    return None


def scrub(text: str, secret: str | None) -> str:
    if secret:
        return text.replace(secret, "***")
    return text
