"""Benchmark: what one refresh of the model corpus costs, and what reading its table costs.

    python bench/bench_model_corpus.py [--release 2.14.1] [--json FILE]

A refresh (scripts/model_corpus.py run) takes minutes of CPU and a real torch, so it is not re-run
here: each shipped table records the CPU seconds of every model on every path as the run measured
them (time.process_time around building the model and recording the path, one thread, on the
machine the table's header names). This prints them per path and per family, the slowest runs, and
times what opdrift itself does with the table: reading it (`opdrift.usage.models.read_table`, cold, 11
runs, the median) and ranking one path's operators.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict

from opdrift.usage.models import PATHS, read_table, shipped_releases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--release", default=shipped_releases()[-1], choices=shipped_releases())
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    usage = read_table(args.release)
    family = {m.name: m.family for m in usage.models}
    per_path: dict[str, float] = defaultdict(float)
    per_family: dict[str, float] = defaultdict(float)
    for run in usage.runs:
        per_path[run.path] += run.cpu_seconds
        per_family[family[run.model]] += run.cpu_seconds
    total = sum(per_path.values())
    print(f"torch {usage.release}: {len(usage.models)} models, {len(usage.runs)} runs, {total:.0f} s CPU")
    print(f"recorded on {usage.environment.get('platform')} on {usage.environment.get('date')}")
    for path in PATHS:
        print(f"  {path:18} {per_path[path]:7.1f} s   {len(usage.recorded(path))} ok")
    for name, seconds in sorted(per_family.items(), key=lambda kv: -kv[1]):
        count = sum(1 for m in usage.models if m.family == name)
        print(f"  {name:28} {seconds:7.1f} s   {count} models, {seconds / count:.1f} s a model")
    slowest = sorted(usage.runs, key=lambda r: -r.cpu_seconds)[:5]
    print("  slowest: " + ", ".join(f"{r.model} {r.path} {r.cpu_seconds:.0f} s" for r in slowest))
    reads = []
    for _ in range(11):
        read_table.cache_clear()
        start = time.process_time()
        read_table(args.release)
        reads.append(time.process_time() - start)
    start = time.process_time()
    ranked = read_table(args.release).ops("eager_training")
    rank = time.process_time() - start
    print(f"reading the table: {statistics.median(reads) * 1000:.1f} ms (median of 11, cold)")
    print(f"ranking eager_training's {len(ranked)} overloads: {rank * 1000:.2f} ms")
    if args.json:
        figures = {
            "release": usage.release,
            "cpu_seconds": {"total": total, "per_path": per_path, "per_family": per_family},
            "read_ms": statistics.median(reads) * 1000,
        }
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(figures, out, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
