"""The small decisions the GitHub workflows and the composite action need, kept out of YAML.

A ``run:`` script in a workflow cannot be unit-tested, so every step that decides something calls one
of these through the CLI: which two SOURCEs to diff (a PR's merge base included), which pull request
a ``workflow_run`` belongs to, and whether the refreshed snapshot is worth a commit. Values go to
Actions as ``name=value`` lines for ``$GITHUB_OUTPUT``.

Git is run here (not through sources.py) only for what sources.py has no business with: the merge
base of two revisions, the tracked snapshot as it was when the weekly window began, deepening a
shallow PyTorch checkout for attribution, and committing and pushing the refreshed snapshot. All run
git without a shell and with the repository-redirecting environment variables removed, like the
readers do.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.errors import GitError, OpdriftError
from bot.sources.git import git_env, is_ancestor

BOT_NAME = "github-actions[bot]"
BOT_EMAIL = "41898282+github-actions[bot]@users.noreply.github.com"
_PR_NUMBER = re.compile(r"[1-9][0-9]{0,9}")
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_OUTPUT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


class WorkflowError(OpdriftError):
    """A workflow step was given values it cannot act on (bad PR number, unknown revision, no repository)."""


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


# --- git -------------------------------------------------------------------------------------------


def _git(
    repo: str | os.PathLike[str],
    *args: str,
    check: bool = True,
    config: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(
            ["git", "-C", os.fspath(repo), *args],
            capture_output=True,
            text=True,
            env=git_env(config),
            check=False,
        )
    except FileNotFoundError:
        raise GitError("git is not installed") from None
    if check and done.returncode != 0:
        detail = (done.stderr.strip().splitlines() or ["failed"])[-1]
        raise GitError(f"git {args[0]}: {detail}", path=os.fspath(repo))
    return done


def _check_rev(rev: str, what: str) -> str:
    # Revisions reach git as arguments: one starting with "-" would be read as an option.
    if not rev or rev.startswith("-") or any(c.isspace() for c in rev):
        raise WorkflowError(f"bad {what} revision {rev!r}")
    return rev


def merge_base(repo: str | os.PathLike[str], base: str, head: str) -> str:
    """The full sha of the best common ancestor of BASE and HEAD (what a PR's diff starts from)."""
    done = _git(
        repo,
        "merge-base",
        "--end-of-options",
        _check_rev(base, "base"),
        _check_rev(head, "head"),
        check=False,
    )
    sha = done.stdout.strip()
    if done.returncode != 0 or not _SHA.fullmatch(sha):
        detail = done.stderr.strip() or "no common ancestor (is the clone shallow? use fetch-depth: 0)"
        raise GitError(f"no merge base of {base} and {head}: {detail}", path=os.fspath(repo))
    return sha


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
    head_spec = head_source or f"{pytorch}@{_check_rev(head_rev, 'head')}"
    if base_source:
        if use_merge_base:
            raise WorkflowError("merge-base needs a base revision, not a base source")
        return Sources(base_source, head_spec)
    if not base:
        raise WorkflowError("give a base revision or a base source")
    base_rev = _check_rev(base, "base")
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


@dataclass(frozen=True)
class WindowBase:
    """Where the window's base comes from: a commit's version of the file, or the working copy."""

    text: bytes | None  # None: use the working copy as it is
    rev: str | None
    note: str  # one line for the log: which version was taken and why


def file_at(path: str | os.PathLike[str], start: dt.datetime) -> WindowBase:
    """PATH as it was when the window starting at START began.

    1. The version of the last commit before START that touched PATH (``git log -1 --before``).
    2. If there is none, PATH was first committed inside the window: its first version there (the
       seed; later versions are this window's own refreshes).
    3. If PATH is not tracked by git at all: the working copy.
    """
    file = Path(path)
    if not file.is_file():
        raise WorkflowError("no such file", path=str(file))
    inside = _git(file.parent, "rev-parse", "--show-toplevel", check=False)
    if inside.returncode != 0:
        return WindowBase(None, None, f"{file} is not in a git repository: using the working copy")
    top = inside.stdout.strip()
    rel = Path(os.path.relpath(file.resolve(), Path(top).resolve())).as_posix()
    if _git(top, "ls-files", "--error-unmatch", "--", rel, check=False).returncode != 0:
        return WindowBase(None, None, f"{rel} is not tracked by git: using the working copy")
    when = start.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    before = _git(top, "log", "-1", "--format=%H", f"--before={when}", "--", rel).stdout.strip()
    how = f"the last commit before {when}"
    rev = before
    if not rev:
        if _git(top, "rev-parse", "--is-shallow-repository").stdout.strip() == "true":
            # The commits before the window may just be missing, and the first one left is then most
            # likely this week's own refresh: a re-run would diff HEAD against itself and overwrite
            # the week's issue with "no changes". Refuse rather than guess.
            raise WorkflowError(
                f"{rel} has no commit before {when} in this shallow clone, so the window's base is unknown: "
                "check the repository out with its history (actions/checkout with fetch-depth: 0)",
                path=top,
            )
        since = _git(top, "log", "--reverse", "--format=%H", f"--since={when}", "--", rel).stdout.split()
        rev = since[0] if since else ""
        how = f"its first commit since {when}"
    if not rev:
        return WindowBase(None, None, f"{rel} has no commit: using the working copy")
    shown = subprocess.run(
        ["git", "-C", top, "show", f"{rev}:{rel}"], capture_output=True, env=git_env(), check=False
    )
    if shown.returncode != 0:
        return WindowBase(None, rev, f"{rel} does not exist at {rev[:12]}: using the working copy")
    return WindowBase(shown.stdout, rev, f"{rel} as of {rev[:12]}, {how}")


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


# --- the history a weekly issue's attribution walks --------------------------------------------------

# Committer dates on a busy branch are not strictly ordered (rebases, merge queues): fetch this much
# further back than BASE's own date so that no commit between BASE and HEAD falls outside the window.
_SHALLOW_MARGIN = dt.timedelta(days=7)


@dataclass(frozen=True)
class HistoryReady:
    """Whether `opdrift issue --history` can walk BASE..HEAD in a checkout, and why (one line)."""

    repo: str | None  # the checkout to pass to --history, or None: publish without attribution
    note: str
    problem: bool = False  # the note is a warning (a fetch failed), not an expected skip


def prepare_history(
    repo: str, *, base_commit: str | None, base_date: str | None, head_commit: str | None
) -> HistoryReady:
    """Make BASE..HEAD walkable in REPO: deepen a shallow clone (the weekly workflow checks PyTorch out
    at depth 1) back to BASE's commit date, minus a margin, from its ``origin``.

    Never fatal: a weekly issue without attribution is better than none, so every reason not to
    attribute (BASE or HEAD records no commit, the fetch failed, BASE is not an ancestor of HEAD) comes
    back as a note with `repo` None.
    """
    if not base_commit or not head_commit:
        which = "BASE" if not base_commit else "HEAD"
        return HistoryReady(None, f"{which} records no commit (made from release files?): no attribution")
    for sha in (base_commit, head_commit):
        if not _SHA.fullmatch(sha):
            raise WorkflowError(f"bad commit {sha!r} in a snapshot")
    if _git(repo, "rev-parse", "--git-dir", check=False).returncode != 0:
        raise WorkflowError("not a git repository", path=repo)
    if _git(repo, "rev-parse", "--is-shallow-repository").stdout.strip() != "true":
        if is_ancestor(repo, base_commit, head_commit):
            return HistoryReady(repo, f"{base_commit[:12]}..{head_commit[:12]} is in {repo}")
        return HistoryReady(
            None, f"{base_commit[:12]} is not an ancestor of {head_commit[:12]} in {repo}: no attribution"
        )
    # Shallow, and in the workflow also a blob-less partial clone: asking git about a commit it lacks
    # would make it fetch that commit with all its ancestors (the whole history). So deepen first, by
    # date, then look only at the commits the clone holds.
    if not base_date:
        return HistoryReady(
            None, f"BASE ({base_commit[:12]}) records no date to deepen {repo} to: no attribution"
        )
    try:
        since = dt.datetime.fromisoformat(base_date.replace("Z", "+00:00")) - _SHALLOW_MARGIN
    except ValueError:
        raise WorkflowError(f"bad commit date {base_date!r} in a snapshot") from None
    when = since.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    fetched = _git(repo, "fetch", "--quiet", f"--shallow-since={when}", "origin", head_commit, check=False)
    if fetched.returncode != 0:
        detail = (fetched.stderr.strip().splitlines() or ["failed"])[-1]
        return HistoryReady(None, f"deepening {repo} since {when} failed ({detail}): no attribution", True)
    held = _git(repo, "rev-list", head_commit, check=False).stdout.split()  # stops at the shallow edge
    if base_commit not in held:
        return HistoryReady(
            None,
            f"{base_commit[:12]} is not among the commits before {head_commit[:12]} after deepening {repo} "
            f"since {when}: no attribution",
            True,
        )
    return HistoryReady(repo, f"deepened {repo} since {when}: {base_commit[:12]}..{head_commit[:12]}")


@dataclass(frozen=True)
class Committed:
    sha: str | None  # None: the file was unchanged, nothing was committed
    message: str


def commit_file(
    path: str | os.PathLike[str], message: str, *, name: str = BOT_NAME, email: str = BOT_EMAIL
) -> Committed:
    """Commit PATH alone (whatever else is staged) if it differs from HEAD; never commits an empty change."""
    file = Path(path)
    if not file.is_file():
        raise WorkflowError("no such file to commit", path=str(file))
    if not message.strip():
        raise WorkflowError("empty commit message")
    top = _git(file.parent, "rev-parse", "--show-toplevel").stdout.strip()
    rel = os.path.relpath(file.resolve(), Path(top).resolve())
    _git(top, "add", "--", rel)
    if _git(top, "diff", "--cached", "--quiet", "--", rel, check=False).returncode == 0:
        return Committed(None, f"{rel} is unchanged; nothing to commit")
    _git(
        top, "-c", f"user.name={name}", "-c", f"user.email={email}",
        "commit", "--quiet", "--no-verify", "-m", message, "--only", "--", rel,
    )  # fmt: skip
    sha = _git(top, "rev-parse", "HEAD").stdout.strip()
    return Committed(sha, f"committed {rel} as {sha[:12]}")


def push_commits(
    repo: str | os.PathLike[str],
    remote: str,
    branch: str,
    *,
    attempts: int = 3,
    auth_header: str | None = None,
    secrets: tuple[str, ...] = (),
) -> str:
    """Push HEAD to BRANCH of REMOTE; when the branch moved meanwhile, rebase onto it and try again.

    The weekly job commits one snapshot file while other work may be merged; a rejected push would
    leave the snapshot behind and next week's issue would repeat this week's drift. Rebasing replays
    only the bot's own commit. Credentials travel as `auth_header` (git's ``http.extraHeader``, set in
    the environment of each command, see `gitcat.git_env`), never in REMOTE or git's arguments, so no
    URL with a token lands in FETCH_HEAD or the reflog, and the process list never shows it; `secrets`
    are kept out of every message.
    """
    _check_rev(branch, "branch")
    top = _git(repo, "rev-parse", "--show-toplevel").stdout.strip()
    auth = {"http.extraHeader": auth_header} if auth_header else None

    def clean(text: str) -> str:
        for secret in secrets:
            text = text.replace(secret, "***")
        return text

    def why(stderr: str) -> str:
        lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
        # A hook's or GitHub's own reason (GH006 protected branch...) beats git's generic last line.
        told = [ln for ln in lines if ln.startswith("remote:") or "[remote rejected]" in ln]
        if (
            not told
        ):  # else git's first complaint: its last line is often advice ("and the repository exists.")
            told = [ln for ln in lines if ln.startswith(("fatal:", "error:"))][:1] or lines[-1:] or ["failed"]
        return clean("; ".join(told[:3]))

    attempt = 1
    while True:
        pushed = _git(
            top, "push", "--quiet", "--", remote, f"HEAD:refs/heads/{branch}", check=False, config=auth
        )
        if pushed.returncode == 0:
            return f"pushed {_git(top, 'rev-parse', 'HEAD').stdout.strip()[:12]} to {branch}"
        # Only a branch that moved is worth a rebase; a protected branch, a refused token or an
        # unreachable host is not.
        moved = "(fetch first)" in pushed.stderr or "(non-fast-forward)" in pushed.stderr
        if attempt >= attempts or not moved:
            times = f" {attempt} times" if attempt > 1 else ""
            raise WorkflowError(f"push to {branch} failed{times}: {why(pushed.stderr)}")
        attempt += 1
        fetched = _git(top, "fetch", "--quiet", "--", remote, branch, check=False, config=auth)
        identity = ["-c", f"user.name={BOT_NAME}", "-c", f"user.email={BOT_EMAIL}"]
        rebased = fetched
        if fetched.returncode == 0:
            rebased = _git(top, *identity, "rebase", "--quiet", "FETCH_HEAD", check=False)
        if rebased.returncode != 0:
            _git(top, "rebase", "--abort", check=False)
            raise WorkflowError(f"cannot replay the snapshot commit onto {branch}: {why(rebased.stderr)}")


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
