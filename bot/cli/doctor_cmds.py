"""`opdrift doctor`: its arguments and its runner (a thin one: the use case is opdrift.app.doctor).

The registry imports this module to build the parser, so only argparse and opdrift.cli.common are imported
at the top. The environment (GITHUB_TOKEN, GITHUB_API_URL, OPDRIFT_BOT_LOGIN) is read here.
"""

from __future__ import annotations

import argparse
import os

from opdrift.cli.common import EXIT_OK, github_token

EXIT_FAILED = 1
DEFAULT_UPSTREAM = "pytorch/pytorch"


def add_doctor(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Try, once, each call the workflows make with GITHUB_TOKEN (and GITHUB_API_URL): the repository "
        "and its issues, the bot's login, the upstream's pull requests, a compare, git trees and blobs, "
        "the rate limit; with --write also open an issue, comment on it, delete the comment and close "
        "the issue (GitHub's REST API cannot delete an issue). One line per call: its status, the "
        "permissions GitHub says it needs, the rate limit left, and the fix of a failure. Exit 1 when "
        "a call failed. Run it by hand before the first real run; never in CI."
    )
    p.add_argument(
        "--repo", required=True, metavar="OWNER/NAME", help="the repository the workflows write to"
    )
    p.add_argument(
        "--upstream",
        default=DEFAULT_UPSTREAM,
        metavar="OWNER/NAME",
        help=f"the PyTorch repository read (default: {DEFAULT_UPSTREAM})",
    )
    p.add_argument(
        "--write",
        action="store_true",
        help="also open a test issue and a comment, then delete the comment and close the issue",
    )


def run_doctor(args: argparse.Namespace) -> int:
    from opdrift.app.doctor import run_doctor as doctor
    from opdrift.cli.publish_cmds import _env_login
    from opdrift.github.retry import DEFAULT_API_URL
    from opdrift.publish.doctor import Prober
    from opdrift.publish.github import check_repo_name

    repo = check_repo_name(args.repo)
    upstream = check_repo_name(args.upstream, "--upstream")
    prober = Prober(os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL, github_token())
    try:
        ok = doctor(
            prober,
            repo,
            upstream,
            bot_login=_env_login(),
            write=args.write,
            emit=lambda line: print(line.render(), flush=True),
        )
    finally:
        prober.close()
    return EXIT_OK if ok else EXIT_FAILED
