"""The arguments of the user-facing commands (snapshot, stats, explain, diff, comment, issue, history,
history-merge, coverage): each ``add_<name>(p)`` fills the subparser the registry made for it.

Only argparse and opdrift.cli.options are imported: building the parser loads no stage.
"""

from __future__ import annotations

import argparse

from opdrift.cli.options import (
    DEFAULT_FAIL_ON,
    FAIL_ON,
    PROFILES,
    REPORT_FORMATS,
    SOURCE_HELP,
    STATS_FORMATS,
    add_base_head,
    add_codegen,
    add_output,
    add_overrides,
    add_retry_budget,
    add_source,
    add_timeline_format,
    commit_sha,
    positive_int,
)


def add_snapshot(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Classify every registered operator of SOURCE and write a deterministic, "
        "versioned snapshot (JSON). Same input, same bytes."
    )
    p.epilog = SOURCE_HELP
    add_source(p)
    add_output(p)
    add_overrides(p)
    add_codegen(p)


def add_stats(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Count SOURCE's entries, registered operators, base operators, overloads and "
        "composites, and how many base operators fall in each taxonomy bucket. An overload is a "
        "registered operator with an overload name (add.Tensor, add.out; relu has none); the output "
        "ends with what each row counts."
    )
    p.epilog = SOURCE_HELP
    add_source(p)
    p.add_argument(
        "--format",
        choices=STATS_FORMATS,
        default="text",
        help="text (a table), markdown (the post's table) or json (the figures, for scripts); default: text",
    )
    add_output(p)
    add_overrides(p)
    add_codegen(p)


def add_explain(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Show the bucket of OP (a registered name such as add.out, or a base name such as "
        "add), the taxonomy rule that decided it and why, and the facets of its registered operators."
    )
    p.epilog = SOURCE_HELP
    p.add_argument("op", metavar="OP", help="a registered name (add.out) or a base name (add)")
    add_source(p)
    p.add_argument(
        "--backend",
        metavar="[NAME:]KIND=PATH",
        action="append",
        default=[],
        help="also say what this backend must do for OP, as `coverage --backend` says it (repeatable; "
        "KIND and PATH as for coverage; lists given the same NAME are one backend)",
    )
    p.add_argument(
        "--format",
        choices=("text", "markdown", "json"),
        default="text",
        help="text, markdown, or json (the same view, for scripts); default: text",
    )
    p.add_argument(
        "--profile",
        choices=PROFILES,
        help="judge every --backend as this kind of backend, as `coverage --profile` does (default: the KIND's)",
    )
    p.add_argument(
        "--torch-version",
        metavar="X.Y",
        help="torch version for op-plugin version gates of --backend lists (default: the SOURCE's, when known)",
    )
    add_overrides(p)
    add_codegen(p)


def add_diff(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Compute the operator drift from BASE to HEAD and report it: ops that need a kernel, "
        "BC-breaking changes, new core ops, ops that now decompose, then every change by bucket. "
        "Exit 0 when nothing reaches --fail-on, 1 when something does, 2 on error."
    )
    p.epilog = SOURCE_HELP
    add_base_head(p)
    p.add_argument(
        "--format",
        choices=REPORT_FORMATS,
        default="text",
        help="text, markdown or json (the full report); pr-comment, weekly-issue, job-summary (capped bodies)",
    )
    add_output(p)
    p.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        default=DEFAULT_FAIL_ON,
        help="exit 1 on unacknowledged changes of this level: breaking (BC breaks, removals, renames; "
        "the default), kernel (those plus ops that need a new kernel or whose kernel's C++ signature "
        "changed), any (any change), never",
    )
    p.add_argument(
        "--allowlist", metavar="FILE", help="acknowledged changes (see docs/drift.md, Acknowledgements)"
    )
    add_overrides(p)
    add_codegen(p)
    p.add_argument("--title", default="", help="a title for the Markdown formats")


def add_comment(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Compute the drift from BASE to HEAD and keep one comment on PR N up to date: "
        "edited in place, never created on a PR without drift, flipped to ✅ when the drift is gone."
    )
    p.epilog = SOURCE_HELP
    add_publish_args(p)
    p.add_argument("--pr", required=True, type=positive_int, metavar="N", help="the pull request number")
    p.add_argument(
        "--head-sha",
        metavar="SHA",
        type=commit_sha,
        help="the PR head commit HEAD was taken at: post only while PR N's head is still SHA, so a run for "
        "an older push never overwrites the report of a newer one",
    )
    p.add_argument(
        "--annotations",
        action="store_true",
        help="print ::warning lines pointing at new and changed entries of native_functions.yaml",
    )


