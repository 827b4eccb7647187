"""Benchmark: how long a cold read of native_functions.yaml takes, ours against PyYAML and torchgen.

    python bench/bench_parse.py [--repeat N] [--torchgen DIR] [FILE]

FILE defaults to the vendored 2.14.1 release (tests/data/releases, decompressed to a temporary folder);
its tags.yaml is taken from beside FILE. Each repeat times every contender once, in turn, so that a
noisy machine slows them alike; the table shows medians. torchgen keeps parse results in module-level
dicts, which are cleared before each of its runs so that every run is cold.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import lzma
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from bot import nativeyaml  # noqa: E402
from bot.model import SourceMeta, TextFile  # noqa: E402

DEFAULT_RELEASE = ROOT / "tests" / "data" / "releases" / "2.14.1"


def _default_file(folder: Path) -> Path:
    for name in ("native_functions.yaml", "tags.yaml"):
        (folder / name).write_bytes(lzma.decompress((DEFAULT_RELEASE / f"{name}.xz").read_bytes()))
    return folder / "native_functions.yaml"


def _import(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _pipeline(path: Path, text: str, notes: list[str]) -> Callable[[], object] | None:
    """Our whole parse: read entries, build operators, classify; None when those stages are missing."""
    native, taxonomy = _import("bot.native"), _import("bot.taxonomy")
    missing = [n for n, m in (("bot.native", native), ("bot.taxonomy", taxonomy)) if m is None]
    if native is None or taxonomy is None:
        notes.append(f"pipeline skipped: {', '.join(missing)} not importable yet")
        return None
    tags_path = path.with_name("tags.yaml")
    tags = TextFile(str(tags_path), tags_path.read_text("utf-8")) if tags_path.exists() else None
    meta = SourceMeta(kind="yaml", path=str(path))

    def run() -> object:
        entries = nativeyaml.read_entries(text, str(path))
        opset = native.build_operators(
            entries, meta=meta, native_display=str(path), tags=tags, derivatives=None
        )
        return taxonomy.classify(opset)

    return run


def _torchgen(path: Path, folder: str | None, notes: list[str]) -> Callable[[], object] | None:
    if folder is not None:
        sys.path.insert(0, folder)
    gen = _import("torchgen.gen")
    if gen is None:
        notes.append("torchgen skipped: not importable (pass --torchgen DIR, a folder holding torchgen/)")
        return None
    tags_path = str(path.with_name("tags.yaml"))
    if not Path(tags_path).exists():
        tags_path = str(Path(str(gen.__file__)).parent / "packaged" / "ATen" / "native" / "tags.yaml")
        notes.append(f"torchgen uses its packaged tags.yaml ({tags_path})")

    def run() -> object:
        gen._GLOBAL_PARSE_NATIVE_YAML_CACHE.clear()
        gen._GLOBAL_PARSE_TAGS_YAML_CACHE.clear()
        return gen.parse_native_yaml(str(path), tags_path)

    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "file", nargs="?", type=Path, help="a native_functions.yaml (default: vendored 2.14.1)"
    )
    parser.add_argument("--repeat", type=int, default=15, help="runs per contender (default 15)")
    parser.add_argument("--torchgen", metavar="DIR", help="a folder containing torchgen/")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        path: Path = args.file or _default_file(Path(tmp))
        text = path.read_text("utf-8")
        notes: list[str] = []
        try:
            nativeyaml._read_entries_fast(text)
        except nativeyaml._Decline:
            notes.append("the fast reader declined this file: `fast reader` timed the PyYAML fallback")
        contenders: dict[str, Callable[[], object]] = {
            "fast reader (read_entries)": lambda: nativeyaml.read_entries(text, str(path)),
            "PyYAML CSafeLoader load": lambda: yaml.load(text, Loader=nativeyaml._Loader),  # noqa: S506
            "our PyYAML path (load_entries_yaml)": lambda: nativeyaml.load_entries_yaml(text, str(path)),
        }
        pipeline = _pipeline(path, text, notes)
        if pipeline is not None:
            contenders["our pipeline (read + build + classify)"] = pipeline
        torchgen = _torchgen(path, args.torchgen, notes)
        if torchgen is not None:
            contenders["torchgen parse_native_yaml"] = torchgen

        times: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(args.repeat):
            for name, run in contenders.items():
                gc.collect()
                start = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - start)

    medians = {name: statistics.median(ts) for name, ts in times.items()}
    reference = medians.get("torchgen parse_native_yaml")
    print(f"{path.name}: {len(text):,} characters, median of {args.repeat} runs")
    print(f"{'contender':42} {'median ms':>10} {'torchgen/this':>14}")
    for name, median in medians.items():
        ratio = f"{reference / median:.1f}x" if reference is not None else "-"
        print(f"{name:42} {median * 1000:10.1f} {ratio:>14}")
    for note in notes:
        print(f"note: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
