"""GitHub Actions conventions: the job summary file and ``::warning`` workflow-command lines (no network)."""

from __future__ import annotations

import os
from collections.abc import Sequence

from opdrift.drift.changes import Change
from opdrift.drift.flags import ANNOTATED
from opdrift.errors import PublishError
from opdrift.model import NATIVE_PATH

# GitHub rejects a step's summary file over 1 MiB (and then shows none of it), counted in bytes.
STEP_SUMMARY_BYTES = 1024 * 1024
_CUT_NOTE = "\n\n*… cut here: the job summary is limited to 1 MiB per step; the full report is in the log or artifact.*\n"


def cap_summary(text: str, room: int) -> str:
    """TEXT, or its longest prefix ending on a line break that fits ROOM bytes with the cut note."""
    data = text.encode("utf-8")
    if len(data) <= room:
        return text
    note = _CUT_NOTE.encode("utf-8")
    keep = data[: max(0, room - len(note))]
    cut = keep.rfind(b"\n")
    keep = keep[: cut + 1] if cut >= 0 else b""
    return (keep + note).decode("utf-8", errors="ignore") if len(keep) + len(note) <= room else ""


def append_step_summary(path: str, text: str, *, limit: int = STEP_SUMMARY_BYTES) -> None:
    """Append to the file Actions names in GITHUB_STEP_SUMMARY (the caller reads the variable).

    The file is the step's own, so what earlier writes of this step left counts against LIMIT: the
    text is cut on a line break, with a note, rather than push the file over and lose all of it.
    """
    body = text if text.endswith("\n") else text + "\n"
    try:
        used = os.path.getsize(path) if os.path.exists(path) else 0
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(cap_summary(body, limit - used))
    except OSError as err:
        raise PublishError(f"cannot write the job summary: {err.strerror}", path=path) from None


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


def workflow_command(command: str, message: str, **properties: str | int | None) -> str:
    """One ``::command key=value,...::message`` line, escaped as GitHub's toolkit escapes them."""
    props = ",".join(f"{k}={_escape_property(str(v))}" for k, v in properties.items() if v is not None)
    return f"::{command}{' ' + props if props else ''}::{_escape_data(message)}"


# GitHub keeps at most 10 annotations of each level per step and drops the rest silently, so the
# most urgent ten are shown and one notice names the others.
MAX_ANNOTATIONS = 10
# The notice is one line; past this many names it ends with a count.
MAX_NAMED = 40


def annotation_lines(changes: Sequence[Change], *, limit: int = MAX_ANNOTATIONS) -> list[str]:
    """``::warning`` lines at the head-side line of each new or changed operator, most urgent first
    (by the flags of `opdrift.drift.flags` that annotate, in the table's order), naming those flags.

    Changes that only touch which in-tree backends have kernels are left out (news for one backend,
    noise in everyone's diff view).
    """
    shown = [c for c in changes if c.after is not None and not c.kernels_only]
    shown.sort(key=lambda c: tuple(not f(c) for f in ANNOTATED))
    lines = []
    for c in shown[:limit]:
        flags = "".join(f"; {f.words}" for f in ANNOTATED if f(c))
        message = f"operator {c.name} {c.kind} ({c.category}){flags}"
        lines.append(workflow_command("warning", message, file=NATIVE_PATH, line=c.line, title="opdrift"))
    rest = [c.name for c in shown[limit:]]
    if rest:
        named = ", ".join(rest[:MAX_NAMED]) + (
            f" and {len(rest) - MAX_NAMED} more" if len(rest) > MAX_NAMED else ""
        )
        lines.append(
            workflow_command(
                "notice", f"{len(rest)} more changed operators not annotated: {named}", title="opdrift"
            )
        )
    return lines
