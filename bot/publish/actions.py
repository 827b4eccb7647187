"""GitHub Actions conventions: the job summary file and ``::warning`` workflow-command lines (no network)."""

from __future__ import annotations

from collections.abc import Sequence

from bot.drift.changes import Change
from bot.errors import PublishError
from bot.model import NATIVE_PATH


def append_step_summary(path: str, text: str) -> None:
    """Append to the file Actions names in GITHUB_STEP_SUMMARY (the caller reads the variable)."""
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(text if text.endswith("\n") else text + "\n")
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


_FLAGS = ("needs_kernel", "breaking", "new_core", "now_decomposes")
# Actions shows only the first few annotations of a step; more would only bury the important ones.
MAX_ANNOTATIONS = 50


def annotation_lines(changes: Sequence[Change], *, limit: int = MAX_ANNOTATIONS) -> list[str]:
    """``::warning`` lines at the head-side line of each new or changed operator, most urgent first.

    Changes that only touch which in-tree backends have kernels are left out (news for one backend,
    noise in everyone's diff view).
    """
    shown = [c for c in changes if c.after is not None and not c.kernels_only]
    shown.sort(key=lambda c: tuple(not getattr(c, f) for f in _FLAGS))
    lines = []
    for c in shown[:limit]:
        flags = "".join(f"; {f.replace('_', ' ')}" for f in _FLAGS if getattr(c, f))
        message = f"operator {c.name} {c.kind} ({c.category}){flags}"
        lines.append(workflow_command("warning", message, file=NATIVE_PATH, line=c.line, title="opdrift"))
    if len(shown) > limit:
        lines.append(workflow_command("notice", f"{len(shown) - limit} more changed operators not annotated"))
    return lines
