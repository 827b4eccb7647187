"""native_functions.yaml cut into entry blocks, and the blocks re-cut around an edit.

An entry block is an entry's ``- func:`` line through the line before the next entry; the comment
and blank lines above an entry belong to it, which is exactly the text `entries.comments_above`
scans, so a block parses alone to what it gives in the whole file. Between two texts only the blocks
around the changed bytes (common prefix and suffix of the two texts) are re-cut (`recut`).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from opdrift.model import RawEntry

# Line breaks other than "\n" that YAML honours; a text holding one is parsed whole, never in blocks.
ODD_BREAKS = re.compile("[\r\x85\u2028\u2029]")
# "..." parses inside one block alone but ends the document in the whole file, which is then invalid.
DOCUMENT_MARKER = re.compile(r"^(?:---|\.\.\.)(?:[ \t]|$)|^%", re.MULTILINE)
_CHUNK = 1 << 16


class Rebuild(Exception):
    """The incremental step met something it does not handle; rebuild from the whole file."""


@dataclass(frozen=True)
class ParsedBlock:
    """One block's entries, lines relative to the block (1 = its first line), and its line count."""

    entries: tuple[RawEntry, ...]
    lines: int


class Block:
    """A block of the current text and its parse.

    Compared by identity, not by value (so not a dataclass): two blocks of the same text are two
    places in the file, and a block kept across a re-cut stays the same object, so the entry →
    block index stays valid while only the block's position changes.
    """

    __slots__ = ("parsed", "text")

    def __init__(self, text: str, parsed: ParsedBlock) -> None:
        self.text = text
        self.parsed = parsed


def _is_filler(line: str) -> bool:
    """A blank or comment line: the lines that belong to the entry below them."""
    s = line.lstrip(" \t")
    return not s.strip(" \t\n") or s.startswith("#")


def block_starts(text: str) -> list[int]:
    """Character offsets where each entry block of TEXT starts; the first block always starts at 0.

    A block after the first starts where the run of blank and comment lines above its ``- func:``
    line starts, so the comments `entries.comments_above` attaches to an entry are in its block.
    """
    starts = [0]
    pos = 0
    run: int | None = None  # start of the current run of filler lines
    seen_entry = False
    for line in text.splitlines(keepends=True):
        if line.startswith("- func:"):
            if seen_entry:
                starts.append(pos if run is None else run)
            seen_entry = True
            run = None
        elif _is_filler(line):
            if run is None:
                run = pos
        else:
            run = None
        pos += len(line)
    return starts


def common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i : i + _CHUNK] == b[i : i + _CHUNK]:
        i += _CHUNK
    hi = min(n, i + _CHUNK)
    # Binary search inside the first differing chunk: the longest k with a[i:k] == b[i:k].
    lo = i
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[i:mid] == b[i:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def common_suffix(a: str, b: str, limit: int) -> int:
    """Length of the common suffix, at most `limit` (so it never overlaps the common prefix)."""
    la, lb = len(a), len(b)
    k = 0
    while k + _CHUNK <= limit and a[la - k - _CHUNK : la - k] == b[lb - k - _CHUNK : lb - k]:
        k += _CHUNK
    # The longest m in [k, hi] with equal tails of length m.
    lo, hi = k, min(limit, k + _CHUNK)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[la - mid : la - k] == b[lb - mid : lb - k]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def line_count(chunk: str) -> int:
    return chunk.count("\n") + (0 if chunk.endswith("\n") else 1)


def entry_name(raw: RawEntry) -> str:
    func = raw.data.get("func")
    return str(func).split("(", 1)[0].strip()


def family(name: str) -> str:
    """A key shared by every entry torchgen may group with NAME for autogen (a superset of its groups).

    torchgen groups by the signature, whose name is the base without the in-place ``_``, the
    ``_functional`` suffix or a dunder's ``i``; folding every leading and trailing underscore as
    well only makes families larger, which costs a little time and never misses a member.
    """
    base = name.split(".", 1)[0]
    dunder = base.startswith("__") and base.endswith("__")
    core = base.strip("_").removesuffix("_functional").strip("_")
    if dunder and core.startswith("i"):
        return core[1:]
    return core


@dataclass(frozen=True)
class Recut:
    """The blocks ``[lo, hi)`` of the old text replaced by `blocks`, which start at `starts` in the new.

    `added` are the new blocks whose text the old region did not hold, `removed` the old blocks
    whose text the new region does not hold; a block on both sides is kept (the same object).
    """

    lo: int
    hi: int
    starts: tuple[int, ...]
    blocks: tuple[Block, ...]
    added: tuple[Block, ...]
    removed: tuple[Block, ...]


def recut(
    blocks: list[Block], starts: list[int], old: str, new: str, parse: Callable[[str], ParsedBlock]
) -> Recut:
    """Re-cut the blocks of OLD (`blocks` at offsets `starts`) around what differs in NEW.

    The region re-cut is the blocks the changed bytes touch plus one on either side, because an
    edit can move where a neighbour's run of comment lines starts. Raises `Rebuild` when the region
    cannot be judged alone.
    """
    p = common_prefix(old, new)
    s = common_suffix(old, new, min(len(old), len(new)) - p)
    n = len(blocks)
    lo = hi = 0
    fresh: list[Block] = []
    region_starts: list[int] = []
    if not p == len(old) == len(new):
        first = max(0, bisect_right(starts, p) - 1)
        last = max(0, bisect_right(starts, max(p, len(old) - s - 1)) - 1)
        lo, hi = max(0, first - 1), min(n, last + 2)
        r0 = starts[lo]
        r1 = len(new) if hi >= n else starts[hi] + len(new) - len(old)
        region = new[r0:r1]
        # Line breaks YAML counts differently, and document markers, are judged in the whole file.
        if ODD_BREAKS.search(region) or DOCUMENT_MARKER.search(region):
            raise Rebuild
        rel = block_starts(region) if region else []
        if not rel:
            raise Rebuild  # nothing left around the change (an emptied file): the cold path judges it
        region_starts = [r0 + x for x in rel]
        for c0, c1 in zip(rel, [*rel[1:], len(region)], strict=True):
            chunk = region[c0:c1]
            fresh.append(Block(chunk, parse(chunk)))
    gone = blocks[lo:hi]
    # Blocks present on both sides keep their entries (only their lines may shift).
    pool: dict[str, list[Block]] = defaultdict(list)
    for g in gone:
        pool[g.text].append(g)
    kept: list[Block] = []
    added: list[Block] = []
    for blk in fresh:
        same = pool.get(blk.text)
        if same:
            kept.append(same.pop(0))
        else:
            kept.append(blk)
            added.append(blk)
    removed = tuple(b for lst in pool.values() for b in lst)
    return Recut(lo, hi, tuple(region_starts), tuple(kept), tuple(added), removed)
