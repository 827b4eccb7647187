"""The snapshots in snapshots/ are the tool's own output on the release files, and stay so.

When the taxonomy changes, these fail until the snapshots are regenerated (docs/commands.md, "The shipped snapshots").
"""

from __future__ import annotations

from pathlib import Path

import pytest
from datafiles import write_release
from releasesnap import release_snapshot

from opdrift import pipeline
from opdrift.snapshot import load_snapshot, to_json

SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots"


@pytest.mark.slow
@pytest.mark.parametrize("version", ["2.12.0", "2.13.0", "2.14.1", "2.15.0"])
def test_shipped_snapshot_matches_the_release(tmp_path: Path, version: str) -> None:
    stored = load_snapshot(str(SNAPSHOTS / f"v{version}.json"))
    fresh = pipeline.load_snapshot(str(write_release(version, tmp_path)))
    # A bare yaml does not say its version, so it takes the newest facts of the signal table; the
    # snapshots were made from checkouts whose version.txt names the release, as the release's own
    # files (with the version) give here.
    if fresh.decisions != stored.decisions:
        fresh = release_snapshot(version)
    assert stored.meta.torch_version == version
    assert stored.entries == fresh.entries
    assert stored.decisions == fresh.decisions
    assert stored.operators == fresh.operators


@pytest.mark.slow
def test_shipped_snapshots_are_canonical_bytes() -> None:
    for path in sorted(SNAPSHOTS.glob("*.json")):
        text = path.read_text(encoding="utf-8")
        assert to_json(load_snapshot(str(path))) == text, path.name
