"""The walk's cache: a stored value comes back equal; one of the wrong shape, or with figures no run
can give, is a miss; a cache filled by other code is not read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from clirun import ROOT
from package_copy import THIS_CHECKOUT, PackageCopy
from pytorch_history import build_history

from opdrift.history.cache import (
    _NOT_DECIDING,
    DiskCache,
    code_digest,
    decode_drift,
    decode_summary,
    drift_problem,
    encode_drift,
    encode_summary,
    summary_problem,
)
from opdrift.history.figures import Summary
from opdrift.history.timeline import PointDrift

SUMMARY = Summary(entries=10, operators=12, base_operators=8, by_category=(("alias", 1), ("misc", 7)))
DRIFT = PointDrift(
    base="a" * 40, added=("relu",), renamed=(("old", "new"),), changed=("add",), breaking=("add",)
)


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


# --- values no run can give are refused, with a warning -----------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("operators", -5, "operators: -5 is not a count"),
        ("entries", 10**12, "entries: 1000000000000 is not a count"),
        ("by_category", {"alias": 10**9, "misc": 7}, "alias: 1000000000 is not a count"),
        ("by_category", {"alias": 1, "misc": 6}, "adds up to 7, not base_operators 8"),
        ("by_category", {"alias": 1, "pwned": 7}, "no bucket 'pwned'"),
        ("base_operators", 13, "adds up to 8, not base_operators 13"),
    ],
)
def test_impossible_figures_are_refused(key: str, value: object, problem: str) -> None:
    stored = _stored(encode_summary(SUMMARY))
    stored[key] = value
    found = summary_problem(stored)
    assert found is not None and problem in found
    assert decode_summary(stored) is None


def test_a_summary_with_more_bases_than_operators_is_refused() -> None:
    stored = _stored(encode_summary(SUMMARY))
    stored["operators"] = 7
    assert "exceeds operators" in (summary_problem(stored) or "")


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("added", ["relu", "[link](http://x)"], "is not an operator name"),
        ("changed", ["a" * 2000], "is not an operator name"),
        ("renamed", [["old", "new\n"]], "is not an operator name"),
        ("breaking", ["add", "mul"], "'mul' is none of the drift's changes"),
        ("needs_kernel", ["relu_"], "'relu_' is none of the drift's changes"),
    ],
)
def test_impossible_drifts_are_refused(key: str, value: object, problem: str) -> None:
    stored = _stored(encode_drift(DRIFT))
    stored["changed"] = ["add"]
    assert drift_problem(stored) is None
    stored[key] = value
    found = drift_problem(stored)
    assert found is not None and problem in found
    assert decode_drift(stored, DRIFT.base) is None


def test_a_refused_value_is_a_miss_with_a_warning(tmp_path: Path) -> None:
    warnings: list[str] = []
    cache = DiskCache(tmp_path, warn=warnings.append)
    key = cache.key("summary", "a" * 40)
    cache.put("summary", key, {**encode_summary(SUMMARY), "operators": -5})
    assert cache.summary(key) is None
    (warning,) = warnings
    assert "ignoring cache file (operators: -5 is not a count)" in warning
    assert cache.hits == 0
    cache.put("summary", key, encode_summary(SUMMARY))
    assert cache.summary(key) == SUMMARY and cache.hits == 1


# --- keyed to the code that filled it ----------------------------------------------------------


def test_a_cache_filled_by_other_code_is_not_read(tmp_path: Path) -> None:
    warnings: list[str] = []
    ours = DiskCache(tmp_path, warn=warnings.append)
    assert ours.code == code_digest() and ours.code is not None
    key = ours.key("summary", "a" * 40)
    ours.put("summary", key, encode_summary(SUMMARY))
    assert ours.summary(key) == SUMMARY
    other = DiskCache(tmp_path, warn=warnings.append, code="0" * 64)
    assert other.key("summary", "a" * 40) != key
    assert other.summary(other.key("summary", "a" * 40)) is None and other.root != ours.root
    assert warnings == []


def test_the_digest_covers_every_module_the_walk_runs() -> None:
    """Every module of the package a walk imports is part of `code_digest`; the renderers are not."""
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, opdrift.history.walk, opdrift.operators.registration\n"
            "print('\\n'.join(m.__file__ for n, m in sys.modules.items() if n.startswith('opdrift') and m.__file__))",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    ).stdout.split()
    package = ROOT / "bot"
    walked = {Path(f).resolve().relative_to(package).parts[0] for f in out}
    assert {"history", "operators", "taxonomy", "drift", "schema", "pipeline.py"} <= walked
    assert not walked & _NOT_DECIDING


@pytest.mark.slow
def test_a_warm_cache_filled_by_other_code_gives_that_codes_figures(
    tmp_path: Path, package_copy: PackageCopy
) -> None:
    """The same opdrift version with one rule changed (a copy of the package, the taxonomy's first rule,
    aliases, gone) walks a repository whose cache this code filled: its timeline is its own cold one,
    not the cached figures."""
    repo = build_history(tmp_path / "pytorch", first="2.12.0", last="2.13.0").path
    package_copy.edit("taxonomy/rules.py", '    Rule("core.alias", "alias", AliasKnown()),\n', "")
    copy = package_copy
    cache = tmp_path / "cache"

    def history(package: PackageCopy, *extra: str) -> str:
        run = package.opdrift("history", str(repo), "--format", "json", *extra)
        assert run.code == 0, run.err
        return run.out

    ours = history(THIS_CHECKOUT, "--cache", str(cache))
    theirs_cold = history(copy)
    assert theirs_cold != ours  # the rule matters
    assert history(copy, "--cache", str(cache)) == theirs_cold
    assert history(THIS_CHECKOUT, "--cache", str(cache)) == ours
