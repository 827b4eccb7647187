"""The ``gh:`` SOURCE: PyTorch's three files at a revision, read through GitHub's REST API, no clone.

- ``gh:OWNER/NAME@REF``: REF is a branch, a tag or a commit sha;
- ``gh:OWNER/NAME#N``: the head commit of pull request N;
- ``gh:OWNER/NAME#N:merge-base``: the merge base of that pull request's base and head (what the PR
  is diffed from), from the compare endpoint's ``merge_base_commit``.

Per side: one request for the commit (its sha and committer date go into the snapshot), one git
trees request per directory (``aten/src/ATen/native`` holds two of the files, ``tools/autograd`` the
third) for the blob shas and sizes, and the content itself from the git blobs API with the raw media
type. The trees API names a blob without sending it: the contents API, asked for a file's metadata,
sends the whole file base64-encoded inside its JSON (about 0.8 MB for native_functions.yaml). A tree
listing at a commit sha never changes, so it is cached by (commit, directory) under
``$XDG_CACHE_HOME/opdrift/trees``; contents are cached by blob sha under ``.../opdrift/blobs`` (the
least recently used removed past MAX_BLOB_BYTES) and checked against that sha when read, so a
repeat sends one request per side (the commit) and no content at all. The torch version is REF's
when it is a release tag (``v2.14.1``), else the one version.txt names at the commit: one contents
request (the file is a few bytes, so its base64 inside the JSON costs nothing), its blob sha cached
by commit under ``.../opdrift/versions`` and its content with the other blobs. It lives here, not in
bot.sources, because only bot.publish talks to the network (the import contracts in pyproject.toml);
the CLI hands it to the pipeline as the reader of ``gh:`` specs.
"""

from __future__ import annotations

import base64
import binascii
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urljoin, urlsplit

import requests

from bot.errors import ApiLimitError, PublishError, SourceError
from bot.model import (
    DERIVATIVES_PATH,
    NATIVE_PATH,
    TAGS_PATH,
    VERSION_PATH,
    SourceFiles,
    SourceMeta,
    TextFile,
)
from bot.github.ghcache import (
    BlobCache,
    JsonCache,
    blob_sha,
)
from bot.publish.github import DEFAULT_API_URL, RetryPolicy, retry_delay, scrub
from bot.github.limits import MAX_PAGES, MAX_REQUESTS, Answer, ApiRoot, Guard, new_session
from bot.sources.read import MAX_FILE_BYTES, decode, version_of

PREFIX = "gh:"
_SPEC = re.compile(
    r"gh:(?P<repo>[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+)"
    r"(?:@(?P<ref>[^\s:~^]+)|#(?P<pr>[1-9][0-9]{0,9})(?P<mb>:merge-base)?)"
)
_SHA = re.compile(r"[0-9a-f]{40}")
RAW = "application/vnd.github.raw+json"
SHA_ONLY = "application/vnd.github.sha"  # commits/REF answers with the bare sha
JSON = "application/vnd.github+json"


@dataclass(frozen=True)
class GitHubSource:
    repo: str  # OWNER/NAME
    ref: str | None = None
    pr: int | None = None
    merge_base: bool = False


def parse_spec(spec: str) -> GitHubSource:
    m = _SPEC.fullmatch(spec)
    if m is None:
        raise SourceError(
            "a gh: SOURCE is gh:OWNER/NAME@REF, gh:OWNER/NAME#PR or gh:OWNER/NAME#PR:merge-base", path=spec
        )
    if m["ref"] is not None:
        return GitHubSource(m["repo"], ref=m["ref"])
    return GitHubSource(m["repo"], pr=int(m["pr"]), merge_base=m["mb"] is not None)


# Seconds for reading one gh: SOURCE, requests and retries included: its three files are a few MB.
READ_BUDGET = 120.0


@dataclass(frozen=True)
class ApiSettings:
    api_url: str = DEFAULT_API_URL
    token: str | None = None
    timeout: float = 30.0
    retry: RetryPolicy = field(default_factory=lambda: RetryPolicy(total_seconds=READ_BUDGET))
    cache_dir: Path | None = None  # opdrift's cache root (blobs/, trees/, api/ under it); None: no cache


