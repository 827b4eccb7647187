"""History files: a timeline survives its JSON form, and a damaged one names the field and the file."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from opdrift.history.timeline import Point, PointDrift, Timeline, TimelineError, parse_json, render_json

TIMELINE = Timeline(
    repo="pytorch",
    to_rev="main",
    to_sha="b" * 40,
    from_rev="v2.13.0",
    from_sha="a" * 40,
    buckets=("alias", "misc"),
    points=(
        Point("a" * 40, "2026-01-01T00:00:00+00:00", "base", tag="v2.13.0", entries=10, operators=12,
              base_operators=8, by_category=(("alias", 1), ("misc", 7))),
        Point("b" * 40, "2026-01-02T00:00:00+00:00", "add relu", entries=11, operators=13, base_operators=9,
              by_category=(("alias", 1), ("misc", 8)),
              drift=PointDrift(base="a" * 40, added=("relu",), renamed=(("old", "new"),))),
    ),
)  # fmt: skip


def test_a_timeline_survives_its_json() -> None:
    assert parse_json(render_json(TIMELINE), "h.json") == TIMELINE


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: d.update(points={}), "`points` must be a list"),
        (lambda d: d.update(buckets=["alias", 3]), "`buckets` must be a list of strings"),
        (lambda d: d.update(range=[]), "`range` must be an object"),
        (lambda d: d["points"].__setitem__(0, "a point"), "a point must be an object"),
        (lambda d: d["points"][0].update(sha=7), "`sha` must be a string"),
        (lambda d: d["points"][0].update(tag=True), "`tag` must be a string or null"),
        (lambda d: d["points"][0].update(entries=True), "`entries` must be an integer or null"),
        (lambda d: d["points"][1]["drift"].update(added="relu"), "`added` must be a list of strings"),
        (lambda d: d["points"][1].update(drift=3), "`drift` must be an object"),
    ],
)
def test_a_damaged_field_is_named(damage: Callable[[Any], object], message: str) -> None:
    data = json.loads(render_json(TIMELINE))
    damage(data)
    with pytest.raises(TimelineError) as caught:
        parse_json(json.dumps(data), "h.json")
    assert str(caught.value) == f"h.json: {message}"


def test_a_bucket_count_that_is_not_an_integer_is_named() -> None:
    data = json.loads(render_json(TIMELINE))
    data["points"][0]["by_category"]["misc"] = True
    with pytest.raises(TimelineError) as caught:
        parse_json(json.dumps(data), "h.json")
    assert str(caught.value) == "h.json: `by_category` values must be integers"
