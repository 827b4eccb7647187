"""An upstream for `opdrift watch` tests: a PyTorch-shaped git repository (tests/pytorch_history.py,
release 2.14.1) with pull-request branches made from real release entries, and an in-test
`PullSource` serving them (what `opdrift.github.pulls.PullsClient` does over the API).

The PRs: (a) adds `_philox_randint_`, the entry 2.15.0 added (its autogen `_philox_randint` is an op
XLA lacks); (b) adds `bool fast=False` to `mean.dim` and `mean.out` (XLA implements `mean.dim`, so its
kernel stops compiling); (c) touches no operator file; (d) only adds an in-tree XPU kernel to `ormqr.out`;
(e) like (a), but merged.
"""

from __future__ import annotations

import lzma
import os
import subprocess
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from datafiles import DATA, release_text
from fake_github import FakeGitHub
from pytorch_history import NATIVE, build_history, entry_blocks, entry_name

from opdrift.app.watch import WatchPlan, plan_watch
from opdrift.app.watch_judge import Judge, JudgementCache, who_by_backend
from opdrift.config.file import BotConfig, parse_config
from opdrift.github.pulls import Scan
from opdrift.model import DERIVATIVES_PATH, NATIVE_PATH, OPERATOR_PATHS, TAGS_PATH, PullRef
from opdrift.render.context import BackendGap
from opdrift.sources.read import read_source

UPSTREAM = "pytorch/pytorch"


def _git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@localhost",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@localhost",
    )
    done = subprocess.run(
        ["git", "-C", str(repo), *args], check=True, env=env, capture_output=True, text=True
    )
    return done.stdout.strip()


def added_entry() -> str:
    """2.15.0's `_philox_randint_` entry, as the release has it."""
    (block,) = [b for b in entry_blocks(release_text("2.15.0")) if entry_name(b) == "_philox_randint_"]
    return block


def with_fast(text: str) -> str:
    """`mean.dim` and `mean.out` with a new `bool fast=False` after `keepdim` (the structured pair
    changes together, as a real PR would change it)."""
    out = text
    for name in ("mean.dim", "mean.out"):
        head = f"- func: {name}(Tensor self, int[1]? dim, bool keepdim=False,"
        if head not in out:
            raise ValueError(name)
        out = out.replace(head, head + " bool fast=False,")
    return out


def with_xpu_kernel(text: str) -> str:
    """`ormqr.out` with an XPU kernel beside its CPU and CUDA one: an in-tree kernel only."""
    old = "    CPU, CUDA: ormqr_out\n"
    if text.count(old) != 1:
        raise ValueError("ormqr.out")
    return text.replace(old, old + "    XPU: ormqr_out_xpu\n")


class Upstream:
    """The repository and its PR branches; `commit(text)` makes a head from main."""

    def __init__(self, root: Path, release: str = "2.14.1") -> None:
        self.history = build_history(root / "pytorch", first=release, last=release)
        self.repo = self.history.path
        self.main = self.history.tag_sha(release)
        self.base_text = release_text(release)

    def commit(self, files: dict[str, str], message: str, parent: str | None = None) -> str:
        _git(self.repo, "checkout", "-q", "--detach", parent or self.main)
        for path, text in files.items():
            target = self.repo / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
            _git(self.repo, "add", path)
        _git(self.repo, "commit", "-q", "-m", message)
        return _git(self.repo, "rev-parse", "HEAD")

    def spec_for(self, sha: str) -> str:
        return f"{self.repo}@{sha}"