# Every request any `_Api` of this process sent: a command that reads several gh: SOURCEs and lists
# pull requests (`watch`: the scan's client and each judgement's reads) reports the sum, not one
# client's share. A lock, as reads may run on threads.
_SENT = [0]
_SENT_LOCK = threading.Lock()


def requests_sent() -> int:
    """The requests every reader of the REST API in this process has sent so far, retries included."""
    with _SENT_LOCK:
        return _SENT[0]


class _Api:
    """GET with the token, retries on 5xx, rate limits and dropped connections, within the bounds of
    `bot.github.limits`: the API root, one deadline for the whole SOURCE, a size cap per body."""

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


def commit_at(api: _Api, repo: str, rev: str) -> tuple[str, str | None] | None:
    """(sha, committer date) of REV in REPO; None when there is no such commit. ``commits/REF``
    answers with up to 300 files and their patches (megabytes for a big merge); the git database's
    ``git/commits/SHA`` is about a kilobyte, and a ref name is first resolved to its sha alone
    (``commits/REF`` in the ``application/vnd.github.sha`` media type: 40 bytes)."""
    sha = rev
    if not _SHA.fullmatch(rev):
        answer = api.get(f"/repos/{repo}/commits/{quote(rev, safe='')}", accept=SHA_ONLY)
        if answer is None:
            return None
        sha = answer.body.decode("ascii", "replace").strip()
        if not _SHA.fullmatch(sha):
            raise SourceError(f"GitHub sent no commit sha for {rev}", path=api.spec)
    commit = api.json(f"/repos/{repo}/git/commits/{sha}", missing=frozenset({404, 422}))
    if commit is None:
        return None
    found, date = _field(commit, "sha"), _field(commit, "committer", "date")
    if found != sha:
        raise SourceError(f"GitHub sent another commit for {rev}", path=api.spec)
    return sha, date if isinstance(date, str) else None


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


def _field(data: Any, *keys: str) -> Any:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data


_TREE_TYPES = frozenset({"blob", "tree", "commit"})  # a submodule is a "commit" entry


class TreeReader:
    """A directory's entries at a commit from the git trees API (``git/trees/SHA:DIR``): blob shas and
    sizes, no content. The endpoint takes any tree-ish git resolves, ``COMMIT:DIR`` included (GitHub's
    reference names a ``tree_sha`` "or ref"; ``git/trees/HEAD:blog/days`` answered as the directory's
    tree, scripting/Scripting-News#94). A listing at a commit sha never changes, so it is cached by
    (commit, directory), in memory and in CACHE."""

    def __init__(self, api: _Api, repo: str, cache: JsonCache) -> None:
        self.api = api
        self.repo = repo
        self.cache = cache
        self._seen: dict[tuple[str, str], dict[str, tuple[str, str, int]] | None] = {}
        self._walk_only = False  # git/trees/COMMIT:DIR was refused: walk from the commit's tree

    def listing(self, commit: str, directory: str) -> dict[str, tuple[str, str, int]] | None:
        """name → (type, sha, size; -1 for a tree), or None when DIRECTORY is not a tree at COMMIT."""
        key = (commit, directory)
        if key in self._seen:
            return self._seen[key]
        cache_key = f"{self.repo}\n{commit}\n{directory}"
        stored = self.cache.get(cache_key)
        listing = _listing(stored) if stored is not None else None
        if listing is None:
            listing = self._read(commit, directory)
            if listing is not None:
                self.cache.put(cache_key, {n: list(v) for n, v in listing.items()})
        self._seen[key] = listing
        return listing

    def _read(self, commit: str, directory: str) -> dict[str, tuple[str, str, int]] | None:
        """DIRECTORY's listing at COMMIT in one request, ``git/trees/COMMIT:DIR``. That form is not in
        GitHub's reference (which names a tree sha): when it is refused (404, 422) the documented walk
        answers instead, the commit's tree and then each subtree, and the rest of the run walks."""
        if not self._walk_only:
            path = f"/repos/{self.repo}/git/trees/{quote(f'{commit}:{directory}', safe='/:')}"
            tree = self.api.json(path, missing=frozenset({404, 422}))
            if tree is not None:
                return _tree_listing(tree, self.api.spec, directory)
            self._walk_only = True
        data = self.api.json(f"/repos/{self.repo}/git/commits/{commit}", missing=frozenset({404, 422}))
        oid = _field(data, "tree", "sha")
        if data is None or not isinstance(oid, str) or not _SHA.fullmatch(oid):
            return None
        walked = ""
        for part in directory.split("/") if directory else ():
            tree = self.api.json(f"/repos/{self.repo}/git/trees/{oid}")
            found = None if tree is None else _tree_listing(tree, self.api.spec, walked or ".").get(part)
            if found is None or found[0] != "tree":
                return None
            oid, walked = found[1], f"{walked}/{part}".lstrip("/")
        tree = self.api.json(f"/repos/{self.repo}/git/trees/{oid}")
        return None if tree is None else _tree_listing(tree, self.api.spec, directory)

    def entry(self, commit: str, path: str) -> tuple[str, int] | None:
        """(blob sha, size) of the file PATH at COMMIT; None when it does not exist."""
        directory, _, name = path.rpartition("/")
        listing = self.listing(commit, directory)
        found = None if listing is None else listing.get(name)
        if found is None:
            return None
        kind, oid, size = found
        if kind != "blob":
            raise SourceError("not a file in the repository", path=f"{self.api.spec}:{path}")
        return oid, size


