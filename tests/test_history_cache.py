"""The walk's cache codecs: a stored value comes back equal, and one of the wrong shape is a miss."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.history.cache import decode_drift, decode_summary, encode_drift, encode_summary
from bot.history.figures import Summary
from bot.history.timeline import PointDrift

SUMMARY = Summary(entries=10, operators=12, base_operators=8, by_category=(("alias", 1), ("misc", 7)))
DRIFT = PointDrift(base="a" * 40, added=("relu",), renamed=(("old", "new"),), breaking=("add",))


def _stored(value: dict[str, object]) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(json.dumps(value))  # what the cache file gives back
    return loaded


def test_values_come_back_equal() -> None:
    assert decode_summary(_stored(encode_summary(SUMMARY))) == SUMMARY
    assert decode_drift(_stored(encode_drift(DRIFT)), DRIFT.base) == DRIFT


@pytest.mark.parametrize(
    ("key", "value"),
    [("entries", True), ("operators", "12"), ("base_operators", None), ("by_category", {"misc": 1.5})],
)
def test_a_damaged_summary_is_a_miss(key: str, value: object) -> None:
    stored = _stored(encode_summary(SUMMARY))
    stored[key] = value
    assert decode_summary(stored) is None


@pytest.mark.parametrize(
    ("key", "value"),
    [("added", "relu"), ("breaking", [1]), ("renamed", [["old"]]), ("renamed", {"old": "new"})],
)
def test_a_damaged_drift_is_a_miss(key: str, value: object) -> None:
    stored = _stored(encode_drift(DRIFT))
    stored[key] = value
    assert decode_drift(stored, DRIFT.base) is None
