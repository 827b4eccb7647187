"""The per-commit walk: every commit that touched the operator files → one timeline point each.

The walk reads blobs through one `GitReader` and keeps one `Engine`, which holds the classified
state of the last good commit and moves it forward by what changed:

1. native_functions.yaml is cut into *entry blocks* (an entry's ``- func:`` line through the line
   before the next entry; the comment and blank lines above an entry belong to it, which is exactly
   the text `nativeyaml.comments_above` scans, so a block parses alone to what it gives in the
   whole file). Between two commits only the blocks around the changed bytes are re-cut (common
   prefix and suffix of the two texts), and a block is parsed once per distinct text (cache by
   content), with its lines relative to the block, so an insertion above it costs nothing.
2. The operators of a changed block are built from its entries alone (`native.build_operators`).
3. Only the base operators that can see the change are re-decided: the bases of the operators that
   came or went, the operators that take kernels from one of them (structured_delegate), and,
   when a base name appears or disappears, the bases whose rules look at other names (the twin
   rules' prefixes, read from the rule table, and bases whose comments announce an alias).
   A derivatives.yaml change re-decides the bases whose formula status moved; a tags.yaml change,
   or anything the engine does not expect (a duplicate name, an unparsable block), rebuilds
   cold from the whole file.
4. The drift against the previous point is `drift.compute_drift` on the records that differ, which
   gives the same changes as on the whole snapshots: unchanged records make no change, and
   renames pair only removed with added operators.

Lines: records keep the line they had when last built; `Engine.snapshot()` refreshes them (and
re-decides the whole set, because decision reasons quote lines) to give the exact cold snapshot.
The timeline's counts and drifts never depend on lines.

An optional on-disk cache (`DiskCache`) keeps each point's figures keyed by its files' blob oids
and each drift keyed by both sides', so a rerun, or next week's run, only computes new commits.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
import subprocess
import sys
import tempfile
from bisect import bisect_right
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType

from bot import __version__
from bot.drift import changes as drift
from bot.errors import GitError, OpdriftError, SourceError
from bot.history.timeline import Point, PointDrift, Shard, Timeline
from bot.model import (
    DERIVATIVES_PATH,
    NATIVE_PATH,
    TAGS_PATH,
    Decision,
    Operator,
    OperatorSet,
    OpRecord,
    RawEntry,
    Snapshot,
    SourceFiles,
    SourceMeta,
    TextFile,
)
from bot.operators import entries as nativeyaml
from bot.operators import native
from bot.pipeline import operators_from_files
from bot.sources.git import GitReader, git_env, is_ancestor
from bot.sources.read import MAX_FILE_BYTES, decode
from bot.taxonomy import buckets
from bot.taxonomy import classify as taxonomy
from bot.taxonomy.overrides import Overrides

DEFAULT_PATHS = (NATIVE_PATH, TAGS_PATH, DERIVATIVES_PATH)
_RELEASE_TAG = re.compile(r"v(\d+\.\d+\.\d+)")
# Line breaks other than "\n" that YAML honours; a text holding one is parsed whole, never in blocks.
_ODD_BREAKS = re.compile("[\r\x85\u2028\u2029]")
_DOCUMENT_MARKER = re.compile(r"^(?:---|\.\.\.)(?:[ \t]|$)|^%", re.MULTILINE)
_CHUNK = 1 << 16


class HistoryError(OpdriftError):
    """The walk cannot run: a bad --shard, an empty tag pattern, a repository without the files."""


# --- blocks ------------------------------------------------------------------------------------


def _is_filler(line: str) -> bool:
    """A blank or comment line: the lines that belong to the entry below them."""
    s = line.lstrip(" \t")
    return not s.strip(" \t\n") or s.startswith("#")


def block_starts(text: str) -> list[int]:
    """Character offsets where each entry block of TEXT starts; the first block always starts at 0.

    A block after the first starts where the run of blank and comment lines above its ``- func:``
    line starts, so the comments `nativeyaml.comments_above` attaches to an entry are in its block.
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


def _common_prefix(a: str, b: str) -> int:
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


def _common_suffix(a: str, b: str, limit: int) -> int:
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


# --- the engine's state ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Parsed:
    """One block's entries, lines relative to the block (1 = its first line), and its line count."""

    entries: tuple[RawEntry, ...]
    lines: int


class _Block:
    """A block of the current text and the operators built from it.

    `ops` were built when the block started at line `line0`; an operator's current line is
    ``op.line - line0 + (the block's current first line)``.
    """

    __slots__ = ("line0", "ops", "parsed", "text")

    def __init__(self, text: str, parsed: _Parsed) -> None:
        self.text = text
        self.parsed = parsed
        self.ops: tuple[Operator, ...] = ()
        self.line0 = 1


class _Rebuild(Exception):
    """The incremental step met something it does not handle; rebuild from the whole file."""


def _alias_words(ops: Iterable[Operator]) -> frozenset[str]:
    """Names a base's alias comments mention, spelled as ATen names (``torch.linalg.det`` → linalg_det)."""
    words: set[str] = set()
    for op in ops:
        for c in op.comments:
            if "alias" not in c.lower():
                continue
            for w in re.findall(r"[A-Za-z_][\w.]*", c):
                w = w.rstrip(".").lower().removeprefix("torch.")
                words.add(w.replace(".", "_"))
    return frozenset(words)


@dataclass(frozen=True)
class Summary:
    """A point's figures, as `opdrift stats` counts them."""

    entries: int
    operators: int
    base_operators: int
    by_category: tuple[tuple[str, int], ...]


def summarize(snap: Snapshot) -> Summary:
    """The figures of a (cold) snapshot."""
    counts = taxonomy.bucket_counts(snap.decisions)
    return Summary(
        entries=snap.entries,
        operators=len(snap.operators),
        base_operators=len(snap.decisions),
        by_category=tuple(sorted(counts.items())),
    )


def point_drift(base_sha: str, d: drift.Drift) -> PointDrift:
    return PointDrift(
        base=base_sha,
        added=tuple(c.name for c in d.added),
        removed=tuple(c.name for c in d.removed),
        renamed=tuple((c.old_name or "", c.name) for c in d.renamed),
        changed=tuple(c.name for c in d.changed),
        breaking=tuple(sorted(c.name for c in d.changes if c.breaking)),
        needs_kernel=tuple(sorted(c.name for c in d.changes if c.needs_kernel)),
    )


