"""`opdrift init`: its arguments and its runner (a thin one: the use case is opdrift.app.init).

The registry imports this module to build the parser, so only argparse and opdrift.cli.common are imported
at the top; the runner imports the stages when it runs. It asks nothing when the flags say everything,
prompts for what is missing when stdin is a terminal, and otherwise stops with one line.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from opdrift.cli.common import EXIT_OK, load, warn

if TYPE_CHECKING:
    from opdrift.app.init import InitPlan, InitRequest
    from opdrift.app.init_workflows import Pin

DEFAULT_UPSTREAM = "pytorch/pytorch"


def add_init(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Set opdrift up in a backend's repository (run it at the repository's root): check the backend's "
        "op list against upstream's main, write .github/opdrift.yml with a backend subscription, the chosen "
        "workflows (from the shipped examples) and snapshots/main.json seeded from gh:UPSTREAM@main, then "
        "say what is left to do by hand. Reads GITHUB_TOKEN and GITHUB_API_URL as gh: SOURCEs do. Never "
        "replaces an existing file without --force, and writes nothing when one exists."
    )
    p.add_argument(
        "--backend",
        metavar="[NAME:]KIND=PATH",
        help="the backend's op list, as for `coverage` (e.g. dlprim:cpp=src); PATH relative to the root",
    )
    p.add_argument(
        "--who",
        metavar="HANDLE",
        action="append",
        help='who to mention for the backend\'s gaps: "@user" or "@org/team" (repeatable)',
    )
    p.add_argument(
        "--upstream",
        metavar="OWNER/NAME",
        help=f"the PyTorch repository to follow (default: {DEFAULT_UPSTREAM})",
    )
    p.add_argument("--weekly", action="store_true", help="write the weekly drift issue's workflow")
    p.add_argument(
        "--watch",
        action="store_true",
        help="write the hourly watch of open upstream pull requests (when this version ships it)",
    )
    p.add_argument(
        "--action",
        metavar="OWNER/NAME@SHA",
        help="the opdrift the workflows use, by its full commit sha (default: the installed one, when it "
        "was installed from a git commit or is a release whose project URL names its repository)",
    )
    p.add_argument("--force", action="store_true", help="replace files that already exist")


def _ask(question: str) -> str:
    print(question, end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip()


def _complete(args: argparse.Namespace, ask: Callable[[str], str] | None) -> None:
    """Fill what the flags left out by asking, or stop with one line when there is no terminal."""
    from opdrift.errors import OpdriftError

    missing = [flag for flag, value in (("--backend", args.backend), ("--who", args.who)) if not value]
    if ask is None:
        if missing:
            raise OpdriftError(
                f"init: {' and '.join(missing)} needed (no terminal to ask in; see `opdrift init --help`)"
            )
        return
    if not args.backend:
        args.backend = ask("The backend's op list, [NAME:]KIND=PATH (e.g. dlprim:cpp=src): ")
    if not args.who:
        args.who = [h for h in ask('Who to mention, "@user" or "@org/team" (space-separated): ').split() if h]
    if args.upstream is None:
        args.upstream = ask(f"The PyTorch repository to follow [{DEFAULT_UPSTREAM}]: ") or DEFAULT_UPSTREAM
    if not (args.weekly or args.watch):
        args.weekly = ask("Open a weekly drift issue? [Y/n] ").lower() in ("", "y", "yes")
        from opdrift.app.init_workflows import available

        if available("watch"):
            args.watch = ask("Watch open upstream pull requests? [y/N] ").lower() in ("y", "yes")
    if not args.backend or not args.who:
        raise OpdriftError("init: a backend and at least one handle are needed")


def run_init(args: argparse.Namespace) -> int:
    from opdrift.app import init
    from opdrift.app.init_workflows import available, installed_pin, installed_version, pin_from_flag
    from opdrift.errors import OpdriftError
    from opdrift.sources.repo import toplevel

    # Everything the flags and the repository can settle, before the one slow step (reading upstream):
    # a wrong flag costs a second, not a minute of network.
    _complete(args, _ask if sys.stdin.isatty() else None)
    upstream = args.upstream or DEFAULT_UPSTREAM
    if args.watch and not available("watch"):
        raise OpdriftError(
            "--watch: the watch of open upstream pull requests is not available in this version"
        )
    version = installed_version()
    pin = installed_pin() if args.action is None else pin_from_flag(args.action, version)
    flags = tuple(f for f, on in (("weekly", args.weekly), ("watch", args.watch)) if on)
    request = init.InitRequest(args.backend, tuple(args.who), upstream, flags)
    # The workflows check the repository out and read these paths from its root: init writes there.
    root = toplevel(".")
    if root is None:
        raise OpdriftError("init: not inside a git repository: run it in the backend's repository")
    if os.path.realpath(root) != os.path.realpath("."):
        raise OpdriftError(
            f"init: run it at the repository's root, {root} (--backend PATH is relative to it)"
        )
    root = "."
    if not args.force:
        # Before the upstream read: a taken file stops init at once, having written nothing.
        taken = init.targets_taken(root, init.targets(request))
        if taken is not None:
            raise OpdriftError("exists (use --force)", path=taken)
    init.check_request(request, root)
    if not pin.known:
        raise OpdriftError(
            f"init: this opdrift ({version}) was not installed from a git commit or a release that names its "
            "repository, so the workflows could name no opdrift that runs on GitHub: give --action "
            "OWNER/NAME@SHA (the full commit sha of the opdrift release to use)"
        )
    print(f"opdrift init: reading {request.source} and {args.backend} ...", file=sys.stderr)
    plan = init.plan_init(request, root, load=load, pin=pin, version=version, warn=warn)
    init.write_files(root, plan.files, force=args.force)
    _report(plan, request, pin)
    return EXIT_OK


def _report(plan: InitPlan, request: InitRequest, pin: Pin) -> None:
    from opdrift.render.view import source_label
    from opdrift.work.rules import NEEDS_KERNEL, words

    cov = plan.coverage
    out = sys.stdout
    out.write(
        f"{request.backend} against {request.source}, at {source_label(plan.head.meta)}; "
        f"profile {cov.profile}:\n"
        f"  covered {len(cov.covered)} of {len(cov.ops)} operators; "
        f"{words(NEEDS_KERNEL, profile=cov.profile)}: {len(cov.uncovered)}"
        + (f"; training-only: {len(cov.training_only)}" if cov.training_only else "")
        + f"; stale: {len(cov.stale)} (listed, but no operator upstream)\n"
        f"  each of them: opdrift coverage --backend {request.backend} {request.source}\n"
    )
    for path, _ in plan.files:
        out.write(f"wrote {path}\n")
    out.write(f"pinned: uses: {pin.uses()}\n")
    out.write(
        "left to do by hand:\n"
        f"  1. commit: git add {' '.join(sorted({p.split('/')[0] for p, _ in plan.files}))} && "
        'git commit -m "opdrift: operator drift alerts"\n'
        "  2. push: git push\n"
        "  3. enable issues: Settings → General → Features → Issues (the workflows post there)\n"
    )