def _listing(stored: Any) -> dict[str, tuple[str, str, int]] | None:
    """A cached listing, or None when it is not one (a damaged entry is a miss)."""
    if not isinstance(stored, dict):
        return None
    out = {}
    for name, value in stored.items():
        if not (
            isinstance(value, list)
            and len(value) == 3
            and value[0] in _TREE_TYPES
            and isinstance(value[1], str)
            and _SHA.fullmatch(value[1])
            and isinstance(value[2], int)
            and not isinstance(value[2], bool)
        ):
            return None
        out[name] = (value[0], value[1], value[2])
    return out


def _tree_listing(tree: Any, spec: str, directory: str) -> dict[str, tuple[str, str, int]]:
    entries = _field(tree, "tree")
    if not isinstance(entries, list) or _field(tree, "truncated") is True:
        # A truncated listing would make a file that exists look absent.
        raise SourceError(f"GitHub sent no complete tree for {directory}", path=spec)
    out: dict[str, tuple[str, str, int]] = {}
    for item in entries:
        name, kind, oid, size = (_field(item, k) for k in ("path", "type", "sha", "size"))
        if (
            not isinstance(name, str)
            or kind not in _TREE_TYPES
            or not isinstance(oid, str)
            or not _SHA.fullmatch(oid)
        ):
            raise SourceError(f"GitHub's tree of {directory} has an entry that is not one", path=spec)
        if kind == "blob" and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
            raise SourceError(f"GitHub's tree of {directory} gives {name!r} no size", path=spec)
        out[name] = (kind, oid, size if kind == "blob" else -1)
    return out


# version.txt is one short line; the contents API's answer for it (JSON, the content base64-encoded,
# links to the file) is under 2 KB. An answer past this is no PyTorch version.txt.
MAX_VERSION_ANSWER = 64 * 1024


