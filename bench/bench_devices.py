"""Benchmark: what each speed device saves in a user-visible run, counted in instructions (not a test).

    python bench/bench_devices.py [--only NAME ...] [--commits N] [--keep DIR]

Wall time on a shared machine is noise, so each command runs under ``valgrind --tool=callgrind``
(the instruction count of the Python process; git children are not traced) once with every device
on and once with each device switched off, same inputs. The table shows each run's instructions
and off/on: a device that saves a tenth of the run shows 1.10 or more.

The commands, each as a user runs it (interpreter start, imports and output included):

- ``stats`` of 2.14.1's native_functions.yaml (tests/data/releases, decompressed);
- ``diff`` of 2.13.0 against 2.14.1;
- ``history`` of a small fine-grained PyTorch-shaped repository (tests/pytorch_history.py).

The devices (switched off inside the measured process by `_switch_off`, before the commands' modules
are imported, so a run without a device is the code as it would read without it):

- ``gc-pause``: opdrift.gcpause.gc_paused around imports, parse and classify;
- ``exec-constructors``: opdrift.model.fast_constructor's generated constructors;
- ``slot-setters``: opdrift.schema.model's make_operator_name and make_function_schema;
- ``grammar-caches``: opdrift.schema.grammar's memo dicts of schema, argument, return and type texts;
- ``variants-cache``, ``facets-cache``: opdrift.operators.validate's and opdrift.taxonomy.classify's memos;
- ``parse-cache``: opdrift.drift.changes._parse's memo of schema texts;
- ``signals-cache``: opdrift.signals.table's loaded releases of the shipped table.

A switch imports its module first; for a module the command would not import (``parse-cache`` in
``stats``) the ratio measures that import, not the device.

Measured before the devices that did not pay were removed (off/on; 1.10 would be a tenth):

    stats 2.14.1        gc-pause 1.025  exec-constructors 1.056  grammar-caches 1.379
                        variants-cache 1.006  facets-cache 1.006
    diff 2.13.0→2.14.1  gc-pause 1.019  exec-constructors 1.040  slot-setters 1.006
                        grammar-caches 1.745  facets-cache 1.008  parse-cache 1.001
                        variants-cache 1.005  signals-cache 1.010
    history (3 commits a step, 2.13.0..2.14.1)  facets-cache 1.012

With every device on, before → after the removal: stats 1,936M → 1,822M instructions, diff
3,968M → 3,795M, history 5,561M → 5,187M.
"""

from __future__ import annotations

import argparse
import importlib
import lzma
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
RELEASES = ROOT / "tests" / "data" / "releases"


class _NoStore(dict):  # type: ignore[type-arg]
    """A memo dict that forgets: every lookup misses, so the memoised function runs every time."""

    def __setitem__(self, key: object, value: object) -> None:
        pass


# Each switch turns one device off and says whether the code still has it: a device removed after
# this measurement (the code reads plainly now) shows as "absent", so the script stays re-runnable.
# The switches patch through setattr, before the commands' modules import the patched names.


def _module(name: str) -> ModuleType | None:
    try:
        mod = importlib.import_module(name)
    except ImportError:
        return None
    # An editable install of another checkout can still serve a module this tree has removed.
    return mod if ROOT in Path(mod.__file__ or "/").resolve().parents else None


def _patch(mod: ModuleType, name: str, value: object) -> None:
    setattr(mod, name, value)


def _off_gc_pause() -> bool:
    mod = _module("opdrift.gcpause")
    if mod is None:
        return False

    @contextmanager
    def run_as_is() -> Iterator[None]:
        yield

    _patch(mod, "gc_paused", run_as_is)
    return True


def _off_exec_constructors() -> bool:
    mod = _module("opdrift.model")
    if mod is None or not hasattr(mod, "fast_constructor"):
        return False
    _patch(mod, "fast_constructor", lambda cls: cls)
    for name, cls in (
        ("new_operator", "Operator"),
        ("new_op_record", "OpRecord"),
        ("new_facets", "Facets"),
        ("new_decision", "Decision"),
    ):
        setattr(mod, name, getattr(mod, cls))
    return True


def _off_slot_setters() -> bool:
    mod = _module("opdrift.schema.model")
    if mod is None or not hasattr(mod, "make_operator_name"):
        return False
    _patch(mod, "make_operator_name", mod.OperatorName)
    _patch(mod, "make_function_schema", mod.FunctionSchema)
    return True


def _off_dicts(module: str, *names: str) -> Callable[[], bool]:
    def off() -> bool:
        mod = _module(module)
        if mod is None or not all(isinstance(getattr(mod, n, None), dict) for n in names):
            return False
        for name in names:
            _patch(mod, name, _NoStore())
        return True

    return off


