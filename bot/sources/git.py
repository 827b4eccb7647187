"""Read objects from a git repository through one long-lived ``git cat-file --batch`` process.

A history walk reads thousands of blobs; starting a git process per read would cost more than the
parsing itself, so one process answers every request over a pipe. The protocol is byte-exact: each
answer is a header line ``<oid> <type> <size>`` followed by exactly ``size`` bytes and a newline, or
``<name> missing`` / ``<name> ambiguous``. Nothing goes through a shell, and revisions are sent on
the process's stdin, so a revision starting with ``-`` cannot turn into an option.
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import subprocess
import tempfile
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import TracebackType
from typing import IO, NamedTuple

from opdrift.errors import GitError

# Variables that would make git read another repository than the one named with -C (set, for
# instance, when the bot runs inside a git hook), or another history (a shallow or graft file).
_REPO_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_SHALLOW_FILE",
    "GIT_GRAFT_FILE",
)
_FULL_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
# What git's strtoul takes for GIT_CONFIG_COUNT: blanks, a sign, digits, and nothing after them.
_COUNT = re.compile(r"[ \t\n\v\f\r]*([+-]?)([0-9]+)", re.ASCII)
_INT_MAX = 2**31 - 1
_COPY_CHUNK = 1 << 20


class CommitInfo(NamedTuple):
    """Committer date (ISO 8601, with the committer's offset, like ``git log --format=%cI``) and subject."""

    date: str
    subject: str


def git_env(config: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a git the bot runs: the caller's, without what would point git elsewhere.

    ``GIT_DIR`` and its kin (set inside git hooks) would make git read another repository than the
    one named with ``-C``, and a shallow or graft file another history. Everything else stays:
    ``safe.directory`` given through ``GIT_CONFIG_*``, ``GIT_SSH_COMMAND`` for a partial clone's lazy
    fetches. Where the caller's config could change what git prints, the command pins it with
    ``-c`` (see gitlog.list_commits), which git applies after the environment's.

    `config` is passed as ``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n`` (git 2.31+), after any the caller's
    environment holds. Unlike ``git -c``, which puts the value in the process list that every local
    user can read, a process's environment is readable only by its owner: the push's credentials
    header travels this way.
    """
    env = {k: v for k, v in os.environ.items() if k not in _REPO_ENV}
    # A prompt for credentials or a pager would hang a batch process that nobody watches.
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_PAGER"] = "cat"
    token = env.pop(FETCH_TOKEN_VAR, "").strip()
    if token:
        config = {**fetch_auth(token, env.get("GITHUB_SERVER_URL") or DEFAULT_SERVER), **(config or {})}
    if config:
        start = _config_count(env.get("GIT_CONFIG_COUNT"))
        for i, (key, value) in enumerate(config.items(), start):
            env[f"GIT_CONFIG_KEY_{i}"] = key
            env[f"GIT_CONFIG_VALUE_{i}"] = value
        env["GIT_CONFIG_COUNT"] = str(start + len(config))
    return env


# A partial clone fetches blobs (and, filtered with tree:0, trees) on demand, long after the step that
# cloned it; for a private repository each of those fetches needs the token. It is given to opdrift in
# this variable and reaches git only as an http.extraheader in the environment of the git opdrift
# starts (git's children, the lazy fetches, inherit it), never in .git/config, so no later step of the
# job and no uploaded file can read it back, which `persist-credentials: true` would allow.
FETCH_TOKEN_VAR = "OPDRIFT_GIT_TOKEN"  # noqa: S105 the name of a variable, not a secret
DEFAULT_SERVER = "https://github.com"


def fetch_auth(token: str, server: str) -> dict[str, str]:
    """The git config that authenticates fetches from SERVER (and no other host) with TOKEN."""
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    return {f"http.{server.rstrip('/')}/.extraheader": f"AUTHORIZATION: basic {basic}"}


def _config_count(given: str | None) -> int:
    """GIT_CONFIG_COUNT read as git reads it (strtoul, then nothing after the number, at most INT_MAX).

    A count git would refuse is refused here too, in one line: replacing it would silently drop the
    caller's settings, which git itself would never have applied.
    """
    if not given:
        return 0
    m = _COUNT.fullmatch(given)
    digits = m.group(2).lstrip("0") if m else ""
    # (a count of thousands of digits is no count; int() would refuse it with a ValueError anyway)
    value = int(m.group(1) + (digits or "0")) if m and len(digits) <= 10 else -1
    if value < 0 or value > _INT_MAX:
        raise GitError(f"GIT_CONFIG_COUNT is not a count git accepts: {given!r}")
    return value


class GitRun(NamedTuple):
    """What one git command gave: its exit code and its raw output."""

    returncode: int
    stdout: bytes
    stderr: bytes

    @property
    def text(self) -> str:
        return self.stdout.decode("utf-8", "replace")

    @property
    def errors(self) -> str:
        return self.stderr.decode("utf-8", "replace")

    @property
    def reason(self) -> str:
        """git's first complaint, for a message: its last lines are often advice."""
        return _first_line(self.stderr.decode("utf-8", "replace"))


def run_git(
    repo: str | os.PathLike[str],
    *args: str,
    check: bool = True,
    config: Mapping[str, str] | None = None,
) -> GitRun:
    """Run one git command in REPO: the one way the bot starts git for a single answer.

    stdin is closed (git never waits on a prompt), the environment is `git_env`'s, and a git that
    cannot start is a `GitError`. With `check`, a non-zero exit is a `GitError` naming the command
    and git's reason; without it, the caller reads `returncode` and decides.
    """
    try:
        done = subprocess.run(
            ["git", "-C", os.fspath(repo), *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=git_env(config),
            check=False,
        )
    except OSError as err:
        raise GitError(f"cannot run git: {err.strerror or err}", path=os.fspath(repo)) from None
    run = GitRun(done.returncode, done.stdout, done.stderr)
    if check and run.returncode != 0:
        command = next((a for a in args if not a.startswith("-") and "=" not in a), args[0])
        raise GitError(f"git {command} failed: {run.reason or run.returncode}", path=os.fspath(repo))
    return run


def is_ancestor(repo: str | os.PathLike[str], older: str, newer: str) -> bool:
    """Whether commit OLDER is an ancestor of NEWER (or the same) in REPO; False when either is unknown."""
    done = run_git(repo, "merge-base", "--is-ancestor", "--end-of-options", older, newer, check=False)
    return done.returncode == 0


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[0] if lines else ""


class _Batch:
    """One ``git cat-file --batch`` or ``--batch-check`` process and its framing."""

    def __init__(self, repo: str, display: str, mode: str) -> None:
        self._display = display
        self._with_body = mode == "--batch"
        # Kept open for the life of the process; a pipe nobody reads could fill up and block git.
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115
        try:
            self._proc = subprocess.Popen(
                ["git", "-C", repo, "cat-file", mode],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                env=git_env(),
            )
        except OSError as err:
            self._stderr.close()
            raise GitError(f"cannot run git: {err.strerror or err}", path=display) from err

    def _died(self) -> GitError:
        self._proc.poll()
        self._stderr.seek(0)
        why = _first_line(self._stderr.read().decode("utf-8", "replace"))
        return GitError(f"git cat-file stopped unexpectedly{': ' + why if why else ''}", path=self._display)

    def request(self, name: str, max_size: int | None = None) -> tuple[str, str, bytes | None] | None:
        """Ask for one object; (oid, type, body or None for --batch-check), or None when it is missing.

        A body larger than `max_size` is drained (to keep the stream in step) and refused.
        """
        if "\n" in name or "\r" in name or "\0" in name:
            raise GitError(f"invalid object name {name!r}: contains a line break or NUL", path=self._display)
        stdin, stdout = self._proc.stdin, self._proc.stdout
        if stdin is None or stdout is None:
            raise self._died()
        try:
            stdin.write(name.encode("utf-8", "surrogateescape") + b"\n")
            stdin.flush()
        except (BrokenPipeError, OSError) as err:
            raise self._died() from err
        header = stdout.readline()
        if not header.endswith(b"\n"):
            raise self._died()
        # A found object's header always ends in its size, so these suffixes cannot be mistaken.
        if header.endswith(b" missing\n"):
            return None
        if header.endswith(b" ambiguous\n"):
            raise GitError(f"ambiguous object name {name!r}", path=self._display)
        fields = header[:-1].decode("utf-8", "surrogateescape").split(" ")
        if len(fields) != 3 or not fields[2].isdigit():
            raise GitError(f"unexpected reply from git cat-file: {header[:200]!r}", path=self._display)
        oid, otype, size = fields[0], fields[1], int(fields[2])
        if not self._with_body:
            return oid, otype, None
        if max_size is not None and size > max_size:
            self._drain(size + 1)
            raise GitError(
                f"{name} is {size} bytes, over the {max_size}-byte limit for one file", path=self._display
            )
        body = stdout.read(size + 1)
        if len(body) != size + 1 or body[-1:] != b"\n":
            raise self._died()
        return oid, otype, body[:-1]

    def _drain(self, n: int) -> None:
        stdout = self._proc.stdout
        if stdout is None:
            raise self._died()
        while n > 0:
            got = stdout.read(min(n, _COPY_CHUNK))
            if not got:
                raise self._died()
            n -= len(got)

    def close(self) -> None:
        proc = self._proc
        if proc.stdin is not None and not proc.stdin.closed:
            # The process may be gone already; there is nothing left to flush then.
            with contextlib.suppress(OSError):
                proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        self._stderr.close()


class GitReader:
    """Reads commits, trees' files and blobs of one repository; use as a context manager.

    Not thread-safe: one reader serves one caller at a time.
    """

    def __init__(self, repo: str | os.PathLike[str]) -> None:
        self.repo = os.fspath(repo)
        where = Path(self.repo)
        try:
            is_dir, exists = where.is_dir(), where.exists()
        except (OSError, ValueError) as err:  # a name too long, a NUL: nothing to look at
            raise GitError(
                f"cannot look at it: {getattr(err, 'strerror', None) or err}", path=self.repo
            ) from None
        if not is_dir:
            raise GitError("not a directory" if exists else "no such directory", path=self.repo)
        self._check_repository()
        self._batch: _Batch | None = _Batch(self.repo, self.repo, "--batch")
        self._check: _Batch | None = None
        self._resolved: dict[str, str] = {}
        self._commits: dict[str, bytes] = {}

    def _check_repository(self) -> None:
        done = run_git(self.repo, "rev-parse", "--git-dir", check=False)
        if done.returncode != 0:
            why = done.reason.removeprefix("fatal: ")
            # git's own reason usually says "not a git repository" already; don't say it twice.
            if not why or why.startswith("not a git repository"):
                raise GitError("not a git repository", path=self.repo)
            raise GitError(f"not a git repository ({why})", path=self.repo)

    def __enter__(self) -> GitReader:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        for batch in (self._batch, self._check):
            if batch is not None:
                batch.close()
        self._batch = self._check = None

    def _contents(self) -> _Batch:
        if self._batch is None:
            raise GitError("reader is closed", path=self.repo)
        return self._batch

    def _unknown(self, rev: str) -> GitError:
        return GitError(f"unknown revision {rev!r}: no such commit in this repository", path=self.repo)

    def resolve(self, rev: str) -> str:
        """The full sha of the commit REV names (a sha, branch, tag, ``HEAD~3`` ...)."""
        sha = self._resolved.get(rev)
        if sha is not None:
            return sha
        if not rev or rev.startswith("-"):
            raise self._unknown(rev)
        got = self._contents().request(f"{rev}^{{commit}}")
        if got is None:
            raise self._unknown(rev)
        sha, otype, body = got
        if otype != "commit" or body is None:
            raise self._unknown(rev)
        self._resolved[rev] = sha
        self._commits[sha] = body
        return sha

    def read(self, rev: str, path: str, *, max_size: int | None = None) -> bytes | None:
        """The bytes of PATH at REV, or None when REV has no such path. Unknown REV → GitError."""
        path = path.strip("/")
        got = self._contents().request(f"{rev}:{path}", max_size)
        if got is None:
            # Tell "no such file" from "no such revision": only the first is a normal answer.
            self.resolve(rev)
            return None
        _, otype, body = got
        if otype != "blob" or body is None:
            raise GitError(f"{path} at {rev} is a {otype}, not a file", path=self.repo)
        return body

    def read_blob(self, oid: str, *, max_size: int | None = None) -> bytes:
        """The bytes of the blob OID (as listed by ``git ls-tree`` or ``git log --raw``)."""
        got = self._contents().request(oid, max_size)
        if got is None:
            raise GitError(f"no object {oid!r} in this repository", path=self.repo)
        _, otype, body = got
        if otype != "blob" or body is None:
            raise GitError(f"object {oid} is a {otype}, not a blob", path=self.repo)
        return body

    def blob_id(self, rev: str, path: str) -> str | None:
        """The blob oid of PATH at REV without reading its content, or None when there is no such path.

        A history walk can skip every commit whose file has an oid it has already parsed.
        """
        if self._batch is None:
            raise GitError("reader is closed", path=self.repo)
        if self._check is None:
            self._check = _Batch(self.repo, self.repo, "--batch-check")
        got = self._check.request(f"{rev}:{path.strip('/')}")
        if got is None:
            self.resolve(rev)
            return None
        oid, otype, _ = got
        if otype != "blob":
            raise GitError(f"{path} at {rev} is a {otype}, not a file", path=self.repo)
        return oid

    def commit_info(self, rev: str) -> CommitInfo:
        """Committer date and subject of the commit REV names."""
        sha = rev if _FULL_SHA.fullmatch(rev) and rev in self._commits else self.resolve(rev)
        return parse_commit(self._commits[sha], sha)


def parse_commit(raw: bytes, sha: str = "") -> CommitInfo:
    """Date and subject from a raw commit object (headers, a blank line, then the message)."""
    head, _, message = raw.partition(b"\n\n")
    date = ""
    for line in head.split(b"\n"):
        # Continuation lines (a gpgsig's body) start with a space; only real headers count.
        if line.startswith(b"committer "):
            date = _iso_date(line.decode("utf-8", "replace"))
    paragraph: list[str] = []
    for text in message.decode("utf-8", "replace").splitlines():
        if not text.strip():
            if paragraph:
                break
            continue
        paragraph.append(text.strip())
    if not date:
        raise GitError(f"commit {sha} has no committer line")
    # Like git's %s: the first paragraph, its lines joined with spaces.
    return CommitInfo(date=date, subject=" ".join(paragraph))


def _iso_date(committer: str) -> str:
    # "committer Name <mail> 1640995260 +0100": the last two fields are the epoch and the offset.
    try:
        stamp, offset = committer.rsplit(" ", 2)[1:]
        sign = -1 if offset.startswith("-") else 1
        hours, minutes = int(offset[1:3]), int(offset[3:5])
        tz = timezone(sign * timedelta(hours=hours, minutes=minutes))
        return datetime.fromtimestamp(int(stamp), tz).isoformat()
    except (ValueError, IndexError, OverflowError, OSError):
        return ""
