"""A change to bot/ must add an entry to CHANGELOG.md's Unreleased section.

    python scripts/check_changelog.py BASE HEAD

BASE and HEAD are commits of the repository this runs in (a pull request's base and head); the change
is what HEAD adds since their merge base, as GitHub shows a pull request. It passes when nothing under
bot/ changed, or when the change adds a list item ("- ...") under "## [Unreleased]". Exit 0 when it
passes, 1 when the entry is missing, 2 when git cannot answer (an unknown commit, no merge base).
The workflow .github/workflows/changelog.yml runs it; a pull request labelled `skip news` skips it.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

CHANGELOG = "CHANGELOG.md"
# What needs an entry: what users run or read. templates/ ships as opdrift.templates (every report),
# examples/downstream/ as opdrift.examples (what `opdrift init` writes), and action.yml is the action
# workflows call. Tests, docs and CI change no behaviour a user sees.
WATCHED = ("bot/", "templates/", "examples/", "action.yml")
UNRELEASED = re.compile(r"^## \[Unreleased\]", re.IGNORECASE)
RELEASE_HEADING = re.compile(r"^## ")
ENTRY = re.compile(r"^\s*[-*] \S")
HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


class GitError(Exception):
    """git failed: an unknown commit, or no merge base."""


@dataclass(frozen=True)
class Verdict:
    ok: bool
    message: str


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise GitError(f"git {' '.join(args)}: {done.stderr.strip() or done.returncode}")
    return done.stdout


def unreleased_lines(text: str) -> range:
    """The 1-based line numbers of the Unreleased section's body (empty when there is no such section)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if UNRELEASED.match(line)), None)
    if start is None:
        return range(0)
    end = next(
        (i for i in range(start + 1, len(lines)) if RELEASE_HEADING.match(lines[i])),
        len(lines),
    )
    return range(start + 2, end + 1)


def added_lines(diff: str) -> dict[int, str]:
    """HEAD's line number → text of each line a unified diff (with -U0) adds."""
    added: dict[int, str] = {}
    line = 0
    for row in diff.splitlines():
        hunk = HUNK.match(row)
        if hunk:
            line = int(hunk.group(1))
        elif row.startswith("+") and not row.startswith("+++"):
            added[line] = row[1:]
            line += 1
    return added


def check(repo: Path, base: str, head: str) -> Verdict:
    merge_base = git(repo, "merge-base", base, head).strip()
    changed = git(repo, "diff", "--name-only", merge_base, head).splitlines()
    watched = [p for p in changed if p.startswith(WATCHED)]
    if not watched:
        return Verdict(True, f"no change under {', '.join(WATCHED)}: no changelog entry needed")
    if CHANGELOG not in changed:
        return Verdict(False, _missing(watched, f"{CHANGELOG} is not changed"))
    text = git(repo, "show", f"{head}:{CHANGELOG}")
    section = unreleased_lines(text)
    diff = git(repo, "diff", "--unified=0", merge_base, head, "--", CHANGELOG)
    entries = [t for n, t in added_lines(diff).items() if n in section and ENTRY.match(t)]
    if not entries:
        return Verdict(False, _missing(watched, f"{CHANGELOG} gains no list item under ## [Unreleased]"))
    return Verdict(True, f"changelog entry: {entries[0].strip()}")


def _missing(watched: Sequence[str], why: str) -> str:
    shown = ", ".join(watched[:3]) + (f" and {len(watched) - 3} more" if len(watched) > 3 else "")
    return (
        f"{shown} changed but {why}. Add a line under ## [Unreleased] (Added, Changed, Fixed...), "
        "or label the pull request `skip news` if users see no difference."
    )


def main(argv: Sequence[str]) -> int:
    if len(argv) != 2:
        print("usage: check_changelog.py BASE HEAD", file=sys.stderr)
        return 2
    try:
        verdict = check(Path.cwd(), argv[0], argv[1])
    except GitError as e:
        print(f"check_changelog: error: {e}", file=sys.stderr)
        return 2
    print(("ok: " if verdict.ok else "missing changelog entry: ") + verdict.message)
    return 0 if verdict.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
