"""Runners of `diff` (the drift report between two SOURCEs), `coverage` (a backend against SOURCE) and
`gates` (op-plugin's yaml gated for a release).

Each runner imports its stages when it runs: the two share no renderer, and neither loads the GitHub
client.
"""

from __future__ import annotations

import argparse
import sys

from opdrift.cli.common import EXIT_FINDING, EXIT_OK, codegen_rules, load, load_pair, warn, write_output


def run_diff(args: argparse.Namespace) -> int:
    import datetime as dt

    from opdrift.app.overrides import load_overrides
    from opdrift.drift.allowlist import NO_ACKNOWLEDGEMENTS, acknowledge, load_allowlist
    from opdrift.drift.changes import compute_drift
    from opdrift.drift.policy import failing
    from opdrift.render.context import ReportContext
    from opdrift.render.report import render

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
    from opdrift.app.coverage import coverage_of
    from opdrift.render import coverage as coverage_report

    run = coverage_of(
        args.source,
        args.backend,
        base_source=args.base,
        profile=args.profile,
        torch_version=args.torch_version,
        # --codegen is checked where it was, after the --backend arguments: the loader asks for it.
        load=lambda spec: load(spec, codegen=codegen_rules(args)),
        warn=warn,
    )
    write_output(coverage_report.render(run.results, args.format, head=run.head), args.output)
    return EXIT_OK


def run_gates(args: argparse.Namespace) -> int:
    from opdrift.app.gates import gates_of, write

    run = gates_of(args.backend, args.torch_version, args.source, load=lambda spec: load(spec))
    write_output(run.diff, args.output)
    if args.write and write(run):
        print(f"opdrift: gated {run.path} for torch {args.torch_version}", file=sys.stderr)
    return EXIT_OK
