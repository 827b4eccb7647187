"""Bounds on every exchange with GitHub's API, for the PyGithub client and the ``gh:`` SOURCE alike.

An API answer is untrusted input: a misconfigured proxy, a compromised Enterprise host or anything
on the path can send it. Four bounds, each an `ApiLimitError` (one line, exit 2) when exceeded:

- where: every URL requested, including those taken from an answer (``Link`` pages, the ``url`` of an
  issue or comment that PyGithub later PATCHes, a redirect's ``Location``), must be under the
  configured API root (scheme, host, port, path prefix). PyGithub checks this with ``assert``, which
  ``python -O`` strips; the check here runs before the request is sent, whatever the flags.
- how long: one deadline per call (a publish step with its retries, or reading a ``gh:`` SOURCE),
  and one per exchange (`REQUEST_SECONDS`, a timeout the caller may retry), each enforced around the
  whole exchange rather than per socket read, since a server that drips a byte every few seconds
  never trips a socket timeout.
- how much: every body is read as a stream and refused past a byte cap (`MAX_JSON_BYTES` for API
  answers), so memory stays bounded whatever Content-Length says or omits.
- how many: requests per call (`MAX_REQUESTS`) and ``rel="next"`` pages per call (`MAX_PAGES`), so an
  endless ``Link: next`` stops long before the rate limit is spent.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

import requests

from opdrift.errors import ApiLimitError, PublishError

# A page of 100 issues or comments of up to 65,536 characters each, four bytes per character at worst.
MAX_JSON_BYTES = 32 * 1024 * 1024
# pytorch/pytorch's busiest pull requests have a few thousand comments: 100 per page, well under 50
# pages. A call that is sent more pages than that is being led on.
MAX_PAGES = 50
MAX_REQUESTS = 200  # per call, retries included: the Actions token has 1,000 an hour
# The longest one exchange may take, status line to last byte, when the call has more time left:
# a 10 MB file at 100 KB/s. Past it the exchange counts as a timeout, which the caller may retry.
REQUEST_SECONDS = 120.0
_CHUNK = 1 << 16
_DEFAULT_PORT = {"http": 80, "https": 443}
# The answer fields PyGithub turns into requests: every object's `url` (lazy completion, edit, and
# the sub-resources built on it, e.g. ``{issue.url}/comments``) and the parents it makes lazy objects of.
FOLLOWED_FIELDS = frozenset({"url", "repository_url", "issue_url"})


@dataclass(frozen=True)
class ApiRoot:
    """The configured API root: every URL opdrift requests must be under it."""

    scheme: str
    host: str  # lower case, as urlsplit reports it
    port: int
    prefix: str  # path without a trailing slash ("" for api.github.com, "/api/v3" for Enterprise)

    @classmethod
    def parse(cls, api_url: str) -> ApiRoot:
        bad = PublishError(f"GITHUB_API_URL must be an http(s) URL, got {api_url!r}")
        parts = urlsplit(api_url)
        try:
            port = parts.port
        except ValueError:
            raise bad from None
        if (
            parts.scheme not in _DEFAULT_PORT
            or not parts.hostname
            or parts.username is not None
            or parts.query
            or parts.fragment
            or any(c.isspace() for c in api_url)
        ):
            raise bad
        return cls(parts.scheme, parts.hostname, port or _DEFAULT_PORT[parts.scheme], parts.path.rstrip("/"))

    @property
    def netloc(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == _DEFAULT_PORT[self.scheme] else f"{host}:{self.port}"

    def __str__(self) -> str:
        return f"{self.scheme}://{self.netloc}{self.prefix}"

    def holds(self, url: str) -> bool:
        """Whether `url` is under this root; no dot segments (a server may resolve them above it)."""
        parts = urlsplit(url)
        try:
            port = parts.port
        except ValueError:
            return False
        segments = unquote(parts.path).split("/")
        return (
            parts.scheme == self.scheme
            and parts.hostname == self.host
            and (port or _DEFAULT_PORT.get(parts.scheme)) == self.port
            and parts.username is None
            and (parts.path == self.prefix or parts.path.startswith(self.prefix + "/"))
            and "." not in segments
            and ".." not in segments
        )

    def check(self, url: str, what: str) -> None:
        if not self.holds(url):
            # Only the scheme and host, shortened: the rest of a URL from an answer is the sender's
            # text (user info, path, query), which may even echo the token back.
            parts = urlsplit(url)
            where = f"{parts.scheme[:10]}://{(parts.hostname or '')[:60]}"
            raise ApiLimitError(
                f"{what} points to {where!r}, outside the configured API root {self}; nothing was sent there"
            )


@dataclass(frozen=True)
class Answer:
    """One complete HTTP answer, its body read within the bounds."""

    url: str  # what was requested
    status: int
    reason: str
    headers: Mapping[str, str]  # as sent; look up with `header`
    body: bytes

    def header(self, name: str) -> str | None:
        name = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == name), None)

    def json(self) -> Any:
        """The body as JSON; ValueError when it is not (a depth bomb is an `ApiLimitError` earlier)."""
        return json.loads(self.body)


# One part of GitHub's ``Link`` header, as PyGithub splits it (on ", " then "; ", the URL first and
# the relation second): another shape makes PyGithub's PaginatedList fail with a bare ValueError, or
# read a URL this check did not. Parameters may follow the relation: GitHub adds
# ``<https://github.blog/changelog/...>; rel="deprecation"; type="text/html"`` to some answers
# (PyGithub's tests/ReplayData/PaginatedList.testTotalCountWithDeprecationLink.txt, PyGithub#3379).
_LINK_PART = re.compile(r'<([^<>\s]*)>; rel="([A-Za-z]+)"(?:; [A-Za-z-]+="[^"]*")*')
# The relations that page a list: the only URLs of a Link that opdrift or PyGithub ever request.
# Another relation (``deprecation``) points at a web page, typically off the API root; it is read
# past, never followed and never checked.
PAGE_RELATIONS = frozenset({"next", "prev", "first", "last"})


def link_urls(value: str) -> Iterator[tuple[str, str]]:
    """(rel, url) for each paging part of a ``Link`` header: ``<url>; rel="next", <url>; rel="last"``;
    parts of another relation are skipped."""
    for part in value.split(", "):
        m = _LINK_PART.fullmatch(part)
        if m is None:
            raise ApiLimitError('GitHub\'s answer has a Link header that is not <URL>; rel="NAME", ...')
        if m.group(2) in PAGE_RELATIONS:
            yield m.group(2), m.group(1)


def _followed_urls(data: Any) -> Iterator[str]:
    """Every value of a `FOLLOWED_FIELDS` key, at any depth (iteratively: the depth is the sender's)."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key in FOLLOWED_FIELDS and isinstance(value, str):
                    yield value
                elif isinstance(value, (dict, list)):
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(v for v in item if isinstance(v, (dict, list)))


class Guard:
    """The bounds of one client; `restart` opens a new call (a deadline, fresh request and page counts)."""

    def __init__(
        self,
        root: ApiRoot,
        *,
        seconds: float,
        max_requests: int = MAX_REQUESTS,
        max_pages: int = MAX_PAGES,
        max_json_bytes: int = MAX_JSON_BYTES,
        request_seconds: float = REQUEST_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.root = root
        self.request_seconds = request_seconds
        self.max_requests = max_requests
        self.max_pages = max_pages
        self.max_json_bytes = max_json_bytes
        self._clock = clock
        self.seconds = seconds
        self.deadline = clock() + seconds
        self.requests = 0
        self.pages = 0

    def restart(self, seconds: float) -> None:
        self.seconds = seconds
        self.deadline = self._clock() + seconds
        self.requests = self.pages = 0

    def remaining(self) -> float:
        return self.deadline - self._clock()

    def _late(self, what: str) -> ApiLimitError:
        return ApiLimitError(f"no complete answer from GitHub {what} within the {self.seconds:g}s budget")

    def exchange(
        self,
        session: requests.Session,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        data: Any = None,
        timeout: float,
        limit: int | None = None,
        what: str = "",
        raw: bool = False,
    ) -> Answer:
        """Send one request and read its whole answer, within every bound; check what it links to.

        `raw`: the body is a file's content, not JSON (a yaml file may well start with ``[``)."""
        self.root.check(url, "a request")
        self.requests += 1
        if self.requests > self.max_requests:
            stopped = f"; stopped before the one {what}" if what else ""
            raise ApiLimitError(f"more than {self.max_requests} requests to GitHub in one call{stopped}")
        left = self.remaining()
        if left <= 0:
            raise self._late(what)
        wait = min(left, self.request_seconds)
        answer = _bounded(
            session, method, url, headers, data, min(timeout, wait), wait, limit or self.max_json_bytes
        )
        if answer is None:
            if wait < left:  # this exchange's own deadline: the caller's retry policy decides
                raise requests.Timeout(f"no complete answer {what} within {wait:g}s".replace("  ", " "))
            raise self._late(what)
        self._inspect(answer, raw=raw)
        return answer

    def _inspect(self, answer: Answer, *, raw: bool = False) -> None:
        """Refuse an answer that links off the root, leads on past the page cap or nests without end."""
        link = answer.header("link")
        if link is not None:
            rels = []
            for rel, url in link_urls(link):
                self.root.check(url, f"the answer's Link {rel!r}")
                rels.append(rel)
            if "next" in rels:
                self.pages += 1
                if self.pages >= self.max_pages:
                    raise ApiLimitError(
                        f"GitHub kept announcing another page after {self.pages} pages in one call; "
                        "stopped before following more"
                    )
        location = answer.header("location")
        if location is not None and 300 <= answer.status < 400:
            self.root.check(urljoin(answer.url, location), "a redirect")
        if not raw and answer.body[:1] in (b"{", b"["):
            try:
                data = answer.json()
            except RecursionError:
                raise ApiLimitError("GitHub's answer is nested too deeply to read") from None
            except ValueError:
                # PyGithub raises a bare ValueError on a body that opens like JSON and is not.
                raise ApiLimitError(f"GitHub's answer ({answer.status}) is not valid JSON") from None
            for url in _followed_urls(data):
                if not url.startswith("/") or url.startswith("//"):
                    self.root.check(url, "a URL in GitHub's answer")


def _bounded(
    session: requests.Session,
    method: str,
    url: str,
    headers: Mapping[str, str] | None,
    data: Any,
    timeout: float,
    seconds: float,
    limit: int,
) -> Answer | None:
    """The exchange in a worker thread, waited for at most `seconds`: None when it did not finish.

    A socket timeout bounds each read, not their sum, so only a wait on the whole exchange (status
    line, headers, body) holds a deadline. A worker left behind stops at its next chunk, and the
    process ends soon after anyway: a deadline ends the command.
    """
    box: dict[str, Any] = {}
    stop = threading.Event()

    def work() -> None:
        try:
            box["answer"] = _read(session, method, url, headers, data, timeout, limit, stop)
        except BaseException as exc:  # handed to the caller's thread, which re-raises it
            box["error"] = exc

    worker = threading.Thread(target=work, name="opdrift-http", daemon=True)
    worker.start()
    worker.join(max(seconds, 0.0))
    if worker.is_alive():
        stop.set()
        return None
    if "error" in box:
        raise box["error"]
    answer: Answer = box["answer"]
    return answer


def _read(
    session: requests.Session,
    method: str,
    url: str,
    headers: Mapping[str, str] | None,
    data: Any,
    timeout: float,
    limit: int,
    stop: threading.Event,
) -> Answer:
    response = session.request(
        method,
        url,
        headers=dict(headers or {}),
        data=data,
        timeout=timeout,
        stream=True,
        allow_redirects=False,  # a redirect is an answer: `_inspect` checks where it points
    )
    try:
        path = urlsplit(url).path
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > limit:
            raise ApiLimitError(f"GitHub's answer to {path} is {declared} bytes, over the {limit}-byte limit")
        chunks, size = [], 0
        for chunk in response.iter_content(_CHUNK):
            if stop.is_set():
                break
            size += len(chunk)
            if size > limit:
                raise ApiLimitError(f"GitHub's answer to {path} is over the {limit}-byte limit")
            chunks.append(chunk)
        return Answer(
            url, response.status_code, response.reason or "", dict(response.headers), b"".join(chunks)
        )
    finally:
        response.close()


def new_session(token: str | None) -> requests.Session:
    """A session that sends only what it is given: no .netrc credentials, no urllib3 retries."""
    session = requests.Session()
    # Any auth object, even one that does nothing, stops requests from reading ~/.netrc.
    session.auth = _no_auth
    if token:
        session.headers["Authorization"] = f"Bearer {token}"
    return session


def _no_auth(request: Any) -> Any:
    return request
