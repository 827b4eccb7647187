"""The GitHub client of the publishing stage: settings, token and repository checks, retries, secrets.

The sticky PR comment (`opdrift.publish.pr_comment`) and the weekly drift issue
(`opdrift.publish.weekly_issue`) are publishing steps run through `RepoClient.run`; the job summary and
annotations (`opdrift.publish.actions`) are files and lines for Actions, no network.

With `opdrift.github` (which reads), this is the only stage that talks to the network. It is handed
finished text (the report is rendered completely before anything is posted, so a failure never
leaves a half-written comment) and explicit settings (token, API root): it never reads the
environment itself. The retry policy and `scrub` are `opdrift.github.retry`'s, shared with the reading
client.

Finding its own posts (`RepoClient.is_mine`): every post carries a hidden HTML-comment marker, and the bot finds its comment or
issue by that marker (never by title), and only among posts whose author is the bot's own login. When
``GET /user`` is refused (``GITHUB_TOKEN`` in Actions, and any App installation token, get 403
"Resource not accessible by integration") the login must be given (config ``bot_login``, or
`Settings.login_if_refused`): any other app's bot, or a person, may quote the marker. Only that
refusal means so: a rate limit's 403 is waited out and asked again, never answered with a guessed
login (a wrong login would not find the bot's comment, and post a second one).

Retries: PyGithub's own urllib3 retry is switched off, because it retries POST and so can duplicate a
comment when a 500 arrives after GitHub already stored it. Instead each publish step (look up, then
write) is retried as a whole: after a failure the bot lists the comments again before it would create
one, so a write that "failed" but landed is found instead of repeated. Waits grow exponentially for 5xx
and network errors and follow ``Retry-After`` / ``x-ratelimit-reset`` for rate limits, and the total
waiting is bounded by `RetryPolicy.total_seconds`: a rate limit that resets later than that fails at
once with a message rather than sleeping past the budget. The same budget is the call's deadline, for
the requests themselves too (`opdrift.github.limits`: a server that drips its answer, or one that announces
page after page, stops there), and every request PyGithub makes goes through `_Connection`, which
sends it only under the configured API root and reads its answer within the size cap.
"""

from __future__ import annotations

import functools
import logging
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import github
import requests
from github.GithubException import GithubException

from opdrift.errors import ApiLimitError, PublishError
from opdrift.github.limits import Answer, ApiRoot, Guard, new_session
from opdrift.github.retry import (
    DEFAULT_API_URL,
    RetryPolicy,
    error_message,
    header,
    is_rate_limit,
    retry_delay,
    scrub,
)

MAX_BODY_CHARS = 65536  # GitHub rejects longer comment and issue bodies
# GitHub's 403 to an installation token (the workflow's GITHUB_TOKEN, a GitHub App's) for what its
# permissions do not cover, GET /user included (PyGithub's tests/ReplayData hold it).
NOT_FOR_INTEGRATIONS = "Resource not accessible by integration"
# The permissions GitHub says a refused request needs: ``issues=read; pull_requests=read`` (either
# set), ``contents=write,workflows=write`` (both), in PyGithub's recorded answers.
_ACCEPTED = "x-accepted-github-permissions"
_REPO_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+")

Action = Literal["created", "updated", "unchanged", "skipped", "dry-run"]
T = TypeVar("T")

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    """What a publish call did (or, in a dry run, would do)."""

    action: Action
    url: str | None = None
    number: int | None = None  # the PR's or the number
    detail: str = ""  # one line for the log, e.g. "would update comment 123 on PR #5"
    text: str = ""  # the exact body that was (or would be) sent; empty when nothing is sent


@dataclass(frozen=True)
class Settings:
    """Everything needed to reach one repository. The CLI fills it from the environment."""

    repo: str  # OWNER/NAME
    token: str
    api_url: str = DEFAULT_API_URL
    timeout: int = 30  # seconds per HTTP request
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    bot_login: str | None = None  # when None, asked from GET /user (which Actions tokens cannot read)
    # The login when GET /user is refused (OPDRIFT_BOT_LOGIN: github-actions[bot] for the workflow token).
    login_if_refused: str | None = None
    # GitHub asks integrations to leave a second between content-creating requests.
    seconds_between_writes: float | None = 1.0
    per_page: int = 100


