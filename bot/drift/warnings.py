"""HEAD's parse warnings as a report shows them: at their entry's line of native_functions.yaml, news only.

The parse keeps going past what it can read but PyTorch's codegen may not: an unknown key, a tag that
tags.yaml does not define, an entry whose family no longer groups (autogen would make a second op of
that name). Before, these reached only the CI log; a PR author who caused one never saw it.

A report lists the warnings HEAD's parse gives and BASE's did not. Snapshots keep their parse's
warnings, so a report made from two stored snapshots, as the action makes it, lists them too. A
snapshot written before opdrift stored them records none, so then all of HEAD's are listed; the
released files from 2.0.0 on give none.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from opdrift.text import one_line, shorten

# Longest message a report shows: an unknown key's name comes from the file and may be long.
MAX_MESSAGE = 300
_LOCATED = re.compile(r"([0-9]+): (.*)", re.DOTALL)


@dataclass(frozen=True)
class SourceWarning:
    """One warning of the parse: its line of native_functions.yaml (None: no line) and what it says."""

    line: int | None
    message: str
    more: int = 0  # other lines that gave the same message (a key PyTorch starts using on every entry)


def locate(warning: str, display: str) -> SourceWarning:
    """``DISPLAY:LINE: message`` (how the parse words its warnings) → line and message.

    The file's name stays out of the message: it is the name this run gave the file, which for a
    checkout is a path on the runner, and the report already says which file it means.
    """
    prefix = f"{display}:"
    if display and warning.startswith(prefix):
        m = _LOCATED.fullmatch(warning, len(prefix))
        if m is not None:
            return SourceWarning(int(m.group(1)), _clean(m.group(2), display))
    return SourceWarning(None, _clean(warning, display))


def _clean(message: str, display: str) -> str:
    if display:
        message = message.replace(display, "native_functions.yaml")
    return shorten(one_line(message), MAX_MESSAGE)


def new_warnings(
    head: Sequence[str], head_display: str, base: Sequence[str] = (), base_display: str = ""
) -> tuple[SourceWarning, ...]:
    """HEAD's warnings that BASE's parse did not give too, in HEAD's order, one per message.

    Compared by message without the line, since an edit above moves every line below it. A message
    given on many lines is listed once, at its first line, with the number of the others.
    """
    known = {locate(w, base_display).message for w in base}
    first: dict[str, SourceWarning] = {}
    repeats: dict[str, int] = {}
    # the same warning twice on one line (``tags: [x, x]``) is one line
    for located in dict.fromkeys(locate(w, head_display) for w in head):
        if located.message in known:
            continue
        if located.message in first:
            repeats[located.message] = repeats.get(located.message, 0) + 1
        else:
            first[located.message] = located
    return tuple(replace(w, more=repeats.get(m, 0)) for m, w in first.items())
