"""Runner of `opdrift explain`: why one operator sits in its bucket and, with ``--backend``, what each
backend must do for it, as `coverage` says it (imports as in opdrift.cli.source_cmds)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from opdrift import pipeline
from opdrift.app.overrides import load_overrides
from opdrift.cli.common import EXIT_OK, codegen_rules, read_any_source, warn
from opdrift.render.explain import explain_view, render

if TYPE_CHECKING:
    from opdrift.coverage.oplist import BackendList


def run_explain(args: argparse.Namespace) -> int:
    groups = None
    if args.backend:
        # coverage's own reading of --backend: checked before SOURCE is read, as `coverage` does
        from opdrift.app.coverage import backend_groups, check_torch_version

        check_torch_version(args.torch_version)
        groups = backend_groups(args.backend)
    overrides = load_overrides(args.overrides) if args.overrides else None
    snapshot = pipeline.load_snapshot(
        args.source, overrides, warn=warn, codegen=codegen_rules(args), read=read_any_source
    )
    backends: Sequence[BackendList] = ()
    if groups is not None:
        from opdrift.app.coverage import read_backends

        backends = read_backends(snapshot, groups, torch_version=args.torch_version, warn=warn)
    sys.stdout.write(render(explain_view(snapshot, args.op, backends, args.profile), args.format))
    return EXIT_OK
