"""What a drift report is told beyond the drift itself: `ReportContext`, and the `BackendGap`s in it.

`BackendGap` is defined here, not by the publisher that computes it (``bot.publish.config.backend_gaps``),
because the renderer shows it and must not import the publish stage above it.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from bot.drift.allowlist import NO_ACKNOWLEDGEMENTS, Acknowledgements
from bot.drift.changes import Drift
from bot.drift.warnings import SourceWarning
from bot.history.attribution import Attribution
from bot.model import NATIVE_PATH

_SHA = re.compile(r"[0-9a-f]{7,40}")


@dataclass(frozen=True)
class BackendGap:
    """For one backend subscription: the new or changed operators its backend lacks, and those it
    implements whose kernel a change broke."""

    who: tuple[str, ...]
    kind: str
    where: str  # the path as written in the config, or the dispatch key
    ops: tuple[str, ...]  # sorted, each once
    # the ops it implements whose kernel no longer builds in the form it is written in, sorted
    broken: tuple[str, ...] = ()
    # the ops it implements that upstream removed, which its codegen then refuses, sorted
    removed: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReportContext:
    """What the caller knows beyond the drift: links, a title, who to mention, acknowledgements.

    `head_blob_url` / `base_blob_url` point at native_functions.yaml at one commit
    (``https://github.com/pytorch/pytorch/blob/<sha>/aten/src/ATen/native/native_functions.yaml``);
    ops link to ``#L<line>`` there. `mentions` are GitHub logins or ``org/team`` slugs chosen by the
    publisher: the only @ a report may contain. `limit` overrides the format's size limit.
    """

    title: str = ""
    head_blob_url: str | None = None
    base_blob_url: str | None = None
    mentions: tuple[str, ...] = ()
    acknowledgements: Acknowledgements = NO_ACKNOWLEDGEMENTS
    limit: int | None = None
    full_report_url: str | None = None
    previous_url: str | None = None  # the previous weekly issue, linked from the new one
    site_url: str | None = None  # the operator catalogue (`opdrift site`), linked from the weekly issue
    generated: dt.date | None = None  # shown in the footer when given (keeps renders reproducible)
    marker: str | None = None  # replaces the format's marker, e.g. the weekly issue's per-window one
    # per backend subscription: the new or changed ops its backend lacks (bot.publish.config.backend_gaps)
    backend_gaps: tuple[BackendGap, ...] = ()
    # change fingerprint → the upstream commit that introduced it (bot.history.attribution.attribute)
    attributions: Mapping[str, Attribution] = field(default_factory=dict)
    # a Mermaid chart built by bot.render.timeline.chart_of_last (its labels are sanitised there)
    chart: str = ""
    # HEAD's parse warnings that BASE's parse did not give (bot.drift.warnings.new_warnings)
    warnings: tuple[SourceWarning, ...] = ()


def blob_url(
    commit: str | None, repo_url: str = "https://github.com/pytorch/pytorch", path: str = NATIVE_PATH
) -> str | None:
    """The URL of native_functions.yaml at `commit`, or None when the commit is not a known sha."""
    if commit is None or _SHA.fullmatch(commit) is None:
        return None
    return f"{repo_url.rstrip('/')}/blob/{commit}/{path}"


def context_for(
    drift: Drift,
    *,
    title: str = "",
    head_blob_url: str | None = None,
    base_blob_url: str | None = None,
    mentions: tuple[str, ...] = (),
    acknowledgements: Acknowledgements = NO_ACKNOWLEDGEMENTS,
    limit: int | None = None,
    full_report_url: str | None = None,
    previous_url: str | None = None,
    site_url: str | None = None,
    generated: dt.date | None = None,
    marker: str | None = None,
    backend_gaps: tuple[BackendGap, ...] = (),
    attributions: Mapping[str, Attribution] | None = None,
    chart: str = "",
    warnings: tuple[SourceWarning, ...] = (),
) -> ReportContext:
    """A context linking to pytorch/pytorch at the drift's base and head commits, when known.

    The parameters are `ReportContext`'s fields, spelled out so that the type checker sees every caller.
    """
    return ReportContext(
        title=title,
        head_blob_url=head_blob_url or blob_url(drift.head.commit),
        base_blob_url=base_blob_url or blob_url(drift.base.commit),
        mentions=mentions,
        acknowledgements=acknowledgements,
        limit=limit,
        full_report_url=full_report_url,
        previous_url=previous_url,
        site_url=site_url,
        generated=generated,
        marker=marker,
        backend_gaps=backend_gaps,
        attributions={} if attributions is None else attributions,
        chart=chart,
        warnings=warnings,
    )
