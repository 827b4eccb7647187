"""The `coverage` use case: backend lists against SOURCE (and BASE), each list given one NAME read as
one backend; SOURCEs load through the `load` the caller gives. The command line renders and writes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from opdrift.coverage import backends
from opdrift.coverage import check as coverage
from opdrift.coverage.backends import BackendList
from opdrift.coverage.change import CoverageChange, compare_coverage
from opdrift.coverage.kinds import KIND_BY_ID
from opdrift.errors import ConfigError
from opdrift.model import Snapshot
from opdrift.operators.kernels import Profile

Say = Callable[[str], None]


@dataclass(frozen=True)
class CoverageRun:
    head: Snapshot
    results: tuple[tuple[coverage.Coverage, CoverageChange | None], ...]


def coverage_of(
    source: str,
    backend_args: Sequence[str],
    *,
    base_source: str | None,
    profile: Profile | None,
    torch_version: str | None,
    load: Callable[[str], Snapshot],
    warn: Say,
) -> CoverageRun:
    check_torch_version(torch_version)
    groups = backend_groups(backend_args)
    head = load(source)
    base = load(base_source) if base_source else None
    check_keys(head, groups)

    results = []
    for key, specs in groups.items():
        backend = read_group(key, specs, torch_version or head.meta.torch_version)
        _warn_about(backend, "SOURCE", warn)
        cov = coverage.compute_coverage(head, backend, profile)
        change = None
        if base is not None:
            base_backend = read_group(key, specs, torch_version or base.meta.torch_version)
            _warn_about(base_backend, "BASE", warn)
            change = compare_coverage(coverage.compute_coverage(base, base_backend, profile), cov)
        results.append((cov, change))
    return CoverageRun(head, tuple(results))


def check_torch_version(torch_version: str | None) -> None:
    """Checked before any file is read. torch's own spellings count (2.6.0a0 on main, 2.1.0+cpu)."""
    if torch_version is not None:
        try:
            backends.torch_version_key(torch_version)
        except ConfigError:
            raise ConfigError(
                f"--torch-version {torch_version!r}: expected a version like 2.14, 2.14.1 or 2.15.0a0"
            ) from None


# The --backend arguments grouped: NAME (or a key of its own for a list without one) → its lists.
BackendGroups = dict[str, list[tuple[backends.BackendKind, str]]]


def backend_groups(backend_args: Sequence[str]) -> BackendGroups:
    """``[NAME:]KIND=PATH`` arguments (`coverage`, `explain`) parsed by the one parser of backend specs;
    lists given one NAME are one backend, in the order their NAME first appears."""
    groups: BackendGroups = {}
    for i, arg in enumerate(backend_args):
        name, kind, value = backends.parse_named_backend_arg(arg)
        groups.setdefault(name if name is not None else f"\0{i}", []).append((kind, value))
    return groups


def check_keys(head: Snapshot, groups: BackendGroups) -> None:
    """ConfigError for a ``dispatch`` list whose key no operator of HEAD has a kernel under."""
    for specs in groups.values():
        for kind, value in specs:
            if KIND_BY_ID[kind].in_pytorch:
                coverage.check_dispatch_key(head, value)


def read_group(key: str, specs: list[tuple[backends.BackendKind, str]], version: str | None) -> BackendList:
    """One backend from its lists (`backend_groups`), read against torch VERSION."""
    lists = [backends.read_backend(kind, value, torch_version=version) for kind, value in specs]
    return backends.alone(lists[0]) if key.startswith("\0") else backends.merge_backends(key, lists)


def read_backends(
    head: Snapshot, groups: BackendGroups, *, torch_version: str | None, warn: Say
) -> tuple[BackendList, ...]:
    """Every backend of GROUPS read as `coverage` reads it against HEAD (what its readers skipped told
    to WARN): what `explain --backend` judges, so that it gives coverage's verdicts."""
    check_keys(head, groups)
    out = []
    for key, specs in groups.items():
        backend = read_group(key, specs, torch_version or head.meta.torch_version)
        _warn_about(backend, "SOURCE", warn)
        out.append(backend)
    return tuple(out)


def read_and_cover(
    snapshot: Snapshot, kind: backends.BackendKind, value: str, *, warn: Say | None
) -> tuple[BackendList, coverage.Coverage]:
    """One backend list read against SNAPSHOT's torch version, what its reader skipped told to `warn`,
    and its coverage as a backend of its kind's profile (the site's columns, the subscriptions' lists)."""
    listed = backends.alone(backends.read_backend(kind, value, torch_version=snapshot.meta.torch_version))
    if warn is not None:
        for message in listed.warnings:
            warn(message)
        if listed.ungated:
            warn(ungated_warning(listed, "the PyTorch SOURCE judged"))
    return listed, coverage.compute_coverage(snapshot, listed)


def ungated_warning(backend: BackendList, which: str, hint: str = "") -> str:
    """What to say when WHICH source has no torch version (no release tag, version.txt or wheel
    metadata): the list's version gates go unchecked and every gated entry counts."""
    return (
        f"{backend.path}: {which} has no torch version (no release tag, version.txt or wheel metadata), "
        f"so the version gates of {backend.ungated} op-plugin entries were not checked and every entry "
        f"counts{hint}"
    )


def _warn_about(backend: BackendList, which: str, warn: Say) -> None:
    # BASE reads the same file again: what the reader skipped is said once, for SOURCE.
    if which == "SOURCE":
        for message in backend.warnings:
            warn(message)
    if backend.ungated:
        warn(ungated_warning(backend, which, " (give --torch-version X.Y)"))
