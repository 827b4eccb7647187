"""SOURCE → Snapshot: the stages composed, with all I/O at the front (sources.read_source).

source files → entries (operators.entries) → operators (operators.native, or operators.registration for pre-1.12 wheels)
→ classified snapshot (taxonomy). A stored snapshot .json skips straight to the end.
"""

from __future__ import annotations

from collections.abc import Callable

from bot import snapshot
from bot.errors import SourceError
from bot.model import OperatorSet, Snapshot, SourceFiles
from bot.operators import native
from bot.operators.entries import read_entries
from bot.sources import read as sources
from bot.taxonomy import classify as taxonomy
from bot.taxonomy.overrides import Overrides

MAX_SHOWN_WARNINGS = 5  # parse warnings printed per source; the rest are counted in one line


def operators_from_files(files: SourceFiles) -> OperatorSet:
    """Parse one source's files into its registered operators (pure: no I/O)."""
    if files.native_functions is not None:
        entries = read_entries(files.native_functions.text, files.native_functions.display)
        return native.build_operators(
            entries,
            meta=files.meta,
            native_display=files.native_functions.display,
            tags=files.tags,
            derivatives=files.derivatives,
        )
    if files.registration_declarations is not None:
        # Imported here: only wheels older than 1.12 take this path, and it brings json along.
        from bot.operators import registration

        return registration.operators_from_files(files)
    raise SourceError(
        "holds neither native_functions.yaml nor RegistrationDeclarations.h", path=files.meta.path
    )


def load_snapshot(
    spec: str,
    overrides: Overrides | None = None,
    *,
    warn: Callable[[str], None] | None = None,
    read: Callable[[str], SourceFiles] = sources.read_source,
) -> Snapshot:
    """Read SOURCE (any kind the CLI accepts) and return its classified snapshot.

    `warn` receives the first MAX_SHOWN_WARNINGS warnings of the parse (an unknown key kept, an
    undefined tag), one line each with file:line, and a count of the rest; then each override that
    matched nothing. The snapshot keeps all of the parse's warnings (`Snapshot.warnings`), for reports.
    `read` turns SPEC into files: bot.sources' reader by default; the CLI passes one that also reads
    ``gh:`` specs over the network (bot.publish.ghsource), which this stage may not import.
    """
    files = read(spec)
    if files.meta.kind == "snapshot":
        stored = snapshot.load_snapshot(files.meta.path)
        # Overrides change buckets, so a stored snapshot is re-decided only when the user asks for it.
        result = stored if overrides is None else taxonomy.reclassify(stored, overrides)
    else:
        opset = operators_from_files(files)
        if warn is not None:
            # A key PyTorch starts using on every entry would print thousands of lines; the
            # snapshot keeps them all, and reports list them.
            for message in opset.warnings[:MAX_SHOWN_WARNINGS]:
                warn(message)
            hidden = len(opset.warnings) - MAX_SHOWN_WARNINGS
            if hidden > 0:
                warn(
                    f"{opset.native_display}: and {hidden} more warnings of this parse (reports list them all)"
                )
        result = taxonomy.classify(opset, overrides)
    if overrides is not None and warn is not None:
        for message in overrides.unmatched(result.decisions, spec):
            warn(message)
    return result