class Engine:
    """The classified state of one commit, moved forward commit by commit (module docstring).

    `load(files)` sets the state from a commit's files and returns what changed since the last
    state as name → (before, after) records of the changed operators.
    """

    def __init__(self, overrides: Overrides | None = None) -> None:
        self.overrides = overrides
        self._parsed: dict[str, _Parsed] = {}  # block text → parse (content cache)
        self._derivs: dict[str, frozenset[str] | None] = {}  # derivatives text → names
        self._valid = False  # the state is a whole commit's
        self._blocks_ok = False  # ...and cut into entry blocks, so the next commit can be a step
        self.stats = Counter[str]()
        self._reset()

    def _reset(self) -> None:
        self.meta = SourceMeta(kind="git", path="")
        self.display = ""
        self.text = ""
        self.tags_text: str | None = None
        self.derivatives_text: str | None = None
        self.derivatives: frozenset[str] | None = None
        self.aliases: Mapping[str, str] = {}
        self.blocks: list[_Block] = []
        self.starts: list[int] = []  # character offset of each block
        self.line_starts: list[int] = []  # first line (1-based) of each block
        self._line_memo: dict[int, int] = {}  # id(block) → first line, for the current text
        # entries: name → its block and its parsed form (line relative to the block)
        self.entry_block: dict[str, _Block] = {}
        self.entry_raw: dict[str, RawEntry] = {}
        self.family: dict[str, set[str]] = defaultdict(set)  # autogen family → entry names
        self.entry_delegators: dict[str, set[str]] = defaultdict(set)  # delegate → entry names
        self.owned: dict[str, tuple[str, ...]] = {}  # entry name → the operators it makes
        # operators and their classification
        self.ops: dict[str, Operator] = {}
        self.op_owner: dict[str, str] = {}
        self.records: dict[str, OpRecord] = {}
        self.decisions: dict[str, Decision] = {}
        self.base_ops: dict[str, set[str]] = {}  # base → its operators' names
        self.rec_names: dict[str, tuple[str, ...]] = {}  # base → the names its records hold
        self.delegators: dict[str, set[str]] = defaultdict(set)  # delegate op → operators naming it
        self.alias_words: dict[str, frozenset[str]] = {}
        self.counts: Counter[str] = Counter()
        self.tag_count: Counter[str] = Counter()  # tag → operators carrying it
        self.source_tags: frozenset[str] = frozenset()
        self.entries = 0
        self._all_bases: frozenset[str] | None = None

    # --- public ---------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """The state is a whole commit's (false after a failure in the middle of a step)."""
        return self._valid

    def load(self, files: SourceFiles) -> dict[str, tuple[OpRecord | None, OpRecord | None]]:
        """Move to FILES' state; the changed operators as name → (before, after) records."""
        if files.native_functions is None:
            raise SourceError(f"no {NATIVE_PATH}: not a PyTorch revision", path=files.meta.path)
        before = dict(self.records) if self._valid else {}
        tags_text = None if files.tags is None else files.tags.text
        if not (self._valid and self._blocks_ok) or tags_text != self.tags_text:
            return self._cold(files, before)
        try:
            return self._step(files)
        except _Rebuild:
            self.stats["rebuilds"] += 1
            return self._cold(files, before)

    def summary(self) -> Summary:
        counts = dict.fromkeys(buckets.BUCKETS, 0)
        counts.update(self.counts)
        return Summary(
            entries=self.entries,
            operators=len(self.records),
            base_operators=len(self.decisions),
            by_category=tuple(sorted((b, n) for b, n in counts.items() if n or b in buckets.BUCKETS)),
        )

    def snapshot(self) -> Snapshot:
        """The snapshot cold classification gives for the current commit (lines refreshed), but for
        the parse's warnings, which a walk does not keep."""
        return taxonomy.classify(self._opset(), self.overrides)

    # --- cold ------------------------------------------------------------------------------

    def _cold(
        self, files: SourceFiles, before: Mapping[str, OpRecord]
    ) -> dict[str, tuple[OpRecord | None, OpRecord | None]]:
        """Build everything from the whole file (first commit, tags.yaml change, fallback)."""
        self.stats["cold"] += 1
        native_file = files.native_functions
        if native_file is None:  # checked by load
            raise SourceError(f"no {NATIVE_PATH}", path=files.meta.path)
        opset = operators_from_files(files)  # the canonical errors come from here
        snap = taxonomy.classify(opset, self.overrides)
        self._valid = False
        self._reset()
        self.meta, self.display, self.text = files.meta, native_file.display, native_file.text
        self.tags_text = None if files.tags is None else files.tags.text
        self.derivatives_text = None if files.derivatives is None else files.derivatives.text
        self.derivatives = opset.derivatives
        if files.derivatives is not None:
            self._derivs[files.derivatives.text] = opset.derivatives
        self.aliases = opset.aliases
        self.entries = opset.entries
        self.records = dict(snap.operators)
        self.decisions = dict(snap.decisions)
        self.counts = Counter(d.bucket for d in self.decisions.values())
        grouped: dict[str, list[str]] = defaultdict(list)
        for name, rec in self.records.items():
            grouped[rec.base].append(name)
        self.rec_names = {b: tuple(v) for b, v in grouped.items()}
        for op in opset.operators:
            self.ops[op.name] = op
            self.base_ops.setdefault(op.base, set()).add(op.name)
            if op.structured_delegate is not None:
                self.delegators[op.structured_delegate].add(op.name)
        for base, names in self.base_ops.items():
            self.alias_words[base] = _alias_words(self.ops[n] for n in names)
        self.tag_count = Counter(t for op in opset.operators for t in op.tags)
        self.source_tags = frozenset(self.tag_count)
        ok = not _ODD_BREAKS.search(self.text) and not opset.aliases
        if ok:
            try:
                ok = self._cut_blocks(opset)
            except _Rebuild:
                ok = False
        # Without blocks every later commit is built cold too: slower, never wrong. The records are
        # whole either way, and the next commit's drift is taken from them.
        self._valid = True
        self._blocks_ok = ok
        return _changes(before, self.records)

    def _cut_blocks(self, opset: OperatorSet) -> bool:
        text = self.text
        self.starts = block_starts(text)
        ends = [*self.starts[1:], len(text)]
        by_line: dict[int, list[Operator]] = defaultdict(list)
        for op in opset.operators:
            by_line[op.line].append(op)
        line = 1
        for s, e in zip(self.starts, ends, strict=True):
            chunk = text[s:e]
            blk = _Block(chunk, self._parse(chunk))
            self.blocks.append(blk)
            self.line_starts.append(line)
            for raw in blk.parsed.entries:
                name = _entry_name(raw)
                if name in self.entry_block:
                    return False
                self._index_entry(name, raw, blk)
                ops = by_line.get(raw.line + line - 1, [])
                self.owned[name] = tuple(op.name for op in ops)
                for op in ops:
                    self.op_owner[op.name] = name
            line += blk.parsed.lines
        # Every operator must belong to an entry of some block, or the blocks disagree with the file.
        return len(self.op_owner) == len(self.ops) and len(self.entry_block) == opset.entries

    def _index_entry(self, name: str, raw: RawEntry, blk: _Block) -> None:
        self.entry_block[name] = blk
        self.entry_raw[name] = raw
        self.family[_family(name)].add(name)
        delegate = raw.data.get("structured_delegate")
        if isinstance(delegate, str):
            self.entry_delegators[delegate].add(name)

    def _unindex_entry(self, name: str) -> None:
        raw = self.entry_raw.pop(name)
        del self.entry_block[name]
        fam = self.family[_family(name)]
        fam.discard(name)
        if not fam:
            del self.family[_family(name)]
        delegate = raw.data.get("structured_delegate")
        if isinstance(delegate, str):
            self.entry_delegators[delegate].discard(name)

    def _parse(self, chunk: str) -> _Parsed:
        hit = self._parsed.get(chunk)
        if hit is not None:
            self.stats["block_hits"] += 1
            return hit
        self.stats["block_parses"] += 1
        try:
            entries = nativeyaml.read_entries(chunk, self.display)
        except OpdriftError as err:
            raise _Rebuild from err
        for raw in entries:
            if not isinstance(raw.data.get("func"), str):
                raise _Rebuild
        parsed = _Parsed(entries=entries, lines=chunk.count("\n") + (0 if chunk.endswith("\n") else 1))
        self._parsed[chunk] = parsed
        return parsed

    # --- lines -----------------------------------------------------------------------------------

    def _entry_line(self, name: str) -> int:
        """An entry's ``- func:`` line in the current text."""
        blk = self.entry_block[name]
        start = self._line_memo.get(id(blk))
        if start is None:
            start = self._line_memo[id(blk)] = self.line_starts[self.blocks.index(blk)]
        return start + self.entry_raw[name].line - 1

    def _current(self, op: Operator) -> Operator:
        """OP with its line as of the current text."""
        line = self._entry_line(self.op_owner[op.name])
        return op if op.line == line else replace(op, line=line)

    # --- incremental ---------------------------------------------------------------------------

    def _step(self, files: SourceFiles) -> dict[str, tuple[OpRecord | None, OpRecord | None]]:
        native_file = files.native_functions
        if native_file is None:
            raise _Rebuild
        new, old = native_file.text, self.text
        self.display = native_file.display
        # 1. re-cut the blocks around the changed bytes
        p = _common_prefix(old, new)
        s = _common_suffix(old, new, min(len(old), len(new)) - p)
        n = len(self.blocks)
        lo = hi = 0
        fresh: list[_Block] = []
        region_starts: list[int] = []
        if not p == len(old) == len(new):
            first = max(0, bisect_right(self.starts, p) - 1)
            last = max(0, bisect_right(self.starts, max(p, len(old) - s - 1)) - 1)
            lo, hi = max(0, first - 1), min(n, last + 2)
            r0 = self.starts[lo]
            r1 = len(new) if hi >= n else self.starts[hi] + len(new) - len(old)
            region = new[r0:r1]
            # Line breaks YAML counts differently, and document markers: "..." parses inside one
            # block alone but ends the document in the whole file, which is then invalid.
            if _ODD_BREAKS.search(region) or _DOCUMENT_MARKER.search(region):
                raise _Rebuild
            rel = block_starts(region) if region else []
            if not rel:
                raise _Rebuild  # nothing left around the change (an emptied file): the cold path judges it
            region_starts = [r0 + x for x in rel]
            for c0, c1 in zip(rel, [*rel[1:], len(region)], strict=True):
                chunk = region[c0:c1]
                fresh.append(_Block(chunk, self._parse(chunk)))
        gone = self.blocks[lo:hi]
        # Blocks present on both sides keep their entries (only their lines may shift).
        pool: dict[str, list[_Block]] = defaultdict(list)
        for g in gone:
            pool[g.text].append(g)
        new_blocks: list[_Block] = []
        added_blocks: list[_Block] = []
        for blk in fresh:
            same = pool.get(blk.text)
            if same:
                new_blocks.append(same.pop(0))
            else:
                new_blocks.append(blk)
                added_blocks.append(blk)
        removed_blocks = [b for lst in pool.values() for b in lst]
        old_entries = [_entry_name(r) for b in removed_blocks for r in b.parsed.entries]
        new_entries = [(_entry_name(r), r, b) for b in added_blocks for r in b.parsed.entries]
        leaving = set(old_entries)
        seen: set[str] = set()
        for name, _, _ in new_entries:
            if (name in self.entry_block and name not in leaving) or name in seen:
                self._duplicate(new_entries, lo, hi, new_blocks, files)
            seen.add(name)
        derivs = self._derivatives(files)

        # --- from here on the state changes: invalid until the step completes ---
        self._valid = False
        line_delta = sum(b.parsed.lines for b in new_blocks) - sum(b.parsed.lines for b in gone)
        base_line = self.line_starts[lo] if lo < n else (self.line_starts[-1] + self.blocks[-1].parsed.lines)
        fresh_lines = []
        line = base_line
        for blk in new_blocks:
            fresh_lines.append(line)
            line += blk.parsed.lines
        delta = len(new) - len(old)
        self.blocks[lo:hi] = new_blocks
        self.starts = [*self.starts[:lo], *region_starts, *(x + delta for x in self.starts[hi:])]
        self.line_starts = [
            *self.line_starts[:lo],
            *fresh_lines,
            *(x + line_delta for x in self.line_starts[hi:]),
        ]
        self.text = new
        self._line_memo.clear()
        self.meta = files.meta
        self.entries += len(new_entries) - len(old_entries)
        for name in old_entries:
            self._unindex_entry(name)
        for name, raw, blk in new_entries:
            self._index_entry(name, raw, blk)

        # 2. the entries whose operators can change: the changed ones' autogen families, and the
        #    entries that take kernels from one of them (structured_delegate), with their families
        affected: set[str] = set()
        fams = {_family(nm) for nm in old_entries} | {_family(nm) for nm in seen}
        done_fams: set[str] = set()
        pending = [*old_entries, *seen]
        done_names: set[str] = set()
        while fams or pending:
            while fams:
                fam = fams.pop()
                if fam in done_fams:
                    continue
                done_fams.add(fam)
                for m in self.family.get(fam, ()):
                    if m not in affected:
                        affected.add(m)
                        pending.append(m)
            while pending:
                nm = pending.pop()
                if nm in done_names:
                    continue
                done_names.add(nm)
                for d in self.entry_delegators.get(nm, ()):
                    if _family(d) not in done_fams:
                        fams.add(_family(d))
        context: set[str] = set()
        todo = list(affected)
        while todo:
            raw = self.entry_raw[todo.pop()]
            delegate = raw.data.get("structured_delegate")
            if (
                isinstance(delegate, str)
                and delegate in self.entry_raw
                and delegate not in affected | context
            ):
                context.add(delegate)
                todo.append(delegate)
        build = sorted(affected | context, key=self._entry_line)
        entries = tuple(replace(self.entry_raw[nm], line=self._entry_line(nm)) for nm in build)
        try:
            opset = native.build_operators(
                entries, meta=files.meta, native_display=self.display, tags=files.tags, derivatives=None
            )
        except OpdriftError as err:
            raise _Rebuild from err
        owner_of_line = {self._entry_line(nm): nm for nm in affected}
        made: dict[str, list[Operator]] = defaultdict(list)
        for op in opset.operators:
            owner = owner_of_line.get(op.line)
            if owner is not None:
                made[owner].append(op)

        # 3. swap the affected entries' operators
        removed_ops: dict[str, Operator] = {}
        for nm in set(old_entries) | affected:
            for op_name in self.owned.pop(nm, ()):
                op = self.ops.pop(op_name)
                del self.op_owner[op_name]
                removed_ops[op_name] = op
        new_ops: dict[str, Operator] = {}
        for nm in affected:
            ops = made.get(nm, [])
            self.owned[nm] = tuple(op.name for op in ops)
            for op in ops:
                if op.name in self.ops or op.name in new_ops:
                    raise _Rebuild
                new_ops[op.name] = op
                self.op_owner[op.name] = nm
        self.ops.update(new_ops)

        touched: set[str] = set()
        toggled: set[str] = set()
        # An entry in the re-cut region may have moved past others of its base (kept by its text, or
        # rebuilt to an operator equal but for its line), and a base without a default overload is
        # judged by its first entry in file order: re-decide the bases of every entry in the region.
        for blk in new_blocks:
            touched.update(_entry_name(r).split(".", 1)[0] for r in blk.parsed.entries)
        for name, op in removed_ops.items():
            if name in new_ops and new_ops[name] == _moved(op, new_ops[name].line):
                continue  # rebuilt to the same operator
            touched.add(op.base)
        for name, op in new_ops.items():
            old_op = removed_ops.get(name)
            if old_op is None or old_op != _moved(op, old_op.line):
                touched.add(op.base)
        for name, op in removed_ops.items():
            names = self.base_ops[op.base]
            names.discard(name)
            if op.structured_delegate is not None:
                self.delegators[op.structured_delegate].discard(name)
        for name, op in new_ops.items():
            if op.base not in self.base_ops:
                self.base_ops[op.base] = set()
            self.base_ops[op.base].add(name)
            if op.structured_delegate is not None:
                self.delegators[op.structured_delegate].add(name)
        for op in removed_ops.values():
            if not self.base_ops.get(op.base):
                self.base_ops.pop(op.base, None)
                toggled.add(op.base)
        for op in new_ops.values():
            if op.base not in self.rec_names:
                toggled.add(op.base)
        for name in {*removed_ops, *new_ops}:
            if (name in removed_ops) != (name in new_ops) or removed_ops[name] != _moved(
                new_ops[name], removed_ops[name].line
            ):
                for d in self.delegators.get(name, ()):
                    touched.add(self.ops[d].base)
        if derivs != self.derivatives:
            moved = (derivs or frozenset()) ^ (self.derivatives or frozenset())
            if (derivs is None) != (self.derivatives is None):
                moved = frozenset(self.ops)
            for name in moved:
                base = name.split(".", 1)[0]
                touched.update((base, base + "_"))
            self.derivatives = derivs
        self.derivatives_text = None if files.derivatives is None else files.derivatives.text
        if toggled:
            self._all_bases = None
            # Rules that look at other base names (twins: svd/linalg_svd, add/add_, special_X/X) relate
            # names by containment; re-deciding every base whose name contains a toggled one, or is
            # contained in it, covers them all whatever prefix or suffix a rule uses.
            for tb in toggled:
                touched.update(x for x in self.base_ops if tb in x or x in tb)
            for base, words in self.alias_words.items():
                if not words.isdisjoint(toggled):
                    touched.add(base)
        for op in removed_ops.values():
            self.tag_count.subtract(op.tags)
        for op in new_ops.values():
            self.tag_count.update(op.tags)
        source_tags = frozenset(t for t, k in self.tag_count.items() if k > 0)
        if source_tags != self.source_tags:
            # a tag appeared or vanished in the whole source: rules such as "the source predates tag
            # pointwise" may flip for any base
            self.source_tags = source_tags
            touched.update(self.base_ops)
            touched.update(self.decisions)
        for base in touched:
            if base in self.base_ops:
                self.alias_words[base] = _alias_words(self.ops[nm] for nm in self.base_ops[base])
            else:
                self.alias_words.pop(base, None)
        changes = self._redecide(touched)
        self._valid = True
        self.stats["steps"] += 1
        self.stats["rebuilt_entries"] += len(build)
        self.stats["redecided"] += len(touched)
        return changes

    def _duplicate(
        self,
        new_entries: Sequence[tuple[str, RawEntry, _Block]],
        lo: int,
        hi: int,
        new_blocks: Sequence[_Block],
        files: SourceFiles,
    ) -> None:
        """Raise the codegen's own error for an entry defined twice, without a cold rebuild.

        The whole-file build validates every entry, then fails on the first name defined a second
        time, in file order. Every entry that stays was valid before, so building the new entries
        plus the old definitions of their names, in file order, raises that same first error.
        """
        n = len(self.blocks)
        gone = self.blocks[lo:hi]
        line_delta = sum(b.parsed.lines for b in new_blocks) - sum(b.parsed.lines for b in gone)
        line = self.line_starts[lo] if lo < n else self.line_starts[-1] + self.blocks[-1].parsed.lines
        new_line: dict[int, int] = {}
        for blk in new_blocks:
            new_line[id(blk)] = line
            line += blk.parsed.lines
        found = [(new_line[id(blk)] + raw.line - 1, raw) for _, raw, blk in new_entries]
        for name in {nm for nm, _, _ in new_entries}:
            old_blk = self.entry_block.get(name)
            if old_blk is None:
                continue
            raw = self.entry_raw[name]
            if id(old_blk) in new_line:  # a block re-cut but kept
                found.append((new_line[id(old_blk)] + raw.line - 1, raw))
            elif not any(old_blk is g for g in gone):
                i = self.blocks.index(old_blk)
                found.append((self.line_starts[i] + (line_delta if i >= hi else 0) + raw.line - 1, raw))
        found.sort(key=lambda f: f[0])
        entries = tuple(replace(raw, line=line) for line, raw in found)
        try:
            native.build_operators(entries, meta=files.meta, native_display=self.display, tags=files.tags)
        except OpdriftError:
            self.stats["duplicates"] += 1
            raise
        raise _Rebuild  # not the failure expected: let the whole-file build decide

    def _derivatives(self, files: SourceFiles) -> frozenset[str] | None:
        if files.derivatives is None:
            return None
        text = files.derivatives.text
        if text == self.derivatives_text:
            return self.derivatives
        if text not in self._derivs:
            try:
                self._derivs[text] = native.read_derivatives(files.derivatives)
            except OpdriftError as err:
                raise _Rebuild from err
        return self._derivs[text]

    def _redecide(self, bases: Iterable[str]) -> dict[str, tuple[OpRecord | None, OpRecord | None]]:
        if self._all_bases is None:
            self._all_bases = frozenset(self.base_ops)
        all_bases = self._all_bases
        changes: dict[str, tuple[OpRecord | None, OpRecord | None]] = {}
        for base in sorted(bases):
            old_names = self.rec_names.pop(base, ())
            old_decision = self.decisions.pop(base, None)
            if old_decision is not None:
                self.counts[old_decision.bucket] -= 1
            new_records: dict[str, OpRecord] = {}
            names = self.base_ops.get(base)
            if names:
                # in name order, as a cold parse hands them over (alias comments: the first one wins)
                ops = [self._current(self.ops[nm]) for nm in sorted(names)]
                helpers = {
                    o.structured_delegate: self._current(self.ops[o.structured_delegate])
                    for o in ops
                    if o.structured_delegate is not None and o.structured_delegate in self.ops
                }
                sub = OperatorSet(
                    meta=self.meta,
                    operators=tuple({**helpers, **{o.name: o for o in ops}}.values()),
                    entries=0,
                    aliases=self.aliases,
                )
                bop = taxonomy.base_operators(sub)[base]
                if self.aliases.get(base) is None:
                    found = taxonomy.alias_from_comments(
                        base, (o for o in bop.overloads if o.autogen_from is None), all_bases
                    )
                    alias_of, evidence = found if found is not None else (None, "")
                    bop = replace(bop, alias_of=alias_of, alias_evidence=evidence)
                # The sub-set's global views are partial; give the rules the whole source's.
                bop = replace(bop, all_bases=all_bases, source_tags=self.source_tags)
                decision = (self.overrides and self.overrides.decision(base)) or taxonomy.decide(bop)
                self.decisions[base] = decision
                self.counts[decision.bucket] += 1
                for op in bop.overloads:
                    new_records[op.name] = OpRecord(
                        name=op.name,
                        base=op.base,
                        overload=op.overload,
                        schema=op.schema,
                        bucket=decision.bucket,
                        rule=decision.rule,
                        kind=op.kind,
                        facets=taxonomy.facets_of(op, bop, self.derivatives),
                        line=op.line,
                    )
            for nm in old_names:
                old = self.records.pop(nm)
                new_rec = new_records.get(nm)
                if new_rec is None or not _same(old, new_rec):
                    changes[nm] = (old, new_rec)
            for nm, rec in new_records.items():
                self.records[nm] = rec
                if nm not in old_names:
                    changes[nm] = (None, rec)
            if new_records:
                self.rec_names[base] = tuple(new_records)
        return changes

    def _opset(self) -> OperatorSet:
        ops = tuple(sorted((self._current(op) for op in self.ops.values()), key=lambda o: o.name))
        return OperatorSet(
            meta=self.meta,
            operators=ops,
            entries=self.entries,
            native_display=self.display,
            derivatives=self.derivatives,
            aliases=self.aliases,
        )


