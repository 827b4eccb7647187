"""What every benchmark here reports: medians of interleaved runs, and each contender's ratio to the
reference (the real alternative), as a table or as JSON."""

from __future__ import annotations

import json
import platform
import statistics
import sys
from collections.abc import Mapping
from pathlib import Path

Times = Mapping[str, Mapping[str, list[float]]]  # contender → {"cpu": [...], "wall": [...]} in seconds


def report(
    times: Times,
    *,
    reference: str,
    heading: str,
    clock: str,
    json_target: str | None,
    facts: Mapping[str, object],
    notes: list[str],
    digits: int = 1,
) -> int:
    """Print the table (or write JSON to `json_target`, ``-`` for stdout); `facts` head the JSON."""
    medians = {name: {k: statistics.median(v) for k, v in t.items()} for name, t in times.items()}
    base = medians.get(reference)
    ratios = {name: None if base is None else base["cpu"] / m["cpu"] for name, m in medians.items()}
    if json_target is not None:
        result = {
            **facts,
            "python": platform.python_version(),
            "clock": clock,
            "median_ms": {name: round(m["cpu"] * 1000, digits) for name, m in medians.items()},
            "median_wall_ms": {name: round(m["wall"] * 1000, digits) for name, m in medians.items()},
            "torchgen_over": {name: None if r is None else round(r, 2) for name, r in ratios.items()},
            "notes": notes,
        }
        out = json.dumps(result, indent=2, sort_keys=True) + "\n"
        if json_target == "-":
            sys.stdout.write(out)
        else:
            Path(json_target).write_text(out, "utf-8")
        return 0
    width = max([len("contender"), *map(len, medians)]) + 2
    print(heading)
    print(f"{'contender':{width}} {'cpu ms':>8} {'wall ms':>8} {'torchgen/this':>14}")
    for name, m in medians.items():
        ratio = ratios[name]
        shown = "-" if ratio is None else f"{ratio:.1f}x"
        print(f"{name:{width}} {m['cpu'] * 1000:8.1f} {m['wall'] * 1000:8.1f} {shown:>14}")
    for note in notes:
        print(f"note: {note}")
    return 0
