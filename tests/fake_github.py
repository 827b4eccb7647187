"""A small fake of GitHub's REST API, served over real HTTP on 127.0.0.1 for PyGithub to talk to.

It implements the subset the publisher uses (repository, issues and pull requests, issue comments,
labels, the authenticated user) with the JSON shapes PyGithub reads: absolute ``url`` fields under
the same root (PyGithub refuses to follow URLs to another host or port), ``user.login``,
``html_url``, numeric ids, and ``Link`` headers for pagination. State lives in memory, every request
is recorded with all its headers, and faults can be scripted ("the next 2 POSTs to .../comments
answer 500", "403 with Retry-After: 1"), and so can hostile answers (`misbehave`: a drip, a flood, an
endless ``Link: next``, URLs to another host). The server caps page sizes at `page_size` whatever the
client asks for, so tests exercise pagination with a handful of items.

The git side (commits, git trees and blobs, contents, compare with its files) serves commits added
by `add_commit` or mirrored from a local repository (`mirror_git`). Pull requests are opened, pushed,
retitled, merged and closed (`add_pull`, `update_pull`, `merge_pull`, `close_pull`), each move ticking
their ``updated_at`` so that ``sort=updated`` orders them; ``pulls/N/files`` diffs their head against
the merge base. As on GitHub, every GET answer carries an ETag, a request whose ``If-None-Match``
names it gets a bodiless 304, and a 304 is not counted in ``X-RateLimit-Remaining`` (`rate_used`).
Each recorded request keeps its answer's size, for the benchmarks.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

import github_json as gj

Json = dict[str, Any]

DOCS = "https://docs.github.com/rest"
HTML_ROOT = "https://github.test"
# What GitHub adds to the Link of some answers (PyGithub's tests/ReplayData/PaginatedList.
# testTotalCountWithDeprecationLink.txt): a web page off the API root, with a parameter after the rel.
DEPRECATION_LINK = (
    "<https://github.blog/changelog/2025-03-06-github-issues-projects-api-support-for-issues-advanced"
    '-search-and-more/>; rel="deprecation"; type="text/html"'
)


@dataclass(frozen=True)
class Recorded:
    """One request as the server saw it."""

    method: str
    path: str  # without the API prefix, with the query string
    headers: Mapping[str, str]
    body: str
    status: int
    size: int = 0  # bytes of the answer's body


@dataclass
class Fault:
    """A scripted failure: the next `times` matching requests get `status` with `headers`."""

    method: str | None
    pattern: re.Pattern[str]
    status: int
    times: int
    headers: Mapping[str, str]
    message: str
    # Perform the request first, then answer with the fault: the server-side write happened but the
    # client sees an error, which is the case that breeds duplicate comments.
    after_apply: bool = False
    delay: float = 0.0  # seconds the answer takes (a slow 5xx), the server's lock released


@dataclass(frozen=True)
class TokenInfo:
    login: str
    can_write: bool = True
    # Installation tokens (GITHUB_TOKEN in Actions) get 403 from GET /user.
    user_endpoint: bool = True
    # An installation token's permissions, as a workflow job's `permissions:` grants them (`issues:
    # write`, `pull-requests: read`...): a call they do not cover answers 403 with GitHub's
    # X-Accepted-GitHub-Permissions (`ACCEPTED`). None: every call is allowed (`can_write` aside).
    permissions: Mapping[str, str] | None = None
    # The repository PERMISSIONS apply to (the workflow's own); another one is read as public, never
    # written. None: every repository.
    repository: str | None = None


# What each call needs of an installation token, as GitHub's X-Accepted-GitHub-Permissions says
# (``;`` separates alternatives). Read from GitHub's answers recorded in PyGithub's tests/ReplayData
# (Issue.setUp: issues=read for GET issues/N; PullRequest comments: issues=read; pull_requests=read;
# Repository.setUp: metadata=read) and GitHub's "Permissions required for GitHub Apps" page.
ACCEPTED: tuple[tuple[str, re.Pattern[str], str], ...] = tuple(
    (method, re.compile(pattern), header)
    for method, pattern, header in (
        ("GET", r"", "metadata=read"),
        ("GET", r"/issues(/\d+)?", "issues=read"),
        ("GET", r"/issues/\d+/comments|/issues/comments/\d+", "issues=read; pull_requests=read"),
        ("POST", r"/issues", "issues=write"),
        ("PATCH", r"/issues/\d+", "issues=write"),
        ("POST", r"/issues/\d+/comments", "issues=write; pull_requests=write"),
        ("PATCH", r"/issues/comments/\d+", "issues=write; pull_requests=write"),
        ("DELETE", r"/issues/comments/\d+", "issues=write; pull_requests=write"),
        ("POST", r"/issues/\d+/labels", "issues=write; pull_requests=write"),
        ("GET", r"/labels(/[^/]+)?", "issues=read; pull_requests=read"),
        ("POST", r"/labels", "issues=write; pull_requests=write"),
        ("GET", r"/pulls(/\d+(/files)?)?", "pull_requests=read"),
        ("GET", r"/(commits|contents|git|compare)/.*", "contents=read"),
    )
)
_LEVELS = {"none": 0, "read": 1, "write": 2, "admin": 3}


def accepted(method: str, rest: str) -> str | None:
    """GitHub's X-Accepted-GitHub-Permissions for METHOD on REST (the path after /repos/O/R)."""
    return next((h for m, pattern, h in ACCEPTED if m == method and pattern.fullmatch(rest)), None)


def allows(permissions: Mapping[str, str], header: str) -> bool:
    """Whether a job's PERMISSIONS (``pull-requests: write``) cover one of HEADER's alternatives;
    ``metadata: read`` every installation token has."""
    have = {k.replace("-", "_"): _LEVELS.get(v, 0) for k, v in permissions.items()}
    have["metadata"] = max(have.get("metadata", 0), 1)
    return any(
        all(
            have.get(name, 0) >= _LEVELS[level]
            for name, _, level in (x.strip().partition("=") for x in alt.split(","))
        )
        for alt in header.split(";")
    )


@dataclass
class RepoState:
    full_name: str
    id: int
    issues: dict[int, Json] = field(default_factory=dict)
    comments: dict[int, Json] = field(default_factory=dict)  # comment id → comment
    labels: dict[str, Json] = field(default_factory=dict)  # lower-cased name → label
    # pull request number → its head: (repository full name, branch, commit sha)
    heads: dict[int, tuple[str, str, str]] = field(default_factory=dict)
    bases: dict[int, str] = field(default_factory=dict)  # pull request number → its base commit
    next_number: int = 1
    # The git side, for the contents, blobs, commits and compare endpoints.
    commits: dict[str, FakeCommit] = field(default_factory=dict)  # sha → commit
    refs: dict[str, str] = field(default_factory=dict)  # branch or tag name → commit sha
    pulls: dict[int, PullMeta] = field(default_factory=dict)  # what the pulls API adds to the issue


