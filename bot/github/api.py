"""The GET client every read of GitHub's REST API goes through (the ``gh:`` SOURCE, ``gh:`` files, the
pull request scan): the token, retries on 5xx, rate limits and dropped connections (the policy of
`opdrift.github.retry`), within the bounds of `opdrift.github.limits` (the API root, a deadline, a size cap
per body, a page and request budget); and the count of every request the process sent.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urljoin, urlsplit

import requests

from opdrift.errors import ApiLimitError, PublishError, SourceError
from opdrift.github.limits import MAX_PAGES, MAX_REQUESTS, Answer, ApiRoot, Guard, new_session
from opdrift.github.retry import DEFAULT_API_URL, RetryPolicy, retry_delay, scrub

RAW = "application/vnd.github.raw+json"
SHA_ONLY = "application/vnd.github.sha"  # commits/REF answers with the bare sha
JSON = "application/vnd.github+json"

# Seconds for reading one gh: SOURCE, requests and retries included: its three files are a few MB.
READ_BUDGET = 120.0


@dataclass(frozen=True)
class ApiSettings:
    api_url: str = DEFAULT_API_URL
    token: str | None = None
    timeout: float = 30.0
    retry: RetryPolicy = field(default_factory=lambda: RetryPolicy(total_seconds=READ_BUDGET))
    cache_dir: Path | None = None  # opdrift's cache root (blobs/, trees/, api/ under it); None: no cache


# Every request any `Api` of this process sent: a command that reads several gh: SOURCEs and lists
# pull requests (`watch`: the scan's client and each judgement's reads) reports the sum, not one
# client's share. A lock, as reads may run on threads.
_SENT = [0]
_SENT_LOCK = threading.Lock()


def requests_sent() -> int:
    """The requests every reader of the REST API in this process has sent so far, retries included."""
    with _SENT_LOCK:
        return _SENT[0]


class Api:
    """GET with the token, retries on 5xx, rate limits and dropped connections, within the bounds of
    `opdrift.github.limits`: the API root, one deadline for the whole SOURCE, a size cap per body."""

    def __init__(
        self,
        settings: ApiSettings,
        spec: str,
        sleep: Callable[[float], None] = time.sleep,
        *,
        max_requests: int = MAX_REQUESTS,
        max_pages: int = MAX_PAGES,
    ) -> None:
        self.settings = settings
        self.spec = spec
        self.sleep = sleep
        try:
            root = ApiRoot.parse(settings.api_url)
        except PublishError as err:  # GITHUB_API_URL is no URL: a problem with what was given, like SOURCE
            raise SourceError(err.message, path=spec) from None
        # The retry budget is the deadline of the whole read: a drip or a stall ends there too.
        self.guard = Guard(
            root, seconds=settings.retry.total_seconds, max_requests=max_requests, max_pages=max_pages
        )
        self.session = new_session(settings.token)
        self.session.headers["X-GitHub-Api-Version"] = "2022-11-28"
        self.sent = 0  # exchanges, retries included
        self.received = 0  # body bytes

    def close(self) -> None:
        self.session.close()

    def get(
        self,
        path: str,
        *,
        accept: str = JSON,
        params: Mapping[str, str] | None = None,
        limit: int | None = None,
        etag: str | None = None,
        url: str | None = None,
        missing: frozenset[int] = frozenset({404}),
        attempts: int | None = None,
    ) -> Answer | None:
        """The answer, or None for a 404; a SourceError for anything else that is not a 200, or a 304
        when ETAG was sent (``If-None-Match``: the stored answer is still current). URL, when given, is
        a whole URL from an answer's ``Link`` (the guard checks it is under the API root). ATTEMPTS,
        when given, caps the retry policy's attempts (1: no retry)."""
        if url is None:
            url = self.settings.api_url.rstrip("/") + path
            if params:
                url += "?" + urlencode(params)
        else:
            path = urlsplit(url).path
        policy, attempt, redirects = self.settings.retry, 0, 0
        if attempts is not None:
            policy = replace(policy, max_attempts=min(policy.max_attempts, attempts))
        while True:
            attempt += 1
            try:
                answer = self._exchange(url, accept, limit, etag)
            except requests.RequestException as err:
                unresolved = _unresolved(err)
                # A host that does not resolve is a machine offline (or a wrong GITHUB_API_URL), not a
                # server's hiccup: one quick second try, never a minute of backoff.
                retries = min(policy.max_attempts, 2) if unresolved else policy.max_attempts
                if attempt >= retries or policy.backoff(attempt) >= self.guard.remaining():
                    host = urlsplit(url).hostname or url
                    why = (
                        f"{host} does not resolve (offline, or a wrong GITHUB_API_URL?)"
                        if unresolved
                        else self._scrub(str(err))
                    )
                    raise SourceError(f"cannot reach the GitHub API: {why}", path=self.spec) from None
                wait = 1.0 if unresolved else policy.backoff(attempt)
            else:
                if answer.status == 200 or (answer.status == 304 and etag is not None):
                    return answer
                if answer.status in missing:
                    return None
                location = answer.header("location")
                if answer.status in (301, 302, 307, 308) and location and redirects < 3:
                    # A renamed repository answers 301 to /repositories/ID/...; `_exchange` checked it
                    # is under the API root.
                    redirects += 1
                    url = urljoin(url, location)
                    continue
                message = self._message(answer)
                wait_or_none = retry_delay(
                    answer.status, answer.headers, message, attempt, policy, time.time()
                )
                if (
                    wait_or_none is None
                    or attempt >= policy.max_attempts
                    or wait_or_none >= self.guard.remaining()
                ):
                    hint = (
                        " (set GITHUB_TOKEN)"
                        if answer.status in (401, 403) and not self.settings.token
                        else ""
                    )
                    raise SourceError(
                        f"GitHub API {answer.status} for {path}: {message or answer.reason}{hint}",
                        path=self.spec,
                    )
                wait = wait_or_none
            self.sleep(wait)

    def _exchange(self, url: str, accept: str, limit: int | None, etag: str | None) -> Answer:
        headers = {"Accept": accept}
        if etag is not None:
            headers["If-None-Match"] = etag
        self.sent += 1
        with _SENT_LOCK:
            _SENT[0] += 1
        try:
            answer = self.guard.exchange(
                self.session, "GET", url, headers=headers, timeout=self.settings.timeout,
                limit=limit, what=f"for {urlsplit(url).path}", raw=accept == RAW,
            )  # fmt: skip
        except ApiLimitError as err:
            raise ApiLimitError(self._scrub(err.message), path=self.spec) from None
        self.received += len(answer.body)
        return answer

    def _scrub(self, text: str) -> str:
        return scrub(text, self.settings.token)

    def _message(self, answer: Answer) -> str:
        try:
            data = answer.json()
        except (ValueError, RecursionError):  # an error's body in the raw media type is not checked
            return ""
        return self._scrub(str(data.get("message", ""))) if isinstance(data, dict) else ""

    def json(
        self,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        missing: frozenset[int] = frozenset({404}),
    ) -> Any:
        answer = self.get(path, params=params, missing=missing)
        if answer is None:
            return None
        try:
            return answer.json()
        except ValueError:
            raise SourceError(f"GitHub API sent no JSON for {path}", path=self.spec) from None

    def raw(self, path: str, limit: int) -> bytes | None:
        answer = self.get(path, accept=RAW, limit=limit)
        return None if answer is None else answer.body


def _unresolved(err: requests.RequestException) -> bool:
    """Whether ERR is a failed name lookup (urllib3's NameResolutionError, or the resolver's own words)."""
    text = str(err)
    return isinstance(err, requests.ConnectionError) and any(
        s in text
        for s in (
            "NameResolutionError",
            "Name or service not known",
            "Temporary failure in name resolution",
            "nodename nor servname",
            "No address associated with hostname",
        )
    )


def json_at(data: Any, *keys: str) -> Any:
    """The value at KEYS in an answer's JSON; None where a level is missing or not an object."""
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data