def check_repo_name(repo: str, what: str = "--repo") -> str:
    if not _REPO_RE.fullmatch(repo):
        raise PublishError(f"{what} must be OWNER/NAME, got {repo!r}")
    return repo


# --- secrets (the retry policy and `scrub` are opdrift.github.retry's, which the reading client shares) ------


class _ScrubFilter(logging.Filter):
    def __init__(self, secret: str) -> None:
        super().__init__()
        self.secret = secret

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if self.secret in message:
            record.msg = scrub(message, self.secret)
            record.args = ()
        return True


# The loggers that see request details. Filters act only on records logged to the logger itself.
_HTTP_LOGGERS = (
    "github",
    "github.Requester",
    "github.GithubRetry",
    "urllib3",
    "urllib3.connectionpool",
    "urllib3.connection",
    "urllib3.util.retry",
    "requests",
    __name__,
)


@contextmanager
def scrubbed_logs(secret: str | None) -> Iterator[None]:
    """Replace `secret` in every record of the HTTP loggers, DEBUG included, for the duration."""
    if not secret:
        yield
        return
    filt = _ScrubFilter(secret)
    loggers = [logging.getLogger(name) for name in _HTTP_LOGGERS]
    for lg in loggers:
        lg.addFilter(filt)
    try:
        yield
    finally:
        for lg in loggers:
            lg.removeFilter(filt)


# --- the client ------------------------------------------------------------------------------------


def _author(obj: Any) -> tuple[str | None, str | None]:
    user = obj.user
    if user is None:
        return None, None
    return user.login, user.type


_TOKEN = re.compile(r"[\x21-\x7e]+")  # printable ASCII, no spaces: anything else breaks the header


def check_token(token: str) -> str:
    """The token without surrounding whitespace; PublishError (never quoting it) when it cannot be one."""
    token = token.strip()
    if not _TOKEN.fullmatch(token):
        raise PublishError(
            "GITHUB_TOKEN holds spaces, line breaks or non-ASCII characters inside it: check the secret"
        )
    return token