@dataclass
class PullMeta:
    """A pull request's own fields: draft, last update, merge time, and (optionally) a file list
    served as is instead of the diff of its commits (a benchmark's thousands of PRs have no commits)."""

    draft: bool
    updated_at: str
    merged_at: str | None = None
    files: list[Json] | None = None
    # The author's account was deleted: GitHub answers ``"user": null`` (the schema's nullable-simple-user).
    ghost: bool = False


@dataclass(frozen=True)
class FakeCommit:
    sha: str
    date: str
    files: Mapping[str, str]  # path → blob sha
    parent: str | None
    message: str = "a commit"


@dataclass(frozen=True)
class Drip:
    """Send the whole answer, status line and headers included, one byte every `interval` seconds."""

    interval: float


@dataclass(frozen=True)
class Flood:
    """Answer 200 with a JSON body of `size` bytes, streamed (with or without a Content-Length)."""

    size: int
    declare_length: bool = False


@dataclass(frozen=True)
class EndlessPages:
    """Every answer announces one more page (``Link: <...page=N+1>; rel="next"``)."""


@dataclass(frozen=True)
class Misdirect:
    """Every URL in the answer (``url`` fields, ``Link``, ``Location``) names `root` instead of the API's."""

    root: str


Misbehaviour = Drip | Flood | EndlessPages | Misdirect


@dataclass
class _Scripted:
    method: str | None
    pattern: re.Pattern[str]
    behaviour: Misbehaviour
    times: int


@dataclass(frozen=True)
class Wire:
    """What `_serve` must send in its own way (a drip or a flood) instead of the encoded answer."""

    behaviour: Drip | Flood
    payload: object


@dataclass(frozen=True)
class RawBytes:
    """A response body sent as is (the raw media type), not as JSON."""

    data: bytes


class Recorder:
    """What every fake of the session was asked and answered, for tests/github_openapi.py: each
    (method, path with query) once, and up to SAMPLES answers per request shape (numbers and shas
    made one), so that keeping it costs little whatever the suite sends; `raw` names the shapes
    answered in a raw media type (no JSON to check). Hostile answers (`misbehave`) and scripted
    faults are left out: they are meant not to be GitHub's. Under xdist each worker keeps its own,
    and `to_json` / `merge` carry them to the controller (tests/conftest.py)."""

    SAMPLES = 3

    def __init__(self) -> None:
        self.requests: set[tuple[str, str]] = set()
        self.answers: dict[tuple[str, str, int], list[bytes]] = {}
        self.raw: set[tuple[str, str, int]] = set()
        self._lock = threading.Lock()

    def add(self, method: str, path: str, status: int, payload: object) -> None:
        shape = re.sub(r"[0-9a-f]{40}|\d+", "N", path.partition("?")[0])
        with self._lock:
            self.requests.add((method, path))
            kept = self.answers.setdefault((method, shape, status), [])
            if isinstance(payload, RawBytes):
                self.raw.add((method, shape, status))
            elif len(kept) < self.SAMPLES:
                kept.append(json.dumps(payload).encode())

    def to_json(self) -> str:
        """What this process recorded, as text (an xdist worker's ``workeroutput`` carries it)."""
        with self._lock:
            return json.dumps({
                "requests": sorted(self.requests),
                "answers": [[*key, [b.decode() for b in bodies]] for key, bodies in self.answers.items()],
                "raw": sorted(self.raw),
            })  # fmt: skip

    def merge(self, text: str) -> None:
        """Add what another process recorded (`to_json`'s TEXT)."""
        data = json.loads(text)
        with self._lock:
            self.requests.update((m, p) for m, p in data["requests"])
            for method, shape, status, bodies in data["answers"]:
                kept = self.answers.setdefault((method, shape, status), [])
                kept.extend(b.encode() for b in bodies[: max(self.SAMPLES - len(kept), 0)])
            self.raw.update((m, s, c) for m, s, c in data["raw"])


# Set by tests/conftest.py for the session; None: nothing is kept.
RECORDER: Recorder | None = None


