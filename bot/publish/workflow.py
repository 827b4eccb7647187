"""The small decisions the GitHub workflows and the composite action need, kept out of YAML.

A ``run:`` script in a workflow cannot be unit-tested, so every step that decides something calls one
of these through the CLI: which two SOURCEs to diff (a PR's merge base included), which pull request
a ``workflow_run`` belongs to, and whether the refreshed snapshot is worth a commit. Values go to
Actions as ``name=value`` lines for ``$GITHUB_OUTPUT``.

The git these decisions rest on (the merge base, a file as of a date, deepening a clone, committing
and pushing the snapshot) is `opdrift.sources.repo`'s: only the sources stage runs git.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opdrift.errors import WorkflowError
from opdrift.sources.repo import check_rev, file_at, merge_base

_PR_NUMBER = re.compile(r"[1-9][0-9]{0,9}")
_OUTPUT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


# --- $GITHUB_OUTPUT --------------------------------------------------------------------------------


def output_lines(values: Mapping[str, str]) -> str:
    """``name=value`` lines for $GITHUB_OUTPUT. A newline in a value would forge another output."""
    lines = []
    for name, value in values.items():
        if not _OUTPUT_NAME.fullmatch(name):
            raise WorkflowError(f"bad output name {name!r}")
        if "\n" in value or "\r" in value:
            raise WorkflowError(f"output {name} would span lines: {value!r}")
        lines.append(f"{name}={value}\n")
    return "".join(lines)


def write_outputs(path: str, values: Mapping[str, str]) -> None:
    text = output_lines(values)
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise WorkflowError(f"cannot append to GITHUB_OUTPUT: {exc.strerror}", path=path) from None


@dataclass(frozen=True)
class Sources:
    base: str
    head: str


def resolve_sources(
    pytorch: str,
    *,
    base: str | None,
    head: str | None,
    base_source: str | None = None,
    head_source: str | None = None,
    use_merge_base: bool = False,
    find_merge_base: Callable[[str, str, str], str] = merge_base,
) -> Sources:
    """The BASE and HEAD SOURCE specs for `opdrift diff`/`comment`/`issue`.

    A ``*_source`` (a snapshot .json, a yaml, a wheel, ``DIR@REV``) wins; otherwise a revision of the
    PyTorch checkout PYTORCH becomes ``PYTORCH@REV``. With `use_merge_base`, BASE is replaced by the
    merge base of BASE and HEAD, so a PR is compared with the commit it branched from.
    """
    head_rev = head or "HEAD"
    head_spec = head_source or f"{pytorch}@{check_rev(head_rev, 'head')}"
    if base_source:
        if use_merge_base:
            raise WorkflowError("merge-base needs a base revision, not a base source")
        return Sources(base_source, head_spec)
    if not base:
        raise WorkflowError("give a base revision or a base source")
    base_rev = check_rev(base, "base")
    if use_merge_base:
        if head_source:
            raise WorkflowError("merge-base needs a head revision, not a head source")
        base_rev = find_merge_base(pytorch, base_rev, head_rev)
    return Sources(f"{pytorch}@{base_rev}", head_spec)


# --- the weekly window's base --------------------------------------------------------------------
# The weekly issue commits the refreshed snapshot after posting, so on a second run in the same week
# the working copy already holds HEAD's snapshot. The week's report must be the drift from the
# snapshot as it was when the window began, so the base is read from git history, not from disk.

_WEEK = re.compile(r"(\d{4})-W(0[1-9]|[1-4]\d|5[0-3])")


def iso_week(day: dt.date) -> str:
    """``2026-W10``: the ISO week of DAY, the window key `opdrift issue --week` takes."""
    year, week, _ = day.isocalendar()
    return f"{year}-W{week:02d}"


def week_start(week: str) -> dt.datetime:
    """Monday 00:00 UTC of ISO week WEEK (``2026-W10``)."""
    m = _WEEK.fullmatch(week)
    if m is None:
        raise WorkflowError(f"--week must look like 2026-W48, got {week!r}")
    try:
        day = dt.date.fromisocalendar(int(m.group(1)), int(m.group(2)), 1)
    except ValueError as err:
        raise WorkflowError(f"--week {week}: {err}") from None
    return dt.datetime(day.year, day.month, day.day, tzinfo=dt.timezone.utc)


def window_base(base_source: str, week: str, out_dir: str | os.PathLike[str]) -> tuple[str, str]:
    """The SOURCE to use as the weekly window's base, and a note: BASE_SOURCE's version at the start of
    WEEK written under OUT_DIR (same file name, so the source kind stays), or BASE_SOURCE itself."""
    if not Path(base_source).is_file():
        return base_source, f"{base_source} is not a file: used as given"
    found = file_at(base_source, week_start(week))
    if found.text is None:
        return base_source, found.note
    target = Path(out_dir) / "window-base" / Path(base_source).name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(found.text)
    return str(target), found.note


# --- the pull request of a workflow_run --------------------------------------------------------------


def check_pr_number(value: str) -> int:
    if not _PR_NUMBER.fullmatch(value):
        raise WorkflowError(f"bad pull request number {value!r}")
    return int(value)


def event_pr_numbers(text: str) -> list[int]:
    """The numbers of ``toJSON(github.event.workflow_run.pull_requests.*.number)``: a JSON list."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, list):
        raise WorkflowError(f"bad pull request numbers {text!r}: expected a JSON list such as [12]")
    numbers = []
    for n in data:
        if isinstance(n, bool) or not isinstance(n, int):
            raise WorkflowError(f"bad pull request number {n!r} in {text!r}")
        numbers.append(check_pr_number(str(n)))
    return numbers


def match_pull(pulls: Any, *, head_sha: str, head_repo: str) -> int | None:
    """The number of the one open PR whose head is exactly HEAD_SHA in HEAD_REPO, else None.

    Both must match: a branch name alone can be reused by anyone with a fork, and a sha alone could
    be pushed to a second PR; the run's event gives all three, so the lookup cannot pick a stranger's PR.
    """
    found = [
        p.number
        for p in pulls
        if p.head.sha == head_sha
        and p.head.repo is not None
        and p.head.repo.full_name.lower() == head_repo.lower()
    ]
    return found[0] if len(found) == 1 else None
