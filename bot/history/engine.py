"""The incremental classifier of a history walk: one commit's classified state, moved forward by what changed.

1. native_functions.yaml is cut into entry blocks (`opdrift.history.blocks`). Between two commits only
   the blocks around the changed bytes are re-cut, and a block is parsed once per distinct text
   (cache by content), with its lines relative to the block, so an insertion above it costs nothing.
2. The operators of the entries a change can reach (`opdrift.history.reach`) are built from those
   entries alone (`native.build_operators`).
3. Only the base operators that can see the change are re-decided, by the taxonomy's own
   per-base-operator decision. A derivatives.yaml change re-decides the bases whose formula status
   moved; a tags.yaml change, a change of the codegen's rules (version.txt crossed a release whose
   codegen differs), or anything the engine does not expect (a duplicate name, an unparsable
   block), rebuilds cold from the whole file.
4. What changed comes back as the changed records, before and after; `figures.drift_of` turns
   them into the drift the whole snapshots would give.

Lines: records keep the line they had when last built; `Engine.snapshot()` refreshes them (and
re-decides the whole set, because decision reasons quote lines) to give the exact cold snapshot.
The timeline's counts and drifts never depend on lines.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from opdrift.errors import OpdriftError, SourceError
from opdrift.history import reach
from opdrift.history.blocks import ODD_BREAKS, ParsedBlock, Rebuild, Recut, entry_name, line_count
from opdrift.history.entrymap import EntryChange, EntryMap
from opdrift.history.figures import Changes, Summary, changes_between, same_record, summary_of
from opdrift.model import (
    NATIVE_PATH,
    Decision,
    Operator,
    OperatorSet,
    OpRecord,
    Signals,
    Snapshot,
    SourceFiles,
    SourceMeta,
)
from opdrift.operators import native
from opdrift.operators.codegen import NEWEST
from opdrift.operators.entries import read_entries
from opdrift.pipeline import codegen_of, operators_from_files
from opdrift.signals.table import pick_release
from opdrift.taxonomy import classify as taxonomy
from opdrift.taxonomy.overrides import Overrides


@dataclass(frozen=True)
class _OperatorSwap:
    """The operators a step took out (by name) and the ones it put in; a name may be in both."""

    removed: Mapping[str, Operator]
    added: Mapping[str, Operator]


class Engine:
    """The classified state of one commit, moved forward commit by commit (module docstring).

    `load(files)` sets the state from a commit's files and returns what changed since the last
    state as name → (before, after) records of the changed operators.
    """

    def __init__(self, overrides: Overrides | None = None) -> None:
        self.overrides = overrides
        self._parsed: dict[str, ParsedBlock] = {}  # block text → parse (content cache)
        self._derivs: dict[str, frozenset[str] | None] = {}  # derivatives text → names
        self._valid = False  # the state is a whole commit's
        self._blocks_ok = False  # ...and cut into entry blocks, so the next commit can be a step
        self.stats = Counter[str]()
        self._reset()

    def _reset(self) -> None:
        self.meta = SourceMeta(kind="git", path="")
        self.display = ""
        self.tags_text: str | None = None
        self.codegen = NEWEST  # the rules the state was built by: those of its version.txt
        self.derivatives_text: str | None = None
        self.derivatives: frozenset[str] | None = None
        self.aliases: Mapping[str, str] = {}
        self.signals: Signals | None = None
        self.signals_key: object = None
        self.entry_map = EntryMap()
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
        self.tag_count: Counter[str] = Counter()  # tag → operators carrying it
        self.source_tags: frozenset[str] = frozenset()
        self.entries = 0
        self._all_bases: frozenset[str] | None = None

    # --- public ---------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """The state is a whole commit's (false after a failure in the middle of a step)."""
        return self._valid

    def load(self, files: SourceFiles) -> Changes:
        """Move to FILES' state; the changed operators as name → (before, after) records."""
        if files.native_functions is None:
            raise SourceError(f"no {NATIVE_PATH}: not a PyTorch revision", path=files.meta.path)
        before = dict(self.records) if self._valid else {}
        tags_text = None if files.tags is None else files.tags.text
        # New codegen rules, or new Python-side facts (another version's table, or edited files), can
        # move any decision.
        fresh = _signals_key(files) != self.signals_key
        stale = tags_text != self.tags_text or codegen_of(files) != self.codegen or fresh
        if not (self._valid and self._blocks_ok) or stale:
            return self._cold(files, before)
        try:
            return self._step(files)
        except Rebuild:
            self.stats["rebuilds"] += 1
            return self._cold(files, before)

    def summary(self) -> Summary:
        return summary_of(self.entries, len(self.records), self.decisions)

    def snapshot(self) -> Snapshot:
        """The snapshot cold classification gives for the current commit (lines refreshed), but for
        the parse's warnings, which a walk does not keep."""
        return taxonomy.classify(self._opset(), self.overrides)

    # --- cold ------------------------------------------------------------------------------

    def _cold(self, files: SourceFiles, before: Mapping[str, OpRecord]) -> Changes:
        """Build everything from the whole file (first commit, tags.yaml change, fallback)."""
        self.stats["cold"] += 1
        native_file = files.native_functions
        if native_file is None:  # checked by load
            raise SourceError(f"no {NATIVE_PATH}", path=files.meta.path)
        opset = operators_from_files(files)  # the canonical errors come from here
        snap = taxonomy.classify(opset, self.overrides)
        self._valid = False
        self._reset()
        self.meta, self.display = files.meta, native_file.display
        self.codegen = codegen_of(files)
        self.entry_map.text = native_file.text
        self.tags_text = None if files.tags is None else files.tags.text
        self.derivatives_text = None if files.derivatives is None else files.derivatives.text
        self.derivatives = opset.derivatives
        if files.derivatives is not None:
            self._derivs[files.derivatives.text] = opset.derivatives
        self.aliases = opset.aliases
        self.signals, self.signals_key = opset.signals, _signals_key(files)
        self.entries = opset.entries
        self.records = dict(snap.operators)
        self.decisions = dict(snap.decisions)
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
            self.alias_words[base] = reach.alias_words(self.ops[n] for n in names)
        self.tag_count = Counter(t for op in opset.operators for t in op.tags)
        self.source_tags = frozenset(self.tag_count)
        ok = not ODD_BREAKS.search(native_file.text) and not opset.aliases
        if ok:
            try:
                ok = self._cut_blocks(opset)
            except Rebuild:
                ok = False
        # Without blocks every later commit is built cold too: slower, never wrong. The records are
        # whole either way, and the next commit's drift is taken from them.
        self._valid = True
        self._blocks_ok = ok
        return changes_between(before, self.records)

    def _cut_blocks(self, opset: OperatorSet) -> bool:
        listed = self.entry_map.cut(self.entry_map.text, self._parse)
        if listed is None:
            return False
        by_line: dict[int, list[Operator]] = defaultdict(list)
        for op in opset.operators:
            by_line[op.line].append(op)
        for line, name in listed:
            ops = by_line.get(line, [])
            self.owned[name] = tuple(op.name for op in ops)
            for op in ops:
                self.op_owner[op.name] = name
        # Every operator must belong to an entry of some block, or the blocks disagree with the file.
        return len(self.op_owner) == len(self.ops) and len(listed) == opset.entries

    def _parse(self, chunk: str) -> ParsedBlock:
        hit = self._parsed.get(chunk)
        if hit is not None:
            self.stats["block_hits"] += 1
            return hit
        self.stats["block_parses"] += 1
        try:
            entries = read_entries(chunk, self.display)
        except OpdriftError as err:
            raise Rebuild from err
        for raw in entries:
            if not isinstance(raw.data.get("func"), str):
                raise Rebuild
        parsed = ParsedBlock(entries=entries, lines=line_count(chunk))
        self._parsed[chunk] = parsed
        return parsed

    def _current(self, op: Operator) -> Operator:
        """OP with its line as of the current text."""
        return reach.moved(op, self.entry_map.line(self.op_owner[op.name]))

    # --- incremental ---------------------------------------------------------------------------

    def _step(self, files: SourceFiles) -> Changes:
        native_file = files.native_functions
        if native_file is None:
            raise Rebuild
        self.display = native_file.display
        emap = self.entry_map
        cut, change = emap.recut(native_file.text, self._parse)
        if emap.defines_twice(change):
            self._duplicate(cut, change, files)
        derivs = self._derivatives(files)

        # --- from here on the state changes: invalid until the step completes ---
        self._valid = False
        emap.apply(cut, change, native_file.text)
        self.meta = files.meta
        self.entries += len(change.added) - len(change.removed)
        affected = reach.affected_entries(
            [*change.removed, *change.added_names], emap.family, emap.delegators
        )
        build = sorted(affected | reach.delegates_needed(affected, emap.raw), key=emap.line)
        made = self._build_operators(build, affected, files)
        swap = self._swap_operators(change.removed, affected, made)
        touched = self._bases_to_redecide(cut, swap, derivs, files)
        changes = self._redecide(touched)
        self._valid = True
        self.stats["steps"] += 1
        self.stats["rebuilt_entries"] += len(build)
        self.stats["redecided"] += len(touched)
        return changes

    def _build_operators(
        self, build: Sequence[str], affected: Iterable[str], files: SourceFiles
    ) -> dict[str, list[Operator]]:
        """The operators the BUILD entries (in file order) make, by the AFFECTED entry that owns them;
        the other entries of BUILD are there only for the kernels they lend."""
        entries = tuple(self.entry_map.entry(nm) for nm in build)
        try:
            opset = native.build_operators(
                entries,
                meta=files.meta,
                native_display=self.display,
                tags=files.tags,
                derivatives=None,
                codegen=self.codegen,
            )
        except OpdriftError as err:
            raise Rebuild from err
        owner_of_line = {self.entry_map.line(nm): nm for nm in affected}
        made: dict[str, list[Operator]] = defaultdict(list)
        for op in opset.operators:
            owner = owner_of_line.get(op.line)
            if owner is not None:
                made[owner].append(op)
        return made

    def _swap_operators(
        self, removed_entries: Iterable[str], affected: Iterable[str], made: Mapping[str, list[Operator]]
    ) -> _OperatorSwap:
        """Take out the operators of the removed and affected entries, put in those MADE for the latter."""
        removed: dict[str, Operator] = {}
        for nm in {*removed_entries, *affected}:
            for op_name in self.owned.pop(nm, ()):
                removed[op_name] = self.ops.pop(op_name)
                del self.op_owner[op_name]
        added: dict[str, Operator] = {}
        for nm in affected:
            ops = made.get(nm, [])
            self.owned[nm] = tuple(op.name for op in ops)
            for op in ops:
                if op.name in self.ops or op.name in added:
                    raise Rebuild
                added[op.name] = op
                self.op_owner[op.name] = nm
        self.ops.update(added)
        return _OperatorSwap(MappingProxyType(removed), MappingProxyType(added))

    def _bases_to_redecide(
        self, cut: Recut, swap: _OperatorSwap, derivs: frozenset[str] | None, files: SourceFiles
    ) -> set[str]:
        """Every base operator whose decision or records SWAP and the derivatives change can reach
        (`opdrift.history.reach`); the base, delegate, tag and alias indexes are brought up to date."""
        # An entry in the re-cut region may have moved past others of its base (kept by its text, or
        # rebuilt to an operator equal but for its line), and a base without a default overload is
        # judged by its first entry in file order: re-decide the bases of every entry in the region.
        touched = {entry_name(r).split(".", 1)[0] for blk in cut.blocks for r in blk.parsed.entries}
        touched |= reach.bases_of_changed(swap.removed, swap.added)
        toggled = self._reindex_operators(swap)
        for name in reach.changed_operators(swap.removed, swap.added):
            touched.update(self.ops[d].base for d in self.delegators.get(name, ()))
        touched |= self._derivatives_moved(derivs, files)
        if toggled:
            self._all_bases = None
            touched |= reach.twin_bases(toggled, self.base_ops.keys(), self.alias_words)
        if self._retag(swap):
            # a tag appeared or vanished in the whole source: rules such as "the source predates tag
            # pointwise" may flip for any base
            touched.update(self.base_ops)
            touched.update(self.decisions)
        for base in touched:
            if base in self.base_ops:
                self.alias_words[base] = reach.alias_words(self.ops[nm] for nm in self.base_ops[base])
            else:
                self.alias_words.pop(base, None)
        return touched

    def _reindex_operators(self, swap: _OperatorSwap) -> set[str]:
        """Move SWAP into the base and delegate indexes; the base names that appeared or vanished."""
        for name, op in swap.removed.items():
            self.base_ops[op.base].discard(name)
            if op.structured_delegate is not None:
                self.delegators[op.structured_delegate].discard(name)
        for name, op in swap.added.items():
            self.base_ops.setdefault(op.base, set()).add(name)
            if op.structured_delegate is not None:
                self.delegators[op.structured_delegate].add(name)
        toggled: set[str] = set()
        for op in swap.removed.values():
            if not self.base_ops.get(op.base):
                self.base_ops.pop(op.base, None)
                toggled.add(op.base)
        toggled.update(op.base for op in swap.added.values() if op.base not in self.rec_names)
        return toggled

    def _derivatives_moved(self, derivs: frozenset[str] | None, files: SourceFiles) -> set[str]:
        """Take the commit's derivatives.yaml; the bases whose formula status may have moved."""
        touched: set[str] = set()
        if derivs != self.derivatives:
            moved = (derivs or frozenset()) ^ (self.derivatives or frozenset())
            if (derivs is None) != (self.derivatives is None):
                moved = frozenset(self.ops)
            for name in moved:
                base = name.split(".", 1)[0]
                touched.update((base, base + "_"))
            self.derivatives = derivs
        self.derivatives_text = None if files.derivatives is None else files.derivatives.text
        return touched

    def _retag(self, swap: _OperatorSwap) -> bool:
        """Count SWAP's tags; whether the set of tags the whole source carries changed."""
        for op in swap.removed.values():
            self.tag_count.subtract(op.tags)
        for op in swap.added.values():
            self.tag_count.update(op.tags)
        source_tags = frozenset(t for t, k in self.tag_count.items() if k > 0)
        if source_tags == self.source_tags:
            return False
        self.source_tags = source_tags
        return True

    def _duplicate(self, cut: Recut, change: EntryChange, files: SourceFiles) -> None:
        """Raise the codegen's own error for an entry defined twice, without a cold rebuild.

        The whole-file build validates every entry, then fails on the first name defined a second
        time, in file order. Every entry that stays was valid before, so building the new entries
        plus the old definitions of their names, in file order, raises that same first error.
        """
        entries = self.entry_map.definitions_of_added(cut, change)
        try:
            native.build_operators(
                entries, meta=files.meta, native_display=self.display, tags=files.tags, codegen=self.codegen
            )
        except OpdriftError:
            self.stats["duplicates"] += 1
            raise
        raise Rebuild  # not the failure expected: let the whole-file build decide

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
                raise Rebuild from err
        return self._derivs[text]

    # --- decisions -------------------------------------------------------------------------------

    def _redecide(self, bases: Iterable[str]) -> Changes:
        if self._all_bases is None:
            self._all_bases = frozenset(self.base_ops)
        changes: Changes = {}
        for base in sorted(bases):
            old_names = self.rec_names.pop(base, ())
            self.decisions.pop(base, None)
            new_records = self._decide(base, self._all_bases) if self.base_ops.get(base) else {}
            for nm in old_names:
                old = self.records.pop(nm)
                new_rec = new_records.get(nm)
                if new_rec is None or not same_record(old, new_rec):
                    changes[nm] = (old, new_rec)
            for nm, rec in new_records.items():
                self.records[nm] = rec
                if nm not in old_names:
                    changes[nm] = (None, rec)
            if new_records:
                self.rec_names[base] = tuple(new_records)
        return changes

    def _decide(self, base: str, all_bases: frozenset[str]) -> dict[str, OpRecord]:
        """Decide BASE as cold classification does, and return its operators' records."""
        # in name order, as a cold parse hands them over (alias comments: the first one wins)
        ops = [self._current(self.ops[nm]) for nm in sorted(self.base_ops[base])]
        helpers = {
            o.structured_delegate: self._current(self.ops[o.structured_delegate])
            for o in ops
            if o.structured_delegate is not None and o.structured_delegate in self.ops
        }
        # The base's operators and those they take kernels from, in the order a set of them would
        # hand over; the rules get the whole source's views, not this set's.
        subset = tuple({**helpers, **{o.name: o for o in ops}}.values())
        bop = taxonomy.base_operator(
            base,
            tuple(o for o in subset if o.base == base),
            bases=all_bases,
            kernels=MappingProxyType(taxonomy.resolved_kernels(subset)),
            aliases=self.aliases,
            source_tags=self.source_tags,
            signals=self.signals,
        )
        decision = taxonomy.decide_base(bop, self.overrides)
        self.decisions[base] = decision
        return taxonomy.base_records(bop, decision, self.derivatives)

    def _opset(self) -> OperatorSet:
        ops = tuple(sorted((self._current(op) for op in self.ops.values()), key=lambda o: o.name))
        return OperatorSet(
            meta=self.meta,
            operators=ops,
            entries=self.entries,
            native_display=self.display,
            derivatives=self.derivatives,
            aliases=self.aliases,
            signals=self.signals,
        )


def _signals_key(files: SourceFiles) -> object:
    """What the Python-side facts of FILES depend on: their own files, else the table's release."""
    return pick_release(files.meta.torch_version), tuple((p, f.text) for p, f in files.python_side)