def _version_txt(api: _Api, repo: str, commit: str, cache: JsonCache, blobs: BlobCache) -> str | None:
    """version.txt's text at COMMIT (None: the commit has none, or it is no text). One request to the
    contents API, whose answer names the blob and carries its content; the blob sha is cached by
    (repository, commit) and the content by that sha, so a commit already read costs nothing."""
    key = f"{repo}\n{commit}"
    stored = cache.get(key)
    oid = _field(stored, "sha")
    data = blobs.get(oid) if isinstance(oid, str) else None
    if data is None and not (isinstance(stored, dict) and "sha" in stored and oid is None):
        found = api.get(
            f"/repos/{repo}/contents/{VERSION_PATH}", params={"ref": commit}, limit=MAX_VERSION_ANSWER
        )
        data, oid = (None, None) if found is None else _version_blob(found, f"{api.spec}:{VERSION_PATH}")
        if data is not None and oid is not None:
            blobs.put(oid, data)
        cache.put(key, {"sha": oid})  # None: no file there (nothing, a directory or a symlink)
        cache.prune()  # one entry per commit read: a watch adds two for every pull request it judges
    try:
        return None if data is None else data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _version_blob(answer: Answer, display: str) -> tuple[bytes | None, str | None]:
    """(content, blob sha) of a contents-API answer, checked against each other; (None, None) when
    the path is not a file."""
    try:
        item = answer.json()
    except (ValueError, RecursionError):
        raise SourceError("GitHub API sent no JSON", path=display) from None
    if _field(item, "type") != "file":
        return None, None
    oid, content = _field(item, "sha"), _field(item, "content")
    if not isinstance(oid, str) or not _SHA.fullmatch(oid) or not isinstance(content, str):
        raise SourceError("GitHub sent no content for the file", path=display)
    try:
        data = base64.b64decode(content)
    except (binascii.Error, ValueError):
        data = b""
    if blob_sha(data) != oid:
        raise SourceError(f"the content GitHub sent is not blob {oid[:12]}", path=display)
    return data, oid


def read_github_source(spec: str, settings: ApiSettings) -> SourceFiles:
    """The three files of SPEC (see the module docstring), with the commit's sha and date in the meta."""
    source = parse_spec(spec)
    api = _Api(settings, spec)
    base = f"/repos/{source.repo}"
    try:
        ref = source.ref
        if source.pr is not None:
            pull = api.json(f"{base}/pulls/{source.pr}")
            head, base_sha = _field(pull, "head", "sha"), _field(pull, "base", "sha")
            if not isinstance(head, str) or not isinstance(base_sha, str):
                raise SourceError(f"no pull request #{source.pr} in {source.repo}", path=spec)
            ref = head
            if source.merge_base:
                compare = api.json(f"{base}/compare/{base_sha}...{head}")
                ref = _field(compare, "merge_base_commit", "sha")
                if not isinstance(ref, str):
                    raise SourceError(f"no merge base for pull request #{source.pr}", path=spec)
        rev = ref or ""
        found = commit_at(api, source.repo, rev)
        if found is None:
            raise SourceError(f"no commit {rev} in {source.repo} (or the token cannot see it)", path=spec)
        sha, date = found
        cache = BlobCache(settings.cache_dir)
        stored = False
        trees = TreeReader(api, source.repo, JsonCache(settings.cache_dir, "trees"))

        def file_at(path: str) -> TextFile | None:
            nonlocal stored
            display = f"{spec}:{path}"
            found = trees.entry(sha, path)
            if found is None:
                return None
            oid, size = found
            if size > MAX_FILE_BYTES:
                raise SourceError(
                    f"file is {size} bytes, over the {MAX_FILE_BYTES}-byte limit for one source file",
                    path=display,
                )
            data = cache.get(oid)
            if data is None:
                data = api.raw(f"{base}/git/blobs/{oid}", MAX_FILE_BYTES)
                if data is None or blob_sha(data) != oid:
                    raise SourceError(f"the content GitHub sent is not blob {oid[:12]}", path=display)
                cache.put(oid, data)
                stored = True
            return TextFile(display, decode(data, display))

        native = file_at(NATIVE_PATH)
        if native is None:
            raise SourceError(f"{NATIVE_PATH} does not exist at {rev}", path=spec)
        tags, derivatives = file_at(TAGS_PATH), file_at(DERIVATIVES_PATH)
        # A release tag names the version; any other commit's version.txt does (`version_of`).
        version = version_of(source.ref, None)
        if version is None:
            versions = JsonCache(settings.cache_dir, "versions")
            version = version_of(None, _version_txt(api, source.repo, sha, versions, cache))
    finally:
        api.close()
    if stored:
        cache.prune()
    meta = SourceMeta(
        kind="git",
        path=spec,
        revision=source.ref if source.ref is not None else f"#{source.pr}",
        commit=sha,
        date=date if isinstance(date, str) else None,
        torch_version=version,
    )
    return SourceFiles(meta=meta, native_functions=native, tags=tags, derivatives=derivatives)
