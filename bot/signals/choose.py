"""Which facts a source's classification uses: the source's own Python side, else the shipped table.

A checkout, DIR@REV or a wheel from 1.12 on carries the files that say how operators are built
(`opdrift.signals.pyside.DECOMPOSITION_FILES`); their facts are read from the source itself. A bare
yaml, a snapshot's history commit, or a wheel older than 1.12 (which has no torch/_refs yet) takes the
shipped table's facts for its version (`opdrift.signals.table`); aliases its own docs state are added.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import PurePath

from opdrift.model import Signals, SourceFiles
from opdrift.signals.table import shipped_signals


def signals_for(files: SourceFiles) -> tuple[Signals | None, tuple[str, ...]]:
    """The facts for FILES, and the warnings of reading its Python side (a file that does not parse)."""
    table = shipped_signals(files.meta.torch_version)
    if not files.python_side:
        return table, ()
    # Imported here: only a source with a Python side (a checkout, a wheel) has files for it to read.
    from opdrift.signals.pyside import DECOMPOSITION_FILES, read_python_side

    skipped: set[str] = set()
    own, warnings = read_python_side(
        ((path, f.display, f.text) for path, f in files.python_side),
        origin=PurePath(files.meta.path).name,
        skipped=skipped,
    )
    # A file that does not parse (or not within the reader's bounds) counts as absent: the table's
    # facts stand in for how operators are built, rather than facts with that file's part missing.
    paths = {path for path, _ in files.python_side} - skipped
    if all(path in paths for path in DECOMPOSITION_FILES) or table is None:
        return own, warnings
    # The source states aliases but not how operators are built: the table's facts, its aliases on top.
    aliases = {**table.aliases, **own.aliases}
    return replace(table, aliases=aliases, origin=f"{table.origin}; aliases also from {own.origin}"), warnings
