"""Benchmark: what `opdrift watch`'s listing costs at pytorch/pytorch's scale, against a naive client.

    python bench/bench_watch.py [--open 3000] [--touching 60] [--updated 50] [--budget 800] [--json FILE]

A fake GitHub API (tests/fake_github.py, real HTTP on 127.0.0.1, 100 items a page as GitHub serves)
holds a repository shaped like pytorch/pytorch: main with PyTorch 2.14.1's three operator files (real
sizes) and a version.txt, and OPEN open pull requests, TOUCHING of which change native_functions.yaml, the others a file
elsewhere. Every count comes from the fake's own log of requests and answers.

- **cold**: `PullsClient.scan(None, budget=BUDGET)` run after run (one run per hour, each within the
  budget) until a scan is complete; then what `watch` asks of every listed pull request (`touched`, and
  `merge_base` for those that touch), which costs nothing more.
- **steady**: UPDATED pull requests are updated since that watermark (seeded at random: 4 of 5 get a
  push, the rest a new title; one of the touching ones among the pushed) and one merges; then one scan.
- **quiet**: a scan with nothing new.
- **naive**: what a client without watermark or cache does each run: list every open pull request
  and GET pulls/N/files for each.

"Charged" counts the requests that count against the rate limit (every answer but a 304; GitHub does
not count a 304 to a conditional request), "sent" all of them. Bytes are the answers' bodies as the
fake sends them: its pull request objects are smaller than GitHub's (no _links, fewer repo fields), so
GitHub's bytes are larger for both clients alike.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from datafiles import release_text  # noqa: E402
from fake_github import FakeCommit, FakeGitHub, blob_sha  # noqa: E402

from opdrift.github.api import Api, ApiSettings  # noqa: E402
from opdrift.github.ghsource import read_github_source  # noqa: E402
from opdrift.github.pulls import PullsClient  # noqa: E402
from opdrift.github.retry import RetryPolicy  # noqa: E402
from opdrift.model import DERIVATIVES_PATH, NATIVE_PATH, TAGS_PATH, VERSION_PATH  # noqa: E402

REPO = "pytorch/pytorch"
TOKEN = "ghs_benchwatch0000000000000000000000000"  # noqa: S105 the fake's token
NAMES = {NATIVE_PATH: "native_functions.yaml", TAGS_PATH: "tags.yaml", DERIVATIVES_PATH: "derivatives.yaml"}


@dataclass(frozen=True)
class Cost:
    runs: int
    sent: int
    charged: int
    not_modified: int
    bytes: int
    pulls: int  # pull requests the run(s) reported

    def row(self, name: str) -> str:
        return (
            f"| {name} | {self.runs} | {self.sent:,} | {self.charged:,} | {self.not_modified:,} | "
            f"{self.bytes / 1e6:,.2f} MB | {self.pulls:,} |"
        )


def _world(fake: FakeGitHub, n_open: int, touching: int) -> tuple[str, list[int], set[int]]:
    """Main and N_OPEN pull requests, TOUCHING of them changing native_functions.yaml."""
    fake.add_token(TOKEN, "watcher")
    fake.add_repo(REPO)
    files = {path: release_text("2.14.1", name).encode() for path, name in NAMES.items()}
    files[VERSION_PATH] = b"2.15.0a0\n"  # main's, after the 2.14 branch cut: each side's reads ask for it
    main = fake.add_commit(REPO, files, refs=("main",), date="2026-11-01T00:00:00Z")
    repo = fake.repos[REPO.lower()]
    base_files = dict(repo.commits[main].files)
    rng = random.Random(24)  # noqa: S311 a reproducible choice, not a secret
    touch = set(rng.sample(range(n_open), touching))
    numbers = []
    for i in range(n_open):
        head = _head(fake, main, base_files, f"{i}-0", i in touch)
        when = f"2026-11-{1 + i // 1440:02d}T{i // 60 % 24:02d}:{i % 60:02d}:00Z"  # a minute apart
        numbers.append(
            fake.add_pull(REPO, title=f"PR {i}", author=f"dev{i % 300}", sha=head, base=main, updated_at=when)
        )
    return main, numbers, {numbers[i] for i in touch}


def _head(fake: FakeGitHub, main: str, base_files: dict[str, str], tag: str, native: bool) -> str:
    """A head commit on main: one changed file elsewhere, or a changed native_functions.yaml. Built
    directly (add_commit hashes every file's content, 0.6 MB for native_functions.yaml)."""
    repo = fake.repos[REPO.lower()]
    changed: dict[str, str] = {}
    if native:
        data = fake.blobs[base_files[NATIVE_PATH]] + f"# {tag}\n".encode()
        changed[NATIVE_PATH] = blob_sha(data)
        fake.blobs[changed[NATIVE_PATH]] = data
    else:
        data = f"// {tag}\n".encode()
        changed[f"c10/core/pr_{tag}.cpp"] = blob_sha(data)
        fake.blobs[blob_sha(data)] = data
    sha = blob_sha(f"commit {tag}".encode())
    repo.commits[sha] = FakeCommit(sha, "2026-11-01T00:00:00Z", {**base_files, **changed}, main)
    return sha


def _cost(fake: FakeGitHub, mark: int, runs: int, pulls: int) -> Cost:
    done = fake.requests[mark:]
    n304 = sum(r.status == 304 for r in done)
    return Cost(runs, len(done), len(done) - n304, n304, sum(r.size for r in done), pulls)


def _watch_run(
    client: PullsClient,
    since: str | None,
    budget: int,
    known: frozenset[str] = frozenset(),
    sides: list[tuple[str, str]] | None = None,
) -> tuple[str | None, bool, int]:
    """One scheduled run's API side: the scan, then touched and merge_base as `watch` asks them
    (for a head it judged before, whose impact its state block holds, `watch` asks nothing)."""
    scan = client.scan(since, budget=budget, known_heads=known)
    for pull in scan.pulls:
        if pull.state == "open" and pull.head_sha not in known and client.touched(pull):
            base = client.merge_base(pull)
            if sides is not None:
                sides.append((base, pull.head_sha))
    return scan.watermark, scan.complete, len(scan.pulls)


def _read_sides(fake: FakeGitHub, settings: ApiSettings, sides: list[tuple[str, str]]) -> Cost:
    """What `watch` then reads for each touching pull request's drift: the gh: source at its merge
    base and at its head (commit, two trees, version.txt, the blobs the cache lacks)."""
    mark = len(fake.requests)
    sides = sorted(set(sides))  # a cold start's runs list the same pull requests again
    for base, head in sides:
        read_github_source(f"gh:{REPO}@{base}", settings)
        read_github_source(f"gh:{REPO}@{head}", settings)
    return _cost(fake, mark, 1, len(sides))


def _naive(fake: FakeGitHub, settings: ApiSettings) -> int:
    """List every open PR, then GET each one's files (no watermark, no cache, no ETag)."""
    api = Api(settings, REPO, max_requests=100_000, max_pages=1_000)
    url: str | None = f"{settings.api_url}/repos/{REPO}/pulls?state=open&per_page=100"
    numbers: list[int] = []
    while url is not None:
        answer = api.get("", url=url)
        assert answer is not None
        numbers += [p["number"] for p in answer.json()]
        link = answer.header("link") or ""
        url = next((p.split(">")[0][1:] for p in link.split(", ") if p.endswith('rel="next"')), None)
    for number in numbers:
        api.get(f"/repos/{REPO}/pulls/{number}/files", params={"per_page": "100"})
    api.close()
    return len(numbers)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--open", type=int, default=3000)
    ap.add_argument("--touching", type=int, default=60)
    ap.add_argument("--updated", type=int, default=50)
    ap.add_argument("--budget", type=int, default=800)  # watch's default
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    a = ap.parse_args(argv)

    fake = FakeGitHub(page_size=100)
    fake.start()
    try:
        main_sha, numbers, touching = _world(fake, a.open, a.touching)
        with tempfile.TemporaryDirectory() as cache:
            retry = RetryPolicy(total_seconds=600.0)
            settings = ApiSettings(api_url=fake.api_url, token=TOKEN, cache_dir=Path(cache), retry=retry)
            client = PullsClient(settings, REPO)

            mark, runs, since, complete, listed = len(fake.requests), 0, None, False, 0
            cold_sides: list[tuple[str, str]] = []
            per_run = []
            while not complete:
                before = len(fake.requests)
                since, complete, listed = _watch_run(client, None, a.budget, sides=cold_sides)
                runs += 1
                per_run.append(_cost(fake, before, 1, listed).charged)
            cold = _cost(fake, mark, runs, listed)
            cold_read = _read_sides(fake, settings, cold_sides)
            cold_since = since
            repo = fake.repos[REPO.lower()]
            judged = frozenset(repo.heads[n][2] for n in numbers)

            rng = random.Random(2024)  # noqa: S311 a reproducible choice, not a secret
            pushed_touching = rng.choice(sorted(touching))
            others = rng.sample([n for n in numbers if n not in touching], a.updated - 1)
            updated = [pushed_touching, *others]
            rng.shuffle(updated)
            pushes = 0
            for k, number in enumerate(updated):
                if number == pushed_touching or k % 5:
                    i = numbers.index(number)
                    head = _head(fake, main_sha, dict(fake.repos[REPO.lower()].commits[main_sha].files),
                                 f"{i}-1", number in touching)  # fmt: skip
                    fake.update_pull(REPO, number, sha=head)
                    pushes += 1
                else:
                    fake.update_pull(REPO, number, title=f"PR {number}, retitled")
            fake.merge_pull(REPO, next(n for n in sorted(touching) if n != pushed_touching))
            mark = len(fake.requests)
            steady_sides: list[tuple[str, str]] = []
            since, complete, listed = _watch_run(client, cold_since, a.budget, sides=steady_sides)
            steady = _cost(fake, mark, 1, listed)
            steady_read = _read_sides(fake, settings, steady_sides)
            assert complete
            fresh = {}
            for name, known in (("fresh", frozenset()), ("fresh_known", judged)):
                with tempfile.TemporaryDirectory() as empty:
                    other = PullsClient(
                        ApiSettings(api_url=fake.api_url, token=TOKEN, cache_dir=Path(empty), retry=retry),
                        REPO,
                    )
                    mark = len(fake.requests)
                    _, _, n = _watch_run(other, cold_since, a.budget, known)
                    fresh[name] = _cost(fake, mark, 1, n)
                    other.close()
            mark = len(fake.requests)
            _, _, listed_quiet = _watch_run(client, since, a.budget)
            quiet = _cost(fake, mark, 1, listed_quiet)
            client.close()

            mark = len(fake.requests)
            naive = _cost(fake, mark, 1, _naive(fake, settings))
    finally:
        fake.stop()

    # Updated since the last run: the UPDATED ones and the merged one (a merge updates it too).
    pages = -(-(a.updated + 2) // 100)
    goal = a.updated + 1 + pages
    print(
        f"{a.open:,} open PRs, {a.touching} touching the operator files, {a.updated} updated since the "
        f"last run ({pushes} pushed, 1 touching) and one merged; budget {a.budget} a run\n"
    )
    print("| run | runs | sent | charged | 304 | bytes | PRs reported |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    print(cold.row(f"cold (until complete; charged per run: {', '.join(map(str, per_run))})"))
    print(cold_read.row("cold: the drift's two sides (gh: reads) of each touching PR, once"))
    print(steady.row("steady state"))
    print(steady_read.row("steady state: the drift's two sides of each touching PR pushed"))
    print(fresh["fresh"].row("steady state, a runner without the disk cache"))
    print(fresh["fresh_known"].row("steady state, no disk cache, heads judged last run known"))
    print(quiet.row("steady state, nothing new"))
    print(naive.row("naive, every run"))
    print(
        f"\nsteady-state goal: charged <= {a.updated + 1} updated + {pages} list page(s) = {goal}: "
        f"{steady.charged} {'meets it' if steady.charged <= goal else 'MISSES IT'}; "
        f"without the disk cache {fresh['fresh'].charged}, knowing the heads {fresh['fresh_known'].charged}"
    )
    worst = max(steady.charged, fresh["fresh"].charged, fresh["fresh_known"].charged)
    if a.json:
        figures = {name: cost.__dict__ for name, cost in
                   (("cold", cold), ("steady", steady), ("quiet", quiet), ("naive", naive), *fresh.items(), ("cold_read", cold_read), ("steady_read", steady_read))}  # fmt: skip
        Path(a.json).write_text(json.dumps({**figures, "cold_charged_per_run": per_run}, indent=2) + "\n")
    return 0 if worst <= goal else 1


if __name__ == "__main__":
    sys.exit(main())