def add_issue(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Compute the drift from BASE to HEAD and open (or update) the issue of one week, "
        "found by a hidden per-week marker; a new week's issue links the previous one."
    )
    p.epilog = SOURCE_HELP
    add_publish_args(p)
    p.add_argument(
        "--week", metavar="YYYY-Www", help="the window, e.g. 2026-W48 (default: this ISO week, UTC)"
    )
    p.add_argument(
        "--manual",
        metavar="REF",
        help="a manual run against the PyTorch ref REF: open its own issue (titled with REF, or edit the "
        "open one of the same REF, BASE and HEAD), never the week's; not with --week",
    )
    p.add_argument(
        "--history",
        metavar="REPO",
        help="attribute every change to the upstream commit that introduced it, by walking REPO (a PyTorch "
        "git repository) from the commit BASE was taken at to HEAD's",
    )
    p.add_argument(
        "--from",
        dest="from_rev",
        metavar="REV",
        help="with --history: walk from REV (default: BASE's commit)",
    )
    p.add_argument(
        "--to", dest="to_rev", metavar="REV", help="with --history: walk to REV (default: HEAD's commit)"
    )
    p.add_argument(
        "--upstream",
        metavar="OWNER/NAME",
        help="where commit and PR links point (default: weekly.upstream of the config, else pytorch/pytorch)",
    )
    p.add_argument(
        "--chart",
        type=int,
        metavar="N",
        help="with --history: embed the Mermaid chart of the last N commits (default: weekly.chart, 0 = none)",
    )


def add_history(p: argparse.ArgumentParser) -> None:
    p.description = (
        "For each commit in FROM..TO (first-parent, oldest first) that touched "
        "native_functions.yaml, tags.yaml or derivatives.yaml: registered operators, base operators per "
        "bucket, and the drift from the previous point. --tags walks release tags instead."
    )
    p.add_argument("repo", metavar="REPO", help="a PyTorch git repository (a checkout or a bare clone)")
    p.add_argument(
        "--from", dest="from_rev", metavar="REV", help="start after REV (default: the first commit)"
    )
    p.add_argument("--to", dest="to_rev", metavar="REV", default="HEAD", help="end at REV (default: HEAD)")
    p.add_argument(
        "--paths", nargs="+", metavar="PATH", help="the files whose commits count (default: the three)"
    )
    p.add_argument(
        "--tags", metavar="GLOB", help="walk release tags matching GLOB (e.g. 'v*'), version-sorted"
    )
    add_timeline_format(p)
    add_output(p)
    p.add_argument("--cache", metavar="DIR", help="keep per-commit results here, so reruns start warm")
    p.add_argument("--shard", metavar="I/N", help="walk only the I-th of N contiguous chunks (JSON to merge)")
    policy = p.add_mutually_exclusive_group()
    policy.add_argument(
        "--strict",
        action="store_true",
        help="stop at the first commit whose operator files do not build (by default such a commit is "
        "recorded as broken, the walk goes on, and stderr names the skipped commits)",
    )
    # The default since the walk goes on by itself; still accepted so that existing scripts run.
    policy.add_argument("--keep-going", action="store_true", help="accepted for compatibility; the default")
    add_overrides(p)


def add_history_merge(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Join every shard's JSON (all N of them, any order) into the timeline one "
        "unsharded run writes, byte for byte."
    )
    p.add_argument(
        "shards", metavar="SHARD", nargs="+", help="the JSON output of each `history --shard I/N` run"
    )
    add_timeline_format(p)
    add_output(p)


def add_coverage(p: argparse.ArgumentParser) -> None:
    # The kind table is the one list of kinds; its module imports nothing at run time.
    from opdrift.coverage.kinds import kinds_help, profiles_help

    p.description = (
        "Compare a backend's own op list with SOURCE's operators: coverage per bucket, "
        "the ops that need a kernel, stale entries, and schema alerts. "
        f"KIND=PATH is one of: {kinds_help()}."
    )
    p.epilog = SOURCE_HELP
    p.add_argument(
        "--backend",
        metavar="[NAME:]KIND=PATH",
        action="append",
        required=True,
        help="a backend to check (repeatable; KIND and PATH as described above); lists given the same "
        "NAME are one backend, e.g. NPU:op-plugin=op_plugin_functions.yaml NPU:torch-npu=npu_native_functions.yaml",
    )
    add_source(p)
    p.add_argument("--base", metavar="BASE", help="also report what changed since BASE (a SOURCE)")
    p.add_argument("--format", choices=("text", "markdown", "json"), default="text", help="(default: text)")
    add_output(p)
    p.add_argument(
        "--torch-version",
        metavar="X.Y",
        help="torch version for op-plugin version gates (default: the SOURCE's, when known)",
    )
    p.add_argument(
        "--profile",
        choices=PROFILES,
        help="judge every --backend as this kind of backend: eager (own dispatch key), functional "
        f"(XLA, Lazy) or export (compilers of exported graphs); default: the KIND's ({profiles_help()})",
    )
    add_codegen(p)


