"""opdrift.files: the one atomic writer, kill-safe temporary names, the cache layout and its one pruning policy."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from opdrift.files import BLOCK, CacheFiles, prune, write_atomic
from opdrift.history.cache import DiskCache

ROOT = Path(__file__).resolve().parents[2]


def _aged(paths: list[Path]) -> None:
    """PATHS' mtimes one minute apart, the first oldest, all in the past."""
    for age, path in enumerate(reversed(paths), 1):
        then = path.stat().st_mtime - 60 * age
        os.utime(path, (then, then))


def test_prune_removes_the_least_recently_used_down_to_three_quarters(tmp_path: Path) -> None:
    files = CacheFiles(tmp_path / "c", ".json")
    keys = [f"{n:02x}" * 20 for n in range(8)]
    for key in keys:
        files.write(key, b"x" * 10)  # each counts one block
    _aged([files.path(k) for k in keys])
    assert files.read(keys[0]) == b"x" * 10  # read: now the most recently used
    files.prune(8 * BLOCK)
    assert all(files.path(k).exists() for k in keys)  # at the bound: nothing goes
    files.prune(7 * BLOCK)  # past it: down to 3/4 of 7 blocks (5.25), so 5 stay
    kept = [k for k in keys if files.path(k).exists()]
    assert kept == [keys[0], *keys[4:]]


def test_a_big_file_counts_its_bytes(tmp_path: Path) -> None:
    (tmp_path / "ab").mkdir()
    big, small = tmp_path / "ab" / "big", tmp_path / "ab" / "small"
    big.write_bytes(b"x" * 10 * BLOCK)
    small.write_bytes(b"x")
    _aged([big, small])
    prune(tmp_path, 8 * BLOCK)
    assert not big.exists() and small.exists()


def test_a_read_over_its_limit_or_of_nothing_is_none(tmp_path: Path) -> None:
    files = CacheFiles(tmp_path)
    assert files.read("ab" * 20) is None
    files.write("ab" * 20, b"12345")
    assert files.read("ab" * 20, limit=4) is None and files.read("ab" * 20, limit=5) == b"12345"
    assert sorted(p.name for p in (tmp_path / "ab").iterdir()) == ["ab" * 20]  # no temporary left


def test_a_killed_writers_temporary_file_goes_with_the_next_write(tmp_path: Path) -> None:
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead = int(gone.stdout)
    target = tmp_path / "out.json"
    leftover = tmp_path / f".out.json.{dead}.abc123.tmp"
    live = tmp_path / f".out.json.{os.getppid()}.def456.tmp"  # a live process's: never touched
    leftover.write_text("half")
    live.write_text("busy")
    write_atomic(target, "new\n")
    assert target.read_text() == "new\n" and not leftover.exists() and live.exists()


def test_a_walk_cache_value_that_does_not_serialise_leaves_nothing(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path, warn=print)
    with pytest.raises(TypeError):
        cache.put("point", cache.key("k"), {"figure": object()})
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_the_judgement_cache_keeps_what_was_read(tmp_path: Path) -> None:
    """The watch's judgements are pruned by the same policy: least recently used, not oldest written."""
    from opdrift.app.watch_judge import JudgementCache
    from opdrift.render.context import BackendGap

    cache = JudgementCache(tmp_path, warn=print, max_entries=4)
    imp = BackendGap(("@a",), "xla", "x.yaml", ("op1",))
    who = {"xla:x.yaml": ("@a",)}
    keys = [cache.disk.key(n) for n in range(5)]
    for key in keys[:4]:
        cache.put(key, (imp,))
    _aged(sorted(tmp_path.rglob("*.json"), key=lambda p: keys.index(p.stem)))
    assert cache.get(keys[0], who) == (imp,)
    cache.put(keys[4], (imp,))  # five past four: down to three, the least recently used going
    assert [cache.get(k, who) is not None for k in keys] == [True, False, False, True, True]


def test_production_code_carries_no_test_hook() -> None:
    """Killing a writer mid-write is tests/killpoint.py's business, not a sleep in bot/."""
    for path in (ROOT / "bot").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "OPDRIFT_TEST_PAUSE" not in text and "time.sleep(600)" not in text, path
