"""How many models of the corpus reach a list of ops (`opdrift.coverage.workitems.ModelReach`), as the
weekly issue, the impact table and the watch say it beside a backend's needs and broken kernels, and
as the watch's JSON gives it."""

from __future__ import annotations

from opdrift.coverage.workitems import ModelReach


def reach_phrase(reach: ModelReach | None) -> str:
    """ " — used by 31 of 51 models" (`ModelReach.short_words`: our words and digits, nothing to
    escape); "" without model data."""
    return f" — {reach.short_words()}" if reach is not None else ""


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
    }
