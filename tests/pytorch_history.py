"""Build a PyTorch-shaped git repository from the vendored release files (a test and bench helper).

Coarse: one commit per release, tagged ``vX.Y.Z`` (annotated, like PyTorch's own release tags).
Fine: between two releases, native_functions.yaml moves one entry-level change per commit (an entry
added, removed or edited, the way a typical upstream PR does), and a final commit per release brings
tags.yaml and derivatives.yaml along and is tagged. Comment and blank lines directly above an entry
belong to it, so moving an entry moves its comments.

The repository is written with one ``git fast-import`` stream: a ``git commit`` per step would take
minutes for the thousands of commits a history benchmark needs.

Usage as a script: ``python tests/pytorch_history.py DEST [--fine] [--first V] [--last V] [--cap N]``.
"""

from __future__ import annotations

import argparse
import difflib
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import IO

sys.path.insert(0, str(Path(__file__).parent))

from datafiles import RELEASES, has_release_file, release_text

NATIVE = "aten/src/ATen/native/native_functions.yaml"
TAGS = "aten/src/ATen/native/tags.yaml"
DERIVATIVES = "tools/autograd/derivatives.yaml"

EPOCH = 1640995200  # 2022-01-01T00:00:00Z; commit n is n minutes later
FIRST_PR = 70001
IDENT = "Release Importer <release-importer@localhost>"


@dataclass(frozen=True)
class HistoryCommit:
    sha: str
    subject: str
    date: str  # ISO 8601, as git prints %cI
    version: str  # the release this commit leads to (its own release for a tagged commit)
    tag: str | None = None  # "v2.14.1" on the release commit
    changed: str | None = None  # "add.Tensor" for a fine commit: the entry it added, removed or edited


@dataclass(frozen=True)
class History:
    path: Path
    commits: tuple[HistoryCommit, ...]  # oldest first

    def tag_sha(self, version: str) -> str:
        for c in self.commits:
            if c.tag == f"v{version}":
                return c.sha
        raise KeyError(version)


