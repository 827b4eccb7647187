"""The ``--fail-on`` policy: which unacknowledged changes make a run fail.

It is a decision about the drift, not about how it is shown, so it sits with the drift and every
renderer or publisher may ask it.
"""

from __future__ import annotations

from typing import Literal

from bot.drift.allowlist import NO_ACKNOWLEDGEMENTS, Acknowledgements
from bot.drift.changes import Change, Drift

FailOn = Literal["breaking", "kernel", "any", "never"]
FAIL_ON: tuple[FailOn, ...] = ("breaking", "kernel", "any", "never")
DEFAULT_FAIL_ON: FailOn = "breaking"


def failing(drift: Drift, level: FailOn, acks: Acknowledgements = NO_ACKNOWLEDGEMENTS) -> tuple[Change, ...]:
    """The unacknowledged changes that reach `level`.

    Levels nest: ``breaking`` (BC-breaking changes, removals, renames) ⊂ ``kernel`` (those plus ops that
    need a new kernel or whose kernel's C++ signature changed in its int64_t form, the kernel verdict
    "breaking") ⊂ ``any`` (every change); ``never`` fails on nothing.

    A change to the SymInt form alone (verdict "symint") fails only ``any``. No level of its own: it
    breaks only kernels written with c10::SymInt, and a run over PyTorch's yaml cannot know which
    form a backend wrote (1.12 → 2.15 has 484 such changes).
    """
    live = [c for c in drift.changes if c not in acks]
    if level == "never":
        return ()
    if level == "breaking":
        return tuple(c for c in live if c.breaking)
    if level == "kernel":
        return tuple(c for c in live if c.breaking or c.needs_kernel or c.kernel == "breaking")
    return tuple(live)
