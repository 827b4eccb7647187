"""The PR job's fetch: two commits and their history, without a tree or a blob until one is read.

`actions/checkout` with ``fetch-depth: 0`` fetches every branch and every tag with all their commits
and trees (``--filter=blob:none`` keeps only the blobs out); in pytorch/pytorch that is thousands of
ghstack branches. The drift of a PR needs the merge base of two commits and three files at two of
them. So: ``git fetch --no-tags --filter=tree:0 origin BASE HEAD`` brings the commits reachable from
the two and nothing else, ``git merge-base`` walks them locally, and the trees and the six blobs the
report reads come on demand when opdrift reads them (git's lazy fetch of a partial clone).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from opdrift.errors import WorkflowError
from opdrift.sources.git import run_git
from opdrift.sources.repo import check_rev, merge_base

# What the fetch asks the server for: commits only. `tree:0` keeps trees out too; the lazy fetch
# of a missing tree later asks for that commit's trees without blobs.
FILTER = "tree:0"


@dataclass(frozen=True)
class Fetched:
    directory: str
    merge_base: str
    note: str


def fetch_commits(directory: str | os.PathLike[str], remote: str, base: str, head: str) -> Fetched:
    """Make DIRECTORY a partial clone of REMOTE holding BASE, HEAD and their ancestors (commits only).

    An existing repository at DIRECTORY is reused (a re-run fetches nothing it has); its ``origin``
    must be REMOTE. BASE and HEAD are commits the server lets a client fetch by name (a sha of a
    branch or of a pull request's head, a branch, a tag).
    """
    check_rev(base, "base")
    check_rev(head, "head")
    if not remote or remote.startswith("-"):
        raise WorkflowError(f"bad remote {remote!r}")
    root = Path(directory)
    if not (root / ".git").exists():
        root.mkdir(parents=True, exist_ok=True)
        run_git(root, "init", "--quiet")
        run_git(root, "remote", "add", "origin", remote)
    else:
        have = run_git(root, "remote", "get-url", "origin", check=False).text.strip()
        if have != remote:
            raise WorkflowError(f"its origin is {have or 'unset'}, not {remote}", path=str(root))
    run_git(
        root, "fetch", "--quiet", "--no-tags", f"--filter={FILTER}", "origin", "--end-of-options", base, head
    )
    # The fetch marks origin as a promisor remote with that filter: later reads of a tree or blob the
    # clone lacks fetch it from there.
    found = merge_base(root, base, head)
    return Fetched(
        str(root), found, f"fetched {base[:12]} and {head[:12]} (commits only); merge base {found[:12]}"
    )