@dataclass
class LocalPulls:
    """The PullSource of `opdrift.app.watch`, from a dict of PRs and the local repository; counts its calls."""

    upstream: Upstream
    pulls: dict[int, PullRef] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=lambda: {"scan": 0, "touched": 0, "merge_base": 0})
    clock: int = 0
    # PRs the next scans cannot examine (what `PullsClient.scan` reports in `Scan.failed`), and the
    # number of PRs a scan affords before its budget stops it (None: no limit)
    unreadable: set[int] = field(default_factory=set)
    afford: int | None = None

    def add(
        self, number: int, head: str, *, title: str = "", state: str = "open", draft: bool = False
    ) -> PullRef:
        self.clock += 1
        pull = PullRef(
            number=number,
            title=title or f"PR {number}",
            author="contributor",
            draft=draft,
            state=state,  # type: ignore[arg-type]
            updated_at=f"2026-12-05T01:{self.clock:02d}:00Z",
            html_url=f"https://github.com/{UPSTREAM}/pull/{number}",
            head_sha=head,
            base_sha=self.upstream.main,
        )
        self.pulls[number] = pull
        return pull

    def update(self, number: int, **changes: Any) -> None:
        self.clock += 1
        self.pulls[number] = replace(
            self.pulls[number], updated_at=f"2026-12-05T01:{self.clock:02d}:00Z", **changes
        )

    def scan(
        self,
        since: str | None,
        *,
        budget: int = 900,
        known_heads: Collection[str] = (),
        later: Collection[int] = (),
    ) -> Scan:
        self.calls["scan"] += 1
        found = sorted(
            (p for p in self.pulls.values() if since is None or p.updated_at >= since),
            key=lambda p: p.updated_at,
            reverse=True,
        )
        if self.afford is not None and len(found) > self.afford:
            afforded = found[: self.afford]
            return Scan(
                tuple(afforded),
                since,
                False,
                listed_open=sum(p.state == "open" for p in found),
                examined_open=sum(p.state == "open" for p in afforded),
                paid=len(afforded),
            )
        failed = tuple((p, "no merge base") for p in found if p.number in self.unreadable)
        kept = tuple(p for p in found if p.number not in self.unreadable)
        return Scan(kept, found[0].updated_at if found else since, True, failed)

    def pull(self, number: int) -> PullRef:
        self.calls["pull"] = self.calls.get("pull", 0) + 1
        return self.pulls[number]

    def touched(self, pull: PullRef) -> tuple[str, ...]:
        self.calls["touched"] += 1
        names = _git(self.upstream.repo, "diff", "--name-only", f"{pull.base_sha}...{pull.head_sha}").split()
        return tuple(p for p in OPERATOR_PATHS if p in names)

    def merge_base(self, pull: PullRef) -> str:
        self.calls["merge_base"] += 1
        return _git(self.upstream.repo, "merge-base", pull.base_sha, pull.head_sha)

    def head_sizes(self, pull: PullRef) -> dict[str, int]:
        sizes = {}
        for path in OPERATOR_PATHS:
            try:
                sizes[path] = int(_git(self.upstream.repo, "cat-file", "-s", f"{pull.head_sha}:{path}"))
            except subprocess.CalledProcessError:
                continue
        return sizes


def standard_heads(up: Upstream) -> dict[str, str]:
    """The heads of PRs (a) to (e) of the module docstring."""
    base = up.base_text
    blocks = entry_blocks(base)
    # (a): the 2.15.0 entry inserted where 2.15.0 has it, before _dirichlet_grad
    at = next(i for i, b in enumerate(blocks) if entry_name(b) == "_dirichlet_grad")
    added = "".join(blocks[:at]) + added_entry() + "".join(blocks[at:])
    return {
        "a": up.commit({NATIVE: added}, "Add _philox_randint_"),
        "b": up.commit({NATIVE: with_fast(base)}, "mean: a fast path"),
        "c": up.commit({"README.md": "docs only\n"}, "Docs"),
        "d": up.commit({NATIVE: with_xpu_kernel(base)}, "XPU kernel for _cdist_forward"),
        "e": up.commit({NATIVE: added}, "Add _philox_randint_ (merged)"),
    }


# The fixtures and the runner the watch tests share (tests/test_watch*.py).


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> tuple[Upstream, dict[str, str]]:
    up = Upstream(tmp_path_factory.mktemp("upstream"))
    return up, standard_heads(up)


@pytest.fixture(scope="module")
def cfg(tmp_path_factory: pytest.TempPathFactory) -> BotConfig:
    folder = tmp_path_factory.mktemp("cfg")
    xla = DATA / "backends" / "real" / "pytorch-xla.xla_native_functions.yaml.xz"
    (folder / "xla_native_functions.yaml").write_bytes(lzma.decompress(xla.read_bytes()))
    text = 'subscriptions:\n  - who: ["@xla-team", "@Someone"]\n    backend: {kind: xla, path: xla_native_functions.yaml}\n'
    (folder / "opdrift.yml").write_text(text)
    return parse_config(text, str(folder / "opdrift.yml"), base_dir=str(folder))


