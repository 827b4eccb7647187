"""SOURCE → Snapshot: the stages composed, with all I/O at the front (sources.read_source).

source files → entries (operators.entries) → operators (operators.native, or operators.registration for pre-1.12 wheels)
→ classified snapshot (taxonomy). A stored snapshot .json skips straight to the end.

The codegen's rules (`opdrift.operators.codegen`) are those of the SOURCE's torch version (a wheel's
metadata, a checkout's or revision's version.txt, a release tag), the newest when it has none, or
the ones the caller names (`--codegen X.Y`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from opdrift.errors import SourceError
from opdrift.model import OperatorSet, Snapshot, SourceFiles
from opdrift.operators import native
from opdrift.operators.codegen import CodegenRules, rules_for_version
from opdrift.operators.entries import read_entries
from opdrift.signals.choose import signals_for
from opdrift.sources import read as sources
from opdrift.taxonomy import classify as taxonomy

if TYPE_CHECKING:
    # Only a run given an overrides file builds one (the edge parses it): the type is all this needs.
    from opdrift.taxonomy.overrides import Overrides

MAX_SHOWN_WARNINGS = 5  # parse warnings printed per source; the rest are counted in one line


def codegen_of(files: SourceFiles, codegen: CodegenRules | None = None) -> CodegenRules:
    """CODEGEN when given, else the rules of the source's torch version (the newest without one)."""
    return codegen if codegen is not None else rules_for_version(files.meta.torch_version)


def operators_from_files(files: SourceFiles, codegen: CodegenRules | None = None) -> OperatorSet:
    """Parse one source's files into its registered operators (pure: no I/O), by CODEGEN's rules
    or those of the source's version (`codegen_of`), with the Python side's facts about them
    (`opdrift.signals`: the source's own files, else the table shipped in the package)."""
    opset = _parse_operators(files, codegen)
    found, warnings = signals_for(files)
    return replace(opset, signals=found, warnings=opset.warnings + warnings)


def _parse_operators(files: SourceFiles, codegen: CodegenRules | None) -> OperatorSet:
    if files.native_functions is not None:
        entries = read_entries(files.native_functions.text, files.native_functions.display)
        return native.build_operators(
            entries,
            meta=files.meta,
            native_display=files.native_functions.display,
            tags=files.tags,
            derivatives=files.derivatives,
            codegen=codegen_of(files, codegen),
        )
    if files.registration_declarations is not None:
        # Imported here: only wheels older than 1.12 take this path, and it brings json along.
        from opdrift.operators import registration

        return registration.operators_from_files(files)
    raise SourceError(
        "holds neither native_functions.yaml nor RegistrationDeclarations.h", path=files.meta.path
    )


def load_source(
    spec: str,
    overrides: Overrides | None = None,
    *,
    warn: Callable[[str], None] | None = None,
    codegen: CodegenRules | None = None,
    read: Callable[[str], SourceFiles] = sources.read_source,
) -> Snapshot | taxonomy.Decided:
    """Read SOURCE (any kind the CLI accepts): a stored snapshot as stored (re-decided with OVERRIDES),
    any other source parsed and decided, its records not built yet (`load_snapshot` builds them).

    `warn` receives the first MAX_SHOWN_WARNINGS warnings of the parse (an unknown key kept, an
    undefined tag), one line each with file:line, and a count of the rest; then each override that
    matched nothing. The snapshot keeps all of the parse's warnings (`Snapshot.warnings`), for reports.
    `codegen` overrides the rules of the source's version; a stored snapshot was built already and
    keeps its operators.
    `read` turns SPEC into files: opdrift.sources' reader by default; the CLI passes one that also reads
    ``gh:`` specs over the network (opdrift.github.ghsource), which this stage may not import.
    """
    files = read(spec)
    result: Snapshot | taxonomy.Decided
    if files.meta.kind == "snapshot":
        # Imported here: the stored form (and json) is for a .json SOURCE; parsing a yaml never needs it.
        from opdrift import snapshot

        stored = snapshot.load_snapshot(files.meta.path)
        # Overrides change buckets, so a stored snapshot is re-decided only when the user asks for it.
        result = stored if overrides is None else taxonomy.reclassify(stored, overrides)
    else:
        opset = operators_from_files(files, codegen)
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
        result = taxonomy.decide_all(opset, overrides)
    if overrides is not None and warn is not None:
        for message in overrides.unmatched(result.decisions, spec):
            warn(message)
    return result


def load_snapshot(
    spec: str,
    overrides: Overrides | None = None,
    *,
    warn: Callable[[str], None] | None = None,
    codegen: CodegenRules | None = None,
    read: Callable[[str], SourceFiles] = sources.read_source,
) -> Snapshot:
    """Read SOURCE (any kind the CLI accepts) and return its classified snapshot (`load_source`)."""
    loaded = load_source(spec, overrides, warn=warn, codegen=codegen, read=read)
    return loaded if isinstance(loaded, Snapshot) else taxonomy.snapshot_of(loaded)
