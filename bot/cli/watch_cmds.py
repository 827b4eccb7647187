"""Runner of `watch`: the dashboard issue of the upstream's open pull requests (opdrift.app.watch plans it,
opdrift.publish.watch_issue writes it). The environment (GITHUB_TOKEN, GITHUB_API_URL, XDG_CACHE_HOME) is
read here and passed on explicitly."""

from __future__ import annotations

import argparse
import json
import os
import sys

from opdrift.cli.common import EXIT_OK, github_token, note, read_any_source, warn, write_output


def run_watch(args: argparse.Namespace) -> int:
    from opdrift.app.watch import plan_watch
    from opdrift.app.watch_judge import Judge, JudgementCache, who_by_backend
    from opdrift.cli.publish_cmds import _publish_client
    from opdrift.config.file import load_config
    from opdrift.errors import ConfigError
    from opdrift.github.api import ApiSettings, requests_sent
    from opdrift.github.ghcache import default_cache_dir
    from opdrift.github.pulls import PullsClient
    from opdrift.github.retry import DEFAULT_API_URL
    from opdrift.publish.github import check_repo_name
    from opdrift.publish.watch_issue import find_watch_issue, publish_watch

    upstream = check_repo_name(args.upstream, "--upstream")
    check_repo_name(args.repo)
    cfg = load_config(args.config)
    if not any(s.backend is not None for s in cfg.subscriptions):
        raise ConfigError("watch judges backends: give at least one subscription a `backend:`", path=cfg.path)
    client, dry_run = _publish_client(args, cfg)
    found = find_watch_issue(client)
    cache = default_cache_dir(os.environ)
    settings = ApiSettings(
        api_url=os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL, token=github_token(), cache_dir=cache
    )
    judge = Judge(
        cfg,
        lambda sha: f"gh:{upstream}@{sha}",
        read_any_source,
        cache=JudgementCache(cache / "watch", warn=warn),
        warn=warn,
    )
    pulls = PullsClient(settings, upstream)
    # The scan's own client and every judgement's gh: reads: all of them go to the upstream.
    sent_before = requests_sent()
    try:
        plan = plan_watch(
            cfg,
            upstream,
            found.body if found else None,
            pulls,
            judge,
            who=who_by_backend(cfg),
            warn=warn,
            backends=judge.backends,
            budget=args.budget,
            spent=lambda: requests_sent() - sent_before,
        )
        listing = requests_sent() - sent_before
    finally:
        pulls.close()
    note(
        f"watch: {len(plan.view.rows)} open pull request(s) affect a backend, {len(plan.view.news)} newly; "
        f"{judge.judged} judged, {judge.cached} from the cache; {listing} request(s) to {upstream}"
    )
    if args.format == "json":
        write_output(json.dumps(plan.json, indent=2, sort_keys=True) + "\n", args.output)
    elif args.output is not None:
        write_output(plan.body, args.output)  # the dashboard's body, as it is (or would be) posted
    issue, comments = publish_watch(
        client, body=plan.body, comments=plan.comments, found=found, dry_run=dry_run
    )
    for outcome in (issue, *comments):
        if outcome.action == "dry-run":
            print(f"opdrift: dry run: {outcome.detail}", file=sys.stderr)
            if outcome.text and args.format != "json":
                sys.stdout.write(outcome.text if outcome.text.endswith("\n") else outcome.text + "\n")
        else:
            print(f"opdrift: {outcome.detail}" + (f": {outcome.url}" if outcome.url else ""), file=sys.stderr)
    if not comments:
        note("watch: nothing new, no comment")
    return EXIT_OK
