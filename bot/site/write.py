"""Writing the site: into a new directory beside DIR, renamed into place, so an interrupted build
never leaves half a site and a failed one leaves the previous site as it was."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from bot.errors import ConfigError

# A directory holding this file was written by `opdrift site` and may be replaced by the next build.
MARKER = ".opdrift-site"


def write_site(target: str | os.PathLike[str], files: Mapping[str, bytes]) -> None:
    out = Path(target)
    if out.exists():
        if not out.is_dir():
            raise ConfigError("exists and is not a directory", path=str(out))
        if any(out.iterdir()) and not (out / MARKER).is_file():
            raise ConfigError(
                "not empty and not a site opdrift built (no .opdrift-site); refusing to replace it",
                path=str(out),
            )
    parent = out.resolve().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=parent))
    except OSError as err:
        raise ConfigError(f"cannot create the output directory: {err.strerror}", path=str(out)) from None
    try:
        for rel, data in files.items():
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        (staging / MARKER).write_text("written by opdrift site; the next build replaces this directory\n")
        staging.chmod(0o755)
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=parent))
            os.replace(out, old / "site")
            os.replace(staging, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(staging, out)
    except OSError as err:
        shutil.rmtree(staging, ignore_errors=True)
        raise ConfigError(f"cannot write the site: {err.strerror or err}", path=str(out)) from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