def _entry_name(raw: RawEntry) -> str:
    func = raw.data.get("func")
    return str(func).split("(", 1)[0].strip()


def _family(name: str) -> str:
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


def _moved(op: Operator, line: int) -> Operator:
    return op if op.line == line else replace(op, line=line)


def _same(a: OpRecord, b: OpRecord) -> bool:
    return a == b or (a.line != b.line and replace(a, line=b.line) == b)


def _changes(
    before: Mapping[str, OpRecord], after: Mapping[str, OpRecord]
) -> dict[str, tuple[OpRecord | None, OpRecord | None]]:
    out: dict[str, tuple[OpRecord | None, OpRecord | None]] = {}
    for name, rec in before.items():
        new = after.get(name)
        if new is None or not _same(rec, new):
            out[name] = (rec, new)
    for name, rec in after.items():
        if name not in before:
            out[name] = (None, rec)
    return out


def drift_of(
    changes: Mapping[str, tuple[OpRecord | None, OpRecord | None]], base: SourceMeta, head: SourceMeta
) -> drift.Drift:
    """`compute_drift` on the changed records only: the same changes as on the whole snapshots."""
    b = {n: r for n, (r, _) in changes.items() if r is not None}
    h = {n: r for n, (_, r) in changes.items() if r is not None}
    empty: Mapping[str, Decision] = MappingProxyType({})
    return drift.compute_drift(
        Snapshot(meta=base, entries=0, operators=MappingProxyType(b), decisions=empty),
        Snapshot(meta=head, entries=0, operators=MappingProxyType(h), decisions=empty),
    )


