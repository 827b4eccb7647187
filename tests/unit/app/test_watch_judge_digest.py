"""The judgement cache's code digest (opdrift.app.watch_judge): `code_digest` (opdrift.history.cache) plus the
parts of the package it leaves out that decide a judgement, and only those."""

from __future__ import annotations

from pathlib import Path

from opdrift.app.watch_judge import _JUDGING, judging_files
from opdrift.history.cache import _NOT_DECIDING

BOT = Path(__file__).resolve().parents[3] / "bot"


def test_the_judging_digest_adds_only_parts_code_digest_leaves_out() -> None:
    # A part code_digest already hashes (app, work, drift) is hashed twice for nothing.
    assert set(_JUDGING) <= _NOT_DECIDING


def test_the_records_and_lists_a_judgement_is_made_of_are_in_the_digest() -> None:
    files = {p.relative_to(BOT).as_posix() for p in judging_files(BOT)}
    # the coverage readers; the impact's caps (MAX_OPS) and the gap lists a judgement keeps (GAP_LISTS)
    assert {"coverage/check.py", "render/watch.py", "render/context.py"} <= files
    assert not [f for f in files if f.endswith((".pyc", ".pyo")) or "__pycache__" in f]
