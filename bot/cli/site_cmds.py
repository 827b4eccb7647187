"""Runner of `site`: SOURCEs and backend lists in, a static site in DIR out (the use case is
`opdrift.app.site`; the write is the one I/O at the end)."""

from __future__ import annotations

import argparse

from opdrift.cli.common import EXIT_OK, load, note, warn


def run_site(args: argparse.Namespace) -> int:
    from opdrift.app.site import site_of
    from opdrift.site.files import site_files
    from opdrift.site.write import write_site

    site = site_of(
        args.sources,
        args.backend or (),
        load=load,
        history=args.history,
        tags=args.tags,
        warn=warn,
        note=note,
    )
    write_site(args.output, site_files(site))
    return EXIT_OK