# --- the on-disk cache -------------------------------------------------------------------------


def overrides_digest(overrides: Overrides | None) -> str:
    if overrides is None:
        return ""
    items = sorted((b, o.bucket, o.reason) for b, o in overrides.entries.items())
    return hashlib.sha256(json.dumps([overrides.display, items]).encode()).hexdigest()[:16]


class DiskCache:
    """Point figures and drifts on disk, one small JSON file each, keyed by blob oids.

    A point's figures depend only on its three files (and the opdrift version and overrides, which
    salt every key); a drift only on both points' files. Files are written atomically; a file that
    does not read back as the expected shape is ignored with a warning and recomputed.
    """

    def __init__(self, root: str | os.PathLike[str], *, salt: str = "", warn: Callable[[str], None]) -> None:
        self.root = Path(root) / f"opdrift-{__version__}"
        self.salt = salt
        self.warn = warn
        self.hits = 0
        self._write_failed = False

    def key(self, *parts: object) -> str:
        payload = json.dumps([__version__, self.salt, *parts], separators=(",", ":"))
        return hashlib.sha256(payload.encode()).hexdigest()

    def _path(self, kind: str, key: str) -> Path:
        return self.root / kind / key[:2] / f"{key}.json"

    def get(self, kind: str, key: str) -> dict[str, object] | None:
        path = self._path(kind, key)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as err:
            self.warn(f"{path}: ignoring unreadable cache file ({err.strerror or err})")
            return None
        except ValueError as err:  # not UTF-8: a damaged file, rebuilt like any miss
            self.warn(f"{path}: ignoring corrupt cache file ({err})")
            return None
        try:
            value = json.loads(text)
        except (ValueError, RecursionError) as err:
            self.warn(f"{path}: ignoring corrupt cache file ({type(err).__name__})")
            return None
        if not isinstance(value, dict):
            self.warn(f"{path}: ignoring corrupt cache file (not an object)")
            return None
        self.hits += 1
        return value

    def put(self, kind: str, key: str, value: Mapping[str, object]) -> None:
        path = self._path(kind, key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(value, f, sort_keys=True, separators=(",", ":"))
            os.replace(tmp, path)
        except OSError as err:
            # A cache that cannot be written only makes the next run slower; saying so once is enough
            # (a read-only --cache printed four lines per commit).
            if not self._write_failed:
                self._write_failed = True
                self.warn(
                    f"{path}: cannot write cache file ({err.strerror or err}); the walk goes on uncached"
                )


def _summary_to(s: Summary) -> dict[str, object]:
    return {
        "entries": s.entries,
        "operators": s.operators,
        "base_operators": s.base_operators,
        "by_category": dict(s.by_category),
    }


def _summary_from(d: Mapping[str, object]) -> Summary | None:
    nums = [d.get(k) for k in ("entries", "operators", "base_operators")]
    cats = d.get("by_category")
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in nums) or not isinstance(cats, dict):
        return None
    if not all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in cats.items()
    ):
        return None
    e, o, b = (int(str(n)) for n in nums)
    return Summary(entries=e, operators=o, base_operators=b, by_category=tuple(sorted(cats.items())))