def blob_sha(data: bytes) -> str:
    """The git object id of a blob with DATA, as GitHub's APIs report it."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class _Reply(Exception):
    """Raised inside a handler to answer with a status and a JSON body."""

    def __init__(self, status: int, body: object, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(status)
        self.status = status
        self.body = body
        self.headers = dict(headers or {})


def _error(status: int, message: str) -> _Reply:
    return _Reply(status, {"message": message, "documentation_url": DOCS, "status": str(status)})


class FakeGitHub:
    """The server and its state. Use `start()`/`stop()` or the pytest fixture in test modules."""

    def __init__(self, *, prefix: str = "/api/v3", page_size: int = 3) -> None:
        self.prefix = prefix.rstrip("/")
        self.page_size = page_size
        self.tokens: dict[str, TokenInfo] = {}
        self.users: dict[str, Json] = {}
        self.repos: dict[str, RepoState] = {}
        self.requests: list[Recorded] = []
        self.faults: list[Fault] = []
        self.misbehaviours: list[_Scripted] = []
        self.hooks: list[tuple[re.Pattern[str], Callable[[], None]]] = []
        self.stopping = threading.Event()
        self.blobs: dict[str, bytes] = {}  # blob sha → content, across repositories
        # blob sha → the size git trees announce for it instead of its content's (a 64 MB file a
        # client must refuse from the tree alone, without the fake holding 64 MB)
        self.blob_sizes: dict[str, int] = {}
        # git/trees: a made-up tree sha → (commit sha, directory) it lists; entries a test adds to every
        # recursive listing (a symlink, a submodule, a path with ``..``: what a hostile tree holds)
        self.trees: dict[str, tuple[str, str]] = {}
        self.extra_tree_entries: list[Json] = []
        self.truncated_trees = False  # recursive listings say `truncated` (GitHub's answer for a huge tree)
        # Every 2xx answer's Link also names a deprecation notice, before its pages (`DEPRECATION_LINK`).
        self.deprecation_links = False
        # Compare answers leave out `files` (optional in GitHub's schema of a comparison).
        self.compare_without_files = False
        # git/trees/COMMIT:DIR (undocumented: GitHub's reference names a tree sha) answers 404.
        self.refuse_tree_paths = False
        # GitHub's primary rate limit: every answer but a 304 (a conditional request that matched)
        # counts, and X-RateLimit-Remaining says what is left.
        self.rate_limit = 5000
        self.rate_used = 0
        self._last_tick = 0.0
        self._lock = threading.RLock()
        self._next_id = 1000
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        fake = self

        class Handler(_Handler):
            server_fake = fake

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.stopping.set()  # ends drips and floods still being sent
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeGitHub:
        """`with FakeGitHub() as server:` started, and stopped when the block ends, however it ends."""
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def root(self) -> str:
        """Scheme, host and port."""
        if self._server is None:
            raise RuntimeError("fake GitHub is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def api_url(self) -> str:
        """What GITHUB_API_URL would hold (Enterprise-style, with the /api/v3 prefix by default)."""
        return self.root + self.prefix

    # --- setup helpers --------------------------------------------------------------------------

    def new_id(self) -> int:
        with self._lock:
            self._next_id += 1
            return self._next_id

    def add_user(self, login: str, *, bot: bool = False) -> Json:
        with self._lock:
            if login not in self.users:
                self.users[login] = gj.simple_user(self.api_url, HTML_ROOT, login, self.new_id(), bot=bot)
            return self.users[login]

    def add_token(
        self,
        token: str,
        login: str,
        *,
        bot: bool = True,
        can_write: bool = True,
        user_endpoint: bool = True,
        permissions: Mapping[str, str] | None = None,
        repository: str | None = None,
    ) -> None:
        """A token of LOGIN; with PERMISSIONS (a workflow job's `permissions:`), an installation
        token limited to them (in REPOSITORY, when given), which GET /user refuses."""
        self.add_user(login, bot=bot)
        if permissions is not None:
            user_endpoint = False
        self.tokens[token] = TokenInfo(login, can_write, user_endpoint, permissions, repository)

    def add_repo(self, full_name: str) -> RepoState:
        with self._lock:
            state = RepoState(full_name, self.new_id())
            self.repos[full_name.lower()] = state
            self.add_user(full_name.split("/")[0])
            return state

    def add_pull(
        self,
        full_name: str,
        *,
        title: str = "A pull request",
        author: str = "contributor",
        head_repo: str | None = None,
        branch: str | None = None,
        sha: str | None = None,
        base: str | None = None,
        draft: bool = False,
        updated_at: str | None = None,
        files: list[Json] | None = None,
    ) -> int:
        """A pull request: an issue with a ``pull_request`` member, as the issues API shows it, plus its
        head for the pulls API (by default a branch of the same repository at a made-up commit).
        FILES (``filename``, ``status``, ``sha`` items) are served by pulls/N/files and compare as is;
        without them both diff the commits (BASE's merge base with the head, then the head)."""
        number: int = self.add_issue(full_name, title=title, body="", author=author, pull=True)["number"]
        head = head_repo or full_name
        with self._lock:
            if head.lower() not in self.repos:
                self.add_repo(head)
            repo = self.repos[full_name.lower()]
            repo.heads[number] = (head, branch or f"branch-{number}", sha or f"{number:040x}")
            if base is not None:
                repo.bases[number] = base
            repo.pulls[number] = PullMeta(draft, updated_at or self.tick(), files=files)
        return number

    def tick(self) -> str:
        """Now, as GitHub writes it, strictly later than the last tick: pull requests sort by update."""
        with self._lock:
            self._last_tick = max(time.time(), self._last_tick + 1)
            return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self._last_tick))

    def update_pull(
        self,
        full_name: str,
        number: int,
        *,
        sha: str | None = None,
        title: str | None = None,
        draft: bool | None = None,
        files: list[Json] | None = None,
    ) -> None:
        """Edit PR `number` (a push of SHA, a new title, ready for review...): its updated_at moves."""
        with self._lock:
            repo = self.repos[full_name.lower()]
            if sha is not None:
                head_repo, branch, _ = repo.heads[number]
                repo.heads[number] = (head_repo, branch, sha)
            if title is not None:
                repo.issues[number]["title"] = title
            meta = repo.pulls[number]
            if draft is not None:
                meta.draft = draft
            if files is not None:
                meta.files = files
            meta.updated_at = repo.issues[number]["updated_at"] = self.tick()

    def merge_pull(self, full_name: str, number: int) -> None:
        with self._lock:
            repo = self.repos[full_name.lower()]
            meta = repo.pulls[number]
            meta.merged_at = meta.updated_at = self.tick()
            issue = repo.issues[number]
            issue["pull_request"]["merged_at"] = meta.merged_at
            issue["state"], issue["closed_at"], issue["updated_at"] = (
                "closed",
                meta.merged_at,
                meta.updated_at,
            )

    def close_pull(self, full_name: str, number: int, *, labels: tuple[str, ...] = ()) -> None:
        """Close PR `number` unmerged, with LABELS added (PyTorch's merge bot lands a PR by closing it
        with the `Merged` label)."""
        with self._lock:
            repo = self.repos[full_name.lower()]
            meta = repo.pulls[number]
            meta.updated_at = self.tick()
            issue = repo.issues[number]
            for name in labels:
                if (label := self._ensure_label(repo, name)) not in issue["labels"]:
                    issue["labels"].append(label)
            issue["state"], issue["closed_at"], issue["updated_at"] = (
                "closed",
                meta.updated_at,
                meta.updated_at,
            )

    def land_pull(self, full_name: str, number: int, *, between: Callable[[], None] | None = None) -> str:
        """What PyTorch's merge bot does to land PR NUMBER (pytorch/pytorch .github/scripts/
        trymerge.py): it pushes to main a commit of the PR's head whose message ends with ``Pull
        Request resolved: URL`` (the push, not a merge through the API: merged_at stays null), closes
        the PR, and adds the ``Merged`` label in a separate call (``MergedX1``, ``MergedX2``... on
        later landings). BETWEEN runs after the close and before the label: what a run sees in
        between. Returns the pushed commit's sha."""
        with self._lock:
            repo = self.repos[full_name.lower()]
            issue = repo.issues[number]
            main = repo.commits[repo.refs["main"]]
            head = repo.commits.get(repo.heads[number][2])
            message = (
                f"{issue['title']} (#{number})\n\nPull Request resolved: {issue['html_url']}\n"
                "Approved by: https://github.com/maintainer"
            )
            sha = self._push_main(repo, main, head.files if head else main.files, message)
        self.close_pull(full_name, number)
        if between is not None:
            between()
        self.label_pull(full_name, number, self._next_bot_label(full_name, number, "Merged"))
        return sha

    def revert_pull(self, full_name: str, number: int) -> str:
        """What PyTorch's revert bot does to a landed PR NUMBER (trymerge.py's revert): a commit on
        main putting back the files before the landing, the ``Reverted`` label (``RevertedX1``... on
        later reverts) and the PR reopened; the ``Merged`` label stays. Returns the commit's sha."""
        with self._lock:
            repo = self.repos[full_name.lower()]
            issue = repo.issues[number]
            main = repo.commits[repo.refs["main"]]
            before = repo.commits.get(main.parent or "") or main
            message = f'Revert "{issue["title"]} (#{number})"\n\nThis reverts commit {main.sha}.'
            sha = self._push_main(repo, main, before.files, message)
        self.label_pull(full_name, number, self._next_bot_label(full_name, number, "Reverted"))
        with self._lock:
            issue["state"], issue["closed_at"], issue["state_reason"] = "open", None, "reopened"
            repo.pulls[number].updated_at = issue["updated_at"] = self.tick()
        return sha

    def _push_main(self, repo: RepoState, main: FakeCommit, files: Mapping[str, str], message: str) -> str:
        """A commit of FILES (path → blob sha) on top of MAIN, pushed to main."""
        blobs = {path: self.blobs[oid] for path, oid in files.items()}
        return self.add_commit(repo.full_name, blobs, refs=("main",), parent=main.sha, message=message)

    def _next_bot_label(self, full_name: str, number: int, stem: str) -> str:
        """``Merged`` the first time, then ``MergedX1``, ``MergedX2``...: how the bots name a repeat."""
        have = {lb["name"].lower() for lb in self.repos[full_name.lower()].issues[number]["labels"]}
        count = sum(1 for name in have if name == stem.lower() or name.startswith(f"{stem.lower()}x"))
        return stem if count == 0 else f"{stem}X{count}"

    def label_pull(self, full_name: str, number: int, name: str) -> None:
        """Add label NAME to PR `number`: its updated_at moves, as GitHub's does."""
        with self._lock:
            repo = self.repos[full_name.lower()]
            issue = repo.issues[number]
            if (label := self._ensure_label(repo, name)) not in issue["labels"]:
                issue["labels"].append(label)
            repo.pulls[number].updated_at = issue["updated_at"] = self.tick()

    def add_commit(
        self,
        full_name: str,
        files: Mapping[str, bytes],
        *,
        refs: tuple[str, ...] = (),
        date: str = "2026-01-05T12:00:00Z",
        parent: str | None = None,
        sha: str | None = None,
        message: str = "a commit",
    ) -> str:
        """A commit holding FILES (path → bytes), named by REFS (branches or tags), with MESSAGE;
        returns its sha (SHA when given: a commit of a real local repository mirrored here)."""
        with self._lock:
            repo = self.repos[full_name.lower()]
            tree = {path: blob_sha(data) for path, data in files.items()}
            for data in files.values():
                self.blobs[blob_sha(data)] = data
            if sha is None:
                # The message only when it is not the default: the shas goldens name stay as they were.
                seed = json.dumps(
                    [sorted(tree.items()), date, parent, *([message] if message != "a commit" else [])]
                ).encode()
                sha = hashlib.sha1(b"commit " + seed).hexdigest()
            repo.commits[sha] = FakeCommit(sha, date, tree, parent, message)
            for ref in refs:
                repo.refs[ref] = sha
            return sha

    def mirror_git(
        self, full_name: str, git_dir: Path, revs: Sequence[str], paths: Sequence[str]
    ) -> list[str]:
        """Serve commits of a local git repository: each of REVS (parents first) with its PATHS (those
        that exist at it), its committer date and its first parent when that is served too. Returns
        their shas, for `add_pull` and `update_pull`."""
        shas = []
        for rev in revs:
            sha, parents, date = _git_out(git_dir, "log", "-1", "--format=%H%n%P%n%cI", rev).split("\n")
            parent = parents.split(" ")[0]
            files = {}
            for path in paths:
                shown = subprocess.run(
                    ["git", "--git-dir", str(git_dir), "show", f"{sha}:{path}"],
                    capture_output=True,
                    check=False,
                )
                if shown.returncode == 0:
                    files[path] = shown.stdout
            served = parent in self.repos[full_name.lower()].commits
            shas.append(
                self.add_commit(full_name, files, date=date, parent=parent if served else None, sha=sha)
            )
        return shas

    def set_pull_base(self, full_name: str, number: int, sha: str) -> None:
        with self._lock:
            self.repos[full_name.lower()].bases[number] = sha

    def push(self, full_name: str, number: int, sha: str) -> None:
        """Move PR `number`'s head to commit `sha`, as a push to its branch does."""
        self.update_pull(full_name, number, sha=sha)

    def add_issue(
        self,
        full_name: str,
        *,
        title: str,
        body: str,
        author: str,
        labels: tuple[str, ...] = (),
        pull: bool = False,
        state: str = "open",
    ) -> Json:
        with self._lock:
            repo = self.repos[full_name.lower()]
            for name in labels:
                self._ensure_label(repo, name)
            return self._new_issue(repo, title, body, self.add_user(author), list(labels), pull, state)

    def add_comment(self, full_name: str, number: int, body: str, *, author: str, bot: bool = False) -> Json:
        with self._lock:
            repo = self.repos[full_name.lower()]
            return self._new_comment(repo, number, body, self.add_user(author, bot=bot))

    def fail(
        self,
        method: str | None,
        path_regex: str,
        status: int,
        *,
        times: int = 1,
        headers: Mapping[str, str] | None = None,
        message: str = "Server Error",
        after_apply: bool = False,
        delay: float = 0.0,
    ) -> None:
        """Script the next `times` requests whose path (prefix stripped) matches to answer `status`,
        each after DELAY seconds."""
        with self._lock:
            self.faults.append(
                Fault(
                    method, re.compile(path_regex), status, times, dict(headers or {}), message, after_apply,
                    delay,
                )
            )  # fmt: skip

    def misbehave(
        self, method: str | None, path_regex: str, behaviour: Misbehaviour, *, times: int = 1_000_000
    ) -> None:
        """Answer the next `times` matching requests (path without the prefix) the hostile way."""
        with self._lock:
            self.misbehaviours.append(_Scripted(method, re.compile(path_regex), behaviour, times))

    def before(self, path_regex: str, action: Callable[[], None]) -> None:
        """Run ACTION once, just before the first request whose path and query (prefix stripped)
        match: something that happens upstream while a client is paging."""
        with self._lock:
            self.hooks.append((re.compile(path_regex), action))

    # --- inspection -----------------------------------------------------------------------------

    def comments(self, full_name: str, number: int) -> list[Json]:
        repo = self.repos[full_name.lower()]
        return [c for c in repo.comments.values() if c["_number"] == number]

    def issues(self, full_name: str, *, pulls: bool = False) -> list[Json]:
        repo = self.repos[full_name.lower()]
        return [i for i in repo.issues.values() if ("pull_request" in i) == pulls]

    def writes(self) -> list[Recorded]:
        return [r for r in self.requests if r.method in ("POST", "PATCH", "PUT", "DELETE")]

    def iter_request_text(self) -> Iterator[tuple[str, str]]:
        """(where, text) for every recorded part of every request, for secret-leak checks."""
        for r in self.requests:
            yield "path", r.path
            yield "body", r.body
            for name, value in r.headers.items():
                yield f"header {name}", value

    # --- object builders ------------------------------------------------------------------------

    def _repo_json(self, repo: RepoState, *, full: bool = False) -> Json:
        owner = self.users[repo.full_name.split("/")[0]]
        return gj.repository(self.api_url, HTML_ROOT, repo.full_name, repo.id, owner, full=full)

    def _ensure_label(self, repo: RepoState, name: str, color: str = "ededed", description: str = "") -> Json:
        key = name.lower()
        if key not in repo.labels:
            repo.labels[key] = gj.label(self.api_url, repo.full_name, self.new_id(), name, color, description)
        return repo.labels[key]

    def _new_issue(
        self,
        repo: RepoState,
        title: str,
        body: str,
        user: Json,
        labels: list[str],
        pull: bool,
        state: str = "open",
    ) -> Json:
        number = repo.next_number
        repo.next_number += 1
        issue = gj.issue(
            self.api_url, HTML_ROOT, repo.full_name, self.new_id(), number, user=user, pull=pull, now=_now()
        )
        issue.update(title=title, body=body, state=state, labels=[repo.labels[n.lower()] for n in labels])
        repo.issues[number] = issue
        return issue

    def _new_comment(self, repo: RepoState, number: int, body: str, user: Json) -> Json:
        issue = repo.issues[number]
        comment = gj.issue_comment(self.api_url, issue, self.new_id(), body, user, _now())
        comment["_number"] = number  # stripped before sending
        repo.comments[comment["id"]] = comment
        issue["comments"] += 1
        return comment

    # --- request handling -----------------------------------------------------------------------

    def handle(
        self, method: str, raw_path: str, headers: Mapping[str, str], body: str
    ) -> tuple[int, object, dict[str, str]]:
        split = urlsplit(raw_path)
        path = split.path
        if self.prefix and path.startswith(self.prefix + "/"):
            path = path[len(self.prefix) :]
        elif self.prefix:
            return 404, {"message": "Not Found", "documentation_url": DOCS}, {}
        shown = path + (f"?{split.query}" if split.query else "")
        query = dict(parse_qsl(split.query))
        with self._lock:
            for hook in [h for h in self.hooks if h[0].search(shown)]:
                self.hooks.remove(hook)
                hook[1]()
            fault = self._take_fault(method, path)
            scripted = self._take_misbehaviour(method, path)
            page = int(query.get("page", "1"))
            if isinstance(scripted, EndlessPages):
                query.pop("page", None)  # the same items on every page: a client cannot tell it ends
            try:
                if fault is not None and not fault.after_apply:
                    raise _error(fault.status, fault.message)
                status, payload, extra = self._route(method, path, query, headers, body)
                if fault is not None:
                    raise _error(fault.status, fault.message)
            except _Reply as reply:
                status, payload, extra = reply.status, reply.body, reply.headers
            if fault is not None:
                extra = {**extra, **fault.headers}
            payload = _public(payload)
            if method == "GET" and status == 200 and fault is None and scripted is None:
                status, payload, extra = _conditional(payload, extra, headers)
            if status != 304 and path != "/rate_limit":  # GET /rate_limit is not counted either
                self.rate_used += 1
            needs = self._accepted_header(method, path, headers)
            if needs and not any(k.lower() == "x-accepted-github-permissions" for k in extra):
                extra = {**extra, "X-Accepted-GitHub-Permissions": needs}
            if not any(k.lower() == "x-ratelimit-remaining" for k in extra):
                extra = {
                    **extra,
                    "X-RateLimit-Remaining": str(max(self.rate_limit - self.rate_used, 0)),
                    "X-RateLimit-Reset": str(int(time.time()) + 3600),
                }
            size = len(_encode(payload)) if scripted is None else 0
            self.requests.append(Recorded(method, shown, dict(headers), body, status, size))
            if RECORDER is not None and fault is None and scripted is None:
                RECORDER.add(method, shown, status, payload)
        if fault is not None and fault.delay:
            time.sleep(fault.delay)  # outside the lock: the other requests go on meanwhile
        if isinstance(scripted, EndlessPages):
            extra = {
                **extra,
                "Link": f'<{self.api_url}{path}?{urlencode({**query, "page": page + 1})}>; rel="next"',
            }
        if self.deprecation_links and 200 <= status < 300:
            pages = [v for k, v in extra.items() if k.lower() == "link"]
            extra = {k: v for k, v in extra.items() if k.lower() != "link"}
            extra["Link"] = ", ".join([DEPRECATION_LINK, *pages])
        elif isinstance(scripted, Misdirect):
            if not isinstance(payload, RawBytes):
                payload = json.loads(
                    json.dumps(payload).replace(json.dumps(self.api_url)[1:-1], scripted.root)
                )
            extra = {k: v.replace(self.api_url, scripted.root) for k, v in extra.items()}
        elif isinstance(scripted, (Drip, Flood)):
            if isinstance(scripted, Flood):
                status = 200
            payload = Wire(scripted, payload)
        return status, payload, extra

    def _accepted_header(self, method: str, path: str, headers: Mapping[str, str]) -> str | None:
        """GitHub's X-Accepted-GitHub-Permissions, which it sends with every answer to an app's
        (installation) token, success or not."""
        scheme, _, token = headers.get("Authorization", "").partition(" ")
        info = self.tokens.get(token) if scheme.lower() in ("token", "bearer") else None
        m = re.fullmatch(r"/repos/[^/]+/[^/]+(/.*)?", path)
        if info is None or info.permissions is None or m is None:
            return None
        return accepted(method, m.group(1) or "")

    def _take_misbehaviour(self, method: str, path: str) -> Misbehaviour | None:
        for scripted in self.misbehaviours:
            if scripted.times > 0 and scripted.method in (None, method) and scripted.pattern.search(path):
                scripted.times -= 1
                return scripted.behaviour
        return None

    def _take_fault(self, method: str, path: str) -> Fault | None:
        for fault in self.faults:
            if fault.times > 0 and (fault.method in (None, method)) and fault.pattern.search(path):
                fault.times -= 1
                return fault
        return None

    def _auth(self, headers: Mapping[str, str]) -> TokenInfo | None:
        value = headers.get("Authorization")
        if value is None:
            return None
        scheme, _, token = value.partition(" ")
        info = self.tokens.get(token) if scheme.lower() in ("token", "bearer") else None
        if info is None:
            raise _error(401, "Bad credentials")
        return info

    def _route(
        self, method: str, path: str, query: dict[str, str], headers: Mapping[str, str], body: str
    ) -> tuple[int, object, dict[str, str]]:
        who = self._auth(headers)
        data: Json = json.loads(body) if body else {}
        if method != "GET":
            if who is None:
                raise _error(401, "Requires authentication")
            if not who.can_write:
                raise _error(403, "Resource not accessible by integration")
        if path == "/user":
            if who is None:
                raise _error(401, "Requires authentication")
            if not who.user_endpoint:
                raise _error(403, "Resource not accessible by integration")
            return 200, gj.public_user(self.users[who.login]), {}
        if path == "/rate_limit" and method == "GET":
            reset = int(time.time()) + 3600
            return 200, gj.rate_limit(self.rate_limit, self.rate_used, reset), {}
        if (mu := re.fullmatch(r"/users/([^/]+)", path)) and method == "GET":
            found = self.users.get(unquote(mu.group(1)))
            if found is None:
                raise _error(404, "Not Found")
            return 200, gj.public_user(found), {}
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)(/.*)?", path)
        if m is None:
            raise _error(404, "Not Found")
        repo = self.repos.get(unquote(m.group(1)).lower())
        if repo is None:
            raise _error(404, "Not Found")
        rest = m.group(2) or ""
        if who is not None and who.permissions is not None:
            needs = accepted(method, rest)
            own = who.repository is None or who.repository.lower() == repo.full_name.lower()
            # Another repository is public here: read as anyone may, never written.
            if needs is None or not (allows(who.permissions, needs) if own else method == "GET"):
                raise _Reply(
                    403,
                    {"message": "Resource not accessible by integration", "documentation_url": DOCS},
                    {"X-Accepted-GitHub-Permissions": needs or "unknown"},
                )
        user = None if who is None else self.users[who.login]
        if rest == "" and method == "GET":
            return 200, self._repo_json(repo, full=True), {}
        if rest == "/issues":
            if method == "GET":
                return self._page(path, query, self._list_issues(repo, query))
            if method == "POST":
                return 201, self._create_issue(repo, data, user), {}
        if mi := re.fullmatch(r"/issues/(\d+)", rest):
            issue = repo.issues.get(int(mi.group(1)))
            if issue is None:
                raise _error(404, "Not Found")
            if method == "GET":
                return 200, issue, {}
            if method == "PATCH":
                return 200, self._edit_issue(repo, issue, data), {}
        if mi := re.fullmatch(r"/issues/(\d+)/comments", rest):
            number = int(mi.group(1))
            if number not in repo.issues:
                raise _error(404, "Not Found")
            if method == "GET":
                items = sorted(
                    (c for c in repo.comments.values() if c["_number"] == number), key=lambda c: c["id"]
                )
                return self._page(path, query, items)
            if method == "POST":
                _require(data, "body", str)
                assert user is not None
                return 201, self._new_comment(repo, number, data["body"], user), {}
        if mi := re.fullmatch(r"/issues/(\d+)/labels", rest):
            issue = repo.issues.get(int(mi.group(1)))
            if issue is None:
                raise _error(404, "Not Found")
            if method == "POST":
                names = data.get("labels", []) if isinstance(data, dict) else data
                for name in names:
                    label = self._ensure_label(repo, name)
                    if label not in issue["labels"]:
                        issue["labels"].append(label)
                return 200, issue["labels"], {}
        if mc := re.fullmatch(r"/issues/comments/(\d+)", rest):
            comment = repo.comments.get(int(mc.group(1)))
            if comment is None:
                raise _error(404, "Not Found")
            if method == "GET":
                return 200, comment, {}
            if method == "PATCH":
                _require(data, "body", str)
                comment["body"] = data["body"]
                comment["updated_at"] = _now()
                return 200, comment, {}
            if method == "DELETE":
                del repo.comments[comment["id"]]
                repo.issues[comment["_number"]]["comments"] -= 1
                return 204, RawBytes(b""), {}
        if rest == "/labels":
            if method == "GET":
                return self._page(path, query, sorted(repo.labels.values(), key=lambda lb: lb["id"]))
            if method == "POST":
                _require(data, "name", str)
                if data["name"].lower() in repo.labels:
                    raise _Reply(
                        422, {"message": "Validation Failed", "errors": [{"code": "already_exists"}]}
                    )
                label = self._ensure_label(
                    repo, data["name"], data.get("color", "ededed"), data.get("description", "")
                )
                return 201, label, {}
        if rest == "/pulls" and method == "GET":
            owner, _, branch = query.get("head", "").partition(":")
            state = query.get("state", "open")
            if state not in ("open", "closed", "all"):
                raise _Reply(422, {"message": "Validation Failed"})
            pulls = [
                self._pull_json(repo, number)
                for number, (head_repo, head_branch, _) in repo.heads.items()
                if state in ("all", repo.issues[number]["state"])
                and (
                    not query.get("head")
                    or (head_repo.split("/")[0].lower() == owner.lower() and head_branch == branch)
                )
            ]
            # GitHub's default order is by creation, newest first; sort=updated orders by updated_at.
            # `direction` defaults to desc for sort=created (the default sort), asc for any other
            # (GitHub's reference of "List pull requests").
            sort = query.get("sort", "created")
            key = "updated_at" if sort == "updated" else "number"
            direction = query.get("direction", "desc" if sort == "created" else "asc")
            pulls.sort(key=lambda p: (p[key], p["number"]), reverse=direction == "desc")
            return self._page(path, query, pulls)
        if (mp := re.fullmatch(r"/pulls/(\d+)", rest)) and method == "GET":
            if int(mp.group(1)) not in repo.heads:
                raise _error(404, "Not Found")
            return 200, self._pull_json(repo, int(mp.group(1)), full=True), {}
        if (mp := re.fullmatch(r"/pulls/(\d+)/files", rest)) and method == "GET":
            number = int(mp.group(1))
            if number not in repo.heads:
                raise _error(404, "Not Found")
            return self._page(path, query, self._pull_files(repo, number)[:3000])
        if method == "GET" and (git := self._git_route(repo, rest, query, headers)) is not None:
            return git
        if ml := re.fullmatch(r"/labels/([^/]+)", rest):
            found = repo.labels.get(unquote(ml.group(1)).lower())
            if found is None:
                raise _error(404, "Not Found")
            if method == "GET":
                return 200, found, {}
        raise _error(404, "Not Found")

    def _commit_of(self, repo: RepoState, ref: str) -> FakeCommit:
        sha = repo.refs.get(ref, ref)
        found = repo.commits.get(sha) or next(
            (c for s, c in repo.commits.items() if len(ref) >= 7 and s.startswith(ref)), None
        )
        if found is None:
            raise _error(404 if ref else 422, "No commit found for SHA: " + ref)
        return found

    def _git_route(
        self, repo: RepoState, rest: str, query: dict[str, str], headers: Mapping[str, str]
    ) -> tuple[int, object, dict[str, str]] | None:
        """GET commits/REF, contents/PATH?ref=, git/blobs/SHA, git/trees/ID and compare/BASE...HEAD, as
        GitHub answers."""
        raw = "raw" in headers.get("Accept", "")
        if mc := re.fullmatch(r"/commits/([^/]+)", rest):
            commit = self._commit_of(repo, unquote(mc.group(1)))
            if "application/vnd.github.sha" in headers.get("Accept", ""):
                return 200, RawBytes(commit.sha.encode()), {"Content-Type": "application/vnd.github.sha"}
            return 200, self._commit_json(repo, commit), {}
        if mg := re.fullmatch(r"/git/commits/([0-9a-f]{40})", rest):
            found = repo.commits.get(mg.group(1))
            if found is None:
                raise _error(404, "Not Found")
            return 200, self._commit_json(repo, found, git=True), {}
        if mc := re.fullmatch(r"/contents/(.+)", rest):
            ref = query.get("ref", "main")
            commit = self._commit_of(repo, ref)
            path = unquote(mc.group(1))
            oid = commit.files.get(path)
            if oid is None:
                raise _error(404, "Not Found")
            data = self.blobs[oid]
            if raw:
                return 200, RawBytes(data), {"Content-Type": "application/vnd.github.raw"}
            # Over 1 MB the contents API leaves the content out ("encoding": "none"): use the blobs API.
            small = len(data) <= 1_000_000
            content = {"size": len(data), "encoding": "base64" if small else "none",
                       "content": base64.b64encode(data).decode() if small else ""}  # fmt: skip
            return 200, gj.content_file(self.api_url, HTML_ROOT, repo.full_name, ref, path, oid, content), {}
        if mb := re.fullmatch(r"/git/blobs/([0-9a-f]{40})", rest):
            blob = self.blobs.get(mb.group(1))
            if blob is None:
                raise _error(404, "Not Found")
            if raw:
                return 200, RawBytes(blob), {"Content-Type": "application/vnd.github.raw"}
            encoded = base64.b64encode(blob).decode()
            return 200, gj.blob(self.api_url, repo.full_name, mb.group(1), len(blob), encoded), {}
        if (
            (mt := re.fullmatch(r"/git/trees/(.+)", rest))
            and self.refuse_tree_paths
            and ":" in unquote(mt.group(1))
        ):
            raise _error(404, "Not Found")  # what the undocumented COMMIT:DIR form may one day answer
        if mt := re.fullmatch(r"/git/trees/(.+)", rest):
            return 200, self._tree_json(repo, unquote(mt.group(1)), query.get("recursive") == "1"), {}
        if mc := re.fullmatch(r"/compare/([^/.]+)\.\.\.([^/.]+)", rest):
            base, head = (
                self._commit_of(repo, unquote(mc.group(1))),
                self._commit_of(repo, unquote(mc.group(2))),
            )
            behind = self._first_parents(repo, base.sha)
            ahead = self._first_parents(repo, head.sha)
            at = next((sha for sha in ahead if sha in behind), None)
            if at is None:
                raise _error(404, "Not Found")
            # Compare pages its commits (oldest first, per_page of them); the file list (at most 300)
            # is on the first page only.
            first = query.get("page", "1") == "1"
            new = ahead[: ahead.index(at)][::-1]
            size = min(int(query.get("per_page", "250")), 250)
            page = new[(int(query.get("page", "1")) - 1) * size :][:size]
            files = self._compare_files(repo, at, head.sha) if first else []
            answer = gj.comparison(
                self.api_url, HTML_ROOT, repo.full_name, f"{mc.group(1)}...{mc.group(2)}",
                base=self._commit_json(repo, base), head=head.sha, merge_base=self._commit_json(repo, repo.commits[at]),
                commits=[self._commit_json(repo, repo.commits[sha]) for sha in page],
                ahead_by=len(new), behind_by=behind.index(at),
            )  # fmt: skip
            answer["files"] = files[:300]
            if self.compare_without_files:
                del answer["files"]
            return 200, answer, {}
        return None

    def _tree_json(self, repo: RepoState, tree_id: str, recursive: bool) -> Json:
        """GET git/trees/ID (?recursive=1): ID is REF:DIR, a commit (its root) or a tree sha listed before."""
        ref, colon, folder = tree_id.partition(":")
        if not colon and ref in self.trees:
            ref, folder = self.trees[ref]
        commit = self._commit_of(repo, ref)
        folder = folder.strip("/")
        prefix = folder + "/" if folder else ""
        if folder and not any(p.startswith(prefix) for p in commit.files):
            raise _error(404, "Not Found")

        def tree_sha(path: str) -> str:
            return self._tree_sha(commit.sha, path)

        entries: dict[str, Json] = {}
        for path, oid in sorted(commit.files.items()):
            if not path.startswith(prefix):
                continue
            rel = path[len(prefix) :]
            parts = rel.split("/")
            for depth in range(1, len(parts)):
                sub = "/".join(parts[:depth])
                if recursive or depth == 1:
                    entries.setdefault(sub, {"path": sub, "mode": "040000", "type": "tree",
                                             "sha": tree_sha(prefix + sub)})  # fmt: skip
            if recursive or len(parts) == 1:
                entries[rel] = {"path": rel, "mode": "100644", "type": "blob", "sha": oid,
                                "size": self.blob_sizes.get(oid) or len(self.blobs[oid])}  # fmt: skip
        for entry in entries.values():
            kind = "trees" if entry["type"] == "tree" else "blobs"
            entry["url"] = f"{self.api_url}/repos/{repo.full_name}/git/{kind}/{entry['sha']}"
        listed = list(entries.values()) + (list(self.extra_tree_entries) if recursive else [])
        return {"sha": tree_sha(folder), "tree": listed, "truncated": recursive and self.truncated_trees}

    def _tree_sha(self, commit: str, path: str) -> str:
        """The made-up sha of directory PATH's tree at COMMIT, listed afterwards by git/trees/SHA."""
        sha = hashlib.sha1(f"tree {commit}:{path}".encode()).hexdigest()
        with self._lock:
            self.trees[sha] = (commit, path)
        return sha

    def _first_parents(self, repo: RepoState, sha: str) -> list[str]:
        """SHA and its first parents served here, newest first."""
        line = []
        at: str | None = sha
        while at is not None and at in repo.commits:
            line.append(at)
            at = repo.commits[at].parent
        return line

    def _merge_base(self, repo: RepoState, base: str, head: str) -> str | None:
        seen = set()
        at: str | None = base if base in repo.commits else None
        while at is not None:
            seen.add(at)
            at = repo.commits[at].parent
        at = head
        while at is not None and at not in seen:
            at = repo.commits[at].parent if at in repo.commits else None
        return at

    def _compare_files(self, repo: RepoState, base: str | None, head: str) -> list[Json]:
        """The diff of two commits as GitHub's file lists show it (no patch: the fake has no text diff)."""
        old = repo.commits[base].files if base in repo.commits else {}
        new = repo.commits[head].files if head in repo.commits else {}
        files = []
        for path in sorted(set(old) | set(new)):
            if old.get(path) == new.get(path):
                continue
            status = "added" if path not in old else "removed" if path not in new else "modified"
            oid = new.get(path) or old[path]
            files.append(gj.diff_entry(self.api_url, HTML_ROOT, repo.full_name, head, path, oid, status))
        return files

    def _pull_files(self, repo: RepoState, number: int) -> list[Json]:
        meta = repo.pulls.get(number)
        head = repo.heads[number][2]
        if meta is not None and meta.files is not None:
            # A test's file list: what it gives (a status, perhaps no sha), the rest as GitHub has it.
            return [
                {**gj.diff_entry(self.api_url, HTML_ROOT, repo.full_name, head, f["filename"],
                                 f.get("sha"), f.get("status", "modified")), **f}
                for f in meta.files
            ]  # fmt: skip
        if head not in repo.commits:
            return []
        base = repo.bases.get(number)
        return self._compare_files(repo, None if base is None else self._merge_base(repo, base, head), head)

    def _commit_json(self, repo: RepoState, commit: FakeCommit, *, git: bool = False) -> Json:
        """GET commits/REF's form of COMMIT, or with GIT git/commits/SHA's."""
        build = gj.git_commit if git else gj.commit
        return build(self.api_url, HTML_ROOT, repo.full_name, commit.sha, date=commit.date,
                     message=commit.message, parent=commit.parent, tree=self._tree_sha(commit.sha, ""))  # fmt: skip

    def _pull_json(self, repo: RepoState, number: int, *, full: bool = False) -> Json:
        """GET pulls' form of PR NUMBER, or with FULL GET pulls/N's. A ghost author (a deleted
        account) is null in the list, GitHub's `ghost` account in the pull request itself."""
        issue = repo.issues[number]
        head_repo, ref, sha = repo.heads[number]
        meta = repo.pulls.get(number) or PullMeta(False, issue["updated_at"])
        user = issue["user"] if not meta.ghost else self.add_user("ghost") if full else None
        return gj.pull(
            issue,
            user=user,
            draft=meta.draft,
            updated_at=meta.updated_at,
            merged_at=meta.merged_at,
            head=gj.branch(self._repo_json(self.repos[head_repo.lower()]), ref, sha),
            base=gj.branch(self._repo_json(repo), "main", repo.bases.get(number, "0" * 40)),
            full=full,
            changed_files=len(self._pull_files(repo, number)) if full else 0,
        )

    def _list_issues(self, repo: RepoState, query: dict[str, str]) -> list[Json]:
        state = query.get("state", "open")
        wanted = [n.lower() for n in query["labels"].split(",")] if query.get("labels") else []
        creator = query.get("creator")
        items = []
        for issue in repo.issues.values():
            if state != "all" and issue["state"] != state:
                continue
            if creator is not None and issue["user"]["login"].lower() != creator.lower():
                continue
            have = {lb["name"].lower() for lb in issue["labels"]}
            if any(w not in have for w in wanted):
                continue
            items.append(issue)
        newest_first = query.get("direction", "desc") == "desc"
        return sorted(items, key=lambda i: i["number"], reverse=newest_first)

    def _create_issue(self, repo: RepoState, data: Json, user: Json | None) -> Json:
        _require(data, "title", str)
        labels = data.get("labels", [])
        for name in labels:
            # Stricter than GitHub (which creates unknown labels on the fly): the bot must create them.
            if name.lower() not in repo.labels:
                raise _Reply(
                    422, {"message": "Validation Failed", "errors": [{"field": "labels", "value": name}]}
                )
        assert user is not None
        return self._new_issue(repo, data["title"], data.get("body", ""), user, labels, pull=False)

    def _edit_issue(self, repo: RepoState, issue: Json, data: Json) -> Json:
        for key in ("title", "body"):
            if key in data:
                issue[key] = data[key]
        if "state" in data:
            if data["state"] not in ("open", "closed"):
                raise _Reply(422, {"message": "Validation Failed"})
            issue["state"] = data["state"]
            issue["closed_at"] = _now() if data["state"] == "closed" else None
            issue["state_reason"] = data.get("state_reason")
        if "labels" in data:
            issue["labels"] = [self._ensure_label(repo, n) for n in data["labels"]]
        issue["updated_at"] = _now()
        return issue

    def _page(
        self, path: str, query: dict[str, str], items: list[Json]
    ) -> tuple[int, object, dict[str, str]]:
        size = min(int(query.get("per_page", "30")), self.page_size, 100)
        page = int(query.get("page", "1"))
        last = max(1, -(-len(items) // size))
        chunk = items[(page - 1) * size : page * size]

        def link(p: int) -> str:
            params = {**query, "page": str(p)}
            return f"<{self.api_url}{path}?{urlencode(params)}>"

        rels = []
        if page < last:
            rels += [f'{link(page + 1)}; rel="next"', f'{link(last)}; rel="last"']
        if page > 1:
            rels += [f'{link(1)}; rel="first"', f'{link(page - 1)}; rel="prev"']
        return 200, chunk, ({"Link": ", ".join(rels)} if rels else {})


def _git_out(git_dir: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def _encode(payload: object) -> bytes:
    return payload.data if isinstance(payload, RawBytes) else json.dumps(payload).encode()


def _conditional(
    payload: object, extra: dict[str, str], headers: Mapping[str, str]
) -> tuple[int, object, dict[str, str]]:
    """GitHub's ETag on a GET answer, and a bodiless 304 when the request's If-None-Match names it.
    The tag covers the Link header too: a list page whose items stay but whose next page moved is
    another answer. The 304 carries no Link: a client reuses the one it stored."""
    link = next((v for k, v in extra.items() if k.lower() == "link"), "")
    etag = 'W/"' + hashlib.sha1(_encode(payload) + b"\n" + link.encode()).hexdigest() + '"'
    asked = next((v for k, v in headers.items() if k.lower() == "if-none-match"), None)
    if asked is not None and etag in (t.strip() for t in asked.split(",")):
        return 304, RawBytes(b""), {"ETag": etag}
    return 200, payload, {**extra, "ETag": etag}


def _require(data: Json, key: str, kind: type) -> None:
    if not isinstance(data.get(key), kind):
        raise _Reply(
            422, {"message": "Validation Failed", "errors": [{"field": key, "code": "missing_field"}]}
        )


# The fake's bookkeeping in the objects it keeps, never sent (GitHub's own ``_links`` is).
_PRIVATE = frozenset({"_number"})


def _public(payload: object) -> object:
    """Drop the fake's private bookkeeping keys (`_PRIVATE`) from what goes on the wire."""
    if isinstance(payload, dict):
        return {k: _public(v) for k, v in payload.items() if k not in _PRIVATE}
    if isinstance(payload, list):
        return [_public(v) for v in payload]
    return payload


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class _Handler(BaseHTTPRequestHandler):
    server_fake: FakeGitHub
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; with Nagle on, each response waits for a delayed ACK.
    disable_nagle_algorithm = True

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        headers = {k: v for k, v in self.headers.items()}
        status, payload, extra = self.server_fake.handle(self.command, self.path, headers, body)
        if isinstance(payload, Wire):
            if isinstance(payload.behaviour, Flood):
                self._flood(payload.behaviour)
            else:
                self._drip(payload.behaviour, status, payload.payload, extra)
            return
        raw = isinstance(payload, RawBytes)
        data = payload.data if isinstance(payload, RawBytes) else json.dumps(payload).encode()
        self.send_response(status)
        if not raw:
            self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-RateLimit-Limit", "5000")
        if not any(k.lower() == "x-ratelimit-remaining" for k in extra):
            self.send_header("X-RateLimit-Remaining", "4999")
            self.send_header("X-RateLimit-Reset", str(int(time.time()) + 3600))
        for name, value in extra.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _flood(self, flood: Flood) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        if flood.declare_length:
            self.send_header("Content-Length", str(flood.size))
        else:
            self.send_header("Connection", "close")  # the body ends when the connection does
            self.close_connection = True
        self.end_headers()
        head, tail = b'{"message": "', b'"}'
        filler = b"a" * (1 << 20)
        left = flood.size - len(head) - len(tail)
        try:
            self.wfile.write(head)
            while left > 0 and not self.server_fake.stopping.is_set():
                piece = filler[: min(left, len(filler))]
                self.wfile.write(piece)
                left -= len(piece)
            self.wfile.write(tail)
        except OSError:
            pass  # the client stopped reading: what a capped client does
        self.close_connection = True

    def _drip(self, drip: Drip, status: int, payload: object, extra: Mapping[str, str]) -> None:
        data = payload.data if isinstance(payload, RawBytes) else json.dumps(payload).encode()
        lines = [f"HTTP/1.1 {status} OK", "Content-Type: application/json", f"Content-Length: {len(data)}"]
        lines += [f"{k}: {v}" for k, v in extra.items()]
        wire = ("\r\n".join(lines) + "\r\n\r\n").encode() + data
        self.close_connection = True
        try:
            for i in range(len(wire)):
                if self.server_fake.stopping.wait(drip.interval):
                    return
                self.wfile.write(wire[i : i + 1])
                self.wfile.flush()
        except OSError:
            pass

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

    def date_time_string(self, timestamp: float | None = None) -> str:
        """The Date header by the fake's clock, which `tick` may have run ahead of the wall's: later
        than every update it has written, as a real server's now is."""
        fake = self.server_fake
        now = max(time.time(), fake._last_tick + 1)
        return super().date_time_string(now if timestamp is None else timestamp)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test records requests itself."""
