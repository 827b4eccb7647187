"""Benchmark: the incremental history walk vs classifying each commit cold (not a test).

Builds a fine-grained PyTorch-shaped history (one commit per entry change) across several releases,
walks it with `opdrift.history.walk.walk` (one GitReader, the block cache and incremental classification
of `opdrift.history.engine`), timing every commit, then classifies a sample of the same commits cold
(``DIR@REV`` through the ordinary pipeline) and reports ms/commit and the ratio. Target: <= 5 ms
per commit after the first, >= 20x faster than cold.

    python bench/bench_history.py [--first 2.12.0] [--last 2.15.0] [--cap N] [--sample 25] [--keep DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from pytorch_history import build_history  # noqa: E402

from opdrift.errors import OpdriftError  # noqa: E402
from opdrift.history.walk import WalkOptions, cold_point, walk  # noqa: E402
from opdrift.sources.read import read_revision  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--first", default="2.12.0")
    ap.add_argument("--last", default="2.15.0")
    ap.add_argument("--cap", type=int, default=None, help="single-entry commits per release step")
    ap.add_argument("--sample", type=int, default=25, help="commits to classify cold")
    ap.add_argument("--keep", metavar="DIR", help="build the history here and keep it")
    a = ap.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="opdrift-bench-history-") as tmp:
        dest = Path(a.keep) if a.keep else Path(tmp) / "pytorch"
        t0 = time.perf_counter()
        h = build_history(dest, first=a.first, last=a.last, fine=True, cap=a.cap, checkout=False)
        print(
            f"history: {len(h.commits)} commits {a.first}..{a.last} built in {time.perf_counter() - t0:.1f} s"
        )
        if len(h.commits) < 1000:
            print("warning: fewer than 1,000 commits; widen --first/--last or raise --cap")

        stamps: list[float] = []
        start = time.perf_counter()

        def tick(done: int, total: int) -> None:
            stamps.append(time.perf_counter())

        t = walk(str(dest), WalkOptions(), progress=tick)
        per = [b - a_ for a_, b in zip([start, *stamps[:-1]], stamps, strict=True)]
        broken = sum(p.broken for p in t.points)
        rest = per[1:]
        med = statistics.median(rest) * 1000
        mean = statistics.fmean(rest) * 1000
        good_rest = [d for d, p in zip(per[1:], t.points[1:], strict=True) if not p.broken]
        print(f"walk: {len(t.points)} points ({broken} broken: the history tool's add-before-remove steps)")
        print(f"  first commit (cold start): {per[0] * 1000:.1f} ms")
        print(f"  after the first: median {med:.2f} ms/commit, mean {mean:.2f} ms/commit")
        if good_rest:
            print(
                f"  good commits only: median {statistics.median(good_rest) * 1000:.2f} ms, "
                f"mean {statistics.fmean(good_rest) * 1000:.2f} ms"
            )
        print(f"  total {stamps[-1] - start:.2f} s")

        step = max(1, len(h.commits) // a.sample)
        sample = [c.sha for c in h.commits[::step]][: a.sample]
        cold: list[float] = []
        for sha in sample:
            c0 = time.perf_counter()
            try:
                cold_point(read_revision(str(dest), sha))
            except OpdriftError:
                continue
            cold.append(time.perf_counter() - c0)
        cold_ms = statistics.fmean(cold) * 1000
        print(f"cold: {len(cold)} sampled commits, mean {cold_ms:.1f} ms/commit (read + parse + classify)")
        print(
            f"ratio: cold / incremental mean = {cold_ms / mean:.0f}x, cold / incremental median = {cold_ms / med:.0f}x"
        )
        ok = mean <= 5 and cold_ms / mean >= 20
        print("target (<= 5 ms mean after the first, >= 20x): " + ("met" if ok else "NOT met"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