class RepoClient:
    """One repository reached through PyGithub, with the retry loop and the error messages."""

    def __init__(
        self,
        settings: Settings,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if check_token(settings.token) != settings.token:
            raise PublishError("the token has surrounding whitespace: strip it (check_token) first")
        self.settings = settings
        self.repo_name = check_repo_name(settings.repo)
        self._sleep = sleep
        self._clock = clock
        self._guard = Guard(
            ApiRoot.parse(settings.api_url), seconds=settings.retry.total_seconds, clock=clock
        )
        self._session = new_session(None)  # PyGithub adds the token to each request itself
        self._gh = github.Github(
            auth=github.Auth.Token(settings.token),
            base_url=settings.api_url.rstrip("/"),
            timeout=settings.timeout,
            retry=None,  # see the module docstring: retries happen here, per publish step
            per_page=settings.per_page,
            seconds_between_requests=None,
            seconds_between_writes=settings.seconds_between_writes,
            user_agent="opdrift",
            lazy=True,
        )
        _route_through(self._gh.requester, self._guard, self._session, settings.timeout)
        self._login: str | None = settings.bot_login
        self._login_known = settings.bot_login is not None

    def close(self) -> None:
        self._gh.close()
        self._session.close()

    @property
    def requests_sent(self) -> int:
        """Requests of the current (or last) call, as the guard counted them."""
        return self._guard.requests

    @property
    def repo(self) -> Any:
        return self._gh.get_repo(self.repo_name)

    def login(self) -> str | None:
        """The bot's own login, if the token may read it (installation tokens get 403). Any other
        failure (a rate limit's 403 included) is raised, for `run` to retry or explain."""
        if not self._login_known:
            try:
                self._login = self._gh.get_user().login
            except GithubException as exc:
                if not (exc.status == 403 and error_message(exc.data) == NOT_FOR_INTEGRATIONS):
                    raise
                self._login = self.settings.login_if_refused
            self._login_known = True
        return self._login

    def own_login(self) -> str:
        """The bot's login, or a PublishError: without it no post can be told to be the bot's own (any
        other app's bot may carry the marker), so nothing is edited or created on a guess."""
        me = self.login()
        if me is None:
            raise PublishError(
                "cannot tell which posts are the bot's own: GitHub refuses GET /user to this token (an "
                "Actions or App installation token); set bot_login in the config, or OPDRIFT_BOT_LOGIN "
                "(github-actions[bot] for the workflow's own token)"
            )
        return me

    def is_mine(self, obj: Any) -> bool:
        login, _ = _author(obj)
        return login is not None and login.lower() == self.own_login().lower()

    def run(self, step: Callable[[], T], *, what: str, permission: str, not_found: str) -> T:
        """Run `step` (a whole look-up-then-write step), retrying it as the policy allows."""
        policy = self.settings.retry
        token = self.settings.token
        start = self._clock()
        self._guard.restart(policy.total_seconds)
        attempt = 0
        with scrubbed_logs(token):
            while True:
                attempt += 1
                try:
                    return step()
                except GithubException as exc:
                    message = error_message(exc.data)
                    delay = retry_delay(exc.status, exc.headers, message, attempt, policy, time.time())
                    if delay is None:
                        needs = header(exc.headers, _ACCEPTED) if exc.status == 403 else None
                        raise _explain(
                            exc.status, message, what, needs_permission(needs) or permission, not_found, token
                        ) from None
                    problem = scrub(f"{exc.status} {message}".strip(), token)
                    rate_limited = is_rate_limit(exc.status, exc.headers, message)
                except (
                    requests.ConnectionError,
                    requests.Timeout,
                    requests.exceptions.ChunkedEncodingError,
                ) as exc:
                    # the network, or a response cut off mid-body: worth another try
                    delay = policy.backoff(attempt)
                    problem = scrub(type(exc).__name__, token)
                    rate_limited = False
                except ApiLimitError as exc:
                    raise ApiLimitError(scrub(exc.message, token)) from None  # a bound: never retried
                except requests.RequestException as exc:
                    # Not the network and not GitHub: a request that cannot even be sent (a bad URL,
                    # a header requests refuses). Retrying cannot help; its text may quote the token.
                    raise PublishError(scrub(f"cannot send the request while {what}: {exc}", token)) from None
                elapsed = self._clock() - start
                over_budget = elapsed + delay > policy.total_seconds
                if attempt >= policy.max_attempts or over_budget:
                    if rate_limited and over_budget:
                        raise PublishError(
                            f"GitHub rate limit while {what}: it asks to wait {delay:.0f}s, beyond the "
                            f"{policy.total_seconds:.0f}s retry budget; run again later"
                        ) from None
                    raise PublishError(
                        f"GitHub kept failing while {what} ({problem}) after {attempt} attempt(s) "
                        f"in {elapsed:.0f}s; nothing more was sent"
                    ) from None
                _log.warning("GitHub: %s while %s; retrying in %.1fs", problem, what, delay)
                self._sleep(delay)


# --- every request PyGithub sends --------------------------------------------------------------------

# PyGithub's Requester builds its connections from these three attributes (`Requester.injectConnection
# Classes` sets the class-wide ones, for every client in the process); set on the one requester, they
# route this client's requests, its own and those to URLs taken from answers, through the guard.
CONNECTION_HOOKS = (
    "_Requester__connectionClass",
    "_Requester__httpConnectionClass",
    "_Requester__httpsConnectionClass",
)


def _route_through(requester: Any, guard: Guard, session: requests.Session, timeout: float) -> None:
    for name in CONNECTION_HOOKS:
        if not hasattr(requester, name):
            raise PublishError(
                f"this PyGithub has no {name.split('__')[-1]}, through which opdrift bounds its "
                "requests: install PyGithub 2"
            )
    for name, scheme in zip(CONNECTION_HOOKS, (guard.root.scheme, "http", "https"), strict=True):
        setattr(requester, name, functools.partial(_Connection, guard, session, scheme, float(timeout)))


class _Connection:
    """What PyGithub's Requester calls a connection (``request`` then ``getresponse``), sent through the
    guard. PyGithub opens one for another host only after its own ``assert`` on the URL, which
    ``python -O`` strips; here the host is checked whatever the flags."""

    def __init__(
        self,
        guard: Guard,
        session: requests.Session,
        scheme: str,
        seconds: float,
        host: str,
        port: int | None = None,
        *args: Any,
        **kwargs: Any,  # PyGithub's retry, pool size, timeout and verify: the session and guard decide
    ) -> None:
        self.guard, self.session, self.scheme, self.timeout = guard, session, scheme, seconds
        self.host, self.port = host, port
        self._sent: tuple[str, str, Any, dict[str, str]] | None = None

    def request(self, verb: str, url: str, input: Any, headers: dict[str, str], stream: bool = False) -> None:
        self._sent = (verb, url, input, headers)

    def getresponse(self) -> _Response:
        if self._sent is None:
            raise PublishError("PyGithub asked for a response before sending a request")
        verb, path, data, headers = self._sent
        host = f"[{self.host}]" if ":" in self.host else self.host
        netloc = host if self.port is None else f"{host}:{self.port}"
        answer = self.guard.exchange(
            self.session, verb, f"{self.scheme}://{netloc}{path}", headers=headers, data=data,
            timeout=self.timeout, what=f"for {verb} {path.partition('?')[0]}",
        )  # fmt: skip
        return _Response(answer)

    def close(self) -> None:
        """The session is the client's, closed with it."""


class _Response:
    """The part of an http.client response PyGithub reads, over a complete `Answer`."""

    def __init__(self, answer: Answer) -> None:
        self.status = answer.status
        self.headers = answer.headers
        self._body = answer.body

    def getheaders(self) -> Any:
        return self.headers.items()

    def read(self) -> str:
        return self._body.decode("utf-8", "replace")

    def iter_content(self, chunk_size: int | None = 1) -> Iterator[bytes]:
        step = chunk_size or len(self._body) or 1
        return (self._body[i : i + step] for i in range(0, len(self._body), step))

    def raise_for_status(self) -> None:
        if self.status >= 400:
            raise requests.HTTPError(f"{self.status}")


def needs_permission(header: str | None) -> str | None:
    """GitHub's ``X-Accepted-GitHub-Permissions`` in a workflow's ``permissions:`` words: each
    alternative (``;``) a set of ``name=level`` (``,``), e.g. ``issues: read` or `pull-requests: read``.
    None when the header is absent or not of that form (it is the sender's text: only names and levels
    of letters and underscores are repeated)."""
    if not header:
        return None
    alternatives = []
    for part in header.split(";"):
        wanted = []
        for item in part.split(","):
            name, eq, level = item.strip().partition("=")
            if not eq or not re.fullmatch(r"[a-z_]{1,40}", name) or not re.fullmatch(r"[a-z_]{1,20}", level):
                return None
            wanted.append(f"{name.replace('_', '-')}: {level}")
        alternatives.append("` and `".join(wanted))
    return "` or `".join(alternatives[:4]) if alternatives else None


def _explain(
    status: int, message: str, what: str, permission: str, not_found: str, token: str
) -> PublishError:
    detail = f" ({status} {message})" if message else f" ({status})"
    if status == 401:
        text = f"GitHub rejected the token (401 {message or 'Unauthorized'}): check GITHUB_TOKEN"
    elif status == 403:
        text = (
            f"GitHub refused {what}{detail}: the token needs `{permission}` "
            "(in a workflow: the job's `permissions:`)"
        )
    elif status == 404:
        text = not_found
    elif status == 410:  # "Issues are disabled for this repo": the repository exists, the feature is off
        text = f"GitHub refused {what}{detail}: the repository has this feature turned off"
    else:
        text = f"GitHub refused {what}{detail}"
    return PublishError(scrub(text, token))


def connect(settings: Settings, **kwargs: Any) -> RepoClient:
    return RepoClient(settings, **kwargs)


# --- bodies ----------------------------------------------------------------------------------------


def with_marker(body: str, marker: str) -> str:
    """The body with its marker first (unless the renderer already put it there): where the marker rule
    (`opdrift.publish.upsert.is_ours`) looks for it."""
    if body.startswith(marker):
        return body
    return f"{marker}\n{body}"


def check_size(body: str, what: str) -> None:
    """Never send a body GitHub would reject: the renderer caps sizes, this is the last guard."""
    if len(body) > MAX_BODY_CHARS:
        raise PublishError(
            f"{what} body has {len(body)} characters, over GitHub's limit of {MAX_BODY_CHARS}; nothing was sent"
        )