def add_gates(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Gate Ascend op-plugin's op_plugin_functions.yaml for torch X.Y: cap the entries whose operator "
        "X.Y removed (and torch_npu's own ones whose schema uses a type X.Y removed) at the last release "
        "that had it, append X.Y to the top-level all_version, and list, as comments above the diff, the "
        "entries whose C++ binding X.Y changes. Prints a unified diff (empty when the file is gated for "
        "X.Y already); --write applies it. The operators of X.Y come from opdrift's release tables, or "
        "from SOURCE for a release newer than they are."
    )
    p.epilog = SOURCE_HELP
    p.add_argument(
        "--backend",
        metavar="[NAME:]op-plugin=PATH",
        required=True,
        help="the op-plugin list to gate, e.g. NPU:op-plugin=op_plugin/config/op_plugin_functions.yaml",
    )
    p.add_argument("--torch-version", metavar="X.Y", required=True, help="the release to gate for, e.g. 2.14")
    p.add_argument(
        "source",
        metavar="SOURCE",
        nargs="?",
        help="X.Y's operators (e.g. gh:pytorch/pytorch@v2.16.0-rc1); default: opdrift's release tables",
    )
    p.add_argument(
        "--write", action="store_true", help="also replace the list with the gated one (atomically)"
    )
    add_output(p)


def add_site(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Write a static site into DIR: an index of every base operator with search and filters, a page "
        "per base operator (overloads, facets, bucket rule, its history across the SOURCEs, coverage), a "
        "coverage matrix, a growth chart, and the same data as JSON. SOURCEs are put in order by their torch "
        "version (ties by commit date), else by commit date, whatever order they are given in; the newest is "
        "current, and an order that cannot be told is an error. The site loads nothing from the network and "
        "needs no server."
    )
    p.epilog = SOURCE_HELP
    p.add_argument("sources", metavar="SOURCE", nargs="+", help="releases or snapshots, in any order")
    p.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        required=True,
        help="the site's directory: written beside it and renamed into place; an existing DIR is replaced "
        "only when an earlier `opdrift site` wrote it",
    )
    p.add_argument(
        "--backend",
        metavar="NAME:KIND=PATH",
        action="append",
        help="a backend column (repeatable): NAME as the site shows it, KIND and PATH as for `coverage` "
        "(e.g. xla:xla=xla_native_functions.yaml, mps:dispatch=MPS)",
    )
    p.add_argument(
        "--history",
        metavar="REPO",
        help="walk REPO (a PyTorch git repository) from the first SOURCE's commit to the last's, and name "
        "the commit and PR behind every change of each operator's life",
    )
    p.add_argument(
        "--tags",
        metavar="GLOB",
        help="with --history: walk the release tags matching GLOB (e.g. 'v2.*') instead of every commit",
    )


def add_publish_args(p: argparse.ArgumentParser) -> None:
    add_base_head(p)
    p.add_argument("--repo", required=True, metavar="OWNER/NAME", help="where to post")
    p.add_argument("--config", metavar="FILE", help="subscriptions, labels, allow-list (docs/config.md)")
    p.add_argument(
        "--allowlist", metavar="FILE", help="acknowledged changes (instead of the config's `allowlist:`)"
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print what would be posted and send no write request (the default without GITHUB_TOKEN)",
    )
    add_retry_budget(p)
    add_codegen(p)


def add_watch(p: argparse.ArgumentParser) -> None:
    p.description = (
        "List the open pull requests of --upstream that touch native_functions.yaml, tags.yaml or "
        "derivatives.yaml, judge each for every backend the config subscribes (what it would need, the "
        "kernels that would stop compiling, the ops it implements that a PR removes), and keep one "
        "dashboard issue in --repo; a new comment mentions the subscribers of a PR that newly affects "
        "their backend. A run with nothing new writes nothing. See docs/commands.md."
    )
    p.add_argument(
        "--upstream", required=True, metavar="OWNER/NAME", help="the repository to watch (pytorch/pytorch)"
    )
    p.add_argument("--repo", required=True, metavar="OWNER/NAME", help="where the dashboard issue lives")
    p.add_argument(
        "--config",
        required=True,
        metavar="FILE",
        help="the subscriptions with `backend:` lists (docs/config.md)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the body and the comment and send no write request (the default without GITHUB_TOKEN)",
    )
    p.add_argument(
        "--format",
        choices=("markdown", "json"),
        default="markdown",
        help="json: the impact per PR and backend, for other tools (schemas/watch.schema.json); default: markdown",
    )
    add_output(p)
    p.add_argument(
        "--budget",
        type=positive_int,
        # What PullsClient.scan counts: the list pages and the compares. The judge's `gh:` reads (5 or
        # more per pull request that touches the operator files, docs/performance.md) and the issue's
        # calls go through other clients and are not counted: the default leaves them a fifth.
        default=800,
        metavar="N",
        help=(
            "the most requests the pull request listing and its compares may send (default 800); the "
            "judge's reads, about 5 per pull request that touches the operator files, and the issue's few "
            "calls are not counted: the default leaves them 200 of a workflow token's 1,000 an hour"
        ),
    )
    add_retry_budget(p)
