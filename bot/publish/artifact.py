"""Check a workflow artifact before a privileged job reads it.

The fork-safe PR pair hands the report from an unprivileged ``pull_request`` job, which ran code from
the pull request, to a ``workflow_run`` job that holds a write token. Whatever the first job uploaded
is therefore attacker-controlled. Before the second job opens any of it, the artifact must be exactly
the flat set of regular files it expects: a symlink could point the poster at a file of the runner
(the token's config, another job's output), a directory or an extra file could smuggle in something
a later step picks up by glob, and a huge file could exhaust the runner. Contents are validated
later by the loaders (a snapshot is parsed and checked like any other), so this module checks shape only.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from opdrift.errors import OpdriftError

DEFAULT_MAX_BYTES = 64 * 1024 * 1024  # a full snapshot is a few MB; far more means something is wrong


class ArtifactError(OpdriftError):
    """A downloaded artifact holds something other than the expected regular files."""


@dataclass(frozen=True)
class ArtifactFile:
    name: str
    size: int


def is_missing(directory: str | os.PathLike[str]) -> bool:
    """Whether nothing was downloaded: no such path, or an empty real directory (never a link)."""
    root = Path(directory)
    try:
        mode = root.lstat().st_mode
    except FileNotFoundError:
        return True
    if not stat.S_ISDIR(mode):
        return False
    with os.scandir(root) as entries:
        return next(entries, None) is None


def verify_artifact(
    directory: str | os.PathLike[str],
    *,
    required: Collection[str],
    optional: Collection[str] = (),
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> tuple[ArtifactFile, ...]:
    """The files of DIRECTORY, sorted by name, or `ArtifactError` for the first thing out of place.

    Allowed: regular files named in `required` (all must be present) or `optional`, each at most
    `max_bytes`, directly in DIRECTORY. Everything else (links of either kind, directories, devices,
    fifos, unknown names) is rejected. Nothing is followed: every check uses ``lstat``.
    """
    root = Path(directory)
    shown = str(root)
    try:
        root_stat = root.lstat()
    except OSError as exc:
        raise ArtifactError(f"cannot read the artifact directory: {exc.strerror}", path=shown) from None
    if stat.S_ISLNK(root_stat.st_mode):
        raise ArtifactError("the artifact directory is a symbolic link", path=shown)
    if not stat.S_ISDIR(root_stat.st_mode):
        raise ArtifactError("the artifact is not a directory", path=shown)
    allowed = set(required) | set(optional)
    found: list[ArtifactFile] = []
    with os.scandir(root) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            where = str(root / entry.name)
            info = entry.stat(follow_symlinks=False)
            mode = info.st_mode
            if stat.S_ISLNK(mode):
                raise ArtifactError("symbolic link in the artifact", path=where)
            if stat.S_ISDIR(mode):
                raise ArtifactError("unexpected directory in the artifact", path=where)
            if not stat.S_ISREG(mode):
                raise ArtifactError("not a regular file", path=where)
            if entry.name not in allowed:
                expected = ", ".join(sorted(allowed)) or "nothing"
                raise ArtifactError(f"unexpected file in the artifact (expected: {expected})", path=where)
            if info.st_nlink > 1:
                # A hard link shares its data with a file outside the artifact's control.
                raise ArtifactError("hard link in the artifact", path=where)
            if info.st_size > max_bytes:
                raise ArtifactError(
                    f"file of {info.st_size} bytes exceeds the {max_bytes}-byte limit", path=where
                )
            found.append(ArtifactFile(entry.name, info.st_size))
    missing = sorted(set(required) - {f.name for f in found})
    if missing:
        raise ArtifactError(f"the artifact lacks {', '.join(missing)}", path=shown)
    return tuple(found)
