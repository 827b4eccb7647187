"""Where every entry of the current native_functions.yaml is: its block, its parse, its line.

The text is kept cut into entry blocks (`opdrift.history.blocks`); an entry's parse has lines relative
to its block, and a block's first line is kept per block, so an edit above an entry shifts one
number per block instead of touching the entry. The map also indexes entries by autogen family
and by the delegate they take kernels from, which is how `opdrift.history.reach` finds what an edit reaches.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace

from opdrift.history.blocks import Block, ParsedBlock, Recut, block_starts, entry_name, family, recut
from opdrift.model import RawEntry


@dataclass(frozen=True)
class EntryChange:
    """The entries of the blocks a re-cut removed, and those (with their block) of the blocks it added."""

    removed: tuple[str, ...]
    added: tuple[tuple[str, RawEntry, Block], ...]

    @property
    def added_names(self) -> frozenset[str]:
        return frozenset(name for name, _, _ in self.added)


class EntryMap:
    """The current text's blocks and the entries in them (module docstring)."""

    def __init__(self) -> None:
        self.text = ""
        self.blocks: list[Block] = []
        self.starts: list[int] = []  # character offset of each block
        self.line_starts: list[int] = []  # first line (1-based) of each block
        self._line_memo: dict[int, int] = {}  # id(block) → first line, for the current text
        self.block_of: dict[str, Block] = {}  # entry name → its block
        self.raw: dict[str, RawEntry] = {}  # entry name → its parse (line relative to its block)
        self.family: dict[str, set[str]] = defaultdict(set)  # autogen family → entry names
        self.delegators: dict[str, set[str]] = defaultdict(set)  # delegate → entry names

    def cut(self, text: str, parse: Callable[[str], ParsedBlock]) -> list[tuple[int, str]] | None:
        """Cut TEXT into blocks and index their entries: (line, name) of every entry in file order,
        or None when a name is defined twice (the blocks cannot tell the two apart)."""
        self.text = text
        self.starts = block_starts(text)
        ends = [*self.starts[1:], len(text)]
        listed: list[tuple[int, str]] = []
        line = 1
        for s, e in zip(self.starts, ends, strict=True):
            chunk = text[s:e]
            blk = Block(chunk, parse(chunk))
            self.blocks.append(blk)
            self.line_starts.append(line)
            for raw in blk.parsed.entries:
                name = entry_name(raw)
                if name in self.block_of:
                    return None
                self._add(name, raw, blk)
                listed.append((raw.line + line - 1, name))
            line += blk.parsed.lines
        return listed

    def _add(self, name: str, raw: RawEntry, blk: Block) -> None:
        self.block_of[name] = blk
        self.raw[name] = raw
        self.family[family(name)].add(name)
        delegate = raw.data.get("structured_delegate")
        if isinstance(delegate, str):
            self.delegators[delegate].add(name)

    def _remove(self, name: str) -> None:
        raw = self.raw.pop(name)
        del self.block_of[name]
        fam = self.family[family(name)]
        fam.discard(name)
        if not fam:
            del self.family[family(name)]
        delegate = raw.data.get("structured_delegate")
        if isinstance(delegate, str):
            self.delegators[delegate].discard(name)

    def line(self, name: str) -> int:
        """An entry's ``- func:`` line in the current text."""
        blk = self.block_of[name]
        start = self._line_memo.get(id(blk))
        if start is None:
            start = self._line_memo[id(blk)] = self.line_starts[self.blocks.index(blk)]
        return start + self.raw[name].line - 1

    def entry(self, name: str) -> RawEntry:
        """An entry with its line as of the current text."""
        return replace(self.raw[name], line=self.line(name))

    # --- an edit ---------------------------------------------------------------------------------

    def recut(self, new: str, parse: Callable[[str], ParsedBlock]) -> tuple[Recut, EntryChange]:
        """How NEW's blocks differ from the current ones, and the entries that come and go; the
        map itself is unchanged until `apply`."""
        cut = recut(self.blocks, self.starts, self.text, new, parse)
        change = EntryChange(
            removed=tuple(entry_name(r) for b in cut.removed for r in b.parsed.entries),
            added=tuple((entry_name(r), r, b) for b in cut.added for r in b.parsed.entries),
        )
        return cut, change

    def defines_twice(self, change: EntryChange) -> bool:
        """Whether CHANGE brings in a name that stays defined elsewhere, or brings one in twice."""
        leaving = set(change.removed)
        seen: set[str] = set()
        for name, _, _ in change.added:
            if (name in self.block_of and name not in leaving) or name in seen:
                return True
            seen.add(name)
        return False

    def _region_line(self, cut: Recut) -> int:
        """The first line of the re-cut region, the same in the old text and the new."""
        if cut.lo < len(self.blocks):
            return self.line_starts[cut.lo]
        return self.line_starts[-1] + self.blocks[-1].parsed.lines

    def _line_delta(self, cut: Recut) -> int:
        """How many lines the re-cut region grew by: the shift of every line below it."""
        gone = self.blocks[cut.lo : cut.hi]
        return sum(b.parsed.lines for b in cut.blocks) - sum(b.parsed.lines for b in gone)

    def apply(self, cut: Recut, change: EntryChange, text: str) -> None:
        """Put CUT's blocks in place of the old region, shift the offsets and lines below it, and
        re-index the entries that came and went: the map is TEXT's."""
        lo, hi = cut.lo, cut.hi
        line_delta = self._line_delta(cut)
        fresh_lines = []
        line = self._region_line(cut)
        for blk in cut.blocks:
            fresh_lines.append(line)
            line += blk.parsed.lines
        delta = len(text) - len(self.text)
        self.blocks[lo:hi] = cut.blocks
        self.starts = [*self.starts[:lo], *cut.starts, *(x + delta for x in self.starts[hi:])]
        self.line_starts = [
            *self.line_starts[:lo],
            *fresh_lines,
            *(x + line_delta for x in self.line_starts[hi:]),
        ]
        self.text = text
        self._line_memo.clear()
        for name in change.removed:
            self._remove(name)
        for name, raw, blk in change.added:
            self._add(name, raw, blk)

    def definitions_of_added(self, cut: Recut, change: EntryChange) -> tuple[RawEntry, ...]:
        """CHANGE's new entries plus the definitions the new text keeps of their names, in the new
        text's file order with its lines (the map still the old text's)."""
        gone = self.blocks[cut.lo : cut.hi]
        line_delta = self._line_delta(cut)
        line = self._region_line(cut)
        new_line: dict[int, int] = {}
        for blk in cut.blocks:
            new_line[id(blk)] = line
            line += blk.parsed.lines
        found = [(new_line[id(blk)] + raw.line - 1, raw) for _, raw, blk in change.added]
        for name in change.added_names:
            old_blk = self.block_of.get(name)
            if old_blk is None:
                continue
            raw = self.raw[name]
            if id(old_blk) in new_line:  # a block re-cut but kept
                found.append((new_line[id(old_blk)] + raw.line - 1, raw))
            elif not any(old_blk is g for g in gone):
                i = self.blocks.index(old_blk)
                found.append((self.line_starts[i] + (line_delta if i >= cut.hi else 0) + raw.line - 1, raw))
        found.sort(key=lambda f: f[0])
        return tuple(replace(raw, line=line) for line, raw in found)
