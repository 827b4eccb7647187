"""One call to GitHub for `opdrift doctor`, told as GitHub answered it: the status, the permissions
GitHub says the call needs (``X-Accepted-GitHub-Permissions``, sent with every answer to an app's or
a fine-grained token), the rate limit left, and, when it failed, what to change. Unlike every other
client here a failure is data, not an error: the doctor goes on to the next call and reports them all.
Within `opdrift.github.limits`' bounds (the API root, a deadline, a size cap); no retry, a maintainer
runs it by hand.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import requests

from opdrift.errors import ApiLimitError, PublishError
from opdrift.github.limits import ApiRoot, Guard, new_session
from opdrift.github.retry import scrub
from opdrift.publish.github import needs_permission

JSON = "application/vnd.github+json"
SHA_ONLY = "application/vnd.github.sha"
RAW = "application/vnd.github.raw"
# A maintainer's run: a few dozen calls, none of them large (a blob is the smallest of a tree).
SECONDS = 120.0
MAX_BYTES = 4 << 20


@dataclass(frozen=True)
class Outcome:
    """What one call got."""

    method: str
    path: str
    status: int | None  # None: no answer at all (see `fix`)
    needs: str | None  # the permissions GitHub named, in a workflow's `permissions:` words
    remaining: str | None  # X-RateLimit-Remaining
    fix: str | None  # what to change; None when the call succeeded
    data: Any = None  # the JSON (or, for SHA_ONLY, the text) of a successful answer

    @property
    def ok(self) -> bool:
        return self.fix is None


class Prober:
    """Sends the doctor's calls with TOKEN to API_URL, one at a time."""

    def __init__(self, api_url: str, token: str | None, *, timeout: float = 30.0) -> None:
        self.api_url = api_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.guard = Guard(ApiRoot.parse(api_url), seconds=SECONDS, max_json_bytes=MAX_BYTES)
        self.session = new_session(token)
        self.session.headers["X-GitHub-Api-Version"] = "2022-11-28"

    def close(self) -> None:
        self.session.close()

    def call(self, method: str, path: str, *, body: Any = None, accept: str = JSON) -> Outcome:
        headers = {"Accept": accept}
        data = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            data = json.dumps(body)
        try:
            answer = self.guard.exchange(
                self.session, method, self.api_url + path, headers=headers, data=data,
                timeout=self.timeout, limit=MAX_BYTES, what=f"for {path}", raw=accept != JSON,
            )  # fmt: skip
        except (requests.RequestException, ApiLimitError, PublishError) as err:
            text = scrub(str(getattr(err, "message", err)), self.token)
            fix = f"no answer ({text}): check GITHUB_API_URL and the network"
            return Outcome(method, path, None, None, None, fix)
        needs = needs_permission(answer.header("x-accepted-github-permissions"))
        remaining = answer.header("x-ratelimit-remaining")
        if 200 <= answer.status < 300:
            parsed: Any = None
            if answer.body and accept == JSON:
                try:
                    parsed = answer.json()
                except ValueError:
                    parsed = None
            elif accept == SHA_ONLY:
                parsed = answer.body.decode("ascii", "replace").strip()
            return Outcome(method, path, answer.status, needs, remaining, None, parsed)
        try:
            message = str(answer.json().get("message", ""))
        except (ValueError, AttributeError, RecursionError):
            message = ""
        fix = fix_for(answer.status, scrub(message, self.token)[:200], needs, remaining, bool(self.token))
        return Outcome(method, path, answer.status, needs, remaining, fix)


def fix_for(status: int, message: str, needs: str | None, remaining: str | None, has_token: bool) -> str:
    """What a maintainer changes when a call answered STATUS (GitHub's MESSAGE)."""
    said = f" ({message})" if message else ""
    if status == 401:
        return f"GitHub rejected the token{said}: check GITHUB_TOKEN (expired, revoked or mistyped)"
    if status in (403, 429) and remaining == "0":
        return "the rate limit is spent: wait for its reset, or use a token with its own limit"
    if status == 403 and needs:
        return (
            f"the token lacks `{needs}`{said}: in a workflow, add it to the job's `permissions:`; "
            "for a fine-grained token, grant it on this repository"
        )
    if status == 403:
        if not has_token:
            return f"refused without a token{said}: set GITHUB_TOKEN"
        return f"refused{said}: the token cannot do this here (an organisation's policy, or a classic token's scopes)"
    if status == 404:
        return (
            "not found: check OWNER/NAME, and that the token can see the repository (GitHub answers 404, "
            "not 403, to a token without access to a private one)"
        )
    return f"GitHub answered {status}{said}"
