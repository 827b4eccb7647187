"""The release workflow's checks and files, after the build: run from the repository's root.

    python scripts/release_files.py TAG DIST OUT

TAG is the pushed tag (vX.Y.Z), DIST the directory `python -m build` wrote. It checks that DIST holds
exactly the sdist and the wheel of X.Y.Z (setuptools-scm gave the tag's version: the tag is on the
built commit and the tree was clean), then writes into OUT:

- notes.md: CHANGELOG.md's section "## [X.Y.Z]" (a release is tagged after its section is written);
- (to $GITHUB_OUTPUT, when set) `prerelease=true|false`, for the release job;
- opdrift-X.Y.Z-requirements.txt: opdrift==X.Y.Z with the sha256 of both files, then the dependencies
  of requirements/workflow.txt with theirs, so that `pip install --require-hashes -r` that file
  installs this release and what it was tested with, each checked by hash.

Exit 0 when all is written, 1 with one line on stderr when a check fails.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

CHANGELOG = Path("CHANGELOG.md")
PINNED = Path("requirements") / "workflow.txt"
# X.Y.Z, or a pre-release X.Y.ZrcN (aN, bN): what setuptools-scm makes of the tag vX.Y.Z[rcN].
RELEASE = re.compile(r"v(\d+\.\d+\.\d+(?:(?:a|b|rc)\d+)?)")
SECTION = re.compile(r"^## ")


class ReleaseError(Exception):
    """A check failed: the message says which."""


def is_prerelease(version: str) -> bool:
    return re.search(r"(a|b|rc)\d+$", version) is not None


def version_of(tag: str) -> str:
    m = RELEASE.fullmatch(tag)
    if m is None:
        raise ReleaseError(f"tag {tag!r} is not vX.Y.Z (or vX.Y.ZrcN)")
    return m.group(1)


def distributions(dist: Path, version: str) -> list[Path]:
    """The sdist and the wheel of `version`, and nothing else, in `dist`."""
    wanted = {f"opdrift-{version}.tar.gz", f"opdrift-{version}-py3-none-any.whl"}
    found = {p.name for p in dist.iterdir()} if dist.is_dir() else set()
    if found != wanted:
        raise ReleaseError(
            f"{dist} holds {sorted(found)}, not {sorted(wanted)}: was the tag on the built commit, "
            "and the tree clean?"
        )
    return sorted(dist / name for name in wanted)


def release_notes(changelog: str, version: str) -> str:
    """The body of the section "## [VERSION] ..."."""
    lines = changelog.splitlines()
    heading = re.compile(rf"^## \[{re.escape(version)}\]")
    start = next((i for i, line in enumerate(lines) if heading.match(line)), None)
    if start is None:
        raise ReleaseError(f"{CHANGELOG} has no section ## [{version}]: write it before tagging")
    end = next((i for i in range(start + 1, len(lines)) if SECTION.match(lines[i])), len(lines))
    body = "\n".join(lines[start + 1 : end]).strip()
    if not body:
        raise ReleaseError(f"{CHANGELOG}'s section ## [{version}] is empty")
    return body + "\n"


def requirements(version: str, files: Sequence[Path], pinned: str) -> str:
    """opdrift==VERSION with each file's sha256, then the pinned dependencies without their header."""
    hashes = [f"    --hash=sha256:{hashlib.sha256(f.read_bytes()).hexdigest()}" for f in files]
    name = f"opdrift-{version}-requirements.txt"
    head = [
        f"# opdrift {version} and the dependencies its release was tested with, each pinned by hash:",
        f"#   pip install --require-hashes -r {name}",
        f"opdrift=={version} \\",
        " \\\n".join(hashes),
    ]
    body = [line for line in pinned.splitlines() if not line.startswith("#")]
    return "\n".join(head + body).rstrip("\n") + "\n"


def write(tag: str, dist: Path, out: Path) -> list[Path]:
    version = version_of(tag)
    files = distributions(dist, version)
    notes = release_notes(CHANGELOG.read_text(encoding="utf-8"), version)
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "notes.md", out / f"opdrift-{version}-requirements.txt"]
    written[0].write_text(notes, encoding="utf-8")
    written[1].write_text(requirements(version, files, PINNED.read_text(encoding="utf-8")), encoding="utf-8")
    return written


def main(argv: Sequence[str]) -> int:
    if len(argv) != 3:
        print("usage: release_files.py TAG DIST OUT", file=sys.stderr)
        return 2
    try:
        written = write(argv[0], Path(argv[1]), Path(argv[2]))
    except ReleaseError as e:
        print(f"release_files: error: {e}", file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path}")
    # For the release job: a pre-release (X.Y.ZrcN) is published as one, never as "Latest".
    output = os.environ.get("GITHUB_OUTPUT")
    if output:
        with open(output, "a", encoding="utf-8") as f:
            f.write(f"prerelease={'true' if is_prerelease(version_of(argv[0])) else 'false'}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
