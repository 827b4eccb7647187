"""Which entries and base operators a change to the operator files can reach.

An entry's operators can change when the entry does, when another entry of its autogen family does
(torchgen derives operators from groups), or when an entry it takes kernels from does
(structured_delegate). A base operator's decision can change when its operators do, when an
operator it delegates to does, or, when a base name appears or disappears, when its rules look at
other names (the twin rules relate names by containment) or its comments announce an alias.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Set
from dataclasses import replace

from opdrift.history.blocks import family
from opdrift.model import Operator, RawEntry
from opdrift.taxonomy.classify import aten_name


def affected_entries(
    changed: Iterable[str], families: Mapping[str, Set[str]], delegators: Mapping[str, Set[str]]
) -> set[str]:
    """The entries whose operators can change when the CHANGED entries did: their autogen families,
    and the entries that take kernels from one of them (structured_delegate), with their families.

    FAMILIES maps `family` keys to entry names, DELEGATORS a delegate's name to the entries naming it.
    """
    pending = list(changed)
    fams = {family(nm) for nm in pending}
    affected: set[str] = set()
    done_fams: set[str] = set()
    done_names: set[str] = set()
    while fams or pending:
        while fams:
            fam = fams.pop()
            if fam in done_fams:
                continue
            done_fams.add(fam)
            for m in families.get(fam, ()):
                if m not in affected:
                    affected.add(m)
                    pending.append(m)
        while pending:
            nm = pending.pop()
            if nm in done_names:
                continue
            done_names.add(nm)
            for d in delegators.get(nm, ()):
                if family(d) not in done_fams:
                    fams.add(family(d))
    return affected


def delegates_needed(affected: Set[str], entries: Mapping[str, RawEntry]) -> set[str]:
    """The entries outside AFFECTED that its entries take kernels from, transitively: built along
    with them so their operators see the kernels, but not replaced."""
    context: set[str] = set()
    todo = list(affected)
    while todo:
        delegate = entries[todo.pop()].data.get("structured_delegate")
        if isinstance(delegate, str) and delegate in entries and delegate not in affected | context:
            context.add(delegate)
            todo.append(delegate)
    return context


def moved(op: Operator, line: int) -> Operator:
    """OP as it would be at LINE."""
    return op if op.line == line else replace(op, line=line)


def changed_operators(removed: Mapping[str, Operator], added: Mapping[str, Operator]) -> set[str]:
    """Names of the operators that came, went, or differ in more than their line."""
    return {
        name
        for name in {*removed, *added}
        if (name in removed) != (name in added) or removed[name] != moved(added[name], removed[name].line)
    }


def bases_of_changed(removed: Mapping[str, Operator], added: Mapping[str, Operator]) -> set[str]:
    """The bases of the operators that came, went, or were rebuilt to something else than a move."""
    changed = changed_operators(removed, added)
    return {removed[n].base for n in changed if n in removed} | {added[n].base for n in changed if n in added}


def twin_bases(
    toggled: Set[str], bases: Iterable[str], alias_words: Mapping[str, frozenset[str]]
) -> set[str]:
    """The bases whose decision may depend on whether a TOGGLED base name exists.

    Rules that look at other base names (twins: svd/linalg_svd, add/add_, special_X/X) relate names by
    containment; re-deciding every base whose name contains a toggled one, or is contained in it,
    covers them all whatever prefix or suffix a rule uses. A base whose comments announce an alias
    of a toggled name may gain or lose that alias.
    """
    out = {x for tb in toggled for x in bases if tb in x or x in tb}
    out.update(base for base, words in alias_words.items() if not words.isdisjoint(toggled))
    return out


def alias_words(ops: Iterable[Operator]) -> frozenset[str]:
    """Names a base's alias comments mention, spelled as ATen names (``torch.linalg.det`` → linalg_det)."""
    words: set[str] = set()
    for op in ops:
        for c in op.comments:
            if "alias" not in c.lower():
                continue
            words.update(aten_name(w) for w in re.findall(r"[A-Za-z_][\w.]*", c))
    return frozenset(words)
