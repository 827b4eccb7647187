"""Benchmark: `opdrift site` for all vendored releases 1.12.0 … 2.15.0 with four backends (not a test).

Times the whole command as a user runs it, in-process: parse and classify every release, the drift of
each neighbouring pair, four coverages of the last, every page and JSON file, the write. Reports the
wall and CPU time of each run, the stage split of one more run, and the site's size on disk (files,
bytes, and what `du` would count in 4 KiB blocks).

The four backends are the real lists vendored in tests/data/backends/real: torch-mlir (export),
pytorch/xla (functional), Ascend op-plugin and Intel XPU (eager).

    python bench/bench_site.py [--repeat 3] [--keep DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import lzma
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from opdrift.cli import main  # noqa: E402

RELEASES = ROOT / "tests" / "data" / "releases"
REAL = ROOT / "tests" / "data" / "backends" / "real"
BACKENDS = (
    ("torch-mlir", "torch-mlir", "torch-mlir.GeneratedTorchOps.td.xz"),
    ("xla", "xla", "pytorch-xla.xla_native_functions.yaml.xz"),
    ("ascend", "op-plugin", "op-plugin.op_plugin_functions.yaml.xz"),
    ("xpu", "xpu", "torch-xpu-ops.xpu_functions.yaml.xz"),
)


def _vkey(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def _unpack(packed: Path, dest: Path) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(lzma.decompress(packed.read_bytes()))
    return dest


# Each release laid out as a checkout without git, with version.txt, as the shipped snapshots were made
# (docs/commands.md, "The shipped snapshots"): the site then knows each release's tag and links its yaml lines.
_LAYOUT = {
    "native_functions.yaml": "aten/src/ATen/native/native_functions.yaml",
    "tags.yaml": "aten/src/ATen/native/tags.yaml",
    "derivatives.yaml": "tools/autograd/derivatives.yaml",
}


def _checkout(version: str, root: Path) -> Path:
    for packed in (RELEASES / version).glob("*.xz"):
        if packed.stem in _LAYOUT:
            _unpack(packed, root / _LAYOUT[packed.stem])
    (root / "version.txt").write_text(version + "\n")
    return root


def _size(root: Path) -> tuple[int, int, int]:
    files = [p for p in root.rglob("*") if p.is_file()]
    raw = sum(p.stat().st_size for p in files)
    blocks = sum(p.stat().st_blocks * 512 for p in files)
    return len(files), raw, blocks


def _stages(sources: list[str], backends: list[str]) -> dict[str, float]:
    """One more run, stage by stage, through the same functions the command calls."""
    from opdrift import pipeline
    from opdrift.coverage import backends as lists
    from opdrift.coverage.check import compute_coverage
    from opdrift.site.backends import parse_site_backend
    from opdrift.site.build import build_site
    from opdrift.site.files import site_files
    from opdrift.site.model import BackendColumn
    from opdrift.site.write import write_site

    times: dict[str, float] = {}
    t = time.perf_counter()
    snapshots = [pipeline.load_snapshot(s, None, warn=lambda _m: None) for s in sources]
    times["parse + classify 18 releases"] = time.perf_counter() - t
    t = time.perf_counter()
    coverages = []
    for arg in backends[1::2]:
        spec = parse_site_backend(arg)
        cov = compute_coverage(
            snapshots[-1], lists.read_backend(spec.kind, spec.value, torch_version="2.15.0")
        )
        coverages.append((BackendColumn(spec.name, spec.kind, spec.label, cov.profile), cov))
    times["read + cover 4 backends"] = time.perf_counter() - t
    t = time.perf_counter()
    site = build_site(snapshots, coverages)
    times["drifts + site data"] = time.perf_counter() - t
    t = time.perf_counter()
    files = site_files(site)
    times["pages + JSON"] = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        write_site(Path(tmp) / "site", files)
        times["write"] = time.perf_counter() - t
    return {k: round(v, 2) for k, v in times.items()}


def main_bench() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs to time (default 3)")
    parser.add_argument("--keep", metavar="DIR", help="leave the last site here")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args()

    versions = sorted((p.name for p in RELEASES.iterdir() if p.is_dir()), key=_vkey)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        sources = [str(_checkout(v, work / "releases" / f"pytorch-{v}")) for v in versions]
        backends = []
        for name, kind, file in BACKENDS:
            path = _unpack(REAL / file, work / "backends" / file.removesuffix(".xz"))
            backends += ["--backend", f"{name}:{kind}={path}"]
        out = work / "site"
        walls: list[float] = []
        cpus: list[float] = []
        for _ in range(args.repeat):
            shutil.rmtree(out, ignore_errors=True)
            wall, cpu = time.perf_counter(), time.process_time()
            code = main(["site", "-o", str(out), *backends, *sources])
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
            if code != 0:
                raise SystemExit(f"opdrift site exited {code}")
        stages = _stages(sources, backends)
        files, raw, blocks = _size(out)
        index_bytes = (out / "index.html").stat().st_size
        figures: dict[str, object] = {
            "releases": len(versions),
            "first": versions[0],
            "last": versions[-1],
            "backends": [b[0] for b in BACKENDS],
            "wall_s": [round(w, 2) for w in walls],
            "wall_median_s": round(statistics.median(walls), 2),
            "cpu_median_s": round(statistics.median(cpus), 2),
            "stages_s": stages,
            "files": files,
            "bytes": raw,
            "disk_bytes": blocks,
            "pages": len(list((out / "ops").glob("*.html"))),
            "index_html_bytes": index_bytes,
            "ops_json_bytes": (out / "data" / "ops.json").stat().st_size,
        }
        print(
            f"opdrift site, {len(versions)} releases {versions[0]} … {versions[-1]}, {len(BACKENDS)} backends: "
            f"median {figures['wall_median_s']} s wall ({figures['cpu_median_s']} s CPU) of {args.repeat}; "
            f"{files} files, {raw / 1e6:.1f} MB ({blocks / 1e6:.1f} MB on disk); "
            f"index.html {index_bytes / 1e3:.0f} kB, {figures['pages']} operator pages"
        )
        print("stages of one more run: " + ", ".join(f"{k} {v} s" for k, v in stages.items()))
        if args.keep:
            shutil.rmtree(args.keep, ignore_errors=True)
            shutil.copytree(out, args.keep)
        if args.json:
            Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main_bench()
