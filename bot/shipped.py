"""The tables shipped inside the package (``data/*.tsv``, ``data/*.tsv.xz`` beside the module that reads
each): one reader for their text and their tab-separated lines, and for their runs of releases.

A damaged table is a packaging error, not the user's, and is refused whole, even for one line: its
answers are opdrift's own, and a table with a line dropped would give them wrong without a word. Blank
lines and ``#`` comments are passed over in every table (the scripts that write them write neither
inside the rows). The
error names the file as an installed opdrift holds it (``opdrift/coverage/data/names.tsv.xz``, in
site-packages), which is also where a checkout has it (through the ``opdrift -> bot`` link).
"""

from __future__ import annotations

import functools
import lzma
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

from opdrift.errors import OpdriftError

# The package's directory. A table is read beside its module, as the package ships it:
# importlib.resources would import zipfile and tempfile into every command, for files never in a zip.
ROOT = Path(__file__).parent
# The largest table is some hundreds of kilobytes; a bigger one is not ours.
MAX_BYTES = 16 * 1024 * 1024

# What a table's reader does with one line's fields; it raises ValueError, IndexError or KeyError for
# a line it cannot read.
Row = Callable[[list[str]], None]


class ShippedTable(NamedTuple):
    """One table the package ships: where it lies, what an error calls it, and the error it raises."""

    package: str  # the package that ships it: "opdrift.coverage"
    name: str  # its path in that package: "data/names.tsv.xz" (xz-compressed: the name ends in .xz)
    what: str  # what an error calls it: "name table"
    error: type[OpdriftError]  # the error it raises, its module's

    @property
    def path(self) -> str:
        """The file as the installed package names it: ``opdrift/coverage/data/names.tsv.xz``."""
        return "/".join((*self.package.split("."), self.name))

    def text(self) -> str:
        """The table's text (at most MAX_BYTES), or the table's error naming its path."""
        file = ROOT.joinpath(*self.package.split(".")[1:], self.name)
        try:
            with lzma.open(file) if self.name.endswith(".xz") else file.open("rb") as stream:
                data = stream.read(MAX_BYTES + 1)
            if len(data) > MAX_BYTES:
                raise self.error(f"opdrift's {self.what} is larger than {MAX_BYTES} bytes", path=self.path)
            return data.decode("utf-8")
        except (OSError, lzma.LZMAError, UnicodeDecodeError) as err:
            raise self.error(f"cannot read opdrift's {self.what}: {err}", path=self.path) from None

    def read(self, row: Row, *, comment: Callable[[str], None] | None = None) -> None:
        """`read_rows` over the table's text."""
        read_rows(self.text(), row, path=self.path, error=self.error, comment=comment)


def read_rows(
    text: str,
    row: Row,
    *,
    path: str,
    error: type[OpdriftError],
    comment: Callable[[str], None] | None = None,
) -> None:
    """Hand ROW the fields of each line of TEXT (split at tabs), in order. A blank line is passed over,
    a comment (``#…``) too, or handed whole to COMMENT when given (which may raise as ROW does). A line
    ROW or COMMENT cannot read is ERROR naming PATH and the line's number: one line, as the CLI prints
    every error."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line or (line.startswith("#") and comment is None):
            continue
        fields = line.split("\t")
        try:
            if line.startswith("#") and comment is not None:
                comment(line)
            else:
                row(fields)
        except (ValueError, IndexError, KeyError):
            raise error(f"malformed line {fields[0]!r}", path=path, line=number) from None


# Most lines of a table hold for the same few runs ("0-17", "5-17"): each text is read once.
@functools.cache
def release_runs(field: str) -> tuple[range, ...]:
    """A table's runs of release indices, ``0-3,5,7-9``, as ranges (ValueError for another text): the
    releases an operator or a fact holds for, one line for all of them."""
    runs = []
    for run in field.split(","):
        first, dash, last = run.partition("-")
        runs.append(range(int(first), int(last if dash else first) + 1))
    return tuple(runs)


def write_release_runs(indices: Sequence[int]) -> str:
    """Release indices (ascending, at least one) as a table writes them, ``0-3,5,7-9``: what
    `release_runs` reads."""
    runs: list[list[int]] = []
    for index in indices:
        if runs and runs[-1][1] == index - 1:
            runs[-1][1] = index
        else:
            runs.append([index, index])
    if not runs:
        raise ValueError("no release")
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)
