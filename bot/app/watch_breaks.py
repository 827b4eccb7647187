"""What the watch state keeps of a build break beyond its op and verdict: a broken kernel's C++
declarations before and after (written only when they would read back, read back defensively), and
how long a landed PR that breaks a build stays atop the dashboard (until its box is ticked, or for
BROKE_DAYS). `opdrift.app.watch_impact` writes and reads the rest of an impact, `opdrift.app.watch_state` the
rest of the block; this module is their part for the declarations and landed breaks, kept apart so
that each stays small.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

from opdrift.render.context import BrokenKernel
from opdrift.schema.kernel import KERNEL_FORMS, KernelSignature
from opdrift.shapes import LIST, STRINGS, Reader

BROKE_DAYS = 14  # how long a landed break stays atop the dashboard when nobody ticks it off
# Characters of an issue body read for ticked boxes: GitHub's bodies hold 65,536, so past this
# nothing is GitHub's (`opdrift.app.watch_state.read_state` reads as much for the block).
_BODY_READ = 130_000

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,100}")
_CPP_TYPE = re.compile(r"[A-Za-z0-9_:<>,&*. ]{1,300}")  # how `opdrift.schema.kernel` spells a C++ type
_MAX_PARAMS = 100


class DeclarationError(Exception):
    """A stored declaration is not one this code writes (the state reader makes it its own error)."""


def _fail(where: str, message: str) -> DeclarationError:
    return DeclarationError(message)


_READ: Reader[str] = Reader(_fail)


def _signature(d: Any, at: str) -> KernelSignature:
    """[form, returns, [[type, name], ...]] as `signature_data` wrote it."""
    x = _READ.read(LIST, d, at, at)
    if len(x) != 3 or x[0] not in KERNEL_FORMS or not (isinstance(x[1], str) and _CPP_TYPE.fullmatch(x[1])):
        raise DeclarationError(f"{at}: a signature is [form, returns, parameters]")
    params = _READ.read(LIST, x[2], at, at)
    if len(params) > _MAX_PARAMS:
        raise DeclarationError(f"{at}: over {_MAX_PARAMS} parameters")
    types, names = [], []
    for p in params:
        pair = _READ.read(STRINGS, p, at, at)
        if len(pair) != 2 or not _CPP_TYPE.fullmatch(pair[0]) or not _IDENT.fullmatch(pair[1]):
            raise DeclarationError(f"{at}: a parameter is [type, name]")
        types.append(pair[0])
        names.append(pair[1])
    return KernelSignature(x[0], x[1], tuple(types), tuple(names))


def read_signatures(d: Any, at: str) -> tuple[KernelSignature, KernelSignature]:
    """The [before, after] signatures of a broken kernel, as `break_data` wrote them."""
    pair = _READ.read(LIST, d, at, at)
    if len(pair) != 2:
        raise DeclarationError(f"{at}: expected the signatures [before, after]")
    return _signature(pair[0], at), _signature(pair[1], at)


def _signature_data(sig: KernelSignature) -> list[object]:
    return [sig.form, sig.returns, [[t, n] for t, n in zip(sig.parameters, sig.names, strict=True)]]


def break_data(b: BrokenKernel, max_text: int) -> list[object]:
    """B as the state writes it: [op, form, parts] (each part's texts cut to MAX_TEXT), and its
    declarations when they would read back."""
    parts = [[w[:max_text], x[:max_text], y[:max_text]] for w, x, y in b.parts]
    sigs = _signatures_data(b.before, b.after)
    return [b.op, b.form, parts] if sigs is None else [b.op, b.form, parts, sigs]


def _signatures_data(before: KernelSignature | None, after: KernelSignature | None) -> list[object] | None:
    """BEFORE and AFTER as the state writes them, or None when either is missing or would not read
    back (then the break is kept without its declarations)."""
    if before is None or after is None:
        return None
    for s in (before, after):
        if not (
            len(s.names) == len(s.parameters) <= _MAX_PARAMS
            and _CPP_TYPE.fullmatch(s.returns)
            and all(_CPP_TYPE.fullmatch(t) for t in s.parameters)
            and all(_IDENT.fullmatch(n) for n in s.names)
        ):
            return None
    return [_signature_data(before), _signature_data(after)]


_TICKED = re.compile(r"^[ \t]*[-*] \[[xX]\] [^\n]*<!-- opdrift:landed ([0-9]{1,10}) -->[ \t]*$", re.MULTILINE)


def ticked(body: str | None) -> frozenset[int]:
    """The landed PRs whose box a maintainer ticked in the dashboard's BODY (`LANDED_MARK` lines)."""
    if not body:
        return frozenset()
    return frozenset(int(m.group(1)) for m in _TICKED.finditer(body[:_BODY_READ]))


def expired(landed_at: str, now: str | None) -> bool:
    """Whether a landed break seen at LANDED_AT is older than BROKE_DAYS at NOW (a watermark)."""
    if now is None:
        return False
    try:
        then, at = (datetime.fromisoformat(t.replace("Z", "+00:00")) for t in (landed_at, now))
    except ValueError:
        return True
    return at - then > timedelta(days=BROKE_DAYS)
