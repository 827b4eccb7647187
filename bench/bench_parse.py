"""Benchmark: a cold parse + classify of native_functions.yaml, ours against PyYAML and torchgen.

    python bench/bench_parse.py [--repeat N] [--torchgen DIR] [--json [FILE]] [FILE]

FILE defaults to the vendored 2.14.1 release (tests/data/releases, decompressed to a temporary folder);
its tags.yaml is taken from beside FILE. Contenders:

- our pipeline: read entries (fast reader) + build operators + classify, the whole cold parse;
- the fast reader alone, and PyYAML's CSafeLoader alone (what a full YAML parse costs);
- our pipeline on the PyYAML path (load_entries_yaml instead of the fast reader);
- torchgen's ``parse_native_yaml`` (pass ``--torchgen DIR``, a folder holding torchgen/), the reference.

Every run is cold: our interned schemas, arguments, types and facets are forgotten before each of
our runs, and torchgen's module-level parse caches before each of its runs. Every cache is emptied
before every run, and before its clock starts: clearing a cache frees the previous run's objects, a
cost a fresh process never pays, and a result still held by another contender's cache (torchgen's
parsed file) would make every garbage collection of the timed run walk it too. Each timing ends with
the young-generation garbage collection the run left pending. Each repeat times every
contender once, in turn, so that a busy machine slows them alike. Times are CPU time of this process
(wall time too, for reference); the table shows medians and torchgen's median over each contender's.
``--json`` writes the same figures as JSON (to FILE, or stdout), for docs/performance.md.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import lzma
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402
from medians import report  # noqa: E402

from opdrift import yamltext  # noqa: E402
from opdrift.model import RawEntry, SourceFiles, SourceMeta, TextFile  # noqa: E402
from opdrift.operators import entries as entry_reader  # noqa: E402
from opdrift.operators import entries_yaml, native  # noqa: E402
from opdrift.schema import grammar as schema  # noqa: E402
from opdrift.signals import table as signal_table  # noqa: E402
from opdrift.signals.choose import signals_for  # noqa: E402
from opdrift.taxonomy import classify as taxonomy  # noqa: E402

DEFAULT_RELEASE = ROOT / "tests" / "data" / "releases" / "2.14.1"
OURS = "our pipeline (read + build + classify)"
TORCHGEN = "torchgen parse_native_yaml"


def _default_file(folder: Path) -> Path:
    for name in ("native_functions.yaml", "tags.yaml"):
        (folder / name).write_bytes(lzma.decompress((DEFAULT_RELEASE / f"{name}.xz").read_bytes()))
    return folder / "native_functions.yaml"


class Contender(NamedTuple):
    """One timed function, and how to empty its caches (untimed, before every run of any contender)."""

    run: Callable[[], object]
    prepare: Callable[[], None] = lambda: None


def _clear_caches() -> None:
    """Forget everything our stages intern, so that every timed run starts cold."""
    schema.clear_caches()
    signal_table.clear_caches()


def _pipelines(path: Path, text: str) -> tuple[Contender, Contender]:
    """Our whole cold parse, with the fast reader and with the PyYAML reader."""
    tags_path = path.with_name("tags.yaml")
    tags = TextFile(str(tags_path), tags_path.read_text("utf-8")) if tags_path.exists() else None
    meta = SourceMeta(kind="yaml", path=str(path))

    def classified(entries: tuple[RawEntry, ...]) -> object:
        opset = native.build_operators(
            entries, meta=meta, native_display=str(path), tags=tags, derivatives=None
        )
        # A bare yaml's Python-side facts come from the shipped table, as in the pipeline.
        signals, _ = signals_for(SourceFiles(meta=meta))
        return taxonomy.classify(replace(opset, signals=signals))

    def fast() -> object:
        return classified(entry_reader.read_entries(text, str(path)))

    def pyyaml() -> object:
        return classified(entries_yaml.load_entries_yaml(text, str(path)))

    return Contender(fast, _clear_caches), Contender(pyyaml, _clear_caches)


def clear_torchgen_caches(gen: ModuleType) -> None:
    """Empty torchgen's parse caches, so that its next parse_native_yaml reads both files again."""
    gen._GLOBAL_PARSE_NATIVE_YAML_CACHE.clear()
    gen._GLOBAL_PARSE_TAGS_YAML_CACHE.clear()
    # parse_tags_yaml is also wrapped in functools.cache: without this only the first run parses tags.yaml
    cache_clear = getattr(gen.parse_tags_yaml, "cache_clear", None)
    if cache_clear is not None:
        cache_clear()


