"""The git operations the workflows need on a repository, beyond reading files at a revision.

The merge base a PR is compared from, the tracked snapshot as it was when the weekly window began,
deepening a shallow PyTorch checkout for attribution, and committing and pushing the refreshed
snapshot. They live here because the sources stage is the one place that runs git: each goes through
`opdrift.sources.git.run_git`, so every command gets the same environment, no shell and no stdin.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from opdrift.errors import GitError, WorkflowError
from opdrift.sources.git import is_ancestor, run_git

BOT_NAME = "github-actions[bot]"
BOT_EMAIL = "41898282+github-actions[bot]@users.noreply.github.com"
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def check_rev(rev: str, what: str) -> str:
    # Revisions reach git as arguments: one starting with "-" would be read as an option.
    if not rev or rev.startswith("-") or any(c.isspace() for c in rev):
        raise WorkflowError(f"bad {what} revision {rev!r}")
    return rev


def merge_base(repo: str | os.PathLike[str], base: str, head: str) -> str:
    """The full sha of the best common ancestor of BASE and HEAD (what a PR's diff starts from)."""
    done = run_git(
        repo,
        "merge-base",
        "--end-of-options",
        check_rev(base, "base"),
        check_rev(head, "head"),
        check=False,
    )
    sha = done.text.strip()
    if done.returncode != 0 or not _SHA.fullmatch(sha):
        detail = done.errors.strip() or "no common ancestor (is the clone shallow? use fetch-depth: 0)"
        raise GitError(f"no merge base of {base} and {head}: {detail}", path=os.fspath(repo))
    return sha


def toplevel(path: str | os.PathLike[str]) -> str | None:
    """The root of the git work tree holding PATH, or None outside one."""
    done = run_git(path, "rev-parse", "--show-toplevel", check=False)
    return done.text.strip() or None if done.returncode == 0 else None


# --- the weekly window's base -----------------------------------------------------------------


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
    inside = run_git(file.parent, "rev-parse", "--show-toplevel", check=False)
    if inside.returncode != 0:
        return WindowBase(None, None, f"{file} is not in a git repository: using the working copy")
    top = inside.text.strip()
    rel = Path(os.path.relpath(file.resolve(), Path(top).resolve())).as_posix()
    if run_git(top, "ls-files", "--error-unmatch", "--", rel, check=False).returncode != 0:
        return WindowBase(None, None, f"{rel} is not tracked by git: using the working copy")
    when = start.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    before = run_git(top, "log", "-1", "--format=%H", f"--before={when}", "--", rel).text.strip()
    how = f"the last commit before {when}"
    rev = before
    if not rev:
        if run_git(top, "rev-parse", "--is-shallow-repository").text.strip() == "true":
            # The commits before the window may just be missing, and the first one left is then most
            # likely this week's own refresh: a re-run would diff HEAD against itself and overwrite
            # the week's issue with "no changes". Refuse rather than guess.
            raise WorkflowError(
                f"{rel} has no commit before {when} in this shallow clone, so the window's base is unknown: "
                "check the repository out with its history (actions/checkout with fetch-depth: 0)",
                path=top,
            )
        since = run_git(top, "log", "--reverse", "--format=%H", f"--since={when}", "--", rel).text.split()
        rev = since[0] if since else ""
        how = f"its first commit since {when}"
    if not rev:
        return WindowBase(None, None, f"{rel} has no commit: using the working copy")
    shown = run_git(top, "show", f"{rev}:{rel}", check=False)
    if shown.returncode != 0:
        return WindowBase(None, rev, f"{rel} does not exist at {rev[:12]}: using the working copy")
    return WindowBase(shown.stdout, rev, f"{rel} as of {rev[:12]}, {how}")


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
    if run_git(repo, "rev-parse", "--git-dir", check=False).returncode != 0:
        raise WorkflowError("not a git repository", path=repo)
    if run_git(repo, "rev-parse", "--is-shallow-repository").text.strip() != "true":
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
    fetched = run_git(repo, "fetch", "--quiet", f"--shallow-since={when}", "origin", head_commit, check=False)
    if fetched.returncode != 0:
        detail = (fetched.errors.strip().splitlines() or ["failed"])[-1]
        return HistoryReady(None, f"deepening {repo} since {when} failed ({detail}): no attribution", True)
    held = run_git(repo, "rev-list", head_commit, check=False).text.split()  # stops at the shallow edge
    if base_commit not in held:
        return HistoryReady(
            None,
            f"{base_commit[:12]} is not among the commits before {head_commit[:12]} after deepening {repo} "
            f"since {when}: no attribution",
            True,
        )
    return HistoryReady(repo, f"deepened {repo} since {when}: {base_commit[:12]}..{head_commit[:12]}")


# --- the refreshed snapshot ---------------------------------------------------------------------


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
    top = run_git(file.parent, "rev-parse", "--show-toplevel").text.strip()
    rel = os.path.relpath(file.resolve(), Path(top).resolve())
    run_git(top, "add", "--", rel)
    if run_git(top, "diff", "--cached", "--quiet", "--", rel, check=False).returncode == 0:
        return Committed(None, f"{rel} is unchanged; nothing to commit")
    run_git(
        top, "-c", f"user.name={name}", "-c", f"user.email={email}",
        "commit", "--quiet", "--no-verify", "-m", message, "--only", "--", rel,
    )  # fmt: skip
    sha = run_git(top, "rev-parse", "HEAD").text.strip()
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
    the environment of each command, see `opdrift.sources.git.git_env`), never in REMOTE or git's arguments, so no
    URL with a token lands in FETCH_HEAD or the reflog, and the process list never shows it; `secrets`
    are kept out of every message.
    """
    check_rev(branch, "branch")
    top = run_git(repo, "rev-parse", "--show-toplevel").text.strip()
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
        pushed = run_git(
            top, "push", "--quiet", "--", remote, f"HEAD:refs/heads/{branch}", check=False, config=auth
        )
        if pushed.returncode == 0:
            return f"pushed {run_git(top, 'rev-parse', 'HEAD').text.strip()[:12]} to {branch}"
        # Only a branch that moved is worth a rebase; a protected branch, a refused token or an
        # unreachable host is not.
        moved = "(fetch first)" in pushed.errors or "(non-fast-forward)" in pushed.errors
        if attempt >= attempts or not moved:
            times = f" {attempt} times" if attempt > 1 else ""
            raise WorkflowError(f"push to {branch} failed{times}: {why(pushed.errors)}")
        attempt += 1
        fetched = run_git(top, "fetch", "--quiet", "--", remote, branch, check=False, config=auth)
        identity = ["-c", f"user.name={BOT_NAME}", "-c", f"user.email={BOT_EMAIL}"]
        rebased = fetched
        if fetched.returncode == 0:
            rebased = run_git(top, *identity, "rebase", "--quiet", "FETCH_HEAD", check=False)
        if rebased.returncode != 0:
            run_git(top, "rebase", "--abort", check=False)
            raise WorkflowError(f"cannot replay the snapshot commit onto {branch}: {why(rebased.errors)}")


# --- the branch that keeps the snapshot --------------------------------------------------------------


@dataclass(frozen=True)
class StateBranch:
    """A worktree of the branch that keeps the stored snapshot, never the checked-out (default) branch."""

    directory: str
    seeded: str | None  # the seed commit, when the branch did not exist and was started here
    note: str


def open_state_branch(
    remote: str,
    branch: str,
    directory: str | os.PathLike[str],
    path: str,
    seed: Callable[[], bytes],
    *,
    auth_header: str | None = None,
) -> StateBranch:
    """A clone at DIRECTORY of BRANCH of REMOTE (the repository `push_commits` pushes to), holding the
    stored snapshot at PATH.

    The weekly job commits the refreshed snapshot there, and `push_commits` pushes it as a fast-forward
    of BRANCH: the default branch, often protected, never gets a bot commit. A clone of its own rather
    than a worktree of the job's checkout, which may be shallow (depth 1): the week's base is read from
    the branch's history (`file_at`), which must be whole. When REMOTE has no BRANCH, it is started here
    as one commit with no parent holding `seed()` at PATH, pushed with the job's other commit (or
    alone). `auth_header` travels as in `push_commits`; the remote is given as an argument, not saved.
    """
    check_rev(branch, "branch")
    if not path or os.path.isabs(path) or ".." in Path(path).parts:
        raise WorkflowError(f"{path!r}: give the snapshot's path inside {branch}, relative to its root")
    target = Path(directory)
    if os.path.lexists(target):
        raise WorkflowError("exists: the snapshot branch needs a directory of its own", path=str(target))
    auth = {"http.extraHeader": auth_header} if auth_header else None
    target.mkdir(parents=True)
    run_git(target, "init", "--quiet")
    ref = f"refs/heads/{branch}"
    listed = run_git(target, "ls-remote", "--exit-code", "--", remote, ref, check=False, config=auth)
    if listed.returncode == 0:
        fetched = run_git(
            target, "fetch", "--quiet", "--no-tags", "--", remote, f"+{ref}:refs/remotes/origin/{branch}",
            check=False, config=auth,
        )  # fmt: skip
        if fetched.returncode != 0:
            detail = (fetched.errors.strip().splitlines() or ["failed"])[-1]
            raise WorkflowError(f"cannot fetch {branch}: {detail}")
        run_git(target, "checkout", "--quiet", "--detach", f"refs/remotes/origin/{branch}")
        sha = run_git(target, "rev-parse", "HEAD").text.strip()
        if not (target / path).is_file():
            raise WorkflowError(f"{branch} ({sha[:12]}) holds no {path}", path=str(target))
        return StateBranch(str(directory), None, f"{path} from {branch} at {sha[:12]}")
    if listed.returncode != 2:  # 2: the remote answered, without that branch
        detail = (listed.errors.strip().splitlines() or ["failed"])[-1]
        raise WorkflowError(f"cannot list the branches of the repository: {detail}")
    file = target / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_bytes(seed())
    run_git(target, "add", "--", path)
    run_git(
        target, "-c", f"user.name={BOT_NAME}", "-c", f"user.email={BOT_EMAIL}",
        "commit", "--quiet", "--no-verify", "-m", f"snapshots: start {branch} with the seed {path}",
    )  # fmt: skip
    sha = run_git(target, "rev-parse", "HEAD").text.strip()
    return StateBranch(
        str(directory), sha, f"{branch} did not exist: started it with the seed {path} as {sha[:12]}"
    )
