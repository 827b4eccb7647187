"""Publishing to GitHub: the sticky PR comment, the weekly drift issue, labels, job summary, annotations.

This is the only stage that talks to the network. It is handed finished text (the report is rendered
completely before anything is posted, so a failure never leaves a half-written comment) and explicit
settings (token, API root): it never reads the environment itself.

Finding its own posts: every post carries a hidden HTML-comment marker, and the bot finds its comment or
issue by that marker (never by title), preferring posts whose author is the bot. When the bot's login is
unknown (``GITHUB_TOKEN`` in Actions cannot read ``GET /user``) only posts by a Bot account count, so a
person quoting the marker cannot make the bot edit their comment.

Retries: PyGithub's own urllib3 retry is switched off, because it retries POST and so can duplicate a
comment when a 500 arrives after GitHub already stored it. Instead each publish step (look up, then
write) is retried as a whole: after a failure the bot lists the comments again before it would create
one, so a write that "failed" but landed is found instead of repeated. Waits grow exponentially for 5xx
and network errors and follow ``Retry-After`` / ``x-ratelimit-reset`` for rate limits, and the total
waiting is bounded by `RetryPolicy.total_seconds`: a rate limit that resets later than that fails at
once with a message rather than sleeping past the budget.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import github
import requests
from github.GithubException import GithubException

from bot.drift.changes import Change
from bot.errors import PublishError
from bot.model import NATIVE_PATH

DEFAULT_API_URL = "https://api.github.com"
MAX_BODY_CHARS = 65536  # GitHub rejects longer comment and issue bodies
RATE_LIMIT_MIN_WAIT = 60.0  # seconds, for a rate limit that names no time to wait
PR_MARKER = "<!-- opdrift:pr-comment -->"
_WEEKLY_MARKER_RE = re.compile(r"<!-- opdrift:weekly window=([^\s>]+) -->")
_WINDOW_RE = re.compile(r"[0-9A-Za-z][0-9A-Za-z._-]*")
_REPO_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+")
LABEL_COLOR = "c5def5"

Action = Literal["created", "updated", "unchanged", "skipped", "dry-run"]
T = TypeVar("T")

_log = logging.getLogger(__name__)


def weekly_marker(window_key: str) -> str:
    """The hidden marker of the weekly issue for one window, e.g. ``2026-W48``."""
    if not _WINDOW_RE.fullmatch(window_key):
        raise PublishError(f"bad weekly window {window_key!r}: use letters, digits, '.', '_' or '-'")
    return f"<!-- opdrift:weekly window={window_key} -->"


@dataclass(frozen=True)
class Outcome:
    """What a publish call did (or, in a dry run, would do)."""

    action: Action
    url: str | None = None
    number: int | None = None  # the PR's or the issue's number
    detail: str = ""  # one line for the log, e.g. "would update comment 123 on PR #5"
    text: str = ""  # the exact body that was (or would be) sent; empty when nothing is sent


@dataclass(frozen=True)
class RetryPolicy:
    """How long to keep trying. Waits double from `first_delay` up to `max_delay`."""

    total_seconds: float = 300.0  # the whole budget for waiting, per publish call
    first_delay: float = 2.0
    max_delay: float = 60.0
    max_attempts: int = 8

    def backoff(self, attempt: int) -> float:
        return float(min(self.max_delay, self.first_delay * 2 ** (attempt - 1)))


@dataclass(frozen=True)
class Settings:
    """Everything needed to reach one repository. The CLI fills it from the environment."""

    repo: str  # OWNER/NAME
    token: str
    api_url: str = DEFAULT_API_URL
    timeout: int = 30  # seconds per HTTP request
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    bot_login: str | None = None  # when None, asked from GET /user (which Actions tokens cannot read)
    # GitHub asks integrations to leave a second between content-creating requests.
    seconds_between_writes: float | None = 1.0
    per_page: int = 100


def check_repo_name(repo: str, what: str = "--repo") -> str:
    if not _REPO_RE.fullmatch(repo):
        raise PublishError(f"{what} must be OWNER/NAME, got {repo!r}")
    return repo


# --- retry policy (pure) ---------------------------------------------------------------------------


def _header(headers: Any, name: str) -> str | None:
    if not headers:
        return None
    for key, value in dict(headers).items():
        if str(key).lower() == name:
            return str(value)
    return None


def _message(data: Any) -> str:
    if isinstance(data, dict):
        return str(data.get("message") or "")
    return ""


def is_rate_limit(status: int, headers: Any, message: str) -> bool:
    """403/429 that GitHub means as "slow down" rather than "not allowed"."""
    if status not in (403, 429):
        return False
    return (
        status == 429
        or _header(headers, "retry-after") is not None
        or _header(headers, "x-ratelimit-remaining") == "0"
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
        after = _header(headers, "retry-after")
        if after is not None:
            try:
                return max(0.0, float(after))
            except ValueError:
                return headerless
        reset = _header(headers, "x-ratelimit-reset")
        if _header(headers, "x-ratelimit-remaining") == "0" and reset is not None:
            try:
                return max(float(reset) - now, 0.0) + 0.5
            except ValueError:
                return headerless
        return headerless
    if status >= 500:
        # A 503 may say when to come back; wait that long (the caller still holds the time budget).
        after = _header(headers, "retry-after")
        try:
            return (
                max(policy.backoff(attempt), float(after)) if after is not None else policy.backoff(attempt)
            )
        except ValueError:
            return policy.backoff(attempt)
    return None


# --- secrets ---------------------------------------------------------------------------------------


def scrub(text: str, secret: str | None) -> str:
    if secret:
        return text.replace(secret, "***")
    return text


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
        if not re.match(r"https?://[^/\s]+", settings.api_url):
            raise PublishError(f"GITHUB_API_URL must be an http(s) URL, got {settings.api_url!r}")
        self._sleep = sleep
        self._clock = clock
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
        self._login: str | None = settings.bot_login
        self._login_known = settings.bot_login is not None

    def close(self) -> None:
        self._gh.close()

    @property
    def repo(self) -> Any:
        return self._gh.get_repo(self.repo_name)

    def login(self) -> str | None:
        """The bot's own login, if the token may read it (installation tokens get 403)."""
        if not self._login_known:
            try:
                self._login = self._gh.get_user().login
            except GithubException as exc:
                if exc.status not in (403, 404):
                    raise
                self._login = None
            self._login_known = True
        return self._login

    def is_mine(self, obj: Any) -> bool:
        login, kind = _author(obj)
        me = self.login()
        if me is not None:
            return login is not None and login.lower() == me.lower()
        return kind == "Bot"

    def run(self, step: Callable[[], T], *, what: str, permission: str, not_found: str) -> T:
        """Run `step` (a whole look-up-then-write step), retrying it as the policy allows."""
        policy = self.settings.retry
        token = self.settings.token
        start = self._clock()
        attempt = 0
        with scrubbed_logs(token):
            while True:
                attempt += 1
                try:
                    return step()
                except GithubException as exc:
                    message = _message(exc.data)
                    delay = retry_delay(exc.status, exc.headers, message, attempt, policy, time.time())
                    if delay is None:
                        raise _explain(exc.status, message, what, permission, not_found, token) from None
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


