"""The ``--fail-on`` policy: which unacknowledged changes make a run fail.

It is a decision about the drift, not about how it is shown, so it sits with the drift and every
renderer or publisher may ask it.
"""

from __future__ import annotations

from opdrift.drift.allowlist import NO_ACKNOWLEDGEMENTS, Acknowledgements
from opdrift.drift.changes import Change, Drift
from opdrift.drift.flags import DEFAULT_FAIL_ON, FAIL_ON, FLAG_TABLE, FailOn, fails

__all__ = ["DEFAULT_FAIL_ON", "FAIL_ON", "FailOn", "failing"]


def failing(drift: Drift, level: FailOn, acks: Acknowledgements = NO_ACKNOWLEDGEMENTS) -> tuple[Change, ...]:
    """The unacknowledged changes that reach `level`.

    Levels nest: ``breaking`` (BC-breaking changes, removals, renames) ⊂ ``kernel`` (those plus ops that
    need a new kernel or whose kernel's C++ signature changed in its int64_t form, the kernel verdict
    "breaking") ⊂ ``any`` (every change); ``never`` fails on nothing.

    Each flag's level is its row's `fail_on` (`opdrift.drift.flags`): a change to the SymInt form alone
    (verdict "symint") fails only ``any``, since a run cannot know which form a backend wrote.
    """
    live = [c for c in drift.changes if c not in acks]
    if level == "never":
        return ()
    if level == "any":
        return tuple(live)
    due = [f for f in FLAG_TABLE if fails(f, level)]
    return tuple(c for c in live if any(f(c) for f in due))
