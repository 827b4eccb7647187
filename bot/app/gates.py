"""The `gates` use case: op-plugin's yaml gated for torch X.Y (`opdrift.coverage.gates`), from the shipped
release tables, or from a SOURCE of X.Y for a release newer than they are; the diff, and with --write
the file replaced atomically."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from opdrift.coverage import names, schema_history
from opdrift.coverage.backends import parse_named_backend_arg
from opdrift.coverage.gates import GatePlan, Minor, ReleaseOps, plan_gates, render
from opdrift.coverage.kinds import KIND_BY_ID
from opdrift.errors import ConfigError
from opdrift.files import write_atomic
from opdrift.model import Snapshot
from opdrift.sources.read import decode, read_capped
from opdrift.versions import parse_user_version, parse_version

_BOM = "\ufeff"


@dataclass(frozen=True)
class GatesRun:
    path: str
    original: str
    plan: GatePlan
    diff: str  # empty: the file is gated for the release already


def _minor_of_release(release: str) -> Minor:
    version = parse_version(release)
    if version is None:  # the shipped tables name releases as torch does
        raise ConfigError(f"opdrift's release tables name {release!r}, not a release")
    return version.minor_key


def _table_release(table: tuple[str, ...], minor: Minor) -> str | None:
    """The last release of TABLE in MINOR (2.14.1 over 2.14.0: the later patch)."""
    found = [r for r in table if _minor_of_release(r) == minor]
    return found[-1] if found else None


def _previous(minor: Minor) -> Minor | None:
    before = sorted({_minor_of_release(r) for r in names.table_releases()} - {minor})
    earlier = [m for m in before if m < minor]
    return earlier[-1] if earlier else None


def _from_tables(minor: Minor) -> ReleaseOps | None:
    in_names = _table_release(names.table_releases(), minor)
    in_schemas = _table_release(schema_history.table_releases(), minor)
    in_structured = _table_release(schema_history.structured_releases(), minor)
    if in_names is None or in_schemas is None or in_structured is None:
        return None
    structured = schema_history.structured_in(in_structured) or frozenset()
    return ReleaseOps(
        minor,
        f"{in_names} (release tables)",
        names.registered_in(in_names),
        schema_history.schemas_in(in_schemas),
        structured,
    )


def _from_snapshot(minor: Minor, snapshot: Snapshot, label: str) -> ReleaseOps:
    ops = snapshot.operators
    structured = frozenset(
        n for n, rec in ops.items() if rec.facets.structured or rec.facets.structured_delegate is not None
    )
    return ReleaseOps(minor, label, frozenset(ops), {n: rec.schema for n, rec in ops.items()}, structured)


def _last_seen(name: str) -> Minor | None:
    last = names.last_registered(name)
    return None if last is None else _minor_of_release(last)


def gates_of(
    backend_arg: str,
    torch_version: str,
    source: str | None,
    *,
    load: Callable[[str], Snapshot],
) -> GatesRun:
    """The gate edits of the op-plugin list BACKEND_ARG (``[NAME:]op-plugin=PATH``) for TORCH_VERSION,
    its operators from SOURCE when given, else from the release tables."""
    _name, kind, path = parse_named_backend_arg(backend_arg)
    if not KIND_BY_ID[kind].gated:
        raise ConfigError(f"--backend {backend_arg!r}: gates are op-plugin's (give NAME:op-plugin=PATH)")
    version = parse_user_version(torch_version)
    if version is None:
        raise ConfigError(f"--torch-version {torch_version!r}: expected a release like 2.14")
    minor = version.minor_key
    previous_minor = _previous(minor)
    previous = None if previous_minor is None else _from_tables(previous_minor)
    if previous is None:
        raise ConfigError(
            f"--torch-version {torch_version}: opdrift's release tables have no release before it"
        )
    if source is not None:
        snapshot = load(source)
        found = parse_user_version(snapshot.meta.torch_version or "")
        if found is not None and found.minor_key != minor:  # a bare yaml names no version: trusted
            raise ConfigError(f"SOURCE {source} is torch {snapshot.meta.torch_version}, not {torch_version}")
        release = _from_snapshot(minor, snapshot, source)
    else:
        tables = _from_tables(minor)
        if tables is None:
            newest = names.table_releases()[-1]
            raise ConfigError(
                f"--torch-version {torch_version} is newer than opdrift's release tables (up to {newest}): "
                "give a SOURCE of it, e.g. gh:pytorch/pytorch@v2.16.0-rc1"
            )
        release = tables
    data = read_capped(Path(path), path)
    text = decode(data, path)
    bom = _BOM if data.startswith(_BOM.encode("utf-8")) else ""
    plan = plan_gates(text, path, previous, release, _last_seen)
    sources = f"upstream {previous.label} → {release.label}"
    return GatesRun(path, bom + text, _with_bom(plan, bom), render(plan, text, path, sources=sources))


def _with_bom(plan: GatePlan, bom: str) -> GatePlan:
    from dataclasses import replace

    return replace(plan, text=bom + plan.text)


def write(run: GatesRun) -> bool:
    """Replace the list with the gated one, atomically; False when there was nothing to change."""
    if run.plan.text == run.original:
        return False
    write_atomic(run.path, run.plan.text)
    return True
