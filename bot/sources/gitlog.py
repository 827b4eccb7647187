"""The commits and tags a history walk visits, as one ``git log --raw`` and one ``git tag`` list them.

Every command runs through `opdrift.sources.git.run_git`. `check_paths` normalises ``--paths`` to what
the commit filter compares: the repository-relative paths git log prints, literally.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass

from opdrift.errors import OpdriftError
from opdrift.model import DERIVATIVES_PATH, NATIVE_PATH, TAGS_PATH, VERSION_PATH
from opdrift.sources.git import run_git

# The three files a point is classified from; the log always lists their changes.
OPERATOR_FILES = (NATIVE_PATH, TAGS_PATH, DERIVATIVES_PATH)
# ...and the files whose versions a walk carries along: version.txt picks the codegen's rules. A
# commit that changed only it is listed, not counted (unless --paths names it).
TRACKED_FILES = (*OPERATOR_FILES, VERSION_PATH)
_ZERO_OID = re.compile(r"0+")


class PathsError(OpdriftError):
    """A --paths value the commit filter could never match: a pattern, or a path outside the repository."""


@dataclass(frozen=True)
class LogEntry:
    """One commit of the walk, as `git log` lists it."""

    sha: str
    date: str  # committer date, ISO 8601 (%cI)
    subject: str
    changes: tuple[tuple[str, str | None], ...]  # (path, new blob oid or None when deleted)
    # whether it touched one of the walk's PATHS; the others are listed only to carry the three
    # files' versions forward (a commit that changed native_functions.yaml alone still changed it)
    counted: bool = True


def _lines(repo: str, *args: str) -> list[str]:
    text = run_git(repo, *args).text
    # Only "\n" ends a line of git's output: str.splitlines() would also split a commit subject at
    # U+2028 or \x1c, and a subject could then forge a --raw line of the next "file change".
    return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n") if text else []


def check_paths(paths: Sequence[str]) -> tuple[str, ...]:
    """--paths as the commit filter compares them: repository-relative, normalised, literal.

    git would take ``./aten/...`` or a glob as a pathspec, but the filter matches the paths git log
    prints literally; accepting them would silently match nothing, so they are refused or normalised.
    """
    out = []
    for raw in paths:
        path = posixpath.normpath(raw.strip()).removeprefix("./")
        if any(c in raw for c in "*?[") or raw.startswith(":"):
            raise PathsError(f"--paths {raw!r}: give files or directories, not patterns")
        if not path or path == "." or path.startswith(("/", "../")) or path == "..":
            raise PathsError(f"--paths {raw!r}: give a path inside the repository, like {NATIVE_PATH}")
        out.append(path)
    return tuple(out)


def list_commits(repo: str, from_sha: str | None, to_sha: str, paths: Sequence[str]) -> list[LogEntry]:
    """Commits in FROM..TO (first-parent, oldest first) that touched PATHS or the three files, with
    their blob changes; `counted` says which touched PATHS.

    One ``git log --raw`` answers for the whole range, so the walk needs no per-commit tree lookups:
    the three files' blob oids are carried forward from the changes of every listed commit, counted
    or not.
    """
    rng = f"{from_sha}..{to_sha}" if from_sha else to_sha
    spec = sorted(set(paths) | set(TRACKED_FILES))
    lines = _lines(
        repo,
        # No config (the repository's, the user's, or the environment's: git -c sets it for everything
        # it starts) may change what is listed: a root commit left out, subjects re-encoded,
        # signatures or quoted non-ASCII paths in the output. A -c here wins over all of them.
        "-c",
        "log.showRoot=true",
        "-c",
        "core.quotePath=false",
        "log",
        "--encoding=UTF-8",
        "--no-show-signature",
        "--first-parent",
        "--reverse",
        "--raw",
        "--no-renames",
        "--no-abbrev",
        "--diff-merges=first-parent",
        "--format=%x00%H%x1f%cI%x1f%s",
        rng,
        "--",
        *spec,
    )
    wanted = [p.rstrip("/") for p in paths]
    out: list[LogEntry] = []
    head: list[str] | None = None
    changes: list[tuple[str, str | None]] = []

    def flush() -> None:
        if head is None:
            return
        counted = any(path == w or path.startswith(w + "/") for path, _ in changes for w in wanted)
        out.append(LogEntry(head[0], head[1], head[2], tuple(changes), counted))

    for line in lines:
        if line.startswith("\0"):
            flush()
            fields = line[1:].split("\x1f", 2)
            head = fields + [""] * (3 - len(fields))
            changes = []
        elif line.startswith(":"):
            meta, _, path = line.partition("\t")
            parts = meta.split()
            if len(parts) >= 5:
                oid = parts[3]
                changes.append((path, None if _ZERO_OID.fullmatch(oid) else oid))
    flush()
    return out


def list_tags(repo: str, pattern: str) -> list[str]:
    """Tag names matching PATTERN (a git glob), in version order (v2.9.0 before v2.10.0)."""
    return [t for t in _lines(repo, "tag", "--list", "--sort=version:refname", "--", pattern) if t]
