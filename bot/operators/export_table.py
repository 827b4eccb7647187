"""The shipped table of PyTorch's default Core-ATen decomposition table, per release (data/core_aten.tsv).

``scripts/export_table.py`` generates it from the torch wheels its ``release`` lines name: which
operators ``torch/_decomp``'s Core-ATen list names (``_core_aten_decompositions_post_autograd`` from
2.6, ``core_aten_decompositions`` before), and which CompositeImplicitAutograd operators the default
table keeps (``torch/export/decomp_utils.py``'s ``PRESERVED_ATEN_CIA_OPS``, 2.6 on). Tab-separated:

    release    2.13.0  torch-2.13.0-...whl  _core_aten_decompositions_post_autograd
    decomposes 2.13.0  addcdiv.* addmm.* ... linspace
    keeps_cia  2.13.0  upsample_bilinear2d.vec ...

A name is ``base.overload`` (``base`` for the default overload) or ``base.*`` (every overload). A
version the table lacks takes the nearest release before it (the first for anything older, the newest
for an unknown version), as the signals table does.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

from opdrift.errors import OpdriftError
from opdrift.pyast import dotted
from opdrift.shipped import ShippedTable, read_rows
from opdrift.versions import minor_of, row_for


def release_key(version: str) -> tuple[int, int] | None:
    """``2.13.0a0+git1234`` → (2, 13); None for a text that is no version. The table changes by minor
    release, so the patch number is not looked at."""
    return minor_of(version)


class ExportTableError(OpdriftError):
    """The shipped table is damaged (a packaging error, not the user's)."""


CORE_ATEN = ShippedTable("opdrift.operators", "data/core_aten.tsv", "Core-ATen table", ExportTableError)


@dataclass(frozen=True)
class ExportRelease:
    version: str
    wheel: str
    decomposes: frozenset[str]  # the names the Core-ATen list hands to get_decompositions
    preserved_cia: frozenset[str]  # CIA operators the default table keeps (empty before 2.6)
    table_function: str  # the torch/_decomp function the list was read from


def aten_name(node: ast.expr) -> str | None:
    """``aten.x`` → ``x.*``; ``aten.x.ov`` / ``torch.ops.aten.x.ov`` → ``x.ov``; ``….default`` → ``x``."""
    parts = dotted(node)
    if "aten" not in parts:
        return None
    rest = parts[parts.index("aten") + 1 :]
    if len(rest) == 1:
        return f"{rest[0]}.*"
    if len(rest) == 2:
        return rest[0] if rest[1] == "default" else f"{rest[0]}.{rest[1]}"
    return None


def aten_names(tree: ast.AST) -> frozenset[str]:
    """Every ``aten.…`` chain in TREE, whole: ``aten.x.ov`` is not also read as its prefix ``aten.x``."""
    inner = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    return frozenset(
        n
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and id(node) not in inner and (n := aten_name(node))
    )


def write_export_table(releases: Iterable[ExportRelease]) -> str:
    lines: list[str] = []
    for r in releases:
        lines.append(f"release\t{r.version}\t{r.wheel}\t{r.table_function}")
        lines.append(f"decomposes\t{r.version}\t{' '.join(sorted(r.decomposes))}")
        lines.append(f"keeps_cia\t{r.version}\t{' '.join(sorted(r.preserved_cia))}")
    return "\n".join(lines) + "\n"


def parse_export_table(text: str) -> tuple[ExportRelease, ...]:
    heads: dict[str, tuple[str, str]] = {}
    sets: dict[tuple[str, str], frozenset[str]] = {}

    def row(fields: list[str]) -> None:
        if fields[0] == "release" and len(fields) == 4:
            heads[fields[1]] = (fields[2], fields[3])
        elif fields[0] in ("decomposes", "keeps_cia") and len(fields) == 3:
            sets[(fields[0], fields[1])] = frozenset(fields[2].split())
        else:
            raise ValueError(fields[0])

    read_rows(text, row, path=CORE_ATEN.path, error=ExportTableError)
    return tuple(
        ExportRelease(
            version,
            wheel,
            sets.get(("decomposes", version), frozenset()),
            sets.get(("keeps_cia", version), frozenset()),
            function,
        )
        for version, (wheel, function) in heads.items()
    )


@cache
def shipped_releases() -> tuple[ExportRelease, ...]:
    return tuple(sorted(parse_export_table(CORE_ATEN.text()), key=lambda r: release_key(r.version) or (0, 0)))


def core_aten_release(version: str | None) -> ExportRelease:
    """The shipped release that stands for VERSION: the nearest at or before it
    (`opdrift.versions.row_for`'s policy)."""
    releases = shipped_releases()
    if not releases:
        raise ExportTableError("no release", path=CORE_ATEN.path)
    return row_for(releases, version, lambda r: r.version)
