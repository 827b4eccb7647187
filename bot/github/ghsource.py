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
opdrift.sources, because only opdrift.github and opdrift.publish talk to the network (the import contracts in
pyproject.toml); the CLI hands it to the pipeline as the reader of ``gh:`` specs. Every request goes
through `opdrift.github.api.Api`.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from opdrift.errors import SourceError
from opdrift.github.api import SHA_ONLY, Api, ApiSettings, json_at
from opdrift.github.ghcache import (
    BlobCache,
    JsonCache,
    blob_sha,
)
from opdrift.github.limits import Answer
from opdrift.model import (
    DERIVATIVES_PATH,
    NATIVE_PATH,
    TAGS_PATH,
    VERSION_PATH,
    SourceFiles,
    SourceMeta,
    TextFile,
)
from opdrift.sources.read import MAX_FILE_BYTES, decode, version_of

PREFIX = "gh:"
_SPEC = re.compile(
    r"gh:(?P<repo>[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+)"
    r"(?:@(?P<ref>[^\s:~^]+)|#(?P<pr>[1-9][0-9]{0,9})(?P<mb>:merge-base)?)"
)
_SHA = re.compile(r"[0-9a-f]{40}")


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


def commit_at(api: Api, repo: str, rev: str) -> tuple[str, str | None] | None:
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
    found, date = json_at(commit, "sha"), json_at(commit, "committer", "date")
    if found != sha:
        raise SourceError(f"GitHub sent another commit for {rev}", path=api.spec)
    return sha, date if isinstance(date, str) else None


_TREE_TYPES = frozenset({"blob", "tree", "commit"})  # a submodule is a "commit" entry


class TreeReader:
    """A directory's entries at a commit from the git trees API (``git/trees/SHA:DIR``): blob shas and
    sizes, no content. The endpoint takes any tree-ish git resolves, ``COMMIT:DIR`` included (GitHub's
    reference names a ``tree_sha`` "or ref"; ``git/trees/HEAD:blog/days`` answered as the directory's
    tree, scripting/Scripting-News#94). A listing at a commit sha never changes, so it is cached by
    (commit, directory), in memory and in CACHE."""

    def __init__(self, api: Api, repo: str, cache: JsonCache) -> None:
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
        oid = json_at(data, "tree", "sha")
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
    entries = json_at(tree, "tree")
    if not isinstance(entries, list) or json_at(tree, "truncated") is True:
        # A truncated listing would make a file that exists look absent.
        raise SourceError(f"GitHub sent no complete tree for {directory}", path=spec)
    out: dict[str, tuple[str, str, int]] = {}
    for item in entries:
        name, kind, oid, size = (json_at(item, k) for k in ("path", "type", "sha", "size"))
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


def _version_txt(api: Api, repo: str, commit: str, cache: JsonCache, blobs: BlobCache) -> str | None:
    """version.txt's text at COMMIT (None: the commit has none, or it is no text). One request to the
    contents API, whose answer names the blob and carries its content; the blob sha is cached by
    (repository, commit) and the content by that sha, so a commit already read costs nothing."""
    key = f"{repo}\n{commit}"
    stored = cache.get(key)
    oid = json_at(stored, "sha")
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
    if json_at(item, "type") != "file":
        return None, None
    oid, content = json_at(item, "sha"), json_at(item, "content")
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
    api = Api(settings, spec)
    base = f"/repos/{source.repo}"
    try:
        ref = source.ref
        if source.pr is not None:
            pull = api.json(f"{base}/pulls/{source.pr}")
            head, base_sha = json_at(pull, "head", "sha"), json_at(pull, "base", "sha")
            if not isinstance(head, str) or not isinstance(base_sha, str):
                raise SourceError(f"no pull request #{source.pr} in {source.repo}", path=spec)
            ref = head
            if source.merge_base:
                compare = api.json(f"{base}/compare/{base_sha}...{head}")
                ref = json_at(compare, "merge_base_commit", "sha")
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
