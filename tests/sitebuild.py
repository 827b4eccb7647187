"""Sites the site tests share: built once per session from the shipped snapshots, and from a hostile yaml."""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOTS = [ROOT / "snapshots" / f"v{v}.json" for v in ("2.12.0", "2.13.0", "2.14.1", "2.15.0")]
SITE_DATA = Path(__file__).parent / "data" / "site"
# A backend fixture: five ops listed, one of them twice under two spellings.
BACKEND_LIST = "aten::add.Tensor\nadd.out\nmul.Tensor\nrelu\nconvolution\n# a comment\n"


def hostile_source(dest: Path) -> Path:
    """A bare yaml whose comments, tags and tag descriptions hold markup and script."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(SITE_DATA / "hostile.native_functions.yaml", dest / "native_functions.yaml")
    shutil.copy(SITE_DATA / "hostile.tags.yaml", dest / "tags.yaml")
    return dest / "native_functions.yaml"
