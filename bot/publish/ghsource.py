"""The ``gh:`` SOURCE: PyTorch's three files at a revision, read through GitHub's REST API, no clone.

- ``gh:OWNER/NAME@REF``: REF is a branch, a tag or a commit sha;
- ``gh:OWNER/NAME#N``: the head commit of pull request N;
- ``gh:OWNER/NAME#N:merge-base``: the merge base of that pull request's base and head (what the PR
  is diffed from), from the compare endpoint's ``merge_base_commit``.

Per side: one request for the commit (its sha and committer date go into the snapshot), one contents
request per file for its blob sha and size (JSON), and the content itself from the git blobs API with
the raw media type (the contents API leaves content over 1 MB out). Contents are cached by blob sha
under ``$XDG_CACHE_HOME/opdrift/blobs`` and checked against that sha when read, so a repeat sends no
content request at all. It lives here, not in bot.sources, because only bot.publish talks to the
network (the import contracts in pyproject.toml); the CLI hands it to the pipeline as the reader of
``gh:`` specs.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urljoin, urlsplit

import requests

from bot.errors import ApiLimitError, PublishError, SourceError
from bot.model import DERIVATIVES_PATH, NATIVE_PATH, TAGS_PATH, SourceFiles, SourceMeta, TextFile
from bot.publish.github import DEFAULT_API_URL, RetryPolicy, retry_delay, scrub
from bot.publish.limits import Answer, ApiRoot, Guard, new_session
from bot.sources.read import MAX_FILE_BYTES, decode

PREFIX = "gh:"
_SPEC = re.compile(
    r"gh:(?P<repo>[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+)"
    r"(?:@(?P<ref>[^\s:~^]+)|#(?P<pr>[1-9][0-9]{0,9})(?P<mb>:merge-base)?)"
)
_SHA = re.compile(r"[0-9a-f]{40}")
RAW = "application/vnd.github.raw+json"
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
    cache_dir: Path | None = None  # None: no cache


def default_cache_dir(environ: Mapping[str, str]) -> Path:
    """$XDG_CACHE_HOME/opdrift/blobs, or ~/.cache/opdrift/blobs (the XDG default)."""
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "opdrift" / "blobs"


def blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # noqa: S324 git's object id


class BlobCache:
    """Blob contents by their git sha; a file that does not hash to its name is ignored (and replaced)."""

    def __init__(self, root: Path | None) -> None:
        self.root = root

    def _path(self, sha: str) -> Path | None:
        return None if self.root is None else self.root / sha[:2] / sha

    def get(self, sha: str) -> bytes | None:
        path = self._path(sha)
        if path is None:
            return None
        try:
            data = path.read_bytes()
        except OSError:
            return None
        return data if blob_sha(data) == sha else None

    def put(self, sha: str, data: bytes) -> None:
        path = self._path(sha)
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except OSError:
            pass  # a cache that cannot be written only costs the next run a request


class _Api:
    """GET with the token, retries on 5xx, rate limits and dropped connections, within the bounds of
    `bot.publish.limits`: the API root, one deadline for the whole SOURCE, a size cap per body."""

    def __init__(self, settings: ApiSettings, spec: str, sleep: Callable[[float], None] = time.sleep) -> None:
        self.settings = settings
        self.spec = spec
        self.sleep = sleep
        try:
            root = ApiRoot.parse(settings.api_url)
        except PublishError as err:  # GITHUB_API_URL is no URL: a problem with what was given, like SOURCE
            raise SourceError(err.message, path=spec) from None
        # The retry budget is the deadline of the whole read: a drip or a stall ends there too.
        self.guard = Guard(root, seconds=settings.retry.total_seconds)
        self.session = new_session(settings.token)
        self.session.headers["X-GitHub-Api-Version"] = "2022-11-28"

    def close(self) -> None:
        self.session.close()

    def get(
        self,
        path: str,
        *,
        accept: str = JSON,
        params: Mapping[str, str] | None = None,
        limit: int | None = None,
    ) -> Answer | None:
        """The answer, or None for a 404; a SourceError for anything else that is not a 200."""
        url = self.settings.api_url.rstrip("/") + path
        if params:
            url += "?" + urlencode(params)
        policy, attempt, redirects = self.settings.retry, 0, 0
        while True:
            attempt += 1
            try:
                answer = self._exchange(url, accept, limit)
            except requests.RequestException as err:
                if attempt >= policy.max_attempts or policy.backoff(attempt) >= self.guard.remaining():
                    raise SourceError(
                        f"cannot reach the GitHub API: {self._scrub(str(err))}", path=self.spec
                    ) from None
                wait = policy.backoff(attempt)
            else:
                if answer.status == 200:
                    return answer
                if answer.status == 404:
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

    def _exchange(self, url: str, accept: str, limit: int | None) -> Answer:
        try:
            return self.guard.exchange(
                self.session, "GET", url, headers={"Accept": accept}, timeout=self.settings.timeout,
                limit=limit, what=f"for {urlsplit(url).path}", raw=accept == RAW,
            )  # fmt: skip
        except ApiLimitError as err:
            raise ApiLimitError(self._scrub(err.message), path=self.spec) from None

    def _scrub(self, text: str) -> str:
        return scrub(text, self.settings.token)

    def _message(self, answer: Answer) -> str:
        try:
            data = answer.json()
        except (ValueError, RecursionError):  # an error's body in the raw media type is not checked
            return ""
        return self._scrub(str(data.get("message", ""))) if isinstance(data, dict) else ""

    def json(self, path: str, *, params: Mapping[str, str] | None = None) -> Any:
        answer = self.get(path, params=params)
        if answer is None:
            return None
        try:
            return answer.json()
        except ValueError:
            raise SourceError(f"GitHub API sent no JSON for {path}", path=self.spec) from None

    def raw(self, path: str, limit: int) -> bytes | None:
        answer = self.get(path, accept=RAW, limit=limit)
        return None if answer is None else answer.body


def _field(data: Any, *keys: str) -> Any:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data


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
        commit = api.json(f"{base}/commits/{quote(rev, safe='')}")
        sha, date = _field(commit, "sha"), _field(commit, "commit", "committer", "date")
        if not isinstance(sha, str) or not _SHA.fullmatch(sha):
            raise SourceError(f"no commit {rev} in {source.repo} (or the token cannot see it)", path=spec)
        cache = BlobCache(settings.cache_dir)

        def file_at(path: str) -> TextFile | None:
            meta = api.json(f"{base}/contents/{quote(path)}", params={"ref": sha})
            if meta is None:
                return None
            oid, size = _field(meta, "sha"), _field(meta, "size")
            display = f"{spec}:{path}"
            if _field(meta, "type") != "file" or not isinstance(oid, str) or not isinstance(size, int):
                raise SourceError("not a file in the repository", path=display)
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
            return TextFile(display, decode(data, display))

        native = file_at(NATIVE_PATH)
        if native is None:
            raise SourceError(f"{NATIVE_PATH} does not exist at {rev}", path=spec)
        tags, derivatives = file_at(TAGS_PATH), file_at(DERIVATIVES_PATH)
    finally:
        api.close()
    version = re.fullmatch(r"v(\d+\.\d+\.\d+)", source.ref or "")
    meta = SourceMeta(
        kind="git",
        path=spec,
        revision=source.ref if source.ref is not None else f"#{source.pr}",
        commit=sha,
        date=date if isinstance(date, str) else None,
        torch_version=version.group(1) if version else None,
    )
    return SourceFiles(meta=meta, native_functions=native, tags=tags, derivatives=derivatives)
