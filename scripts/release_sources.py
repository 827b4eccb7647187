"""What scripts/schema_table.py and scripts/structured_table.py share: their command line, the releases it
names, each read as a SOURCE with that release's codegen rules, in release order.

Each RELEASE is one release's files: a torch wheel (its packaged native_functions.yaml, and its own
version), a directory named for the release (``2.15.0``) holding native_functions.yaml, or such a yaml
itself.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from opdrift.sources.read import read_source  # noqa: E402


def release_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def release_source(arg: str) -> tuple[str, str]:
    """(the release, the SOURCE to read) of one argument: a wheel names its own version (torch's
    ``2.14.0`` or ``2.14.0+cpu``: the local label is not a release), a yaml its directory's name."""
    path = Path(arg)
    if path.suffix == ".whl":
        version = read_source(arg).meta.torch_version
        if version is None:
            raise SystemExit(f"{arg}: the wheel names no torch version")
        return version.split("+")[0], arg
    if path.is_dir():
        path = path / "native_functions.yaml"
    return path.parent.name, str(path)


def release_arguments(
    doc: str, output: Path, argv: list[str] | None = None
) -> tuple[list[tuple[str, str]], str]:
    """The script's releases ((release, SOURCE), oldest first; a release given twice is refused) and the
    file to write (-o, default OUTPUT); DOC's first paragraph describes the script."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument(
        "releases", nargs="+", help="one per release: a wheel, or a native_functions.yaml or its directory"
    )
    parser.add_argument("-o", default=str(output))
    args = parser.parse_args(argv)
    found = sorted((release_source(a) for a in args.releases), key=lambda r: release_key(r[0]))
    versions = [v for v, _ in found]
    if len(set(versions)) != len(versions):
        raise SystemExit(f"a release given twice: {versions}")
    return found, str(args.o)