def _vkey(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def entry_blocks(text: str) -> list[str]:
    """native_functions.yaml cut into blocks that join back to the text: a preamble, then one per entry."""
    blocks: list[list[str]] = [[]]
    for line in text.splitlines(keepends=True):
        if line.startswith("- func:"):
            prev = blocks[-1]
            carried: list[str] = []
            # Comments and blank lines right above an entry are part of it.
            while prev and (prev[-1].startswith("#") or not prev[-1].strip()):
                carried.insert(0, prev.pop())
            blocks.append(carried)
        blocks[-1].append(line)
    return ["".join(b) for b in blocks if b]


def entry_name(block: str) -> str:
    for line in block.splitlines():
        if line.startswith("- func:"):
            return line[len("- func:") :].split("(", 1)[0].strip()
    return "preamble"


def fine_steps(old: str, new: str) -> Iterator[tuple[str, str, str]]:
    """(verb, entry name, whole text after the step) for each entry-level change from OLD to NEW."""
    cur, target = entry_blocks(old), entry_blocks(new)
    state = list(cur)
    matcher = difflib.SequenceMatcher(None, cur, target, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        # Every earlier opcode has been applied, so state[:j1] == target[:j1] and this opcode's old
        # blocks sit at state[j1 : j1 + (i2 - i1)].
        n_old, n_new = i2 - i1, j2 - j1
        for k in range(min(n_old, n_new)):
            state[j1 + k] = target[j1 + k]
            yield "Update", entry_name(target[j1 + k]), "".join(state)
        for _ in range(n_old - n_new):
            gone = state.pop(j1 + n_new)
            yield "Remove", entry_name(gone), "".join(state)
        for k in range(n_old, n_new):
            state.insert(j1 + k, target[j1 + k])
            yield "Add", entry_name(target[j1 + k]), "".join(state)


def _data(payload: bytes) -> bytes:
    return b"data %d\n" % len(payload) + payload + b"\n"


class _Stream:
    """Writes a fast-import stream and remembers which mark is which commit."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.n = 0
        self.pending: list[tuple[int, str, str, str, str | None, str | None]] = []

    def commit(
        self, subject: str, files: dict[str, str], version: str, *, tag: str | None, changed: str | None
    ) -> None:
        self.n += 1
        stamp = EPOCH + 60 * self.n
        w = self.out.write
        w(b"commit refs/heads/main\nmark :%d\n" % self.n)
        w(f"author {IDENT} {stamp} +0000\ncommitter {IDENT} {stamp} +0000\n".encode())
        w(_data(subject.encode() + b"\n"))
        if self.n > 1:
            w(b"from :%d\n" % (self.n - 1))
        for path, text in files.items():
            w(f"M 100644 inline {path}\n".encode())
            w(_data(text.encode("utf-8")))
        w(b"\n")
        if tag is not None:
            w(f"tag {tag}\nfrom :{self.n}\ntagger {IDENT} {stamp} +0000\n".encode())
            w(_data(f"PyTorch {version}\n".encode()))
        date = datetime.fromtimestamp(stamp, timezone.utc).isoformat()
        self.pending.append((self.n, subject, date, version, tag, changed))


def build_history(
    dest: str | os.PathLike[str],
    *,
    first: str | None = None,
    last: str | None = None,
    fine: bool = False,
    cap: int | None = None,
    checkout: bool = True,
) -> History:
    """Create a repository in DEST (absent or empty) holding the releases FIRST..LAST (inclusive).

    With `fine`, at most `cap` single-entry commits precede each release commit (None: all of them).
    With `checkout`, the working tree holds the last release's files, as a clone would.
    """
    path = Path(dest)
    if path.exists() and any(path.iterdir()):
        raise FileExistsError(f"{path} exists and is not empty")
    versions = [
        v
        for v in RELEASES
        if (first is None or _vkey(first) <= _vkey(v)) and (last is None or _vkey(v) <= _vkey(last))
    ]
    if not versions:
        raise ValueError(f"no vendored release between {first} and {last}")
    path.mkdir(parents=True, exist_ok=True)
    _git(path, "init", "-q", "-b", "main")
    # fast-import runs under `git -C path`, so a relative marks path would resolve twice.
    marks = path.resolve() / ".git" / "opdrift-marks"
    # Stream straight into fast-import, so that building the texts overlaps with git hashing them.
    importer = subprocess.Popen(
        ["git", "-C", str(path), "fast-import", "--quiet", "--done", f"--export-marks={marks}"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        env=_git_env(),
    )
    if importer.stdin is None:
        raise RuntimeError("git fast-import has no stdin")
    stream = _Stream(importer.stdin)
    try:
        previous: str | None = None
        for version in versions:
            native = release_text(version)
            if fine and previous is not None:
                for i, (verb, name, text) in enumerate(fine_steps(previous, native)):
                    if cap is not None and i >= cap:
                        break
                    pr = FIRST_PR + stream.n
                    stream.commit(f"{verb} {name} (#{pr})", {NATIVE: text}, version, tag=None, changed=name)
            files = {NATIVE: native, TAGS: release_text(version, "tags.yaml")}
            if has_release_file(version, "derivatives.yaml"):
                files[DERIVATIVES] = release_text(version, "derivatives.yaml")
            stream.commit(
                f"Import operator definitions of PyTorch {version}",
                files,
                version,
                tag=f"v{version}",
                changed=None,
            )
            previous = native
        importer.stdin.write(b"done\n")
    finally:
        importer.stdin.close()
        code = importer.wait()
    if code != 0:
        raise RuntimeError(f"git fast-import failed with exit code {code}")
    shas = dict(line.split() for line in marks.read_text().splitlines())
    marks.unlink()
    commits = tuple(
        HistoryCommit(sha=shas[f":{n}"], subject=s, date=d, version=v, tag=t, changed=c)
        for n, s, d, v, t, c in stream.pending
    )
    if checkout:
        _git(path, "reset", "-q", "--hard", "main")
    return History(path=path, commits=commits)


def _git_env() -> dict[str, str]:
    # Variables like GIT_DIR (set inside git hooks) would point git at another repository.
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, env=_git_env(), stdout=subprocess.DEVNULL)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dest")
    ap.add_argument("--first")
    ap.add_argument("--last")
    ap.add_argument("--fine", action="store_true")
    ap.add_argument("--cap", type=int, help="at most this many single-entry commits per release step")
    a = ap.parse_args(argv)
    history = build_history(a.dest, first=a.first, last=a.last, fine=a.fine, cap=a.cap)
    tags = [c.tag for c in history.commits if c.tag]
    print(f"{history.path}: {len(history.commits)} commits, tags {tags[0]} .. {tags[-1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def swapped(version: str, entries: dict[str, str | None]) -> str:
    """VERSION's native_functions.yaml with each named entry replaced by the one of release
    entries[name] (None: removed)."""
    out = []
    for block in entry_blocks(release_text(version)):
        name = entry_name(block)
        if name in entries:
            other = entries[name]
            if other is None:
                continue
            (block,) = [b for b in entry_blocks(release_text(other)) if entry_name(b) == name]
        out.append(block)
    return "".join(out)
