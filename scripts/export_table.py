"""Generate bot/operators/data/core_aten.tsv, PyTorch's default Core-ATen decomposition table per release.

    python scripts/export_table.py WHEEL... [-o bot/operators/data/core_aten.tsv]

Each wheel's torch/_decomp/__init__.py and torch/export/decomp_utils.py are read as text with `ast`
(torch is never imported):

- the operators the default table names: the list ``_core_aten_decompositions_post_autograd`` (2.6 on)
  or ``core_aten_decompositions`` (before) hands to ``get_decompositions``;
- the CompositeImplicitAutograd operators the default table leaves alone (``PRESERVED_ATEN_CIA_OPS``,
  2.6 on: ``CustomDecompTable.__init__`` adds every other functional CIA operator).

A name is ``base.overload`` (``base`` for the default overload), or ``base.*`` for a whole packet
(``aten.addcdiv``: ``get_decompositions`` takes every overload that has a decomposition).
"""

from __future__ import annotations

import argparse
import ast
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from opdrift.operators.export_table import (  # noqa: E402
    CORE_ATEN,
    ExportRelease,
    aten_names,
    release_key,
    write_export_table,
)

DECOMP = "torch/_decomp/__init__.py"
UTILS = "torch/export/decomp_utils.py"
VERSION = "torch/version.py"
FUNCTIONS = ("_core_aten_decompositions_post_autograd", "core_aten_decompositions")


def release_table(wheel: Path) -> ExportRelease:
    with zipfile.ZipFile(wheel) as z:
        files = set(z.namelist())
        version_text = z.read(VERSION).decode()
        decomp = ast.parse(z.read(DECOMP).decode())
        utils = ast.parse(z.read(UTILS).decode()) if UTILS in files else None
    version = next(
        line.split("=", 1)[1].strip().strip("'\"")
        for line in version_text.splitlines()
        if line.startswith("__version__")
    ).split("+")[0]
    functions = {
        node.name: node
        for node in ast.walk(decomp)
        if isinstance(node, ast.FunctionDef) and node.name in FUNCTIONS
    }
    found = next((functions[name] for name in FUNCTIONS if name in functions), None)
    if found is None:
        raise SystemExit(f"{wheel}: no {' or '.join(FUNCTIONS)} in {DECOMP}")
    preserved: set[str] = set()
    if utils is not None:
        for node in ast.walk(utils):
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "PRESERVED_ATEN_CIA_OPS" for t in node.targets
            ):
                preserved = set(aten_names(node.value))
    return ExportRelease(
        version=version,
        wheel=wheel.name,
        decomposes=aten_names(found),
        preserved_cia=frozenset(preserved),
        table_function=found.name,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheels", nargs="+", type=Path)
    parser.add_argument("-o", "--output", type=Path, default=ROOT / "bot" / "operators" / CORE_ATEN.name)
    args = parser.parse_args()
    releases = sorted((release_table(w) for w in args.wheels), key=lambda r: release_key(r.version) or (0, 0))
    args.output.write_text(write_export_table(releases), encoding="utf-8")
    for r in releases:
        print(f"{r.version}: {len(r.decomposes)} named, {len(r.preserved_cia)} CIA kept ({r.table_function})")


if __name__ == "__main__":
    main()
