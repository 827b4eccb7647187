"""Which real models dispatch each ATen overload, per torch release and per path: the shipped tables.

scripts/model_corpus.py runs a corpus of real models (torchvision, timm, transformers, diffusers,
RNN language models, embedding-bag recommenders, torch.nn's transformer) on a real torch, on the CPU,
and records what each path hands a backend (docs/models.md):

- ``eager_inference``, ``eager_training``: the overloads a TorchDispatchMode sees below Autograd,
  the key an eager backend registers its kernels at (training: forward, backward, clip_grad_norm_,
  AdamW.step, with the CPU's defaults);
- ``export_core``: torch.export, then run_decompositions with PyTorch's Core-ATen table;
- ``export_torch_mlir``: the same program decomposed by torch-mlir's FX importer table;
- ``functional``: the functionalized joint forward+backward graph (or, where that trace fails, the
  inference graph torch.export made, and the run's note says so).

One table per release, ``data/models-<release>.tsv.xz``; a release without one is answered from the
nearest release that has one, and `UsageChoice` says so. An operator the table's release did not
register yet has no model data (`Status.NO_DATA_YET`), which is not the same as "no model uses it".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from functools import cache
from pathlib import Path
from types import MappingProxyType

from opdrift.errors import OpdriftError
from opdrift.operators.kernels import Profile
from opdrift.shipped import ShippedTable, read_rows
from opdrift.versions import TorchVersion, parse_version

Path_ = str  # one of PATHS

PATHS: tuple[Path_, ...] = (
    "eager_inference",
    "eager_training",
    "export_core",
    "export_torch_mlir",
    "functional",
)

# The paths that reach a backend of each profile (`opdrift.operators.kernels`). An export backend that
# decomposes with its own table sees export_torch_mlir when that table is torch-mlir's
# (`paths_for(..., torch_mlir=True)`), export_core otherwise.
PATHS_OF_PROFILE: Mapping[Profile, tuple[Path_, ...]] = MappingProxyType(
    {
        "eager": ("eager_inference", "eager_training"),
        "functional": ("functional",),
        "export": ("export_core",),
    }
)

FORMAT = "# opdrift-model-corpus 1"
DATA = Path(__file__).parent / "data"
_FILE = re.compile(r"models-(\d+\.\d+\.\d+)\.tsv\.xz")
_STATUSES = ("ok", "failed", "skipped")


class ModelTableError(OpdriftError):
    """A shipped model table is damaged (a packaging error, not the user's)."""


class Status(Enum):
    USED = "used"  # at least one model of the corpus dispatched it on that path
    UNUSED = "unused"  # the release registered it and no model dispatched it
    NO_DATA_YET = "no data yet"  # the table's release did not register it: nothing to say


@dataclass(frozen=True)
class Model:
    name: str
    family: str


@dataclass(frozen=True)
class Run:
    """One model on one path: ``ok``, ``failed`` (why, in one line) or ``skipped`` (its library was
    not installed beside that torch)."""

    model: str
    path: Path_
    status: str
    cpu_seconds: float
    note: str


@dataclass(frozen=True)
class OpUsage:
    """One operator on one path, as a table answers it."""

    op: str
    path: Path_
    status: Status
    models: tuple[str, ...]  # the models that dispatched it, most calls first
    calls: int  # over every model, one run each
    release: str  # the release the table was recorded with


@dataclass(frozen=True)
class ModelUsage:
    """One release's table: the corpus, each run, and path → op → model → calls."""

    release: str
    environment: Mapping[str, str]
    models: tuple[Model, ...]
    runs: tuple[Run, ...]
    counts: Mapping[Path_, Mapping[str, Mapping[str, int]]] = field(repr=False)

    def families(self) -> tuple[str, ...]:
        return tuple(sorted({m.family for m in self.models}))

    def recorded(self, path: Path_) -> tuple[str, ...]:
        """The models whose run on PATH succeeded: the denominator of "used by N models"."""
        return tuple(r.model for r in self.runs if r.path == path and r.status == "ok")

    def failed(self, path: Path_) -> tuple[Run, ...]:
        return tuple(r for r in self.runs if r.path == path and r.status != "ok")

    def used_by(self, op: str, path: Path_) -> tuple[str, ...]:
        """The models that dispatched OP (``add.Tensor``, ``add`` for the default overload) on
        PATH, most calls first."""
        per_model = self.counts.get(_check_path(path), {}).get(op, {})
        return tuple(sorted(per_model, key=lambda m: (-per_model[m], m)))

    def used_on(self, op: str, paths: tuple[Path_, ...]) -> tuple[str, ...]:
        """The models that dispatched OP on any of PATHS (a profile's, `paths_for`), most calls
        first: an eager backend's op serves a model whether it runs inference or training."""
        calls: dict[str, int] = {}
        for path in paths:
            for name, count in self.counts.get(_check_path(path), {}).get(op, {}).items():
                calls[name] = calls.get(name, 0) + count
        return tuple(sorted(calls, key=lambda m: (-calls[m], m)))

    def ops(self, path: Path_) -> tuple[tuple[str, int], ...]:
        """Every overload dispatched on PATH with its number of models, most models first: the
        ranking a backend's work list can follow."""
        on_path = self.counts.get(_check_path(path), {})
        return tuple(sorted(((op, len(m)) for op, m in on_path.items()), key=lambda x: (-x[1], x[0])))

    def lookup(self, op: str, path: Path_, introduced: str | None) -> OpUsage:
        """OP on PATH. INTRODUCED is the first release that registered OP (for ATen,
        `opdrift.coverage.names.first_registered`); a release after this table's, or None (no
        release the caller knows registered it), means this table cannot speak for OP."""
        models = self.used_by(op, path)
        per_model = self.counts.get(path, {}).get(op, {})
        if models:
            status = Status.USED
        else:
            first = parse_version(introduced)
            mine = parse_version(self.release)
            status = Status.NO_DATA_YET if first is None or mine is None or first > mine else Status.UNUSED
        return OpUsage(op, path, status, models, sum(per_model.values()), self.release)


@dataclass(frozen=True)
class UsageChoice:
    """The table that answers for a torch version: its own, or the nearest shipped one."""

    requested: str
    usage: ModelUsage

    @property
    def exact(self) -> bool:
        return _release_of(self.requested) == self.usage.release

    def caveat(self) -> str:
        """One line for a report: empty when the release has its own table."""
        if self.exact:
            return ""
        return f"model data from torch {self.usage.release} (torch {self.requested} has no table of its own)"


def paths_for(profile: Profile, *, torch_mlir: bool = False) -> tuple[Path_, ...]:
    """The paths whose operators reach a backend of PROFILE; TORCH_MLIR: an export backend that
    decomposes with torch-mlir's table."""
    if profile == "export" and torch_mlir:
        return ("export_torch_mlir",)
    return PATHS_OF_PROFILE[profile]


def shipped_releases() -> tuple[str, ...]:
    """The releases with a table of their own, oldest first."""
    found = [m[1] for p in DATA.glob("models-*.tsv.xz") if (m := _FILE.fullmatch(p.name))]
    return tuple(sorted(found, key=_key))


def usage_for(torch_version: str) -> UsageChoice:
    """The table of TORCH_VERSION's release, else of the nearest release that has one (the same
    minor first, then the fewest minors away, a newer one on a tie)."""
    wanted = parse_version(torch_version)
    releases = shipped_releases()
    if wanted is None:
        raise ModelTableError(f"not a torch version: {torch_version!r}")
    if not releases:
        raise ModelTableError("no model table is shipped", path=str(DATA))

    def distance(release: str) -> tuple[int, int, int]:
        have = _key(release)
        minors = abs((have.major - wanted.major) * 100 + have.minor - wanted.minor)
        return (minors, abs(have.patch - wanted.patch), -have.minor)

    return UsageChoice(torch_version, read_table(min(releases, key=distance)))


@cache
def read_table(release: str) -> ModelUsage:
    table = ShippedTable("opdrift.usage", f"data/models-{release}.tsv.xz", "model table", ModelTableError)
    usage = parse_table(table.text(), where=table.path)
    if usage.release != release:
        raise ModelTableError(f"records torch {usage.release}, its name says {release}", path=table.path)
    return usage


def parse_table(text: str, where: str = "<table>") -> ModelUsage:
    """A table's text (scripts/model_corpus.py's ``table`` command writes it) → ModelUsage."""
    if text.splitlines()[:1] != [FORMAT]:
        raise ModelTableError(f"does not start with {FORMAT!r}", path=where, line=1)
    env: dict[str, str] = {}
    models: dict[str, Model] = {}
    runs: dict[tuple[str, str], Run] = {}
    counts: dict[str, dict[str, dict[str, int]]] = {p: {} for p in PATHS}

    def comment(line: str) -> None:  # "# key: value" records the environment; FORMAT has no ": "
        if not line.startswith("# "):
            raise ValueError(line)
        key, sep, value = line[2:].partition(": ")
        if sep:
            env[key] = value

    def row(fields: list[str]) -> None:
        if fields[0] == "model" and len(fields) == 3:
            models[fields[1]] = Model(fields[1], fields[2])
        elif fields[0] == "run" and len(fields) == 6:
            _, path, name, status, cpu, note = fields
            if path not in PATHS or name not in models or status not in _STATUSES:
                raise ValueError(fields[0])
            runs[(name, path)] = Run(name, path, status, float(cpu), note)
        elif fields[0] == "op" and len(fields) == 5:
            _, path, op, name, calls = fields
            run = runs.get((name, path))
            if run is None or run.status != "ok" or int(calls) < 1:
                raise ValueError(fields[0])
            counts[path].setdefault(op, {})[name] = int(calls)
        else:
            raise ValueError(fields[0])

    read_rows(text, row, path=where, error=ModelTableError, comment=comment)
    version = parse_version(env.get("torch"))
    if version is None:
        raise ModelTableError("records no torch version", path=where)
    return ModelUsage(
        release=f"{version.major}.{version.minor}.{version.patch}",
        environment=MappingProxyType(env),
        models=tuple(models.values()),
        runs=tuple(runs.values()),
        counts=MappingProxyType(
            {
                p: MappingProxyType({op: MappingProxyType(m) for op, m in ops.items()})
                for p, ops in counts.items()
            }
        ),
    )


def _check_path(path: str) -> Path_:
    if path not in PATHS:
        raise ValueError(f"unknown path {path!r}; one of {', '.join(PATHS)}")
    return path


def _key(release: str) -> TorchVersion:
    version = parse_version(release)
    if version is None:  # the file pattern admits only X.Y.Z
        raise ModelTableError(f"not a release: {release!r}", path=str(DATA))
    return version


def _release_of(text: str) -> str | None:
    version = parse_version(text)
    return None if version is None else f"{version.major}.{version.minor}.{version.patch}"
