"""Benchmark: a whole `opdrift stats` process against a whole torchgen `parse_native_yaml` process.

    python bench/bench_startup.py [--repeat N] [--torchgen DIR] [--baseline DIR] [--json [FILE]] [FILE]

bench_parse.py times the parse inside one process; this times what a user waits for: interpreter
start, imports, reading the file, and (for opdrift) classifying and printing the table. FILE defaults
to the vendored 2.14.1 release (tests/data/releases, decompressed to a temporary folder); its
tags.yaml is taken from beside FILE. torchgen comes from ``--torchgen DIR`` (a folder holding
torchgen/, e.g. unzipped from a torch wheel), or from the environment when it is importable.
``--baseline DIR`` adds another checkout's `opdrift stats` (e.g. ``git worktree add DIR main``) to the
same interleaving, so that a change is measured before and after side by side.

Each contender runs once untimed first, so that both start with their bytecode caches written, as
an installed tool does. The timed runs alternate (opdrift, torchgen, opdrift, ...), so that a busy
machine slows both alike. The clock is the child's CPU time (user + system, from getrusage), wall
time is shown too; the table shows medians and torchgen's median over opdrift's.

Measured on 7 December 2026 (docs/performance.md, "A whole process"): under other jobs' load CPU time
moved by a quarter between runs, so the figure to compare is callgrind's instruction count of one
process each (``valgrind --tool=callgrind python -m opdrift stats FILE``), here with opdrift installed
(not editable) in a fresh venv, as a user runs it: opdrift 1,347 million, torchgen 4,773 million:
torchgen takes 3.54 times as many (2.75 before `stats` stopped building records and importing PyYAML).
"""

from __future__ import annotations

import argparse
import lzma
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from medians import report

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_RELEASE = ROOT / "tests" / "data" / "releases" / "2.14.1"
OURS = "opdrift stats (whole process)"
TORCHGEN = "torchgen parse_native_yaml (whole process)"
BARE = "python -c pass (interpreter start alone)"
BASELINE = "opdrift stats of --baseline DIR (whole process)"

_TORCHGEN_PROBE = """
import sys
if sys.argv[1]:
    sys.path.insert(0, sys.argv[1])
from torchgen.gen import parse_native_yaml
parse_native_yaml(sys.argv[2], sys.argv[3])
"""


def _default_file(folder: Path) -> Path:
    for name in ("native_functions.yaml", "tags.yaml"):
        (folder / name).write_bytes(lzma.decompress((DEFAULT_RELEASE / f"{name}.xz").read_bytes()))
    return folder / "native_functions.yaml"


def _run(argv: list[str], env: dict[str, str], cwd: Path = ROOT) -> tuple[float, float]:
    """Run ARGV in CWD to completion (its output discarded); its CPU time (user + system) and wall time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, env=env, cwd=cwd, check=True)
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def _torchgen_importable(folder: str, env: dict[str, str]) -> bool:
    probe = "import sys\nif sys.argv[1]: sys.path.insert(0, sys.argv[1])\nimport torchgen.gen"
    done = subprocess.run([sys.executable, "-c", probe, folder], env=env, capture_output=True, check=False)
    return done.returncode == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "file", nargs="?", type=Path, help="a native_functions.yaml (default: vendored 2.14.1)"
    )
    parser.add_argument("--repeat", type=int, default=9, help="timed runs per contender (default 9)")
    parser.add_argument("--torchgen", metavar="DIR", default="", help="a folder containing torchgen/")
    parser.add_argument(
        "--baseline", metavar="DIR", type=Path, help="another checkout whose `opdrift stats` is timed too"
    )
    parser.add_argument(
        "--json", nargs="?", const="-", metavar="FILE", help="write the results as JSON (default: stdout)"
    )
    args = parser.parse_args(argv)

    # The child sees this checkout's bot/, and no PYTHON* setting of ours (no -X importtime, no -B).
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = str(ROOT)
    notes: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        # Absolute: the baseline runs in its own folder, and must read the same file.
        path: Path = (args.file or _default_file(Path(tmp))).resolve()
        tags = path.with_name("tags.yaml")
        contenders = {
            OURS: [sys.executable, "-m", "opdrift", "stats", str(path)],
            BARE: [sys.executable, "-c", "pass"],
        }
        envs = dict.fromkeys(contenders, env)
        cwds = dict.fromkeys(contenders, ROOT)
        if args.baseline is not None:
            # The same command, with the other checkout's package on the path instead of this one's,
            # run in that checkout: `python -m` puts the working directory first on the path.
            contenders[BASELINE] = contenders[OURS]
            envs[BASELINE] = {**env, "PYTHONPATH": str(args.baseline.resolve())}
            cwds[BASELINE] = args.baseline.resolve()
        if _torchgen_importable(args.torchgen, env):
            envs[TORCHGEN] = env
            contenders[TORCHGEN] = [
                sys.executable,
                "-c",
                _TORCHGEN_PROBE,
                args.torchgen,
                str(path),
                str(tags),
            ]
        else:
            notes.append("torchgen skipped: not importable (pass --torchgen DIR, a folder holding torchgen/)")
        for name, command in contenders.items():  # warm: bytecode caches written
            _run(command, envs[name], cwds.get(name, ROOT))
        times: dict[str, dict[str, list[float]]] = {name: {"cpu": [], "wall": []} for name in contenders}
        for _ in range(args.repeat):
            for name, command in contenders.items():
                cpu, wall = _run(command, envs[name], cwds.get(name, ROOT))
                times[name]["cpu"].append(cpu)
                times[name]["wall"].append(wall)

    return report(
        times,
        reference=TORCHGEN,
        heading=f"{path.name}: whole processes, medians of {args.repeat} runs each, interleaved (CPU time)",
        clock="child process CPU time (user + system), median of the repeats",
        json_target=args.json,
        facts={
            "file": path.name if args.file is None else str(path),
            "repeat": args.repeat,
            "baseline": None if args.baseline is None else str(args.baseline),
        },
        notes=notes,
    )


if __name__ == "__main__":
    sys.exit(main())
