"""Which backend profiles must write something for an operator, and so must act on its change.

A backend of a profile must write a kernel (or, for ``export``, a lowering) for an operator unless
PyTorch gives it one (`bot.operators.kernels.profile_kernel`: a decomposition or a default kernel),
or the operator's kernel is written on another operator:

- ``eager``: a structured_delegate operator runs its out= delegate's kernel, which is flagged itself;
- ``functional``: under functionalization the out= and in-place variants of a functional operator
  never reach the backend (its functional form covers them), grouped as torchgen groups them
  (`bot.operators.functionalize`);
- ``export``: what reaches an exported graph at that release with a decomposition table
  (`bot.operators.exported`): PyTorch's own Core-ATen table unless a backend names its own; an
  operator only a training graph holds is no need of an inference graph.

One exception to the default kernel: for ``functional``, a functional operator whose
CompositeExplicitAutograd kernel calls its out= or in-place variant back (``complex``, ``median.dim``,
``cauchy``: `Functionalization.calls_back`) gets nothing from it, since that variant has no kernel at
the backend's key: the backend must write one of the pair, and this is where it is flagged.

These are the rules `opdrift coverage` applies to a backend without a list (`export_path_for` builds
the export path for both); here they judge the operators of a drift, for its per-change ``profiles``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from bot.model import OpRecord
from bot.operators.exported import DecompTable, ExportPath, core_aten_table, export_fate, keeps_cia
from bot.operators.functionalize import Functionalization
from bot.operators.kernels import PROFILES, Profile, profile_kernel, table_of
from bot.signals.table import shipped_signals


def python_decomposed(version: str | None) -> frozenset[str] | None:
    """The base operators torch VERSION's Python side decomposes (torch/_decomp, torch/_refs), from the
    shipped signals table: what get_decompositions can put in a table. None when none are known."""
    signals = shipped_signals(version)
    if signals is None:
        return None
    return frozenset(
        base for base, op in signals.ops.items() if op.where.startswith(("torch/_decomp", "torch/_refs"))
    )


def export_path_for(version: str | None, names: Iterable[str] | None = None, origin: str = "") -> ExportPath:
    """The export path of torch VERSION: with the table NAMES (a compiler's own, such as torch-mlir's
    fx_decomp_util.py; "base.overload", "base" or "base.*"), else PyTorch's own Core-ATen table."""
    known = python_decomposed(version)
    table = (
        core_aten_table(version, known)
        if names is None
        else DecompTable(origin or "the backend's decomposition table", frozenset(names), None, known)
    )
    return ExportPath(table, keeps_cia(version))


class ProfileNeeds:
    """Judges operators against every operator of one side of a drift (RECORDS), which is where a
    variant's functional sibling is looked for; the drift may judge only the records that changed.
    VERSION is that side's torch version, for its export path (or EXPORT, a path built already)."""

    def __init__(
        self,
        records: Mapping[str, OpRecord],
        *,
        version: str | None = None,
        export: ExportPath | None = None,
    ) -> None:
        self._functionalization = Functionalization(records)
        self._version = version
        self._export = export

    @property
    def export(self) -> ExportPath:
        if self._export is None:
            self._export = export_path_for(self._version)
        return self._export

    def __call__(self, rec: OpRecord) -> frozenset[Profile]:
        """The profiles whose backends must write REC themselves."""
        table = table_of(rec.facets)
        out: list[Profile] = []
        derived: bool | None = None
        for profile in PROFILES:
            if profile == "export":
                if export_fate(rec, self.export) == "reaches":
                    out.append(profile)
                continue
            if profile_kernel(table, profile) is not None and not (
                profile == "functional" and self._functionalization.calls_back(rec) is not None
            ):
                continue
            if profile == "eager" and rec.facets.structured_delegate is not None:
                continue
            if profile == "functional":
                if derived is None:
                    derived = self._functionalization.functional_of(rec) is not None
                if derived:
                    continue
            out.append(profile)
        return frozenset(out)
