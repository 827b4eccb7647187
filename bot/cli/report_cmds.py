"""Runners of `diff` (the drift report between two SOURCEs) and `coverage` (a backend against SOURCE).

Each runner imports its stages when it runs: the two share no renderer, and neither loads the GitHub
client.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from bot.cli.common import EXIT_FINDING, EXIT_OK, codegen_rules, load, load_pair, warn, write_output

if TYPE_CHECKING:
    from bot.coverage.backends import BackendList


def run_diff(args: argparse.Namespace) -> int:
    import datetime as dt

    from bot.drift.allowlist import NO_ACKNOWLEDGEMENTS, acknowledge, load_allowlist
    from bot.drift.changes import compute_drift
    from bot.drift.policy import failing
    from bot.render.context import ReportContext
    from bot.render.report import render
    from bot.taxonomy.overrides import load_overrides

    allow = load_allowlist(args.allowlist) if args.allowlist else None
    overrides = load_overrides(args.overrides) if args.overrides else None
    base, head, source_warnings = load_pair(args.base, args.head, overrides, codegen_rules(args))
    drift = compute_drift(base, head, head_release=args.codegen)
    acks = NO_ACKNOWLEDGEMENTS if allow is None else acknowledge(drift, allow, today=dt.date.today())
    for warning in acks.warnings:
        print(f"opdrift: {warning}", file=sys.stderr)
    context = ReportContext(title=args.title, acknowledgements=acks, warnings=source_warnings).linked(drift)
    write_output(render(drift, args.format, context=context), args.output)
    found = failing(drift, args.fail_on, acks)
    if found:
        print(f"opdrift: {len(found)} change(s) reach --fail-on {args.fail_on}", file=sys.stderr)
        return EXIT_FINDING
    return EXIT_OK


def run_coverage(args: argparse.Namespace) -> int:
    from bot.coverage import backends
    from bot.coverage import check as coverage
    from bot.errors import ConfigError
    from bot.render import coverage as coverage_report

    # Checked here, before any file is read. torch's own spellings count (2.6.0a0 on main, 2.1.0+cpu).
    if args.torch_version is not None:
        try:
            backends.torch_version_key(args.torch_version)
        except ConfigError:
            raise ConfigError(
                f"--torch-version {args.torch_version!r}: expected a version like 2.14, 2.14.1 or 2.15.0a0"
            ) from None
    # Lists given one NAME are one backend, in the order their NAME first appears.
    groups: dict[str, list[tuple[backends.BackendKind, str]]] = {}
    for i, arg in enumerate(args.backend):
        name, kind, value = backends.parse_named_backend_arg(arg)
        groups.setdefault(name if name is not None else f"\0{i}", []).append((kind, value))
    codegen = codegen_rules(args)
    head = load(args.source, codegen=codegen)
    base = load(args.base, codegen=codegen) if args.base else None
    for specs in groups.values():
        for kind, value in specs:
            if kind == "dispatch":
                coverage.check_dispatch_key(head, value)

    def read(key: str, specs: list[tuple[backends.BackendKind, str]], version: str | None) -> BackendList:
        lists = [backends.read_backend(kind, value, torch_version=version) for kind, value in specs]
        return lists[0] if key.startswith("\0") else backends.merge_backends(key, lists)

    results = []
    for key, specs in groups.items():
        backend = read(key, specs, args.torch_version or head.meta.torch_version)
        _warn_about(backend, "SOURCE")
        cov = coverage.compute_coverage(head, backend, args.profile)
        change = None
        if base is not None:
            base_backend = read(key, specs, args.torch_version or base.meta.torch_version)
            _warn_about(base_backend, "BASE")
            change = coverage.compare_coverage(
                coverage.compute_coverage(base, base_backend, args.profile), cov
            )
        results.append((cov, change))
    write_output(coverage_report.render(results, args.format, head=head), args.output)
    return EXIT_OK


def _warn_about(backend: BackendList, which: str) -> None:
    # BASE reads the same file again: what the reader skipped is said once, for SOURCE.
    if which == "SOURCE":
        for message in backend.warnings:
            warn(message)
    if backend.ungated:
        warn(
            f"{backend.path}: {which} has no torch version, so the version gates of {backend.ungated} "
            "op-plugin entries were not checked and every entry counts (give --torch-version X.Y)"
        )
