"""Benchmark: whole `opdrift watch` runs, hour after hour, on a fake pytorch/pytorch: the cold start at
the default budget, then the worst case a fork can make of it.

    python bench/bench_watch_runs.py [--open 3000] [--touching 60] [--budget 800] [--attack-runs 4]
                                     [--slow-seconds 2] [--json FILE]

The world is bench/bench_watch.py's (tests/fake_github.py over real HTTP, 100 items a page, main with
PyTorch 2.14.1's operator files), except that each of the TOUCHING pull requests adds 2.15.0's
`_philox_randint_` to native_functions.yaml (an op XLA lacks: each is a row of the dashboard, with a
distinct file). Each run is `python -m opdrift watch` as the hourly workflow runs it (one process, the disk
cache kept between runs as `actions/cache` keeps it), subscribed to pytorch/xla's real list, writing
its dashboard to a second repository of the fake.

- **cold**: runs until the dashboard is whole (no "looked at next run", every touching PR a row).
- **attack**: then, before every run, the forks move (all with 256-emoji titles): 170 PRs force-pushed
  with a new native_functions.yaml each (a judgement each, none cached), 26 PRs of 3,000 changed files
  pushed, 40 PRs whose native_functions.yaml the tree says is 64 MB (the fake announces the size; the
  bytes are never asked for), 10 PRs whose compare answers 502 after SLOW seconds; and, once, before the
  first attack run, 10 of the real PRs are pushed with a new real change. Measured: whether and by which
  run the 10 real PRs are judged at their new heads.

Per run: the requests the fake got from the run (to the upstream; the dashboard's own few apart), the
run's CPU time (the child process's user+system, from rusage: the fake serving in this process is not
counted) and its wall time. The machine is shared: the CPU is what to read, not the wall.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from datafiles import DATA, release_text  # noqa: E402
from fake_github import FakeCommit, FakeGitHub, blob_sha  # noqa: E402
from watch_upstream import added_entry  # noqa: E402

from opdrift.model import DERIVATIVES_PATH, NATIVE_PATH, TAGS_PATH, VERSION_PATH  # noqa: E402

UPSTREAM = "pytorch/pytorch"
DASHBOARD = "me/backend"
TOKEN = "ghs_benchwatchruns00000000000000000000000"  # noqa: S105 the fake's token
NAMES = {NATIVE_PATH: "native_functions.yaml", TAGS_PATH: "tags.yaml", DERIVATIVES_PATH: "derivatives.yaml"}
EMOJI = "\U0001f600" * 256
NOTE = re.compile(r"(\d+) judged, (\d+) from the cache; (\d+) request\(s\)")


class LazyBlobs(dict[str, bytes]):
    """The fake's blobs, of which a fork's thousand force-pushed native_functions.yaml are made only
    when asked for (a base blob and a suffix), so the fake does not hold 0.6 MB for each."""

    def __init__(self) -> None:
        super().__init__()
        self.recipes: dict[str, tuple[str, bytes]] = {}

    def __missing__(self, sha: str) -> bytes:
        base, tail = self.recipes[sha]
        return self[base] + tail

    def get(self, sha: str, default: bytes | None = None) -> bytes | None:  # type: ignore[override]
        return self[sha] if sha in self or sha in self.recipes else default


@dataclass(frozen=True)
class Run:
    phase: str
    n: int
    requests: int  # to the upstream
    charged: int  # of them, not 304
    cpu: float  # seconds, the child's user + system
    wall: float
    judged: int
    cached: int
    real_rows: int  # touching PRs with a row at their current head
    complete: bool
    code: int


class World:
    def __init__(self, fake: FakeGitHub, n_open: int, touching: int) -> None:
        self.fake = fake
        self.blobs = LazyBlobs()
        fake.blobs = self.blobs
        fake.add_token(TOKEN, "github-actions[bot]", user_endpoint=False)
        fake.add_repo(UPSTREAM)
        fake.add_repo(DASHBOARD)
        files = {path: release_text("2.14.1", name).encode() for path, name in NAMES.items()}
        files[VERSION_PATH] = b"2.15.0a0\n"
        self.main = fake.add_commit(UPSTREAM, files, refs=("main",), date="2026-11-01T00:00:00Z")
        self.repo = fake.repos[UPSTREAM.lower()]
        self.base_files = dict(self.repo.commits[self.main].files)
        text = release_text("2.14.1")
        at = text.index("- func: _dirichlet_grad(")
        real = (text[:at] + added_entry() + text[at:]).encode()
        self.real_blob = blob_sha(real)
        self.blobs[self.real_blob] = real
        self.numbers: list[int] = []
        step = max(n_open // max(touching, 1), 1)
        self.real: list[int] = []
        for i in range(n_open):
            native = i % step == 0 and len(self.real) < touching
            head = self.head(f"{i}-0", self.real_blob if native else None)
            when = f"2026-11-{1 + i // 1440:02d}T{i // 60 % 24:02d}:{i % 60:02d}:00Z"
            n = fake.add_pull(UPSTREAM, title=f"PR {i}", author=f"dev{i % 300}", sha=head, base=self.main,
                              updated_at=when)  # fmt: skip
            self.numbers.append(n)
            if native:
                self.real.append(n)

    def native(self, tag: str, base: str | None = None, size: int | None = None) -> str:
        """A native_functions.yaml: BASE's (the real PRs' by default) with a comment TAG, made lazily."""
        tail = f"# {tag}\n".encode()
        src = base or self.real_blob
        sha = blob_sha(self.blobs[src] + tail)
        self.blobs.recipes[sha] = (src, tail)
        if size is not None:
            self.fake.blob_sizes[sha] = size
        return sha

    def head(self, tag: str, native: str | None, extra: int = 0) -> str:
        """A head commit on main: NATIVE as its native_functions.yaml, else one file elsewhere; EXTRA
        more changed files (a 3,000-file PR)."""
        changed: dict[str, str] = {}
        if native is not None:
            changed[NATIVE_PATH] = self.native(tag, native)
        else:
            data = f"// {tag}\n".encode()
            changed[f"c10/core/pr_{tag}.cpp"] = blob_sha(data)
            self.blobs[blob_sha(data)] = data
        if extra:
            one = blob_sha(b"// vendored\n")
            self.blobs[one] = b"// vendored\n"
            changed.update({f"third_party/vendored/{tag}/f{k}.c": one for k in range(extra)})
        sha = blob_sha(f"commit {tag}".encode())
        self.repo.commits[sha] = FakeCommit(
            sha, "2026-11-01T00:00:00Z", {**self.base_files, **changed}, self.main
        )
        return sha

    def open(self, title: str, head: str) -> int:
        return self.fake.add_pull(UPSTREAM, title=title, author="forker", sha=head, base=self.main)


def _watch(env: dict[str, str], config: Path, budget: int) -> tuple[int, str, float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "opdrift", "watch", "--upstream", UPSTREAM, "--repo", DASHBOARD,
         "--config", str(config), "--budget", str(budget)],
        capture_output=True, text=True, env=env, cwd=ROOT, check=False, timeout=3600,
    )  # fmt: skip
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done.returncode, done.stderr, cpu, wall


def _body(fake: FakeGitHub) -> str:
    issues = [i for i in fake.issues(DASHBOARD) if i["user"]["login"] == "github-actions[bot]"]
    return str(issues[0]["body"]) if issues else ""


def _rows_at_head(world: World, numbers: list[int]) -> int:
    """How many of NUMBERS have a row at their current head (the state block names each row's head)."""
    body = _body(world.fake)
    return sum(f"/pull/{n}" in body and world.repo.heads[n][2] in body for n in numbers)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--open", type=int, default=3000)
    ap.add_argument("--touching", type=int, default=60)
    ap.add_argument("--budget", type=int, default=800)  # watch's default
    ap.add_argument("--attack-runs", type=int, default=4)
    ap.add_argument("--slow-seconds", type=float, default=2.0)
    ap.add_argument("--max-cold-runs", type=int, default=12)
    ap.add_argument("--json", metavar="FILE")
    a = ap.parse_args(argv)

    fake = FakeGitHub(page_size=100)
    fake.start()
    runs: list[Run] = []
    try:
        world = World(fake, a.open, a.touching)
        with tempfile.TemporaryDirectory() as tmp:
            xla = DATA / "backends" / "real" / "pytorch-xla.xla_native_functions.yaml.xz"
            (Path(tmp) / "xla_native_functions.yaml").write_bytes(lzma.decompress(xla.read_bytes()))
            config = Path(tmp) / "opdrift.yml"
            config.write_text(
                'subscriptions:\n  - who: ["@xla-team"]\n    backend: {kind: xla, path: '
                f"{Path(tmp) / 'xla_native_functions.yaml'}}}\n"
            )
            env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTHON"))}
            env.update(
                PYTHONPATH=str(ROOT), GITHUB_TOKEN=TOKEN, GITHUB_API_URL=fake.api_url,
                OPDRIFT_BOT_LOGIN="github-actions[bot]", XDG_CACHE_HOME=str(Path(tmp) / "cache"),
            )  # fmt: skip

            def one(phase: str, n: int, watched: list[int]) -> Run:
                mark = len(fake.requests)
                code, err, cpu, wall = _watch(env, config, a.budget)
                done = [r for r in fake.requests[mark:] if r.path.startswith(f"/repos/{UPSTREAM}/")]
                m = NOTE.search(err)
                judged, cached = (int(m.group(1)), int(m.group(2))) if m else (-1, -1)
                body = _body(fake)
                run = Run(phase, n, len(done), sum(r.status != 304 for r in done), round(cpu, 2),
                          round(wall, 1), judged, cached, _rows_at_head(world, watched),
                          "looked at next run" not in err and "listing stopped" not in err, code)  # fmt: skip
                runs.append(run)
                print(run, file=sys.stderr, flush=True)
                if code != 0:
                    print(err[-3000:], file=sys.stderr)
                del body
                return run

            n = 0
            while True:
                n += 1
                run = one("cold", n, world.real)
                if (run.complete and run.real_rows == len(world.real)) or n >= a.max_cold_runs or run.code:
                    break

            # The attack: forks opened once, then moved before every run.
            forks = [world.open(EMOJI, world.head("fork-0-" + str(k), world.real_blob)) for k in range(170)]
            big = [world.open(EMOJI, world.head(f"big-0-{k}", None, extra=3000)) for k in range(26)]
            huge = []
            for k in range(40):
                head = world.head(f"huge-{k}", None)
                files = dict(world.repo.commits[head].files)
                files[NATIVE_PATH] = world.native(f"huge-{k}", size=64 * 1024 * 1024)
                world.repo.commits[head] = FakeCommit(head, "2026-11-01T00:00:00Z", files, world.main)
                huge.append(world.open(EMOJI, head))
            slow = []
            for k in range(10):
                head = world.head(f"slow-{k}", world.real_blob)
                fake.fail("GET", f"/compare/[^/]*\\.\\.\\.{head}", 502, times=1_000_000, delay=a.slow_seconds)
                slow.append(world.open(EMOJI, head))
            pushed = world.real[:10]
            for number in pushed:
                fake.update_pull(UPSTREAM, number, sha=world.head(f"{number}-1", world.real_blob))
            for hour in range(1, a.attack_runs + 1):
                if hour > 1:
                    for k, number in enumerate(forks):
                        fake.update_pull(
                            UPSTREAM, number, sha=world.head(f"fork-{hour}-{k}", world.real_blob)
                        )
                    for k, number in enumerate(big):
                        fake.update_pull(
                            UPSTREAM, number, sha=world.head(f"big-{hour}-{k}", None, extra=3000)
                        )
                one("attack", hour, pushed)
    finally:
        fake.stop()

    print(
        "| phase | run | requests | charged | CPU s | wall s | judged | cached | real PRs at head | whole |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in runs:
        print(f"| {r.phase} | {r.n} | {r.requests:,} | {r.charged:,} | {r.cpu:.1f} | {r.wall:.0f} | {r.judged} | "
              f"{r.cached} | {r.real_rows} | {'yes' if r.complete else 'no'} |")  # fmt: skip
    if a.json:
        Path(a.json).write_text(json.dumps([asdict(r) for r in runs], indent=2) + "\n")
    return 0 if all(r.code == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