def _off_parse_cache() -> bool:
    mod = _module("opdrift.drift.changes")
    wrapped = getattr(getattr(mod, "_parse", None), "__wrapped__", None)
    if mod is None or wrapped is None:
        return False
    _patch(mod, "_parse", wrapped)
    return True


DEVICES: dict[str, Callable[[], bool]] = {
    "gc-pause": _off_gc_pause,
    "exec-constructors": _off_exec_constructors,
    "slot-setters": _off_slot_setters,
    "grammar-caches": _off_dicts(
        "opdrift.schema.grammar",
        "_schema_cache",
        "_arg_cache",
        "_arguments_cache",
        "_returns_cache",
        "_type_cache",
        "_ann_cache",
    ),
    "variants-cache": _off_dicts("opdrift.operators.validate", "_variants_cache"),
    "facets-cache": _off_dicts("opdrift.taxonomy.classify", "_facets_cache"),
    "parse-cache": _off_parse_cache,
    "signals-cache": _off_dicts("opdrift.signals.table", "_cache"),
}

ABSENT = 3  # the child's exit status when the device is no longer in the code


def _child(off: str, argv: list[str]) -> int:
    """Inside the measured process: switch OFF off (or nothing), then run the command line."""
    sys.path.insert(0, str(ROOT))
    if off != "none" and not DEVICES[off]():
        return ABSENT
    from opdrift.cli.app import main

    with open(os.devnull, "w") as sink:
        sys.stdout = sink
        return main(argv)


def _count(off: str, argv: list[str]) -> int | None:
    """Instructions of one run of ARGV with OFF switched off, from callgrind's summary (None: absent)."""
    with tempfile.NamedTemporaryFile(prefix="opdrift-callgrind-") as out:
        cmd = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out.name}",
            sys.executable,
            __file__,
            "--child",
            off,
            "--",
            *argv,
        ]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
        if done.returncode == ABSENT:
            return None
        if done.returncode not in (0, 1):
            raise SystemExit(
                f"{' '.join(argv)} (off: {off}) exited {done.returncode}:\n{done.stderr[-2000:]}"
            )
        m = re.search(r"Collected : (\d+)", done.stderr)
        if m is None:
            raise SystemExit(f"no instruction count in callgrind's output:\n{done.stderr[-2000:]}")
        return int(m.group(1))


def _release(folder: Path, version: str) -> Path:
    dest = folder / version
    dest.mkdir()
    for name in ("native_functions.yaml", "tags.yaml", "derivatives.yaml"):
        src = RELEASES / version / f"{name}.xz"
        if src.exists():
            (dest / name).write_bytes(lzma.decompress(src.read_bytes()))
    return dest / "native_functions.yaml"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--child"]:
        return _child(args[1], args[3:])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="+", choices=sorted(DEVICES), help="measure only these devices")
    ap.add_argument("--commands", nargs="+", default=["stats", "diff", "history"])
    ap.add_argument("--commits", type=int, default=3, help="single-entry commits per release step")
    a = ap.parse_args(args)
    devices = a.only or list(DEVICES)
    with tempfile.TemporaryDirectory(prefix="opdrift-bench-devices-") as tmp:
        folder = Path(tmp)
        commands: dict[str, list[str]] = {}
        if "stats" in a.commands:
            commands["stats"] = ["stats", str(_release(folder, "2.14.1"))]
        if "diff" in a.commands:
            old = _release(folder, "2.13.0") if not (folder / "2.13.0").exists() else folder / "2.13.0"
            new = folder / "2.14.1" / "native_functions.yaml"
            if not new.exists():
                new = _release(folder, "2.14.1")
            commands["diff"] = ["diff", str(old), str(new)]
        if "history" in a.commands:
            sys.path.insert(0, str(ROOT / "tests"))
            from pytorch_history import build_history

            repo = folder / "pytorch"
            build_history(repo, first="2.13.0", last="2.14.1", fine=True, cap=a.commits, checkout=False)
            commands["history"] = ["history", str(repo), "--format", "csv"]
        print(f"{'command':<9} {'device off':<18} {'instructions':>15} {'off/on':>7}")
        for name, cmd in commands.items():
            base = _count("none", cmd)
            if base is None:
                raise SystemExit("the run with every device on cannot be absent")
            print(f"{name:<9} {'(none)':<18} {base:>15,} {1.0:>7.3f}", flush=True)
            for dev in devices:
                n = _count(dev, cmd)
                if n is None:
                    print(f"{name:<9} {dev:<18} {'absent':>15}", flush=True)
                    continue
                print(f"{name:<9} {dev:<18} {n:>15,} {n / base:>7.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
