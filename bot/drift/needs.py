"""Which backend profiles must write something for an operator, and so must act on its change.

A backend of a profile that lists nothing must write a kernel (or, for ``export``, a lowering) for an
operator exactly when the work engine (`opdrift.work.engine`) says such a backend needs one: the same
engine `opdrift coverage`, subscriptions, `explain` and the site ask, so the per-change ``profiles``
of a drift never disagree with them.
"""

from __future__ import annotations

from collections.abc import Mapping

from opdrift.model import OpRecord
from opdrift.operators.exported import ExportPath
from opdrift.operators.kernels import PROFILES, Profile
from opdrift.work.engine import Engine, export_path_for, profile_engines

# Callers that build an export path for a drift side import it from here too.
__all__ = ["ProfileNeeds", "export_path_for"]


class ProfileNeeds:
    """Judges operators against every operator of one side of a drift (RECORDS), which is where a
    variant's functional op and a structured delegate are looked for; the drift may judge only the
    records that changed. VERSION is that side's torch version, for its export path (or EXPORT, a path
    built already)."""

    def __init__(
        self,
        records: Mapping[str, OpRecord],
        *,
        version: str | None = None,
        export: ExportPath | None = None,
    ) -> None:
        self._engines: dict[Profile, Engine] = profile_engines(records, version=version, export=export)

    @property
    def export(self) -> ExportPath:
        return self._engines["export"].export

    def __call__(self, rec: OpRecord) -> frozenset[Profile]:
        """The profiles whose backends must write REC themselves."""
        return frozenset(p for p in PROFILES if not self._engines[p].judge(rec).covered)