_DRIFT_LISTS = ("added", "removed", "changed", "breaking", "needs_kernel")


def _drift_to(d: PointDrift) -> dict[str, object]:
    out: dict[str, object] = {k: list(getattr(d, k)) for k in _DRIFT_LISTS}
    out["renamed"] = [list(p) for p in d.renamed]
    return out


def _drift_from(d: Mapping[str, object], base: str) -> PointDrift | None:
    lists: dict[str, tuple[str, ...]] = {}
    for k in _DRIFT_LISTS:
        v = d.get(k)
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            return None
        lists[k] = tuple(v)
    ren = d.get("renamed")
    if not isinstance(ren, list):
        return None
    pairs: list[tuple[str, str]] = []
    for p in ren:
        if not (isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)):
            return None
        pairs.append((p[0], p[1]))
    return PointDrift(base=base, renamed=tuple(pairs), **lists)


# --- the walk ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class WalkOptions:
    from_rev: str | None = None
    to_rev: str = "HEAD"
    paths: tuple[str, ...] = DEFAULT_PATHS
    tags: str | None = None  # walk release tags matching this glob instead of commits
    shard: tuple[int, int] | None = None  # (I, N), 1-based
    keep_going: bool = False
    cache_dir: str | None = None
    overrides: Overrides | None = None