class Run:
    """Runs of `plan_watch` against one upstream, each reading the body the last one wrote."""

    def __init__(self, up: Upstream, cfg: BotConfig, cache: JudgementCache | None = None) -> None:
        self.up, self.cfg = up, cfg
        self.pulls = LocalPulls(up)
        self.judge = Judge(cfg, up.spec_for, read_source, cache=cache)
        self.body: str | None = None
        self.warnings: list[str] = []
        self.now: str | None = None  # the run's time (None: the clock's); a PR is mentioned once a day

    def __call__(self) -> WatchPlan:
        plan = plan_watch(
            self.cfg, "pytorch/pytorch", self.body, self.pulls, self.judge,
            who=who_by_backend(self.cfg), warn=self.warnings.append, backends=self.judge.backends,
            now=self.now,
        )  # fmt: skip
        self.body = plan.body
        return plan


def rows_of(plan: WatchPlan) -> dict[int, BackendGap]:
    return {r.number: r.impacts[0] for r in plan.view.rows}


# What a pull request that touches only ops Ascend's op-plugin list gates to torch 2.1 and 2.2 does:
# `_unsafe_index.Tensor` (`op_api: v2.1`) gains an argument, `fake_quantize_per_channel_affine_cachemask`
# (`op_api: v2.1, v2.2`) is removed, in native_functions.yaml and derivatives.yaml alike.
UNSAFE_INDEX = "_unsafe_index.Tensor(Tensor self, Tensor?[] indices)"
CACHEMASK = "fake_quantize_per_channel_affine_cachemask(Tensor self,"


def with_gated_ops_changed(native: str, derivatives: str) -> tuple[str, str]:
    """NATIVE and DERIVATIVES with `_unsafe_index.Tensor` given `bool check=False` and
    `fake_quantize_per_channel_affine_cachemask` removed (its entry, and its derivative)."""
    changed = UNSAFE_INDEX.replace("indices)", "indices, bool check=False)")
    out = []
    for text, key in ((native, "- func: "), (derivatives, "- name: ")):
        if text.count(key + UNSAFE_INDEX) != 1 or text.count(key + CACHEMASK) != 1:
            raise ValueError("the two ops")
        text = text.replace(key + UNSAFE_INDEX, key + changed)
        blocks = text.split("\n\n")
        kept = [b for b in blocks if not b.lstrip("\n").startswith(key + CACHEMASK)]
        if len(kept) != len(blocks) - 1:
            raise ValueError(CACHEMASK)
        out.append("\n\n".join(kept))
    return out[0], out[1]


@dataclass(frozen=True)
class ServedUpstream:
    """pytorch/pytorch on the fake GitHub API: main holds a release's operator files (2.14.1's unless
    told), with a version.txt when VERSION is given, and each PR head is one commit on top of main
    (tests/integration/test_watch_cli.py, tests/act/test_watch.py, tests/unit/coverage/test_gates.py)."""

    fake: FakeGitHub
    main: str
    files: dict[str, bytes]

    @classmethod
    def serve(cls, fake: FakeGitHub, release: str = "2.14.1", version: str | None = None) -> ServedUpstream:
        fake.add_repo(UPSTREAM)
        files = {
            NATIVE_PATH: release_text(release).encode(),
            TAGS_PATH: release_text(release, "tags.yaml").encode(),
            DERIVATIVES_PATH: release_text(release, "derivatives.yaml").encode(),
            "README.md": b"PyTorch\n",
        }
        if version is not None:
            files["version.txt"] = f"{version}\n".encode()
        main = fake.add_commit(UPSTREAM, files, refs=("main",), date="2026-12-01T10:00:00Z")
        return cls(fake, main, files)

    def head(
        self, native: str | None = None, readme: bytes | None = None, derivatives: str | None = None
    ) -> str:
        """A commit on main with native_functions.yaml (and README.md, derivatives.yaml) replaced."""
        files = dict(self.files)
        if native is not None:
            files[NATIVE_PATH] = native.encode()
        if derivatives is not None:
            files[DERIVATIVES_PATH] = derivatives.encode()
        if readme is not None:
            files["README.md"] = readme
        return self.fake.add_commit(UPSTREAM, files, parent=self.main, date="2026-12-02T10:00:00Z")

    def open(self, title: str, head: str) -> int:
        return self.fake.add_pull(UPSTREAM, title=title, sha=head, base=self.main)
