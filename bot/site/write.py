"""Writing the site so that no kill, at any moment, leaves DIR missing or half written.

DIR is a symbolic link to a complete site in a directory beside it (``.DIR.PID.XXXX.site``). A build
writes the new site into a fresh directory of that kind, points a new link at it and renames the link
over DIR: one atomic rename, so DIR is always the old site or the new one. The old site's directory is
then removed; what a killed build left (its pid gone) is removed by the next build. A DIR that is a
real directory (written by an older opdrift) is moved aside once, just before the first link replaces it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from opdrift.errors import ConfigError
from opdrift.files import fsync_directory, remove_leftovers, temp_prefix

# A directory holding this file was written by `opdrift site` and may be replaced by the next build.
MARKER = ".opdrift-site"
_KINDS = (".site", ".link", ".old", ".tmp")  # the leftovers' suffixes (.tmp: older opdrift's staging)


def _check_replaceable(out: Path) -> None:
    if out.is_symlink() and not out.exists():
        raise ConfigError("is a broken symbolic link; refusing to replace it", path=str(out))
    if out.exists():
        if not out.is_dir():
            raise ConfigError("exists and is not a directory", path=str(out))
        if any(out.iterdir()) and not (out / MARKER).is_file():
            raise ConfigError(
                "not empty and not a site opdrift built (no .opdrift-site); refusing to replace it",
                path=str(out),
            )


def write_site(target: str | os.PathLike[str], files: Mapping[str, bytes]) -> None:
    out = Path(os.path.abspath(target))  # not resolve(): that would follow DIR's own link
    _check_replaceable(out)
    parent = out.parent
    mine = f".{out.name}."
    previous = os.readlink(out) if out.is_symlink() else None
    try:
        parent.mkdir(parents=True, exist_ok=True)
        remove_leftovers(parent, mine, _KINDS, keep=previous)
        staging = Path(tempfile.mkdtemp(prefix=temp_prefix(out.name), suffix=".site", dir=parent))
    except OSError as err:
        raise ConfigError(f"cannot create the output directory: {err.strerror}", path=str(out)) from None
    link = staging.with_suffix(".link")
    old: Path | None = None
    try:
        for rel, data in files.items():
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        (staging / MARKER).write_text("written by opdrift site; the next build replaces this directory\n")
        staging.chmod(0o755)
        os.symlink(staging.name, link)  # relative: the pair can be moved or mounted elsewhere together
        if out.exists() and not out.is_symlink():
            old = Path(tempfile.mkdtemp(prefix=temp_prefix(out.name), suffix=".old", dir=parent))
            os.replace(out, old / "site")
        os.replace(link, out)
        fsync_directory(parent)
    except OSError as err:
        _discard(staging, link)
        raise ConfigError(f"cannot write the site: {err.strerror or err}", path=str(out)) from None
    except BaseException:
        _discard(staging, link)
        raise
    if previous is not None:
        gone = parent / previous
        # Only a directory this writer's scheme made beside DIR: a link the user pointed elsewhere
        # keeps its target.
        if gone.parent == parent and gone.name.startswith(mine) and gone.name.endswith(".site"):
            shutil.rmtree(gone, ignore_errors=True)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _discard(staging: Path, link: Path) -> None:
    shutil.rmtree(staging, ignore_errors=True)
    if link.is_symlink():
        link.unlink()