def _torchgen(path: Path, folder: str | None, notes: list[str]) -> Contender | None:
    if folder is not None:
        sys.path.insert(0, folder)
    try:
        gen: ModuleType = importlib.import_module("torchgen.gen")
    except ImportError:
        notes.append("torchgen skipped: not importable (pass --torchgen DIR, a folder holding torchgen/)")
        return None
    tags_path = str(path.with_name("tags.yaml"))
    if not Path(tags_path).exists():
        tags_path = str(Path(str(gen.__file__)).parent / "packaged" / "ATen" / "native" / "tags.yaml")
        notes.append(f"torchgen uses its packaged tags.yaml ({tags_path})")

    return Contender(lambda: gen.parse_native_yaml(str(path), tags_path), lambda: clear_torchgen_caches(gen))


def _contenders(path: Path, text: str, torchgen_dir: str | None, notes: list[str]) -> dict[str, Contender]:
    try:
        entry_reader._read_entries_fast(text)
    except entry_reader._Decline:
        notes.append("the fast reader declined this file: the fast-reader rows timed the PyYAML fallback")
    ours, ours_pyyaml = _pipelines(path, text)
    contenders: dict[str, Contender] = {
        OURS: ours,
        "fast reader alone (read_entries)": Contender(lambda: entry_reader.read_entries(text, str(path))),
        "PyYAML CSafeLoader load alone": Contender(
            lambda: yaml.load(text, Loader=yamltext.Loader)  # noqa: S506
        ),
        "our pipeline, PyYAML path": ours_pyyaml,
    }
    torchgen = _torchgen(path, torchgen_dir, notes)
    if torchgen is not None:
        contenders[TORCHGEN] = torchgen
    return contenders


def _time(contenders: dict[str, Contender], repeat: int) -> dict[str, dict[str, list[float]]]:
    times: dict[str, dict[str, list[float]]] = {name: {"cpu": [], "wall": []} for name in contenders}
    for _ in range(repeat):
        for name, contender in contenders.items():
            for other in contenders.values():
                other.prepare()
            gc.collect()
            cpu, wall = time.process_time(), time.perf_counter()
            result = contender.run()
            times[name]["cpu"].append(time.process_time() - cpu)
            times[name]["wall"].append(time.perf_counter() - wall)
            del result
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "file", nargs="?", type=Path, help="a native_functions.yaml (default: vendored 2.14.1)"
    )
    parser.add_argument("--repeat", type=int, default=15, help="runs per contender (default 15)")
    parser.add_argument("--torchgen", metavar="DIR", help="a folder containing torchgen/")
    parser.add_argument(
        "--json", nargs="?", const="-", metavar="FILE", help="write the results as JSON (default: stdout)"
    )
    args = parser.parse_args(argv)

    notes: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        path: Path = args.file or _default_file(Path(tmp))
        text = path.read_text("utf-8")
        times = _time(_contenders(path, text, args.torchgen, notes), args.repeat)

    return report(
        times,
        reference=TORCHGEN,
        heading=f"{path.name}: {len(text):,} characters, medians of {args.repeat} cold runs (CPU time)",
        clock="process CPU time, median of the repeats",
        json_target=args.json,
        facts={
            "file": path.name if args.file is None else str(path),
            "characters": len(text),
            "repeat": args.repeat,
        },
        notes=notes,
        digits=2,
    )


if __name__ == "__main__":
    sys.exit(main())