def parse_shard(spec: str) -> tuple[int, int]:
    """``"2/5"`` → (2, 5); anything else, or I outside 1..N, is a `HistoryError`."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", spec)
    if m is None:
        raise HistoryError(f"--shard must be I/N (like 2/5), not {spec!r}")
    i, n = int(m.group(1)), int(m.group(2))
    if not 1 <= i <= n:
        raise HistoryError(f"--shard {spec}: I must be between 1 and N")
    return i, n


def shard_bounds(total: int, index: int, count: int) -> tuple[int, int]:
    """[start, end) of shard INDEX (1-based) of COUNT contiguous, near-equal chunks of TOTAL points."""
    return (index - 1) * total // count, index * total // count


def _git_lines(repo: str, *args: str) -> list[str]:
    try:
        done = subprocess.run(
            ["git", "-C", repo, *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=git_env(),
            check=False,
        )
    except OSError as err:
        raise GitError(f"cannot run git: {err.strerror or err}", path=repo) from err
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        command = next((a for a in args if not a.startswith("-") and "=" not in a), args[0])
        raise GitError(f"git {command} failed: {why[0] if why else done.returncode}", path=repo)
    # Only "\n" ends a line of git's output: str.splitlines() would also split a commit subject at
    # U+2028 or \x1c, and a subject could then forge a --raw line of the next "file change".
    text = done.stdout.decode("utf-8", "replace")
    return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n") if text else []


@dataclass(frozen=True)
class LogEntry:
    """One commit of the walk, as `git log` lists it."""

    sha: str
    date: str  # committer date, ISO 8601 (%cI)
    subject: str
    changes: tuple[tuple[str, str | None], ...]  # (path, new blob oid or None when deleted)
    # whether it touched one of the walk's PATHS; the others are listed only to carry the three
    # files' versions forward (a commit that changed native_functions.yaml alone still changed it)
    counted: bool = True


_ZERO_OID = re.compile(r"0+")


def check_paths(paths: Sequence[str]) -> tuple[str, ...]:
    """--paths as the commit filter compares them: repository-relative, normalised, literal.

    git would take ``./aten/...`` or a glob as a pathspec, but the filter matches the paths git log
    prints literally; accepting them would silently match nothing, so they are refused or normalised.
    """
    out = []
    for raw in paths:
        path = posixpath.normpath(raw.strip()).removeprefix("./")
        if any(c in raw for c in "*?[") or raw.startswith(":"):
            raise HistoryError(f"--paths {raw!r}: give files or directories, not patterns")
        if not path or path == "." or path.startswith(("/", "../")) or path == "..":
            raise HistoryError(f"--paths {raw!r}: give a path inside the repository, like {NATIVE_PATH}")
        out.append(path)
    return tuple(out)


def list_commits(repo: str, from_sha: str | None, to_sha: str, paths: Sequence[str]) -> list[LogEntry]:
    """Commits in FROM..TO (first-parent, oldest first) that touched PATHS or the three files, with
    their blob changes; `counted` says which touched PATHS.

    One ``git log --raw`` answers for the whole range, so the walk needs no per-commit tree lookups:
    the three files' blob oids are carried forward from the changes of every listed commit, counted
    or not.
    """
    rng = f"{from_sha}..{to_sha}" if from_sha else to_sha
    spec = sorted(set(paths) | set(DEFAULT_PATHS))
    lines = _git_lines(
        repo,
        # No config (the repository's, the user's, or the environment's: git -c sets it for everything
        # it starts) may change what is listed: a root commit left out, subjects re-encoded,
        # signatures or quoted non-ASCII paths in the output. A -c here wins over all of them.
        "-c",
        "log.showRoot=true",
        "-c",
        "core.quotePath=false",
        "log",
        "--encoding=UTF-8",
        "--no-show-signature",
        "--first-parent",
        "--reverse",
        "--raw",
        "--no-renames",
        "--no-abbrev",
        "--diff-merges=first-parent",
        "--format=%x00%H%x1f%cI%x1f%s",
        rng,
        "--",
        *spec,
    )
    wanted = [p.rstrip("/") for p in paths]
    out: list[LogEntry] = []
    head: list[str] | None = None
    changes: list[tuple[str, str | None]] = []

    def flush() -> None:
        if head is None:
            return
        counted = any(path == w or path.startswith(w + "/") for path, _ in changes for w in wanted)
        out.append(LogEntry(head[0], head[1], head[2], tuple(changes), counted))

    for line in lines:
        if line.startswith("\0"):
            flush()
            fields = line[1:].split("\x1f", 2)
            head = fields + [""] * (3 - len(fields))
            changes = []
        elif line.startswith(":"):
            meta, _, path = line.partition("\t")
            parts = meta.split()
            if len(parts) >= 5:
                oid = parts[3]
                changes.append((path, None if _ZERO_OID.fullmatch(oid) else oid))
    flush()
    return out


def list_tags(repo: str, pattern: str) -> list[str]:
    """Tag names matching PATTERN (a git glob), in version order (v2.9.0 before v2.10.0)."""
    return [t for t in _git_lines(repo, "tag", "--list", "--sort=version:refname", "--", pattern) if t]


@dataclass(frozen=True)
class _Ref:
    """A good point the next one diffs against."""

    sha: str
    rev: str
    key: tuple[str | None, str | None, str | None]  # blob oids of the three files
    date: str = ""


class _Walker:
    def __init__(self, repo: str, git: GitReader, options: WalkOptions, cache: DiskCache | None) -> None:
        self.repo = repo
        self.git = git
        self.options = options
        self.cache = cache
        self.engine = Engine(options.overrides)
        self.engine_at: tuple[str | None, str | None, str | None] | None = None
        self._texts: dict[str, str] = {}

    def oids(self, sha: str) -> tuple[str | None, str | None, str | None]:
        native_oid = self.git.blob_id(sha, NATIVE_PATH)
        if native_oid is None:
            raise SourceError(f"no {NATIVE_PATH} at {sha}: not a PyTorch-shaped revision", path=self.repo)
        return native_oid, self.git.blob_id(sha, TAGS_PATH), self.git.blob_id(sha, DERIVATIVES_PATH)

    def _text(self, oid: str, display: str) -> str:
        text = self._texts.get(oid)
        if text is None:
            text = decode(self.git.read_blob(oid, max_size=MAX_FILE_BYTES), display)
            # Keep only the current files' texts: a walk visits each blob version once, in order.
            if len(self._texts) > 8:
                self._texts.clear()
            self._texts[oid] = text
        return text

    def files(self, ref: _Ref, date: str) -> SourceFiles:
        def text_file(oid: str | None, path: str) -> TextFile | None:
            if oid is None:
                return None
            display = f"{ref.rev}:{path}"
            return TextFile(display=display, text=self._text(oid, display))

        m = _RELEASE_TAG.fullmatch(ref.rev.removeprefix("refs/").removeprefix("tags/"))
        meta = SourceMeta(
            kind="git",
            path=f"{self.repo}@{ref.rev}",
            revision=ref.rev,
            commit=ref.sha,
            date=date,
            torch_version=m.group(1) if m else None,
        )
        native_oid, tags_oid, deriv_oid = ref.key
        return SourceFiles(
            meta=meta,
            native_functions=text_file(native_oid, NATIVE_PATH),
            tags=text_file(tags_oid, TAGS_PATH),
            derivatives=text_file(deriv_oid, DERIVATIVES_PATH),
        )

    def _load(self, ref: _Ref) -> dict[str, tuple[OpRecord | None, OpRecord | None]]:
        date = ref.date or self.git.commit_info(ref.sha).date
        try:
            changes = self.engine.load(self.files(ref, date))
        except BaseException:
            # A commit that fails leaves a valid engine where it was; anything else is reloaded.
            if not self.engine.ready:
                self.engine_at = None
            raise
        self.engine_at = ref.key
        return changes

    def measure(self, ref: _Ref, base: _Ref | None) -> tuple[Summary, PointDrift | None]:
        """REF's figures and its drift from BASE, from the cache or the engine."""
        cache = self.cache
        skey = cache.key("summary", *ref.key) if cache else ""
        dkey = cache.key("drift", *base.key, *ref.key) if cache and base else ""
        summary: Summary | None = None
        pdrift: PointDrift | None = None
        if cache is not None:
            raw = cache.get("summary", skey)
            summary = None if raw is None else _summary_from(raw)
            if base is not None:
                rawd = cache.get("drift", dkey)
                pdrift = None if rawd is None else _drift_from(rawd, base.sha)
        if summary is not None and (base is None or pdrift is not None):
            return summary, pdrift
        if base is not None and self.engine_at != base.key:
            self._load(base)
        changes = self._load(ref)
        summary = self.engine.summary()
        if base is not None:
            head_meta = self.engine.meta
            pdrift = point_drift(base.sha, drift_of(changes, head_meta, head_meta))
        if cache is not None:
            cache.put("summary", skey, _summary_to(summary))
            if pdrift is not None:
                cache.put("drift", dkey, _drift_to(pdrift))
        return summary, pdrift


