"""Everything `comment` and `issue` settle before rendering: the config and what it names, the drift,
its acknowledgements, the handles to mention, the backend gaps, and (issue --history) attribution.

All of it happens before the first request, so a bad config or an unreadable backend list stops the
run before anything is posted. Messages for stderr go through the `warn` and `note` callables the
command line passes in.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from opdrift import pipeline
from opdrift.app.coverage import read_and_cover
from opdrift.app.overrides import load_overrides
from opdrift.app.subscriptions import Kernels, ModelData, backend_gaps, backend_specs, mentions_for
from opdrift.config.backend_specs import BackendSpec, ListedBackend
from opdrift.config.file import (
    MAX_CHART_POINTS,
    BotConfig,
    Subscription,
    check_names,
    load_config,
)
from opdrift.coverage import check as coverage
from opdrift.coverage.backends import reads_in_tree
from opdrift.coverage.kinds import BackendKind
from opdrift.coverage.oplist import BackendOp
from opdrift.coverage.workitems import model_choice, model_paths, model_usage, served_by
from opdrift.drift.allowlist import NO_ACKNOWLEDGEMENTS, Acknowledgements, acknowledge, load_allowlist
from opdrift.drift.changes import Change, Drift, compute_drift
from opdrift.drift.warnings import SourceWarning, new_warnings
from opdrift.errors import ConfigError, OpdriftError
from opdrift.history.attribution import Attribution, attribute_walk, check_slug
from opdrift.model import Snapshot, SourceFiles
from opdrift.operators.codegen import CodegenRules
from opdrift.operators.native import read_tags
from opdrift.publish.github import check_repo_name
from opdrift.render.context import BackendGap, blob_url
from opdrift.render.timeline import chart_of_last
from opdrift.schema.kernel import KernelForm
from opdrift.sources import read as sources
from opdrift.taxonomy.overrides import Overrides
from opdrift.text import one_line

Say = Callable[[str], None]
# A ``gh:OWNER/NAME@REF:PATH`` spec and which of a directory's files to read → the local copy, for the
# block's time (the CLI's reads it over the REST API: `opdrift.github.ghfiles`).
FetchFiles = Callable[[str, Callable[[str], bool]], AbstractContextManager[Path]]


@dataclass(frozen=True)
class PublishSetup:
    cfg: BotConfig
    drift: Drift
    acks: Acknowledgements
    mentions: tuple[str, ...]
    # per backend subscription: the new ops it lacks, or ops that now need a kernel
    gaps: tuple[BackendGap, ...]
    overrides: Overrides | None
    warnings: tuple[SourceWarning, ...]  # HEAD's parse warnings that BASE's parse did not give
    # per backend of the config's `backends:` that the PR affects: the PR comment's impact table
    impact: tuple[BackendGap, ...] = ()


def publish_setup(
    repo: str,
    base_spec: str,
    head_spec: str,
    *,
    config: str | None,
    allowlist: str | None,
    warn: Say,
    note: Say,
    codegen: CodegenRules | None = None,
    read: Callable[[str], SourceFiles] = sources.read_source,
    fetch: FetchFiles | None = None,
    impact: bool = False,
) -> PublishSetup:
    """Config, drift, acknowledgements, the handles to mention and the backend gaps: everything before
    rendering (backend lists are read and their coverage computed here, before any request).

    `allowlist` (the --allowlist option) wins over the config's; parse warnings go to `warn`, the
    acknowledgements' notes to `note`. `read` turns a SOURCE into files (the CLI's also reads ``gh:``
    specs, so the privileged PR poster reads the PR's files itself instead of trusting an artifact).
    With `impact` (the PR comment's), the config's `backends:` lists are read and judged too, `fetch`
    reading those given as ``gh:OWNER/NAME@REF:PATH``.
    """
    check_repo_name(repo)
    cfg = load_config(config) if config else BotConfig()
    overrides = load_overrides(cfg.overrides) if cfg.overrides else None
    allow_path = allowlist or cfg.allowlist
    allow = load_allowlist(allow_path) if allow_path else None
    base = pipeline.load_snapshot(base_spec, overrides, warn=warn, codegen=codegen, read=read)
    head = pipeline.load_snapshot(head_spec, overrides, warn=warn, codegen=codegen, read=read)
    source_warnings = new_warnings(head.warnings, head.native_display, base.warnings, base.native_display)
    check_config_names(cfg, (base_spec, head_spec), base, head, read=read)
    # --codegen names the release for the kernel verdict too; its row's first release decides that
    # rule as well as the asked one (see Note [SymInt kernels from 1.13]: a row starts at 1.13).
    drift = compute_drift(base, head, head_release=None if codegen is None else codegen.since)
    acks = NO_ACKNOWLEDGEMENTS if allow is None else acknowledge(drift, allow, today=dt.date.today())
    for warning in acks.warnings:
        note(str(warning))
    live = [c for c in drift.changes if c not in acks]
    release = None if codegen is None else codegen.since
    lacking, implemented = backend_work(cfg, head, warn=warn, release=release)
    return PublishSetup(
        cfg,
        drift,
        acks,
        mentions_for(cfg, live, lacking, implemented),
        backend_gaps(cfg, live, lacking, implemented),
        overrides,
        source_warnings,
        # Every change, acknowledged ones too: an allow-list entry says PyTorch meant the break, and
        # the backend's build breaks all the same.
        downstream_impact(cfg, head, list(drift.changes), warn=warn, release=release, fetch=fetch)
        if impact
        else (),
    )


def backend_work(
    cfg: BotConfig, head: Snapshot, *, warn: Say | None = None, release: str | None = None
) -> tuple[dict[BackendSpec, frozenset[str]], dict[BackendSpec, Kernels]]:
    """Each backend list the subscriptions name → (the operators it needs a kernel for at HEAD, the
    operators it lists with the form of its kernel for each, built against HEAD's torch version, or
    RELEASE when --codegen names it, as the drift's kernel verdicts take it); each list is read once."""
    lacking = {}
    implemented: dict[BackendSpec, Kernels] = {}
    for spec in backend_specs(cfg):
        missing = spec.missing(cfg.path)
        if missing is not None:
            raise ConfigError(f"backend list {missing}", path=cfg.path, line=spec.value_line or spec.line)
        lacking[spec], implemented[spec] = _work_of(
            spec.kind, spec.resolved, head, warn=warn, release=release
        )
    return lacking, implemented


def _work_of(
    kind: BackendKind, path: str, head: Snapshot, *, warn: Say | None, release: str | None
) -> tuple[frozenset[str], Kernels]:
    """One backend list read from PATH: what it needs a kernel for at HEAD, and what it implements."""
    backend, cov = read_and_cover(head, kind, path, warn=warn)
    forms: dict[str, KernelForm | None] = {}
    recorded: dict[str, BackendOp] = {}
    for op in backend.ops:
        # An op listed twice (XLA's `supported` and `symint`) keeps the form one of them knows.
        forms[op.name] = forms.get(op.name) or op.kernel_form
        if op.schema is not None:
            recorded.setdefault(op.name, op)
    version = release or head.meta.torch_version
    # The models that reach each op, as coverage counts them (HEAD's release's table, or the nearest)
    choice = model_choice(version)
    models = None
    if choice is not None:
        models = ModelData(
            model_usage(cov, choice.usage),
            model_paths(cov),
            head.operators,
            choice.caveat(),
            served_by(cov),
        )
    return frozenset(o.name for o in cov.uncovered), Kernels(forms, version, recorded, models)


@contextmanager
def _local_copy(
    listed: ListedBackend, cfg: BotConfig, fetch: FetchFiles | None, warn: Say
) -> Iterator[tuple[str, Say]]:
    """The path to read LISTED's list from, and a `warn` that names it as the config does: a local
    path as is, a ``gh:`` spec through `fetch`, its temporary copy's path said as the spec."""
    spec = listed.spec
    if not listed.remote:
        missing = spec.missing(cfg.path)
        if missing is not None:
            raise ConfigError(f"backends: {listed.name}: {missing}", path=cfg.path, line=spec.value_line)
        yield spec.resolved, warn
        return
    if fetch is None:
        raise ConfigError(
            f"backends: {listed.name}: a gh: path is read over GitHub's API, which this command does not use",
            path=cfg.path,
            line=spec.value_line,
        )
    with fetch(spec.value, lambda rel: reads_in_tree(spec.kind, rel)) as root:
        local = str(root)
        yield local, lambda message: warn(message.replace(local, spec.value))


def downstream_impact(
    cfg: BotConfig,
    head: Snapshot,
    changes: list[Change],
    *,
    warn: Say,
    release: str | None = None,
    fetch: FetchFiles | None = None,
) -> tuple[BackendGap, ...]:
    """Per backend of the config's `backends:` that CHANGES affect, in config order: its gap, judged by
    the engine the backend subscriptions use (`opdrift.app.subscriptions.backend_gaps`, with no one to
    mention): the kernels that stop compiling in its form, the ops it must now write or lower, the
    ops it implements that the PR removes or renames and its codegen then refuses."""
    out = []
    for listed in cfg.backends:
        spec = listed.spec
        try:
            with _local_copy(listed, cfg, fetch, warn) as (path, said):
                lacking, kernels = _work_of(spec.kind, path, head, warn=said, release=release)
        except OpdriftError as err:
            if not listed.remote or fetch is None:
                raise  # the config's own mistake (a missing local list, a gh: list here): the user's
            # Another repository's list (renamed, gone, malformed, over the API's budget) must not cost
            # every PyTorch PR its comment: the row says it could not be judged, and why.
            warn(f"backends: {listed.name}: {spec.value}: {err}")
            out.append(BackendGap((), spec.kind, spec.value, (), name=listed.name, unread=one_line(str(err))))
            continue
        alone = BotConfig(subscriptions=(Subscription(who=(), backend=spec, line=listed.line),))
        for gap in backend_gaps(alone, changes, {spec: lacking}, {spec: kernels}):
            if gap.warns():  # only ops some backends need: the PR asks nothing of it, no row
                out.append(gap)
    return tuple(out)


def check_config_names(
    cfg: BotConfig,
    specs: tuple[str, str],
    base: Snapshot,
    head: Snapshot,
    *,
    read: Callable[[str], SourceFiles] = sources.read_source,
) -> None:
    """The subscriptions' dispatch keys and tags against what BASE and HEAD know (config.check_names).

    A tag may be defined in tags.yaml and used by no operator yet, so when a subscription names a tag
    that no operator has, the tags.yaml of each source (`specs`: BASE's and HEAD's SOURCE) is read
    too (stored snapshots have none).
    """
    keys = coverage.dispatch_keys(base) | coverage.dispatch_keys(head)
    tags = {t for snap in (base, head) for rec in snap.operators.values() for t in rec.facets.tags}
    if not {t for sub in cfg.subscriptions for t in sub.tags} <= tags:
        for spec in specs:
            defined = read(spec).tags
            if defined is not None:
                tags |= read_tags(defined)
    check_names(cfg, dispatch_keys=keys, tags=tags)


@dataclass(frozen=True)
class IssueAttribution:
    attributions: dict[str, Attribution]  # change fingerprint → the commit that introduced it
    chart: str  # the Mermaid chart of the last points walked ('' for none)
    head_blob_url: str | None  # native_functions.yaml at HEAD's and BASE's commits on the upstream
    base_blob_url: str | None


def issue_attribution(
    setup: PublishSetup,
    *,
    history: str | None,
    upstream: str | None,
    chart: int | None,
    from_rev: str | None,
    to_rev: str | None,
    warn: Say,
    note: Say,
) -> IssueAttribution:
    """With --history: change fingerprint → introducing commit, the chart, and blob links to --upstream
    (else the config's weekly.upstream); --chart N overrides weekly.chart."""
    cfg, drift = setup.cfg, setup.drift
    slug = check_slug(upstream or cfg.weekly.upstream)
    repo_url = f"https://github.com/{slug}"
    head_blob, base_blob = blob_url(drift.head.commit, repo_url), blob_url(drift.base.commit, repo_url)
    points = cfg.weekly.chart if chart is None else chart
    if not 0 <= points <= MAX_CHART_POINTS:
        raise OpdriftError(f"--chart must be between 0 and {MAX_CHART_POINTS}, got {points}")
    if history is None:
        if points:
            warn("weekly.chart is set but there is no --history REPO to chart: no chart")
        return IssueAttribution({}, "", head_blob, base_blob)
    found, walked = attribute_walk(
        history,
        drift.changes,
        drift.base,
        drift.head,
        upstream=slug,
        from_rev=from_rev,
        to_rev=to_rev,
        overrides=setup.overrides,
        warn=warn,
        note=note,
    )
    drawn = chart_of_last(walked, points) if points else ""
    return IssueAttribution(found, drawn, head_blob, base_blob)
