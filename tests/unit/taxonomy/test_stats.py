"""The post's table for a source: figures that agree with each other and with the snapshot, in three formats."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import Opdrift
from datafiles import RELEASES
from goldens import check_golden, updating
from releasesnap import release_operators, release_snapshot, wheel_1_10_snapshot

from opdrift.render.stats import render_json, render_markdown, render_text
from opdrift.snapshot import load_snapshot, save_snapshot
from opdrift.taxonomy.buckets import BUCKETS, CORE_BUCKETS
from opdrift.taxonomy.classify import decide_all, snapshot_of
from opdrift.taxonomy.stats import compute_stats

REQUIRED_JSON_KEYS = {
    "entries",
    "operators",
    "base_operators",
    "overloads",
    "out_overloads",
    "composite_implicit",
    "by_category",
}


@pytest.mark.parametrize("version", ["1.12.0", "2.14.1"])
def test_figures_agree_with_the_snapshot(version: str) -> None:
    snap = release_snapshot(version)
    stats = compute_stats(snap)
    assert stats.operators == len(snap.operators)
    assert stats.base_operators == len({r.base for r in snap.operators.values()})
    assert sum(stats.by_category.values()) == stats.base_operators
    assert list(stats.by_category) == list(BUCKETS)
    assert stats.core == sum(stats.by_category[b] for b in CORE_BUCKETS)
    assert stats.overloads == sum(1 for r in snap.operators.values() if "." in r.name)
    assert stats.out_overloads == sum(1 for r in snap.operators.values() if r.kind == "out" and r.overload)
    assert 0 < stats.out_overloads < stats.overloads < stats.operators
    assert stats.extra_overloads == stats.operators - stats.base_operators
    assert stats.composite_implicit + stats.non_composite == stats.operators
    assert stats.non_composite_functional < stats.non_composite
    assert 0 < stats.core_non_composite <= stats.core
    assert sum(stats.by_rule.values()) == stats.base_operators
    assert stats.entries == snap.entries <= stats.operators


@pytest.mark.slow
@pytest.mark.parametrize("version", RELEASES)
def test_a_decided_source_counts_as_its_snapshot_and_its_stored_form(version: str, tmp_path: Path) -> None:
    """`opdrift stats` counts a parsed source without building its records: every figure equals the
    one its snapshot gives, and the one the snapshot stored and read back gives (a .json SOURCE)."""
    decided = decide_all(release_operators(version))
    snap = snapshot_of(decided)
    save_snapshot(tmp_path / "snap.json", snap)
    expected = compute_stats(snap).as_dict()
    assert compute_stats(decided).as_dict() == expected
    assert compute_stats(load_snapshot(tmp_path / "snap.json")).as_dict() == expected


def test_foreach_and_autogen_counts_on_2_14_1() -> None:
    stats = compute_stats(release_snapshot("2.14.1"))
    assert stats.foreach_base_operators > 50  # the post counted 72 foreach operators in late 2021
    assert stats.foreach_operators > stats.foreach_base_operators
    assert stats.autogen_operators == stats.operators - stats.entries


def test_1_10_wheel_table_is_near_the_post() -> None:
    stats = compute_stats(wheel_1_10_snapshot())
    # The post's late-2021 master: 2055 entries, 983 overloads, 306 of them named .out; 1312 operators
    # after removing composites, 703 after also removing in-place/out variants. The 1.10.0 header lists
    # 5% more entries than the post's commit, so every figure gets the same 15% slack as the buckets.
    for ours, post in [
        (stats.entries, 2055),
        (stats.overloads, 983),
        (stats.overloads_named_out, 306),
        (stats.non_composite, 1312),
        (stats.non_composite_functional, 703),
    ]:
        assert abs(ours - post) <= post * 0.15, (ours, post)
    assert stats.entries == stats.operators  # no autogen before 1.12


def test_json_has_the_documented_keys() -> None:
    data = json.loads(render_json(compute_stats(release_snapshot("2.14.1"))))
    assert set(data) >= REQUIRED_JSON_KEYS
    assert sum(data["by_category"].values()) == data["base_operators"]
    assert set(data["by_category"]) == set(BUCKETS)


def test_text_and_markdown_show_every_bucket() -> None:
    stats = compute_stats(release_snapshot("2.14.1"))
    text = render_text(stats)
    markdown = render_markdown(stats)
    rows = {
        line.rsplit(maxsplit=1)[0].strip(): line.split()[-1] for line in text.splitlines() if line.strip()
    }
    assert rows["base operators"] == str(stats.base_operators)
    assert rows["core"] == str(stats.core)
    for label in ("convolution", "in-place", "scatter + gather", "view/reshape"):
        assert label in text and label in markdown
    assert f"| **core** | {stats.core} |" in markdown
    assert f"| ↳ misc | {stats.by_category['misc']} |" in markdown


def test_every_row_is_defined_in_the_output(request: pytest.FixtureRequest) -> None:
    """ "overloads" (1696) is not "operators beyond one per base" (1518): each row says what it counts."""
    stats = compute_stats(release_snapshot("2.14.1"))
    text, markdown = render_text(stats), render_markdown(stats)
    legend = text.split("what each row counts\n")[1].splitlines()
    levels = [line.rsplit(maxsplit=1)[0] for line in text.split("\n\n")[1].splitlines()]
    assert [line.split(":")[0].strip() for line in legend] == levels
    (overloads,) = [line for line in legend if line.startswith("  overloads: ")]
    assert "`add.Tensor`, `add.out`" in overloads and "`relu`" in overloads
    check_golden("stats-2.14.1.txt", text, updating(request))
    assert "- `overloads`: registered operators with an overload name" in markdown
    assert (stats.overloads, stats.extra_overloads) == (1696, 1518)


@pytest.mark.slow
def test_cli_stats_formats(tmp_path: Path, release_file: Callable[[str], Path], opdrift: Opdrift) -> None:
    native = release_file("2.14.1")
    expected = compute_stats(release_snapshot("2.14.1"))
    run = opdrift("stats", str(native), "--format", "json")
    assert run.code == 0
    data = json.loads(run.out)
    assert data["by_category"] == dict(expected.by_category)
    assert data["operators"] == expected.operators
    run = opdrift("stats", str(native))
    assert run.code == 0
    assert "base operators by category" in run.out
    out = tmp_path / "stats.md"
    assert opdrift("stats", str(native), "--format", "markdown", "-o", str(out)).code == 0
    assert out.read_text().startswith("### Operator surface: ")


def test_cli_stats_missing_source_exits_2(tmp_path: Path, opdrift: Opdrift) -> None:
    run = opdrift("stats", str(tmp_path / "missing.yaml"))
    assert run.code == 2
    assert run.err.startswith("opdrift: error: ")


def test_a_bucket_this_opdrift_does_not_know_is_shown_and_counted() -> None:
    """A hand-edited snapshot, or one from a newer opdrift: its extra bucket still adds up in the table."""
    from dataclasses import replace
    from types import MappingProxyType

    snap = release_snapshot("2.14.1")
    decisions = dict(snap.decisions)
    decisions["relu"] = replace(decisions["relu"], bucket="mystery|<b>")
    stats = compute_stats(replace(snap, decisions=MappingProxyType(decisions)))
    assert stats.by_category["mystery|<b>"] == 1
    text = render_text(stats)
    assert "  mystery|<b> (unknown bucket)     1\n" in text
    markdown = render_markdown(stats)
    assert "| **mystery\\|&lt;b&gt; \\(unknown bucket\\)** | 1 |" in markdown