def _one_line(err: OpdriftError) -> str:
    return " ".join(str(err).split())


def walk(
    repo: str,
    options: WalkOptions,
    *,
    progress: Callable[[int, int], None] | None = None,
    warn: Callable[[str], None] | None = None,
) -> Timeline:
    """The timeline of REPO's operator history (module docstring); errors name the commit."""

    def _warn(msg: str) -> None:
        print(f"opdrift: warning: {msg}", file=sys.stderr)

    warn = warn or _warn
    if options.tags is not None and (options.from_rev is not None or options.to_rev != "HEAD"):
        raise HistoryError("--tags walks release tags; it does not combine with --from/--to")
    if options.tags is not None and tuple(options.paths) != DEFAULT_PATHS:
        raise HistoryError("--tags walks every matching tag; it does not combine with --paths")
    with GitReader(repo) as git:
        to_sha = git.resolve(options.to_rev)
        from_sha = git.resolve(options.from_rev) if options.from_rev is not None else None
        paths = check_paths(options.paths) if options.tags is None else ()
        if from_sha is not None and from_sha != to_sha and is_ancestor(repo, to_sha, from_sha):
            # A reversed range lists nothing: say so rather than walk nothing. (FROM need not be an
            # ancestor of TO: a release tag sits on its release branch, and FROM..TO is main's part.)
            raise HistoryError(
                f"--from {options.from_rev} is newer than --to {options.to_rev}: give the older revision as --from",
                path=repo,
            )
        if git.blob_id(to_sha, NATIVE_PATH) is None:
            raise HistoryError(
                f"no {NATIVE_PATH} at {options.to_rev}: not a PyTorch-shaped repository", path=repo
            )
        # (sha, rev as shown in file names, date, subject, the three files' oids or None to look up)
        refs: list[tuple[str, str, str, str, tuple[str | None, str | None, str | None] | None]]
        log: list[LogEntry] = []
        listed: list[LogEntry] = []
        if options.tags is not None:
            names = list_tags(repo, options.tags)
            if not names:
                raise HistoryError(f"no tag matches {options.tags!r}", path=repo)
            refs = []
            for t in names:
                sha = git.resolve(t)
                info = git.commit_info(sha)
                refs.append((sha, t, info.date, info.subject, None))
        else:
            listed = list_commits(repo, from_sha, to_sha, paths)
            log = [e for e in listed if e.counted]
            refs = [(e.sha, e.sha, e.date, e.subject, None) for e in log]
        total = len(refs)
        start, end = 0, total
        shard: Shard | None = None
        if options.shard is not None:
            index, count = options.shard
            start, end = shard_bounds(total, index, count)
            shard = Shard(index=index, count=count, start=start, total=total)
        cache = (
            DiskCache(options.cache_dir, salt=overrides_digest(options.overrides), warn=warn)
            if options.cache_dir
            else None
        )
        walker = _Walker(repo, git, options, cache)

        # The point the first one diffs against: the last good one before it, as a single run sees it.
        base: _Ref | None = None
        candidates = [(refs[i][0], refs[i][1]) for i in range(start - 1, -1, -1)]
        if from_sha is not None and options.tags is None:
            candidates.append((from_sha, options.from_rev or from_sha))
        for sha, rev in candidates:
            try:
                ref = _Ref(sha, rev, walker.oids(sha))
                walker.measure(ref, None)
            except OpdriftError:
                if not options.keep_going:
                    raise
                continue
            base = ref
            break

        # Carry the three files' oids forward through every listed commit's changes (counted or
        # not): no tree lookup per commit.
        if log and start < end:
            first = log[start]
            parent_oids = _oids_before(git, first.sha)
            current = dict(zip(DEFAULT_PATHS, parent_oids, strict=True))
            at = {e.sha: k for k, e in enumerate(listed)}
            k = at[first.sha]
            for i in range(start, end):
                while True:
                    for path, oid in listed[k].changes:
                        if path in current:
                            current[path] = oid
                    k += 1
                    if listed[k - 1].sha == log[i].sha:
                        break
                sha, rev, date, subject, _ = refs[i]
                refs[i] = (
                    sha,
                    rev,
                    date,
                    subject,
                    (current[NATIVE_PATH], current[TAGS_PATH], current[DERIVATIVES_PATH]),
                )

        points: list[Point] = []
        for done, (sha, rev, date, subject, known) in enumerate(refs[start:end], 1):
            tag = rev if options.tags is not None else None
            try:
                if known is None:
                    oids = walker.oids(sha)
                elif known[0] is None:
                    raise SourceError(f"no {NATIVE_PATH} at {sha}: not a PyTorch-shaped revision", path=repo)
                else:
                    oids = known
                ref = _Ref(sha, rev, oids, date)
                summary, pdrift = walker.measure(ref, base)
            except OpdriftError as err:
                if not options.keep_going:
                    raise
                points.append(Point(sha=sha, date=date, subject=subject, tag=tag, error=_one_line(err)))
            else:
                points.append(
                    Point(
                        sha=sha,
                        date=date,
                        subject=subject,
                        tag=tag,
                        entries=summary.entries,
                        operators=summary.operators,
                        base_operators=summary.base_operators,
                        by_category=summary.by_category,
                        drift=pdrift,
                    )
                )
                base = ref
            if progress is not None:
                progress(done, end - start)
    return Timeline(
        repo=repo,
        to_rev=options.to_rev,
        to_sha=to_sha,
        from_rev=options.from_rev,
        from_sha=from_sha,
        paths=paths,
        tags=options.tags,
        buckets=buckets.BUCKETS,
        points=tuple(points),
        shard=shard,
    )


def _oids_before(git: GitReader, sha: str) -> tuple[str | None, str | None, str | None]:
    """The three files' oids in the first parent of commit SHA (all None for a root commit)."""
    try:
        parent = git.resolve(f"{sha}^")
    except GitError:
        return None, None, None
    native_oid, tags_oid, deriv_oid = (git.blob_id(parent, p) for p in DEFAULT_PATHS)
    return native_oid, tags_oid, deriv_oid


def cold_point(files: SourceFiles, overrides: Overrides | None = None) -> Snapshot:
    """A commit's snapshot classified from scratch: the reference the walk must equal."""
    return taxonomy.classify(operators_from_files(files), overrides)
