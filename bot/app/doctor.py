"""`doctor`: each call the workflows make, tried once with the maintainer's token before the first
real run, so that a missing permission shows up as one line with its fix rather than as a failed
weekly run.

The reads: the repository and its issues (the PR comment, the weekly issue, the dashboard), the bot's
login (GET /user, or the configured login's account when an Actions token may not read /user), the
upstream's pull requests (`watch`), and a `gh:` source's path through the upstream (its branch's
commit, that commit, a compare, a git tree and its smallest blob), then the rate limit. With WRITE:
a test issue and a comment on it, the comment deleted and the issue closed (GitHub's REST API
cannot delete an issue: it stays, closed as not planned). A call that needs an earlier one's answer
is skipped when that one failed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from opdrift.publish.doctor import RAW, SHA_ONLY, Outcome, Prober

MAX_DEPTH = 8  # git trees listed on the way to a file
TEST_TITLE = "opdrift doctor: a test issue (closed at once)"
TEST_BODY = (
    "`opdrift doctor --write` opened this issue to check that its token may write issues and "
    "comments. GitHub's REST API cannot delete an issue: it was closed as not planned."
)


@dataclass(frozen=True)
class Line:
    """One call as the doctor prints it."""

    what: str
    outcome: Outcome | None  # None: skipped (an earlier call it needs failed)

    def render(self) -> str:
        o = self.outcome
        if o is None:
            return f"SKIP  {self.what}: an earlier call it needs failed or found nothing to use"
        status = "---" if o.status is None else str(o.status)
        parts = [f"{'ok  ' if o.ok else 'FAIL'}  {status} {o.method} {o.path}  {self.what}"]
        parts.append(f"needs {o.needs}" if o.needs else "needs: not said")
        if o.remaining is not None:
            parts.append(f"rate limit {o.remaining} left")
        if o.fix:
            parts.append(f"fix: {o.fix}")
        return " · ".join(parts)


def run_doctor(
    prober: Prober,
    repo: str,
    upstream: str,
    *,
    bot_login: str | None,
    write: bool,
    emit: Callable[[Line], None],
) -> bool:
    """Try every call, EMIT each line as it is known; True when all succeeded."""
    lines: list[Line] = []

    def step(what: str, method: str, path: str, **kw: Any) -> Outcome:
        outcome = prober.call(method, path, **kw)
        lines.append(Line(what, outcome))
        emit(lines[-1])
        return outcome

    def skip(what: str) -> None:
        lines.append(Line(what, None))
        emit(lines[-1])

    mine, up = f"/repos/{repo}", f"/repos/{upstream}"
    step("read the repository (every workflow)", "GET", mine)
    step("list its issues (the weekly issue, the dashboard)", "GET", f"{mine}/issues?state=all&per_page=1")
    if bot_login:
        step("the bot's account (OPDRIFT_BOT_LOGIN)", "GET", f"/users/{quote(bot_login)}")
    else:
        step("the token's own login (finding the bot's comments)", "GET", "/user")
    step("list the upstream's pull requests (watch)", "GET",
         f"{up}/pulls?state=all&sort=updated&direction=desc&per_page=1")  # fmt: skip
    _read_source(step, skip, up)
    if write:
        _write(step, skip, mine)
    step("the rate limit (not counted against it)", "GET", "/rate_limit")
    # A skip is no failure of its own: the call it needed failed (and counts), or found nothing to use.
    return all(line.outcome.ok for line in lines if line.outcome is not None)


Step = Callable[..., Outcome]


def _read_source(step: Step, skip: Callable[[str], None], up: str) -> None:
    """A `gh:` source's calls: the branch's commit, the commit, a compare, a tree and a blob."""
    head = step("resolve the upstream's main (gh: sources)", "GET", f"{up}/commits/main", accept=SHA_ONLY)
    sha = head.data if head.ok and isinstance(head.data, str) else None
    commit = step("read a commit (gh: sources)", "GET", f"{up}/git/commits/{sha}") if sha else None
    if commit is None:
        for what in ("read a commit", "compare two commits", "list a git tree", "read a blob"):
            skip(f"{what} (gh: sources)")
        return
    data = commit.data if commit.ok and isinstance(commit.data, dict) else {}
    parents = [p.get("sha") for p in data.get("parents", []) if isinstance(p, dict)]
    base = parents[0] if parents and isinstance(parents[0], str) else sha  # a root commit: itself
    step("compare two commits (a PR's merge base, watch)", "GET", f"{up}/compare/{base}...{sha}?per_page=1")
    tree = data.get("tree", {}).get("sha") if isinstance(data.get("tree"), dict) else None
    # Down the first directory until a directory holds a file (the root of a tree may hold none).
    for _ in range(MAX_DEPTH):
        if not isinstance(tree, str):
            break
        listing = step("list a git tree (gh: sources)", "GET", f"{up}/git/trees/{tree}")
        entries = listing.data.get("tree", []) if listing.ok and isinstance(listing.data, dict) else []
        entries = [e for e in entries if isinstance(e, dict) and isinstance(e.get("sha"), str)]
        blobs = [e for e in entries if e.get("type") == "blob"]
        if blobs:
            smallest = min(blobs, key=lambda e: e["size"] if isinstance(e.get("size"), int) else 1 << 40)
            step("read a blob (gh: sources)", "GET", f"{up}/git/blobs/{smallest['sha']}", accept=RAW)
            return
        tree = next((e["sha"] for e in entries if e.get("type") == "tree"), None)
    skip("read a blob (gh: sources)")


def _write(step: Step, skip: Callable[[str], None], mine: str) -> None:
    opened = step("open an issue (the weekly issue, the dashboard)", "POST", f"{mine}/issues",
                  body={"title": TEST_TITLE, "body": TEST_BODY})  # fmt: skip
    number = opened.data.get("number") if opened.ok and isinstance(opened.data, dict) else None
    if not isinstance(number, int):
        for what in ("comment on it", "delete the comment", "close the issue"):
            skip(what)
        return
    said = step("comment on it (the PR comment, the dashboard's news)", "POST",
                f"{mine}/issues/{number}/comments", body={"body": "opdrift doctor: a test comment"})  # fmt: skip
    cid = said.data.get("id") if said.ok and isinstance(said.data, dict) else None
    if isinstance(cid, int):
        step("delete the comment", "DELETE", f"{mine}/issues/comments/{cid}")
    else:
        skip("delete the comment")
    step("close the issue (issues cannot be deleted through the API)", "PATCH", f"{mine}/issues/{number}",
         body={"state": "closed", "state_reason": "not_planned"})  # fmt: skip