def _explain(
    status: int, message: str, what: str, permission: str, not_found: str, token: str
) -> PublishError:
    detail = f" ({status} {message})" if message else f" ({status})"
    if status == 401:
        text = f"GitHub rejected the token (401 {message or 'Unauthorized'}): check GITHUB_TOKEN"
    elif status == 403:
        text = (
            f"GitHub refused {what}{detail}: the token needs the `{permission}` permission "
            "(in a workflow: `permissions:`)"
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
    """The body with its marker first (unless the renderer already put it there)."""
    if marker in body:
        return body
    return f"{marker}\n{body}"


def check_size(body: str, what: str) -> None:
    """Never send a body GitHub would reject: the renderer caps sizes, this is the last guard."""
    if len(body) > MAX_BODY_CHARS:
        raise PublishError(
            f"{what} body has {len(body)} characters, over GitHub's limit of {MAX_BODY_CHARS}; nothing was sent"
        )


# --- the sticky PR comment -------------------------------------------------------------------------


def find_comment(client: RepoClient, issue: Any, marker: str) -> Any | None:
    """The bot's oldest comment holding `marker`, looking through every page of comments."""
    for comment in issue.get_comments():
        if marker in (comment.body or "") and client.is_mine(comment):
            return comment
    return None


def publish_pr_comment(
    client: RepoClient | None,
    pr: int,
    body: str,
    marker: str = PR_MARKER,
    *,
    has_drift: bool,
    clean_body: str,
    dry_run: bool,
    head_sha: str | None = None,
) -> Outcome:
    """Create or edit the one sticky comment on PR `pr`.

    With drift: edit the bot's earlier comment in place (or create one). Without drift: post nothing,
    but flip an earlier comment to `clean_body`. With `client` None (no token) or `dry_run`, nothing is
    written; with a client a dry run still reads, to say what it would do.

    With `head_sha` (the commit the report was computed for), nothing is written unless the PR's head
    is still that commit. Runs for two quick pushes can finish in either order, and the posters are
    serialised but not ordered: without this check the report of the older push could overwrite the
    newer one. The check runs inside the retried step, right before the write.
    """
    text = with_marker(body if has_drift else clean_body, marker)
    check_size(text, "the PR comment")
    if client is None:
        if has_drift:
            return Outcome("dry-run", None, pr, f"would post or update the comment on PR #{pr}", text)
        return Outcome("dry-run", None, pr, f"no drift: would only flip an earlier comment on PR #{pr}", text)
    repo_name = client.repo_name
    # A create or an edit that "failed" may have landed: the retry then finds it done, and says so.
    tried_create = tried_edit = False

    def step() -> Outcome:
        nonlocal tried_create, tried_edit
        issue = client.repo.get_issue(pr)
        if issue.pull_request is None:
            raise PublishError(f"#{pr} in {repo_name} is an issue, not a pull request")
        if head_sha:
            current = client.repo.get_pull(pr).head.sha
            if current != head_sha:
                return Outcome(
                    "skipped",
                    None,
                    pr,
                    f"PR #{pr} has moved on to {current[:12]}; this report is for {head_sha[:12]}, "
                    "so it is not posted (the run for the new head posts its own)",
                )
        mine = find_comment(client, issue, marker)
        if mine is None:
            if not has_drift:
                return Outcome("skipped", None, pr, f"no drift and no earlier comment on PR #{pr}")
            if dry_run:
                return Outcome("dry-run", None, pr, f"would create a comment on PR #{pr}", text)
            tried_create = True
            created = issue.create_comment(text)
            return Outcome("created", created.html_url, pr, f"created comment {created.id} on PR #{pr}", text)
        if mine.body == text:
            if tried_create:
                return Outcome("created", mine.html_url, pr, f"created comment {mine.id} on PR #{pr}", text)
            if tried_edit:
                return Outcome("updated", mine.html_url, pr, f"updated comment {mine.id} on PR #{pr}", text)
            return Outcome("unchanged", mine.html_url, pr, f"comment {mine.id} on PR #{pr} is up to date")
        if dry_run:
            return Outcome("dry-run", mine.html_url, pr, f"would update comment {mine.id} on PR #{pr}", text)
        tried_edit = True
        mine.edit(text)
        return Outcome("updated", mine.html_url, pr, f"updated comment {mine.id} on PR #{pr}", text)

    return client.run(
        step,
        what=f"posting the comment on PR #{pr} of {repo_name}",
        permission="pull-requests: write",
        not_found=f"repository {repo_name} or PR {pr} not found (or the token cannot see it)",
    )


# --- the weekly issue ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Found:
    current: Any | None
    previous: Any | None  # the bot's issue of the latest earlier window


def _find_weekly(client: RepoClient, window_key: str) -> _Found:
    """One pass over the repository's issues (only the bot's, when its login is known)."""
    login = client.login()
    kwargs: dict[str, Any] = {"state": "all", "sort": "created", "direction": "desc"}
    if login is not None:
        kwargs["creator"] = login
    current = None
    previous: tuple[str, Any] | None = None
    for issue in client.repo.get_issues(**kwargs):
        # The marker and the author first: reading `pull_request` of a plain issue makes PyGithub
        # fetch it again (the list leaves the field out), one request per issue of the repository.
        match = _WEEKLY_MARKER_RE.search(issue.body or "")
        if match is None or not client.is_mine(issue) or issue.pull_request is not None:
            continue
        window = match.group(1)
        if window == window_key:
            if current is None or issue.number < current.number:
                current = issue
        elif window < window_key and (previous is None or window > previous[0]):
            previous = (window, issue)
    return _Found(current, None if previous is None else previous[1])


def _ensure_labels(client: RepoClient, names: Sequence[str]) -> None:
    if not names:
        return
    repo = client.repo
    have = {label.name.lower() for label in repo.get_labels()}
    for name in names:
        if name.lower() in have:
            continue
        try:
            repo.create_label(name, LABEL_COLOR, "opened by opdrift")
        except GithubException as exc:
            if exc.status != 422:  # 422: a concurrent run created it meanwhile
                raise


def weekly_body(body: str, marker: str, previous: Any | None) -> str:
    text = with_marker(body, marker)
    if previous is not None:
        text += f"\n\n---\nPrevious drift issue: #{previous.number}\n"
    return text


def publish_weekly_issue(
    client: RepoClient | None,
    *,
    title: str,
    body: str,
    window_key: str,
    labels: Sequence[str] = (),
    link_previous: bool = True,
    close_previous: bool = False,
    dry_run: bool,
) -> Outcome:
    """Open or update the drift issue of one window (e.g. ``2026-W48``), found by its hidden marker.

    Re-running for the same window edits the same issue. A new window's issue links the previous
    window's issue, and with `close_previous` closes it. Configured labels are created when missing
    and added (never removed: people may have added their own).
    """
    marker = weekly_marker(window_key)
    check_size(weekly_body(body, marker, None), "the weekly issue")
    if client is None:
        text = weekly_body(body, marker, None)
        return Outcome("dry-run", None, None, f"would open or update the issue {title!r}", text)
    repo_name = client.repo_name
    wanted_labels = list(dict.fromkeys(labels))
    # A create that "failed" may have landed, and a step that created the issue may fail later
    # (closing last week's): the retry then finds this call's own issue, which is new, not up to date.
    tried_create = tried_update = False

    def step() -> Outcome:
        nonlocal tried_create, tried_update
        found = _find_weekly(client, window_key)
        previous = found.previous if link_previous else None
        text = weekly_body(body, marker, previous)
        check_size(text, "the weekly issue")
        closing = found.previous if close_previous and found.previous is not None else None
        current = found.current
        if current is None:
            if dry_run:
                return Outcome("dry-run", None, None, f"would open the issue {title!r}", text)
            _ensure_labels(client, wanted_labels)
            tried_create = True
            issue = client.repo.create_issue(title=title, body=text, labels=wanted_labels)
            outcome = Outcome("created", issue.html_url, issue.number, f"opened issue #{issue.number}", text)
        else:
            have = {lb.name.lower() for lb in current.labels}
            missing = [n for n in wanted_labels if n.lower() not in have]
            if current.title == title and current.body == text and not missing:
                action: Action = "created" if tried_create else "updated" if tried_update else "unchanged"
                detail = {
                    "created": f"opened issue #{current.number}",
                    "updated": f"updated issue #{current.number}",
                    "unchanged": f"issue #{current.number} is up to date",
                }[action]
                outcome = Outcome(
                    action, current.html_url, current.number, detail, "" if action == "unchanged" else text
                )
            elif dry_run:
                return Outcome(
                    "dry-run", current.html_url, current.number, f"would update issue #{current.number}", text
                )
            else:
                if current.title != title or current.body != text:
                    tried_update = True
                    current.edit(title=title, body=text)
                if missing:
                    _ensure_labels(client, missing)
                    current.add_to_labels(*missing)
                outcome = Outcome(
                    "updated", current.html_url, current.number, f"updated issue #{current.number}", text
                )
        if closing is not None and closing.state == "open" and not dry_run:
            closing.edit(state="closed", state_reason="completed")
        return outcome

    return client.run(
        step,
        what=f"publishing the weekly issue in {repo_name}",
        permission="issues: write",
        not_found=f"repository {repo_name} not found (or the token cannot see it)",
    )


# --- Actions conventions ---------------------------------------------------------------------------


def append_step_summary(path: str, text: str) -> None:
    """Append to the file Actions names in GITHUB_STEP_SUMMARY (the caller reads the variable)."""
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(text if text.endswith("\n") else text + "\n")
    except OSError as err:
        raise PublishError(f"cannot write the job summary: {err.strerror}", path=path) from None


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


def workflow_command(command: str, message: str, **properties: str | int | None) -> str:
    """One ``::command key=value,...::message`` line, escaped as GitHub's toolkit escapes them."""
    props = ",".join(f"{k}={_escape_property(str(v))}" for k, v in properties.items() if v is not None)
    return f"::{command}{' ' + props if props else ''}::{_escape_data(message)}"


_FLAGS = ("needs_kernel", "breaking", "new_core", "now_decomposes")
# Actions shows only the first few annotations of a step; more would only bury the important ones.
MAX_ANNOTATIONS = 50


def annotation_lines(changes: Sequence[Change], *, limit: int = MAX_ANNOTATIONS) -> list[str]:
    """``::warning`` lines at the head-side line of each new or changed operator, most urgent first.

    Changes that only touch which in-tree backends have kernels are left out (news for one backend,
    noise in everyone's diff view).
    """
    shown = [c for c in changes if c.after is not None and not c.kernels_only]
    shown.sort(key=lambda c: tuple(not getattr(c, f) for f in _FLAGS))
    lines = []
    for c in shown[:limit]:
        flags = "".join(f"; {f.replace('_', ' ')}" for f in _FLAGS if getattr(c, f))
        message = f"operator {c.name} {c.kind} ({c.category}){flags}"
        lines.append(workflow_command("warning", message, file=NATIVE_PATH, line=c.line, title="opdrift"))
    if len(shown) > limit:
        lines.append(workflow_command("notice", f"{len(shown) - limit} more changed operators not annotated"))
    return lines
