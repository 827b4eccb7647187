"""An upstream repository's pull requests, within the rate limit (`opdrift watch`).

pytorch/pytorch has thousands of open pull requests and a workflow's ``GITHUB_TOKEN`` 1,000 requests
an hour, so what a run asks is bounded by what changed since the last one:

- The list: ``GET /pulls?state=all&sort=updated&direction=desc&per_page=100``, read page by page until
  the first pull request updated before ``since`` (the last run's watermark). An hourly run reads one
  page. Without ``since`` (a cold run) it lists the **open** pull requests only: closed ones carry no
  news for a dashboard that does not exist yet, and pytorch/pytorch has a hundred thousand of them.
- Conditional requests: every list page and single pull request is sent with the ``If-None-Match`` of
  the stored answer; GitHub answers 304, which does not count against the primary rate limit when the
  request carries an Authorization header (docs.github.com, "Best practices for using the REST API":
  use conditional requests), and the stored answer is reused.
- What a pull request touches and its merge base come from one compare request
  (``compare/BASE...HEAD``: its ``merge_base_commit`` and the first 300 changed files), cached by head
  sha (the files) and by (base, head) (the merge base), so a pull request whose head did not move costs
  nothing, and one that moved costs one request. A compare that lists 300 files may have left some
  out: then the operator files' blob shas at the merge base and the head decide (git trees,
  `ghsource.TreeReader`: two directories a side, 2 to 4 requests, the merge base's cached). Not the
  pull request's file list: 30 pages of 100 for a fork's 3,000-file pull request, about 34 requests
  for each of its new heads, which a few such forks re-pushed hourly would spend the budget on.

`PullsClient.scan` spends at most ``budget`` requests that count against the rate limit (a 304 does
not), the compare of every open pull request it returns included: ``touched`` and ``merge_base``
then answer from memory. A scan the budget (or the deadline) stops early says so
(``complete=False``) and returns the newest pull requests it could afford; its watermark is the
``since`` it was given (``None`` on a cold run), so the next run lists the same window again and,
every compare it already paid for being cached, gets further. A scan that completes returns the
newest ``updated_at`` it saw. Pull requests updated exactly at the watermark are listed again by the
next run (``updated_at`` has one-second resolution): at least once, never lost to a tie, and free
since nothing about them is fetched again.

One pull request that cannot be compared (an unrelated history has no merge base and GitHub answers
404; a 422; an answer past a bound) does not stop the scan: it is left out of ``pulls`` and named in
``failed`` with a one-line reason, and the watermark moves past it like past the others, so the
caller keeps it to retry (the dashboard's state holds such a list). Past MAX_FAILED of them in one
scan, or once the scan's deadline is spent, the scan stops as if out of budget. A listing whose
``since`` is so old that its updates run past MAX_LIST_PAGES pages falls back to a cold listing of
the open pull requests (see `PullsClient._list`).

A pull request is "merged" when GitHub says so (``merged_at``) or when it is closed and carries more
``Merged*`` labels than ``Reverted*`` ones, which is how PyTorch's merge bot marks one it landed and
how its revert bot marks one it took back (see `opdrift.github.pulljson.landed`).

The disk cache makes a repeat cheaper but is not needed for the goal: a runner that starts without
it (no ``actions/cache``) pays one compare per open pull request listed since the watermark, and none
for a head the caller names in ``known_heads`` (its state block holds the heads it judged).

Page-number pagination does not list a snapshot. A pull request updated while a scan pages moves to
the top, onto a page already read: this scan misses it, and since its new ``updated_at`` is later than
anything the scan saw, the next scan lists it. The ones it passed move down a place, so one may be
listed twice (and is kept once). A pull request that closes while a cold scan pages through the open
ones leaves the list, and the one just past the next page boundary moves up onto a page already read
without being updated: nothing would list it again. So a cold scan of more than one page ends with
one request for the most recently updated closed pull requests, and if one of them was updated after
the scan began, it is incomplete (the next run lists again, the compares being cached). A steady scan
lists every state, and nothing leaves that list.

Every exchange goes through `opdrift.github.limits.Guard` (API root, deadline, size cap, pages) via
`opdrift.github.api.Api`; every field of an answer is checked before it becomes a `PullRef`
(`opdrift.github.pulljson`: its text stays data, a title is whatever its author wrote).
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

from opdrift.errors import ApiLimitError, SourceError
from opdrift.files import replace_file
from opdrift.github.api import Api, ApiSettings, json_at
from opdrift.github.ghcache import BlobCache, JsonCache
from opdrift.github.ghsource import TreeReader
from opdrift.github.limits import link_urls
from opdrift.github.pulljson import (
    KEPT,
    SHA,
    WHEN,
    file_names,
    http_date,
    pull_ref,
    slim_pull,
    slim_pulls,
    stored_answer,
)
from opdrift.model import OPERATOR_PATHS, PullRef

_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+")
PER_PAGE = 100
# 100 pages of 100: more open pull requests than any repository has (pytorch/pytorch: a few
# thousand). A list that goes on is leading the client on.
MAX_LIST_PAGES = 100
# The compare endpoint lists at most 300 files, all on its first page (its pages are of commits,
# since GitHub's changelog of 2021-03-22): a list of 300 may have been cut.
COMPARE_FILES = 300
# Past this many pull requests that could not be compared the scan stops as if out of budget: so many
# failures say something wider is wrong (a rate limit, an outage), not twenty odd pull requests.
MAX_FAILED = 20
MAX_REASON = 300  # characters of a failure's one-line reason
# Under the cache root, whether the last scan was complete: "complete" and the day, or "incomplete"
# and the second. A workflow names its cache entry after it (examples/downstream/watch.yml): while a
# cold start progresses every run's cache is worth saving, afterwards one a day is (a steady run
# costs the same requests without a cache, see docs/performance.md).
PROGRESS_FILE = "scan-progress"
# Requests a scan may send (list pages and compares): leaves about 200 of a workflow token's 1,000 an
# hour for the judge's reads and the issue (`opdrift watch --budget`, whose default says the same).
DEFAULT_BUDGET = 800
SCAN_SECONDS = 900.0  # the whole scan, compares included: a scheduled job's slot, not an hour
CALL_SECONDS = 120.0  # one touched / merge_base / pull call


@dataclass(frozen=True)
class Scan:
    pulls: tuple[PullRef, ...]  # PRs updated since `since` (any state: open, closed, merged), newest first
    watermark: str | None  # the `updated_at` to pass as `since` next run (ISO 8601)
    complete: bool  # False when the request budget (or the deadline) stopped the scan early
    failed: tuple[tuple[PullRef, str], ...] = ()  # PRs the scan could not examine, with a one-line reason
    # How far a scan the budget stopped got, for the dashboard to say so: the open PRs listed (every
    # one when `listed_whole`), how many of them are examined (this run, a cache or an earlier run),
    # and how many this run paid a compare for (the pace of the next runs).
    listed_open: int = 0
    listed_whole: bool = True
    examined_open: int = 0
    paid: int = 0


class _OutOfBudget(Exception):
    pass


class PullsClient:
    """The pull requests of REPO (``OWNER/NAME``) through the REST API, cached under the settings'
    cache dir (``api/``: answers with their ETags and what compares taught; ``trees/``)."""

    def __init__(self, settings: ApiSettings, repo: str) -> None:
        if not _REPO.fullmatch(repo):
            raise SourceError("an upstream repository is OWNER/NAME", path=repo)
        self.repo = repo
        # One client serves a whole run: scan's budget bounds the requests, MAX_LIST_PAGES and
        # MAX_FILE_PAGES the pages followed (a compare's Link pages its commits, which are not read),
        # and the guard each call's deadline, sizes and URLs.
        self.api = Api(settings, repo, max_requests=10_000, max_pages=10_000)
        self.answers = JsonCache(settings.cache_dir, "api")
        self.trees = TreeReader(self.api, repo, JsonCache(settings.cache_dir, "trees"))
        self.not_modified = 0  # 304s: requests that cost nothing against the rate limit
        self._touched: dict[str, tuple[str, ...]] = {}
        self._bases: dict[tuple[str, str], str] = {}
        self._limit: int | None = None  # scan's ceiling on `requests_sent`, while it prefetches
        self._progress: str | None = None  # what PROGRESS_FILE gets on close; None: no scan ran
        self._served_at: str | None = None  # the last answer's Date, in GitHub's updated_at form
        # Listed pull requests whose answer cannot become a PullRef (`user: null`...): the scan names
        # them in `failed`, for the caller's retry list, rather than fail.
        self._unlisted: dict[int, tuple[PullRef, str]] = {}

    # --- the interface ------------------------------------------------------------------------

    @property
    def requests_sent(self) -> int:
        """Every request sent, retries and 304s included (`not_modified` counts the 304s)."""
        return self.api.sent

    @property
    def charged(self) -> int:
        """What counted against the rate limit: every request but the 304s."""
        return self.api.sent - self.not_modified

    @property
    def bytes_received(self) -> int:
        return self.api.received

    def close(self) -> None:
        self.answers.prune()
        self.trees.cache.prune()
        # The blobs the judge's `gh:` reads stored under the same root (`read_github_source` prunes
        # after each read that stored one; this covers a run that stopped between the two).
        BlobCache(self.api.settings.cache_dir).prune()
        self.api.close()
        root = self.api.settings.cache_dir
        if root is not None and self._progress is not None:
            with contextlib.suppress(OSError):  # a progress file not written only costs the next run
                root.mkdir(parents=True, exist_ok=True)
                replace_file(root / PROGRESS_FILE, self._progress.encode(), durable=False)

    def scan(
        self,
        since: str | None,
        *,
        budget: int = DEFAULT_BUDGET,
        known_heads: Collection[str] = (),
        later: Collection[int] = (),
    ) -> Scan:
        """The pull requests updated since SINCE (a watermark from an earlier scan), newest first;
        every open one with its compare paid for (see the module docstring), except those whose head
        is in KNOWN_HEADS (the caller judged that head in an earlier run: a new title or label moves
        `updated_at` too, and a runner without the disk cache would pay a compare for nothing).
        BUDGET is checked before each request. The pull requests named in LATER (the last run could
        not compare them) are compared after all the others: one GitHub keeps failing on cannot
        take the scan's time from those it answers."""
        if since is not None and (not WHEN.fullmatch(since) or since > _later_than_now()):
            # The watermark comes back from an issue body: a bad one, or one in the future (which
            # would hide every pull request for good), means a cold run.
            since = None
        known = frozenset(known_heads)
        start, deadline = self.charged, time.monotonic() + SCAN_SECONDS
        self.api.guard.restart(SCAN_SECONDS)
        self._unlisted = {}
        listed, complete = self._list(since, start + budget)
        listed_whole = complete
        pulls: list[PullRef] = []
        failed: list[tuple[PullRef, str]] = list(self._unlisted.values())
        paid = 0
        self._limit = start + budget
        try:
            for pull in _later_last(listed, frozenset(later)):
                if pull.state == "open" and pull.head_sha not in known:
                    if self.charged >= self._limit or time.monotonic() >= deadline:
                        raise _OutOfBudget
                    try:
                        before = self.charged
                        self.touched(pull)
                        paid += self.charged > before
                    except (SourceError, ApiLimitError) as err:
                        # One pull request GitHub cannot compare (an unrelated history has no merge
                        # base: a 404; a 422; an answer over a bound) must not stop every run: it is
                        # reported for the caller to retry, and the others are examined. A spent
                        # deadline is the scan's, not the pull request's.
                        if time.monotonic() >= deadline or self.api.guard.remaining() <= 0:
                            raise _OutOfBudget from None
                        failed.append((pull, _reason(err)))
                        if len(failed) > MAX_FAILED:
                            raise _OutOfBudget from None
                        continue
                pulls.append(pull)
        except _OutOfBudget:
            complete = False
        finally:
            self._limit = None
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self._progress = f"complete {now[:10]}\n" if complete else f"incomplete {now}\n"
        seen = (p.updated_at for p in (*pulls, *(f for f, _ in failed)) if p.updated_at)
        newest = max(seen, default=since)
        return Scan(
            tuple(pulls),
            newest if complete else since,
            complete,
            tuple(failed),
            listed_open=sum(p.state == "open" for p in listed),
            listed_whole=listed_whole,
            examined_open=sum(p.state == "open" for p in pulls),
            paid=paid,
        )

    def touched(self, pull: PullRef) -> tuple[str, ...]:
        """Which of OPERATOR_PATHS the pull request changes (added, modified, removed or renamed)."""
        head = pull.head_sha
        if head not in self._touched:
            stored = self.answers.get(self._touched_key(head))
            if isinstance(stored, list) and all(p in OPERATOR_PATHS for p in stored):
                self._touched[head] = tuple(p for p in OPERATOR_PATHS if p in stored)
            else:
                self._restart()
                self._learn(pull)
        return self._touched[head]

    def merge_base(self, pull: PullRef) -> str:
        """The sha of the merge base of the pull request's base and head (what its diff starts from)."""
        key = (pull.base_sha, pull.head_sha)
        if key not in self._bases:
            stored = self.answers.get(self._base_key(*key))
            if isinstance(stored, str) and SHA.fullmatch(stored):
                self._bases[key] = stored
            else:
                self._restart()
                self._learn(pull)
        return self._bases[key]

    def head_sizes(self, pull: PullRef) -> dict[str, int]:
        """The size in bytes of each of OPERATOR_PATHS at the pull request's head, from the git trees
        (two requests, cached by commit; the judge's read of the head then finds them cached): a
        file's size is known before any of its content is sent."""
        self._restart()
        sizes = {}
        for path in OPERATOR_PATHS:
            found = self.trees.entry(pull.head_sha, path)
            if found is not None:
                sizes[path] = found[1]
        return sizes

    def pull(self, number: int) -> PullRef:
        """Pull request NUMBER as it is now (a dashboard's pull request the scan did not list)."""
        self._restart()
        data, _ = self._get_json(f"/repos/{self.repo}/pulls/{number}", None, keep=slim_pull)
        if data is None:
            raise SourceError(f"no pull request #{number}", path=self.repo)
        return pull_ref(data, self.repo, self.api.settings.api_url)

    # --- the list -----------------------------------------------------------------------------

    def _list(self, since: str | None, limit: int) -> tuple[list[PullRef], bool]:
        """The pull requests updated since SINCE, newest first, and whether the listing is whole. A
        watermark so old that its updates run past MAX_LIST_PAGES pages (a schedule paused for a week
        on pytorch/pytorch) falls back to the open pull requests, as a cold run lists them, with the
        closed and merged ones of the pages already read: those that closed in the part not read are
        not named."""
        pulls, complete, whole = self._pages(since, limit)
        if whole or since is None:
            if not whole:
                raise ApiLimitError(
                    f"GitHub kept announcing another page of {self.repo}'s pull requests after "
                    f"{MAX_LIST_PAGES} pages; stopped before following more"
                )
            return pulls, complete
        cold, complete, whole = self._pages(None, limit)
        if not whole:
            raise ApiLimitError(
                f"GitHub kept announcing another page of {self.repo}'s open pull requests after "
                f"{MAX_LIST_PAGES} pages; stopped before following more"
            )
        newest: dict[int, PullRef] = {}
        for pull in (*pulls, *cold):
            if pull.number not in newest or pull.updated_at > newest[pull.number].updated_at:
                newest[pull.number] = pull
        return sorted(newest.values(), key=lambda p: (p.updated_at, p.number), reverse=True), complete

    def _pages(self, since: str | None, limit: int) -> tuple[list[PullRef], bool, bool]:
        """The listing's pages down to SINCE: the pull requests, whether the budget let it finish, and
        False as the last when MAX_LIST_PAGES pages were read and GitHub announced more."""
        params = {
            "state": "open" if since is None else "all",
            "sort": "updated",
            "direction": "desc",
            "per_page": str(PER_PAGE),
        }
        url = f"{self.api.settings.api_url.rstrip('/')}/repos/{self.repo}/pulls?{urlencode(params)}"
        pulls: list[PullRef] = []
        seen: set[int] = set()
        began: str | None = None
        for page in range(MAX_LIST_PAGES):
            if self.charged >= limit:
                return pulls, False, True
            data, next_url = self._get_json(None, url, keep=slim_pulls)
            if not isinstance(data, list):
                raise SourceError("GitHub's list of pull requests is not a list", path=self.repo)
            for item in data:
                pull = self._listed_ref(item)
                if pull is None:
                    continue
                if since is not None and pull.updated_at < since:
                    return pulls, True, True
                if pull.number not in seen:  # a pull request updated while paging moves up a page
                    seen.add(pull.number)
                    pulls.append(pull)
            if page == 0:
                # When the listing began, by GitHub's clock (it writes updated_at by the same one).
                began = self._served_at or (pulls[0].updated_at if pulls else None)
            if next_url is None:
                if since is None and page > 0 and began is not None:
                    return pulls, self._none_closed_since(began, limit), True
                return pulls, True, True
            url = next_url
        return pulls, True, False

    def _none_closed_since(self, start: str, limit: int) -> bool:
        """Whether no pull request closed since START (when the listing began): one that closed while the open ones were paged through removed itself from the
        list, and the one just past the next page boundary moved onto a page already read."""
        if self.charged >= limit:
            return False
        params = {"state": "closed", "sort": "updated", "direction": "desc", "per_page": str(PER_PAGE)}
        data, _ = self._get_json(f"/repos/{self.repo}/pulls?{urlencode(params)}", None, keep=slim_pulls)
        if not isinstance(data, list):
            raise SourceError("GitHub's list of pull requests is not a list", path=self.repo)
        listed = (self._listed_ref(item) for item in data)
        return all(pull is not None and pull.updated_at < start for pull in listed)

    def _get_json(
        self,
        path: str | None,
        url: str | None,
        *,
        keep: Callable[[Any], Any] | None = None,
        attempts: int | None = None,
    ) -> tuple[Any, str | None]:
        """GET PATH (or a whole URL from a Link): the JSON and the next page's URL, (None, None) for
        a 404. With KEEP the request is conditional: the answer is stored with its ETag, as KEEP
        reduces it (the fields a `PullRef` reads: a page of GitHub's pull objects is megabytes), and
        reused on a 304. Whatever comes back from the cache is checked again like a fresh answer."""
        full = url or f"{self.api.settings.api_url.rstrip('/')}{path}"
        # An answer stored by a version that kept other fields is a miss, not a pull request without them.
        key = f"GET {full}" if keep is None else f"GET {full} keeping {','.join(KEPT)}"
        stored = None if keep is None else stored_answer(self.answers.get(key))
        answer = self.api.get("", url=full, etag=None if stored is None else stored[0], attempts=attempts)
        self._served_at = http_date(answer.header("date") if answer is not None else None)
        if answer is None:
            return None, None
        if answer.status == 304 and stored is not None:
            self.not_modified += 1
            _, link, data = stored
            link = answer.header("link") or link
        else:
            try:
                data = answer.json()
            except ValueError:
                raise SourceError(
                    f"GitHub API sent no JSON for {urlsplit(full).path}", path=self.repo
                ) from None
            link, etag = answer.header("link"), answer.header("etag")
            if keep is not None:
                data = keep(data)
                if etag:
                    self.answers.put(key, {"etag": etag, "link": link, "data": data})
        next_url = None
        if link:
            next_url = next((u for rel, u in link_urls(link) if rel == "next"), None)
        return data, next_url

    # --- one pull request's files and merge base ----------------------------------------------

    def _restart(self) -> None:
        if self._limit is None:
            self.api.guard.restart(CALL_SECONDS)

    def _touched_key(self, head: str) -> str:
        return f"touched {self.repo} {head}"

    def _base_key(self, base: str, head: str) -> str:
        return f"merge-base {self.repo} {base}...{head}"

    def _learn(self, pull: PullRef) -> None:
        """One compare: the merge base, and the changed files when it lists them all."""
        # Inside a scan, one attempt: a compare GitHub answers with a 5xx (slowly, perhaps) marks the
        # pull request for the caller's retry list at once, rather than take the scan's 900 s in
        # retries (8 attempts of a 10 s answer, PR after PR).
        data, _ = self._get_json(
            f"/repos/{self.repo}/compare/{pull.base_sha}...{pull.head_sha}?per_page=1",
            None,
            attempts=1 if self._limit is not None else None,
        )
        base = json_at(data, "merge_base_commit", "sha")
        if not isinstance(base, str) or not SHA.fullmatch(base):
            raise SourceError(f"no merge base for pull request #{pull.number}", path=self.repo)
        self._bases[(pull.base_sha, pull.head_sha)] = base
        self.answers.put(self._base_key(pull.base_sha, pull.head_sha), base)
        files = json_at(data, "files")
        if files is not None and not isinstance(files, list):
            raise SourceError(
                f"GitHub's compare for pull request #{pull.number} has files that are not a list",
                path=self.repo,
            )
        if pull.head_sha in self._touched:
            return
        # `files` is optional in GitHub's schema of a comparison: without it, the pull request's
        # file list, then the trees.
        if files is None or len(files) >= COMPARE_FILES:
            names = self._by_trees(base, pull.head_sha)
        else:
            names = file_names(files, self.repo)
        touched = tuple(p for p in OPERATOR_PATHS if p in names)
        self._touched[pull.head_sha] = touched
        self.answers.put(self._touched_key(pull.head_sha), list(touched))

    def _by_trees(self, base: str, head: str) -> set[str]:
        """The operator files whose blob differs between the merge base and the head."""
        changed = set()
        for path in OPERATOR_PATHS:
            self._charge()
            if self.trees.entry(base, path) != self.trees.entry(head, path):
                changed.add(path)
        return changed

    def _charge(self) -> None:
        """Within a scan, stop before a request past its budget's ceiling (a long file list's pages)."""
        if self._limit is not None and self.charged >= self._limit:
            raise _OutOfBudget

    # --- answers → records --------------------------------------------------------------------

    def _listed_ref(self, item: Any) -> PullRef | None:
        """ITEM of a listing as a PullRef; None, and the pull request kept in `_unlisted`, when a field
        the schema lets be null (``user``, for a deleted account's pull request) or leave out makes it
        unreadable: one such pull request never fails the scan. One without a number or head sha
        cannot even be retried, and fails it."""
        try:
            return pull_ref(item, self.repo, self.api.settings.api_url)
        except SourceError as err:
            number, head = json_at(item, "number"), json_at(item, "head", "sha")
            if not isinstance(number, int) or not isinstance(head, str) or not SHA.fullmatch(head):
                raise
            updated = json_at(item, "updated_at")
            stand_in = PullRef(
                number=number, title="", author="", draft=False, state="open",
                updated_at=updated if isinstance(updated, str) and WHEN.fullmatch(updated) else "",
                html_url="", head_sha=head, base_sha=head,
            )  # fmt: skip
            self._unlisted[number] = (stand_in, _reason(err))
            return None


def _later_last(pulls: list[PullRef], later: frozenset[int]) -> list[PullRef]:
    """PULLS in their order, those numbered in LATER moved to the end (still in their order)."""
    return [p for p in pulls if p.number not in later] + [p for p in pulls if p.number in later]


def _later_than_now() -> str:
    """A day from now in GitHub's form: no watermark a real run wrote is later (clocks drift, a
    little)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 86400))


def _reason(err: SourceError | ApiLimitError) -> str:
    """ERR's message on one line, at most MAX_REASON characters (it may quote GitHub's answer)."""
    text = " ".join(err.message.split())
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 1] + "…"
