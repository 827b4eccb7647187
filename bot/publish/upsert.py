"""Find the bot's own post by its hidden marker, then create it or edit it: the one protocol behind the
sticky PR comment, the weekly issue, a manual run's issue and the watch dashboard.

**The marker rule**, once (`is_ours`): a post is the bot's when its body starts with the marker, where
`github.with_marker` writes it (a quote of the marker further down does not count), and its author is
the token's own login (a person or another app may copy the marker; `RepoClient.own_login`). An issue
is also never a pull request. Issues are looked for among the bot's own only (`own_issues`: ``creator=``
its login, newest first, a bounded number), never in a scan of every issue: pytorch/pytorch has over
100,000, more requests than a workflow token has in an hour. Of two matching issues (two runs raced),
the oldest is the one.

**The outcomes** (`upsert`), a retried step included: a create or an edit that "failed" may have
landed, so the retry finds the post already as wanted and says what this call did (`Tries`):

    found   as wanted   dry run   tried      →  action      writes
    no      -           yes       -             dry-run     none ("would create")
    no      -           no        -             created     create
    yes     no          yes       -             dry-run     none ("would update")
    yes     no          no        created       created     edit
    yes     no          no        no create     updated     edit
    yes     yes         -         created       created     none
    yes     yes         -         edited        updated     none
    yes     yes         -         nothing       unchanged   none

An edit adds missing labels and never removes one (people add their own).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from github.GithubException import GithubException

from opdrift.publish.github import Action, Outcome, RepoClient

LABEL_COLOR = "c5def5"


def is_ours(client: RepoClient, post: Any, marker: str) -> bool:
    """THE marker rule (see the module's docstring). The body and the author only: reading an issue's
    `pull_request` makes PyGithub fetch it again (a listing leaves the field out), so callers ask that
    last."""
    return (post.body or "").startswith(marker) and client.is_mine(post)


def own_issues(client: RepoClient, *, state: str, limit: int) -> Iterator[Any]:
    """The bot's own issues (pull requests too: see `is_ours`), newest first, at most LIMIT of them."""
    issues = client.repo.get_issues(state=state, sort="created", direction="desc", creator=client.own_login())
    for scanned, issue in enumerate(issues, 1):
        if scanned > limit:
            return
        yield issue


def find_issue(client: RepoClient, marker: str, *, state: str, limit: int) -> Any | None:
    """The bot's oldest issue (not a pull request) with MARKER, among its LIMIT newest issues in STATE."""
    found = None
    for issue in own_issues(client, state=state, limit=limit):
        if not is_ours(client, issue, marker) or issue.pull_request is not None:
            continue
        if found is None or issue.number < found.number:
            found = issue
    return found


def find_comment(client: RepoClient, issue: Any, marker: str) -> Any | None:
    """The bot's oldest comment on ISSUE with MARKER, looking through every page of comments."""
    for comment in issue.get_comments():
        if is_ours(client, comment, marker):
            return comment
    return None


@dataclass(frozen=True)
class Wanted:
    """The post as it should be."""

    body: str
    title: str = ""  # an issue's (a comment has none)
    labels: tuple[str, ...] = ()  # an issue's: added when missing, never removed
    retitle: bool = True  # an edit also restores the title (False: the title is the maintainers' once set)


class Place(Protocol):
    """Where the post lives: what creating, comparing and editing it mean there, and its words."""

    @property
    def make(self) -> str: ...  # the verb of a create: "create", "open"
    @property
    def made(self) -> str: ...  # "created", "opened"

    def name(self, post: Any) -> str: ...  # "comment 12 on PR #5", "issue #7"
    def new(self, wanted: Wanted) -> str: ...  # the post to be made: "a comment on PR #5"
    def number(self, post: Any | None) -> int | None: ...
    def create(self, wanted: Wanted) -> Any: ...
    def differs(self, post: Any, wanted: Wanted) -> bool: ...
    def edit(self, post: Any, wanted: Wanted) -> None: ...


# What each outcome says (`Outcome.detail`): {name} the post, {new} the post to be made.
DETAILS: dict[str, str] = {
    "created": "{made} {name}",
    "updated": "updated {name}",
    "unchanged": "{name} is up to date",
    "would create": "would {make} {new}",
    "would update": "would update {name}",
}


class Tries:
    """What earlier attempts of one retried step wrote (or may have: a write that "failed" may have
    landed). One per publish call, shared by its attempts."""

    def __init__(self) -> None:
        self.created = False
        self.edited = False


def upsert(place: Place, found: Any | None, wanted: Wanted, *, dry_run: bool, tries: Tries) -> Outcome:
    """Create the post, or edit FOUND (the bot's post, `is_ours`) when it differs: the module's table."""

    def outcome(action: Action, words: str, post: Any | None, text: str) -> Outcome:
        detail = DETAILS[words].format(
            made=place.made,
            make=place.make,
            name="" if post is None else place.name(post),
            new=place.new(wanted),
        )
        return Outcome(action, None if post is None else post.html_url, place.number(post), detail, text)

    text = wanted.body
    if found is None:
        if dry_run:
            return outcome("dry-run", "would create", None, text)
        tries.created = True  # before the call: a create that "failed" but landed is found next try
        return outcome("created", "created", place.create(wanted), text)
    if place.differs(found, wanted):
        if dry_run:
            return outcome("dry-run", "would update", found, text)
        tries.edited = True
        place.edit(found, wanted)
    if tries.created:
        return outcome("created", "created", found, text)
    if tries.edited:
        return outcome("updated", "updated", found, text)
    return outcome("unchanged", "unchanged", found, "")


# --- the two places -------------------------------------------------------------------------------


@dataclass(frozen=True)
class CommentOn:
    """Comments on ISSUE (a pull request's conversation is an issue), numbered as PR NUMBER."""

    issue: Any
    pr: int
    make: str = "create"
    made: str = "created"

    def name(self, post: Any) -> str:
        return f"comment {post.id} on PR #{self.pr}"

    def new(self, wanted: Wanted) -> str:
        return f"a comment on PR #{self.pr}"

    def number(self, post: Any | None) -> int | None:
        return self.pr

    def create(self, wanted: Wanted) -> Any:
        return self.issue.create_comment(wanted.body)

    def differs(self, post: Any, wanted: Wanted) -> bool:
        return bool(post.body != wanted.body)

    def edit(self, post: Any, wanted: Wanted) -> None:
        post.edit(wanted.body)


@dataclass(frozen=True)
class IssueIn:
    """Issues of the client's repository, with their title and labels."""

    client: RepoClient
    make: str = "open"
    made: str = "opened"

    def name(self, post: Any) -> str:
        return f"issue #{post.number}"

    def new(self, wanted: Wanted) -> str:
        return f"the issue {wanted.title!r}"

    def number(self, post: Any | None) -> int | None:
        return None if post is None else int(post.number)

    def create(self, wanted: Wanted) -> Any:
        if not wanted.labels:
            return self.client.repo.create_issue(title=wanted.title, body=wanted.body)
        ensure_labels(self.client, wanted.labels)
        return self.client.repo.create_issue(title=wanted.title, body=wanted.body, labels=list(wanted.labels))

    def differs(self, post: Any, wanted: Wanted) -> bool:
        return post.body != wanted.body or self._retitled(post, wanted) or bool(_missing(post, wanted))

    def edit(self, post: Any, wanted: Wanted) -> None:
        if post.body != wanted.body or self._retitled(post, wanted):
            if wanted.retitle:
                post.edit(title=wanted.title, body=wanted.body)
            else:
                post.edit(body=wanted.body)
        missing = _missing(post, wanted)
        if missing:
            ensure_labels(self.client, missing)
            post.add_to_labels(*missing)

    @staticmethod
    def _retitled(post: Any, wanted: Wanted) -> bool:
        return wanted.retitle and post.title != wanted.title


def _missing(post: Any, wanted: Wanted) -> list[str]:
    if not wanted.labels:
        return []  # no request for a post's labels when none are wanted
    have = {label.name.lower() for label in post.labels}
    return [n for n in wanted.labels if n.lower() not in have]


def ensure_labels(client: RepoClient, names: Sequence[str]) -> None:
    """Create the labels of NAMES the repository lacks."""
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
