"""Which backend profiles must write something for an operator, and so must act on its change.

A backend of a profile must write a kernel (or, for ``export``, a lowering) for an operator unless
PyTorch gives it one (`bot.operators.kernels.profile_kernel`: a decomposition or a default kernel),
or the operator's kernel is written on another operator:

- ``eager``: a structured_delegate operator runs its out= delegate's kernel, which is flagged itself;
- ``functional`` and ``export``: under functionalization the out= and in-place variants of a functional
  operator never reach the backend (its functional form covers them), grouped as torchgen groups them.

These are the rules `opdrift coverage` applies to a backend without a list; here they judge the
operators of a drift, for its per-change ``profiles``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from bot.errors import SchemaError
from bot.model import OpRecord
from bot.operators.autogen import group_key
from bot.operators.kernels import FUNCTIONALIZED, PROFILES, Profile, profile_kernel, table_of
from bot.schema.grammar import parse_schema

GroupKey = tuple[str, ...]


def _group(rec: OpRecord) -> GroupKey | None:
    try:
        return group_key(parse_schema(rec.schema))
    except SchemaError:
        return None  # a loaded snapshot has only parsed schemas; a hand-built one may not


def _functional_base(base: str) -> str:
    # torchgen groups `add_.Tensor` and `add.out` with `add.Tensor`: an in-place base ends in "_".
    return base[:-1] if base.endswith("_") and not base.endswith("__") else base


class ProfileNeeds:
    """Judges operators against every operator of one side of a drift (RECORDS), which is where a
    variant's functional sibling is looked for; the drift may judge only the records that changed."""

    def __init__(self, records: Mapping[str, OpRecord]) -> None:
        self._records = records
        self._by_base: dict[str, list[OpRecord]] | None = None
        self._groups: dict[str, frozenset[GroupKey]] = {}

    def _functional_groups(self, base: str) -> frozenset[GroupKey]:
        found = self._groups.get(base)
        if found is None:
            if self._by_base is None:
                self._by_base = defaultdict(list)
                for rec in self._records.values():
                    if rec.kind == "functional":
                        self._by_base[rec.base].append(rec)
            keys = (_group(rec) for rec in self._by_base.get(base, ()))
            found = self._groups[base] = frozenset(k for k in keys if k is not None)
        return found

    def __call__(self, rec: OpRecord) -> frozenset[Profile]:
        """The profiles whose backends must write REC themselves."""
        table = table_of(rec.facets)
        out: list[Profile] = []
        derived: bool | None = None
        for profile in PROFILES:
            if profile_kernel(table, profile) is not None:
                continue
            if profile == "eager" and rec.facets.structured_delegate is not None:
                continue
            if profile in FUNCTIONALIZED:
                if derived is None:
                    derived = rec.kind in ("inplace", "out") and _group(rec) in self._functional_groups(
                        _functional_base(rec.base)
                    )
                if derived:
                    continue
            out.append(profile)
        return frozenset(out)
