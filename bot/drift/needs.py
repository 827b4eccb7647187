"""Which backend profiles must write something for an operator, and so must act on its change.

A backend of a profile must write a kernel (or, for ``export``, a lowering) for an operator unless
PyTorch gives it one (`bot.operators.kernels.profile_kernel`: a decomposition or a default kernel),
or the operator's kernel is written on another operator:

- ``eager``: a structured_delegate operator runs its out= delegate's kernel, which is flagged itself;
- ``functional`` and ``export``: under functionalization the out= and in-place variants of a functional
  operator never reach the backend (its functional form covers them), grouped as torchgen groups them
  (`bot.operators.functionalize`).

One exception to the default kernel: for ``functional``, a functional operator whose
CompositeExplicitAutograd kernel calls its out= or in-place variant back (``complex``, ``median.dim``,
``cauchy``: `Functionalization.calls_back`) gets nothing from it, since that variant has no kernel at
the backend's key: the backend must write one of the pair, and this is where it is flagged.

These are the rules `opdrift coverage` applies to a backend without a list; here they judge the
operators of a drift, for its per-change ``profiles``.
"""

from __future__ import annotations

from collections.abc import Mapping

from bot.model import OpRecord
from bot.operators.functionalize import Functionalization
from bot.operators.kernels import FUNCTIONALIZED, PROFILES, Profile, profile_kernel, table_of


class ProfileNeeds:
    """Judges operators against every operator of one side of a drift (RECORDS), which is where a
    variant's functional sibling is looked for; the drift may judge only the records that changed."""

    def __init__(self, records: Mapping[str, OpRecord]) -> None:
        self._functionalization = Functionalization(records)

    def __call__(self, rec: OpRecord) -> frozenset[Profile]:
        """The profiles whose backends must write REC themselves."""
        table = table_of(rec.facets)
        out: list[Profile] = []
        derived: bool | None = None
        for profile in PROFILES:
            if profile_kernel(table, profile) is not None and not (
                profile == "functional" and self._functionalization.calls_back(rec) is not None
            ):
                continue
            if profile == "eager" and rec.facets.structured_delegate is not None:
                continue
            if profile in FUNCTIONALIZED:
                if derived is None:
                    derived = self._functionalization.functional_of(rec) is not None
                if derived:
                    continue
            out.append(profile)
        return frozenset(out)
