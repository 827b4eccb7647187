"""A PyTorch-shaped origin with many commits and many branches, built quickly with git fast-import.

The shape that makes `fetch-depth: 0` expensive in pytorch/pytorch: a long main branch whose commits
touch files deep in the tree, and a great many ghstack-style `gh/USER/N/head` branches with commits of
their own. The three operator files are the real 2.14.1 ones on main; the PR branch (`pr`) forks
from main and changes them to 2.15.0's.
"""

from __future__ import annotations

import os
import random
import subprocess
from dataclasses import dataclass
from pathlib import Path

from datafiles import release_text

from opdrift.model import DERIVATIVES_PATH, NATIVE_PATH, TAGS_PATH

FILES = {NATIVE_PATH: "native_functions.yaml", TAGS_PATH: "tags.yaml", DERIVATIVES_PATH: "derivatives.yaml"}


@dataclass(frozen=True)
class Origin:
    path: Path  # a bare repository that serves filters and fetches by sha, like GitHub
    base: str  # main's tip: a pull request's base sha
    head: str  # the PR branch's tip
    fork: str  # where the PR branch left main: the merge base
    commits: int
    branches: int


class _Stream:
    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.mark = 0
        self.time = 1_700_000_000

    def blob(self, text: str) -> int:
        data = text.encode("utf-8")
        self.mark += 1
        self.parts.append(b"blob\nmark :%d\ndata %d\n%s\n" % (self.mark, len(data), data))
        return self.mark

    def commit(self, ref: str, parent: int | None, files: dict[str, int], message: str) -> int:
        self.mark += 1
        self.time += 60
        msg = message.encode()
        head = b"commit %s\nmark :%d\ncommitter Dev <dev@localhost> %d +0000\ndata %d\n%s\n" % (
            ref.encode(), self.mark, self.time, len(msg), msg,
        )  # fmt: skip
        body = b"".join(b"M 100644 :%d %s\n" % (b, p.encode()) for p, b in files.items())
        self.parts.append(head + (b"from :%d\n" % parent if parent else b"") + body + b"\n")
        return self.mark


def _deep(rng: random.Random, name: str) -> str:
    # Paths as deep as PyTorch's (torch/csrc/jit/passes/..., aten/src/ATen/native/cuda/...) in a few
    # hundred directories: each commit makes a new tree object for every directory on the way to the
    # file it touches.
    return "/".join(f"d{rng.randrange(3)}" for _ in range(5)) + f"/{name}"


def build_origin(
    dest: Path, *, main_commits: int, branches: int, branch_commits: int, seed: int = 0
) -> Origin:
    rng = random.Random(seed)
    s = _Stream()
    files = {path: s.blob(release_text("2.14.1", name)) for path, name in FILES.items()}
    main = [s.commit("refs/heads/main", None, files, "initial")]
    for i in range(1, main_commits):
        main.append(
            s.commit("refs/heads/main", main[-1], {_deep(rng, f"m{i}.py"): s.blob(f"{i}\n")}, f"main {i}")
        )
    fork_index = main_commits - 40
    new = {path: s.blob(release_text("2.15.0", name)) for path, name in FILES.items()}
    s.commit("refs/heads/pr", main[fork_index], new, "the operator change under review")
    for b in range(branches):
        tip = main[rng.randrange(main_commits)]
        for k in range(branch_commits):
            change = {_deep(rng, f"b{b}_{k}.py"): s.blob(f"{b}.{k}\n")}
            tip = s.commit(f"refs/heads/gh/dev{b % 50}/{b}/head", tip, change, f"stack {b} part {k}")
    for t in range(0, main_commits, max(1, main_commits // 20)):
        s.parts.append(b"reset refs/tags/v0.%d\nfrom :%d\n\n" % (t, main[t]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    subprocess.run(["git", "init", "--quiet", "--bare", str(dest)], check=True, env=env)
    subprocess.run(
        ["git", "-C", str(dest), "fast-import", "--quiet"], input=b"".join(s.parts), check=True, env=env
    )
    for key in ("uploadpack.allowFilter", "uploadpack.allowAnySHA1InWant"):
        subprocess.run(["git", "-C", str(dest), "config", key, "true"], check=True, env=env)

    def sha(rev: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(dest), "rev-parse", rev], capture_output=True, text=True, env=env
        )
        return done.stdout.strip()

    return Origin(
        path=dest,
        base=sha("main"),
        head=sha("pr"),
        fork=sha("pr~1"),
        commits=main_commits + 1 + branches * branch_commits,
        branches=branches + 2,
    )
