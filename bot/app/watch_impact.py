"""One backend's impact on a pull request as the watch stores it: in the dashboard's hidden state
(`opdrift.app.watch_state`) and in the judgement cache (`opdrift.app.watch_judge`). Written so that it reads
back (an op name the reader would refuse is counted, not named; a form it does not know is dropped),
and read back defensively: the text is untrusted, every field is checked (`StateError` when one does
not read), and the handles come from the config, a stored list only choosing among them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from opdrift.app.watch_breaks import DeclarationError, break_data, read_signatures
from opdrift.app.watch_models import models_data, with_models
from opdrift.coverage.kinds import backend_key, parse_kind
from opdrift.render.context import GAP_FIELDS, GAP_LISTS, BackendGap, BrokenKernel
from opdrift.shapes import INTEGER, LIST, OBJECT, STRING, STRINGS, Kind, Reader

MAX_TEXT = 300  # characters of a stored text (a list's path, a part of a kernel's change, a title)
_NAME = re.compile(r"[A-Za-z0-9_.]{1,200}")  # an operator name, overload included
_FORMS = ("", "int64_t", "SymInt")


class StateError(Exception):
    """The block does not read: the run starts cold (with a warning)."""


def _fail(where: str, message: str) -> StateError:
    return StateError(message)


READ: Reader[str] = Reader(_fail)  # the state's reader: every error a StateError


TEXT: Kind[str] = Kind(
    f"a string of at most {MAX_TEXT} characters", lambda v: isinstance(v, str) and len(v) <= MAX_TEXT
)
COUNT: Kind[int] = Kind("a count", lambda v: INTEGER.accepts(v) and 0 <= v < 10**7)
_NAMES: Kind[tuple[str, ...]] = Kind(
    "a list of operator names", lambda v: STRINGS.accepts(v) and all(_NAME.fullmatch(x) for x in v), tuple
)
_HANDLES: Kind[tuple[str, ...]] = Kind(
    "a list of handles",
    lambda v: STRINGS.accepts(v) and len(v) <= 100 and all(len(x) <= 100 for x in v),
    tuple,
)


def _handle(h: str) -> str:
    return h.lstrip("@").lower()[:100]


def read_impact(d: Any, where: str, who: Mapping[str, tuple[str, ...]]) -> BackendGap | None:
    """One backend's impact as `impact_data` wrote it (StateError when it does not read); None when
    the config (WHO: backend key → handles) no longer subscribes that backend."""
    d = READ.read(OBJECT, d, where, where)
    keys = ("kind", "where", "needs", "breaks", "removes", "more")
    READ.exact_keys(d, keys, where, where, optional=("who", "also", "models"))
    kind = parse_kind(READ.field(STRING, d, "kind", f"{where}.kind", where))
    if kind is None:
        raise StateError(f"{where}.kind: unknown kind")
    path = READ.field(TEXT, d, "where", f"{where}.where", where)
    items: list[Any] = READ.field(LIST, d, "breaks", f"{where}.breaks", where)
    broken = tuple(_broken(item, f"{where}.breaks[{i}]") for i, item in enumerate(items))
    more = READ.field(LIST, d, "more", f"{where}.more", where)
    if len(more) != 3 or not all(COUNT.accepts(m) for m in more):
        raise StateError(f"{where}.more: expected three counts")
    key = backend_key(kind, path)
    if key not in who:
        return None  # the config no longer subscribes this backend: its part of the row goes
    handles = who[key]
    if "who" in d:  # the subscriptions that matched: a choice among the config's handles, never more
        stored: tuple[str, ...] = READ.field(_HANDLES, d, "who", f"{where}.who", where)
        handles = tuple(h for h in handles if _handle(h) in stored) or handles
    needs: tuple[str, ...] = READ.field(_NAMES, d, "needs", f"{where}.needs", where)
    removes: tuple[str, ...] = READ.field(_NAMES, d, "removes", f"{where}.removes", where)
    also = _also(d["also"], f"{where}.also") if "also" in d else {}
    lists = {"ops": needs, "broken": broken, "removed": removes, **{f: ops for f, (ops, _) in also.items()}}
    counts = {"ops": more[0], "broken": more[1], "removed": more[2], **{f: n for f, (_, n) in also.items()}}
    impact = BackendGap(handles, kind, path, ()).with_lists(lists, counts)
    return with_models(impact, d.get("models"))  # with its model counts, when they read


def _also(d: Any, where: str) -> dict[str, tuple[tuple[str, ...], int]]:
    """The other lists as `impact_data` wrote them: {field: [ops, more]}, fields of GAP_LISTS only."""
    d = READ.read(OBJECT, d, where, where)
    out = {}
    for g in GAP_LISTS:
        if g.field not in d:
            continue
        at = f"{where}.{g.field}"
        item = READ.read(LIST, d[g.field], at, at)
        if len(item) != 2 or not COUNT.accepts(item[1]):
            raise StateError(f"{at}: expected [ops, more]")
        out[g.field] = (READ.read(_NAMES, item[0], at, at), item[1])
    if len(out) != len(d):
        raise StateError(f"{where}: an unknown list")
    return out


def _broken(item: Any, at: str) -> BrokenKernel:
    """One broken kernel as `break_data` wrote it: [op, form, parts] or [op, form, parts, signatures]."""
    b = READ.read(LIST, item, at, at)
    if len(b) not in (3, 4):
        raise StateError(f"{at}: expected [op, form, parts] or [op, form, parts, signatures]")
    op = READ.read(_NAMES, [b[0]], at, at)[0]
    form = READ.read(TEXT, b[1], at, at)
    if form not in _FORMS:
        raise StateError(f"{at}: unknown form")
    parts = []
    for p in READ.read(LIST, b[2], at, at):
        part = READ.read(STRINGS, p, at, at)
        if len(part) != 3 or any(len(x) > MAX_TEXT for x in part):
            raise StateError(f"{at}: a part is [where, before, after]")
        parts.append((part[0], part[1], part[2]))
    try:
        sigs = read_signatures(b[3], at) if len(b) == 4 else (None, None)
    except DeclarationError as err:
        raise StateError(str(err)) from None
    return BrokenKernel(op, form, tuple(parts), *sigs)


def _readable(i: BackendGap) -> BackendGap:
    """I without the op names the reader refuses (counted instead), so that one odd name costs its
    mention in a list, not the row."""
    names = {f: tuple(o for o in getattr(i, f) if _NAME.fullmatch(o)) for f in GAP_FIELDS if f != "broken"}
    broken = tuple(
        replace(b, form=b.form if b.form in _FORMS else "") for b in i.broken if _NAME.fullmatch(b.op)
    )
    kept: dict[str, tuple[object, ...]] = {**names, "broken": broken}
    return i.with_lists(kept, {f: i.more_of(f) + len(getattr(i, f)) - len(kept[f]) for f in GAP_FIELDS})


def impact_data(impact: BackendGap) -> dict[str, object]:
    i = _readable(impact)
    also = i.also()
    return {
        "kind": i.kind,
        "where": i.where[:MAX_TEXT],
        # without their "@": the issue body mentions nobody, not even in its hidden block
        "who": [_handle(h) for h in i.who[:100]],
        "needs": list(i.ops),
        "breaks": [break_data(b, MAX_TEXT) for b in i.broken],
        "removes": list(i.removed),
        "more": [i.more_of("ops"), i.more_of("broken"), i.more_of("removed")],
        **({"also": {g.field: [list(ops), more] for g, ops, more in also}} if also else {}),
        **models_data(i),
    }
