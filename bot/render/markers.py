"""The drift report formats, and the hidden markers by which the publisher finds the bot's own posts.

`opdrift.publish` searches GitHub for these strings (and nobody else's), so they live in this small module
that imports nothing heavy: the publisher may import it without loading the renderer.
"""

from __future__ import annotations

import re
from typing import Literal

from opdrift.text import Safe

Format = Literal["text", "markdown", "json", "pr-comment", "weekly-issue", "job-summary"]
FORMATS: tuple[Format, ...] = ("text", "markdown", "json", "pr-comment", "weekly-issue", "job-summary")

PR_COMMENT_MARKER = "<!-- opdrift:pr-comment -->"
WEEKLY_ISSUE_MARKER = "<!-- opdrift:weekly -->"
JOB_SUMMARY_MARKER = "<!-- opdrift:job-summary -->"
REPORT_MARKER = "<!-- opdrift:report -->"
# `opdrift watch`: the one dashboard issue, and each run's comment on it (opdrift.render.watch)
WATCH_MARKER = "<!-- opdrift:watch -->"
WATCH_COMMENT_MARKER = "<!-- opdrift:watch-comment -->"
MARKERS: dict[Format, str] = {
    "pr-comment": PR_COMMENT_MARKER,
    "weekly-issue": WEEKLY_ISSUE_MARKER,
    "job-summary": JOB_SUMMARY_MARKER,
    "markdown": REPORT_MARKER,
}

# A caller's own marker (the weekly issue's per-window one) must still look like ours and nothing else:
# it is written into the body unescaped.
_MARKER = re.compile(r"<!-- opdrift:[a-z-]+(?: [a-z]+=[0-9A-Za-z._-]+)* -->")


def marker_for(fmt: Format, override: str | None) -> Safe:
    """The marker a body in `fmt` starts with: `override` when given (checked), else the format's own."""
    if override is None:
        return Safe(MARKERS.get(fmt, ""))
    if _MARKER.fullmatch(override) is None:
        raise ValueError(f"not an opdrift marker: {override!r}")
    return Safe(override)
