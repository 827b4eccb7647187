"""The real PyTorch release files vendored (xz-compressed) under tests/data; import from tests as `datafiles`."""

from __future__ import annotations

import lzma
from functools import cache
from pathlib import Path

DATA = Path(__file__).parent / "data"
RELEASES_DIR = DATA / "releases"


def _vkey(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


RELEASES: list[str] = sorted((p.name for p in RELEASES_DIR.iterdir() if p.is_dir()), key=_vkey)


@cache
def release_text(version: str, name: str = "native_functions.yaml") -> str:
    """Text of a vendored release file, e.g. release_text("2.14.1", "tags.yaml")."""
    return lzma.decompress((RELEASES_DIR / version / f"{name}.xz").read_bytes()).decode("utf-8")


def has_release_file(version: str, name: str) -> bool:
    return (RELEASES_DIR / version / f"{name}.xz").exists()


def write_release(version: str, dest: Path) -> Path:
    """Write a release's yaml files into DEST (a bare-yaml SOURCE) and return the native_functions path."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("native_functions.yaml", "tags.yaml", "derivatives.yaml"):
        if has_release_file(version, name):
            (dest / name).write_text(release_text(version, name), encoding="utf-8")
    return dest / "native_functions.yaml"
