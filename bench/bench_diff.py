"""Benchmark: a full diff of two releases, parse included (not a test).

Times, in one run and as medians of N cold repeats (every cache cleared), what `opdrift diff BASE HEAD`
does for two release files: read + build + classify both sides, compute the drift, render the capped
PR comment and the full Markdown report. For scale it also times torchgen's `parse_native_yaml` of the
same two files when a torchgen is given, since parsing both is the least any tool must do.
Target: well under a second.

    python bench/bench_diff.py [--base 2.13.0] [--head 2.14.1] [--repeat 7] [--torchgen DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import gc
import json
import lzma
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_parse import clear_torchgen_caches  # noqa: E402  # bench/ is sys.path[0] when run as a script

from opdrift import pipeline  # noqa: E402
from opdrift.drift.changes import compute_drift  # noqa: E402
from opdrift.render.context import ReportContext  # noqa: E402
from opdrift.render.report import render  # noqa: E402
from opdrift.schema import grammar as schema  # noqa: E402

RELEASES = ROOT / "tests" / "data" / "releases"


def _unpack(version: str, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for packed in (RELEASES / version).glob("*.xz"):
        (dest / packed.stem).write_bytes(lzma.decompress(packed.read_bytes()))
    return dest / "native_functions.yaml"


def _clear_caches() -> None:
    # Cold means cold: the schema memo tables would otherwise carry over between repeats.
    schema.clear_caches()
    gc.collect()


def _time(fn: Callable[[], object], repeat: int) -> list[float]:
    cpu: list[float] = []
    for _ in range(repeat):
        _clear_caches()
        start = time.process_time()
        fn()
        gc.collect()  # the collection a run leaves pending is part of its cost
        cpu.append(time.process_time() - start)
    return cpu


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default="2.13.0")
    ap.add_argument("--head", default="2.14.1")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument(
        "--torchgen", metavar="DIR", help="a folder holding torchgen/ (e.g. unzipped from a wheel)"
    )
    ap.add_argument("--json", metavar="FILE", help="also write the medians as JSON")
    a = ap.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        base = _unpack(a.base, Path(tmp) / "base")
        head = _unpack(a.head, Path(tmp) / "head")

        def opdrift_diff() -> None:
            drift = compute_drift(pipeline.load_snapshot(str(base)), pipeline.load_snapshot(str(head)))
            render(drift, "pr-comment", context=ReportContext().linked(drift))
            render(drift, "markdown", context=ReportContext().linked(drift))

        results = {"opdrift diff (parse both, drift, render)": _time(opdrift_diff, a.repeat)}

        if a.torchgen:
            sys.path.insert(0, a.torchgen)
            import torchgen.gen as tg

            def torchgen_parse_both() -> None:
                for native_yaml in (base, head):
                    clear_torchgen_caches(tg)
                    tg.parse_native_yaml(str(native_yaml), str(native_yaml.parent / "tags.yaml"))

            results["torchgen parse_native_yaml of both (no diff)"] = _time(torchgen_parse_both, a.repeat)

    print(f"{a.base} -> {a.head}, CPU-time medians of {a.repeat} cold repeats")
    medians = {name: statistics.median(values) for name, values in results.items()}
    for name, value in medians.items():
        print(f"  {name:<48} {value * 1000:8.1f} ms")
    if len(medians) == 2:
        ours, theirs = medians.values()
        print(f"  torchgen's parse alone / opdrift's whole diff: {theirs / ours:.1f}x")
    if a.json:
        Path(a.json).write_text(
            json.dumps({k: round(v * 1000, 1) for k, v in medians.items()}, indent=2) + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
