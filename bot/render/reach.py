"""How many models of the corpus reach a list of ops (`opdrift.coverage.workitems.ModelReach`), as the
weekly issue, the impact table and the watch say it beside a backend's needs and broken kernels, and
as the watch's JSON gives it."""

from __future__ import annotations

from opdrift.coverage.workitems import ModelReach, Through
from opdrift.text import code


def reach_phrase(reach: ModelReach | None) -> str:
    """ " — used by 31 of 51 models", " — used by 27 of 51 models, through `mean.dim`"
    (`ModelReach.short_words`: our words and digits, the ops as code spans); "" without model data."""
    return f" — {reach.short_words(code)}" if reach is not None else ""


def through_json(t: Through | None) -> dict[str, object] | None:
    """`ModelReach.through`: how many of the models counted reach the ops only through ops their
    kernels serve, and those ops (up to three, ``more`` the rest); None when the ops reach them all."""
    if t is None:
        return None
    return {"models": t.models, "ops": list(t.ops), "more": t.more}


def reach_json(reach: ModelReach | None) -> dict[str, object] | None:
    """The counts behind `reach_phrase`; None without model data. ``used_by`` is 0 and means nothing
    when ``no_data_yet`` (the table's release is older than the ops)."""
    if reach is None:
        return None
    return {
        "used_by": reach.used_by,
        "of": reach.of,
        "no_data_yet": reach.no_data_yet,
        "cpu_only": reach.cpu_only,
        "release": reach.release,
        "through": through_json(reach.through),
    }
