"""Runner of `site`: SOURCEs and backend lists in, a static site in DIR out."""

from __future__ import annotations

import argparse

from bot.cli.common import EXIT_OK, load, warn


def run_site(args: argparse.Namespace) -> int:
    from bot.coverage import backends as backend_lists
    from bot.coverage import check as coverage
    from bot.site.backends import check_unique, parse_site_backend
    from bot.site.build import build_site
    from bot.site.files import site_files
    from bot.site.model import BackendSpec
    from bot.site.write import write_site

    # Every argument is checked before the first SOURCE is parsed.
    specs = [parse_site_backend(arg) for arg in args.backend or ()]
    check_unique(specs)
    snapshots = [load(spec) for spec in args.sources]
    now = snapshots[-1]
    for spec in specs:
        if spec.kind == "dispatch":
            coverage.check_dispatch_key(now, spec.value)
    coverages = []
    for spec in specs:
        listed = backend_lists.read_backend(spec.kind, spec.value, torch_version=now.meta.torch_version)
        for message in listed.warnings:
            warn(message)
        cov = coverage.compute_coverage(now, listed)
        coverages.append((BackendSpec(spec.name, spec.kind, spec.label, cov.profile), cov))
    write_site(args.output, site_files(build_site(snapshots, coverages)))
    return EXIT_OK
