"""Drift → text, Markdown or JSON, through the Jinja2 templates in ``templates/``; size limits; escaping.

Every format leads with what a backend must do (⚠️ needs a kernel, ❌ BC-breaking, ⭐ new core ops,
♻️ now decomposes), then lists every change by bucket. Rendering is pure: `render` returns a string.

Safety: source-derived strings reach the output only through the escaping helpers of `bot.text`
(code spans, entity-escaped text). The Markdown environment's `finalize` escapes any plain `str` a
template forgets to filter, so a template bug shows escaped text instead of live Markdown.

Size: a PR comment or issue body must fit GitHub's 65,536 characters. Each bucket section shows at most
`cap` items followed by "… and N more", each lead section three times `cap`; `cap` is the largest value for
which the body fits, found by bisection. That is max-min fair: small sections show everything, and the
big ones share what is left equally, so one bucket never crowds out the rest. The operators that only
gained or lost in-tree kernels are tallied per dispatch key and listed at most MAX_KERNEL_OPS deep in
every format but JSON, whatever the room: a release can add XPU kernels to a thousand of them.
"""

from __future__ import annotations

import datetime as dt
import importlib.resources
import json
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Literal

import jinja2

if sys.version_info >= (3, 11):
    from importlib.resources.abc import Traversable
else:  # pragma: no cover - Python 3.10
    from importlib.abc import Traversable

from bot import __version__
from bot.drift.allowlist import NO_ACKNOWLEDGEMENTS, Acknowledgements
from bot.drift.changes import GENERIC_KEYS, IMPLICIT, Change, Drift, decomposes, kernel_required
from bot.drift.warnings import SourceWarning
from bot.errors import ConfigError
from bot.history.attribution import Attribution
from bot.model import NATIVE_PATH, OpRecord, SourceMeta
from bot.publish.config import BackendGap
from bot.schema.compare import Detail
from bot.snapshot import meta_json
from bot.text import Safe, code, html, link, md, one_line, shorten, terminal

Format = Literal["text", "markdown", "json", "pr-comment", "weekly-issue", "job-summary"]
FORMATS: tuple[Format, ...] = ("text", "markdown", "json", "pr-comment", "weekly-issue", "job-summary")

# Hidden markers by which the publisher finds the bot's own posts (and nobody else's).
PR_COMMENT_MARKER = "<!-- opdrift:pr-comment -->"
WEEKLY_ISSUE_MARKER = "<!-- opdrift:weekly -->"
JOB_SUMMARY_MARKER = "<!-- opdrift:job-summary -->"
REPORT_MARKER = "<!-- opdrift:report -->"
MARKERS: dict[Format, str] = {
    "pr-comment": PR_COMMENT_MARKER,
    "weekly-issue": WEEKLY_ISSUE_MARKER,
    "job-summary": JOB_SUMMARY_MARKER,
    "markdown": REPORT_MARKER,
}

GITHUB_BODY_LIMIT = 65_536  # characters in an issue or comment body
# What the publisher may add around a body (a marker line, a link to last week's issue).
PUBLISHER_MARGIN = 1_000
STEP_SUMMARY_LIMIT = 1_000_000  # GITHUB_STEP_SUMMARY accepts 1 MiB per step; keep a margin
LIMITS: dict[Format, int | None] = {
    "pr-comment": GITHUB_BODY_LIMIT - PUBLISHER_MARGIN,
    "weekly-issue": GITHUB_BODY_LIMIT - PUBLISHER_MARGIN,
    "job-summary": STEP_SUMMARY_LIMIT,
    "markdown": None,
    "text": None,
    "json": None,
}
_TEMPLATES: dict[Format, str] = {
    "pr-comment": "pr_comment.md.j2",
    "weekly-issue": "weekly_issue.md.j2",
    "job-summary": "job_summary.md.j2",
    "markdown": "report.md.j2",
    "text": "report.txt.j2",
}
# Detail lines shown under one change before "… and N more"; the JSON and text keep all of them.
MAX_DETAILS = 8
LEAD_WEIGHT = 3  # a lead section shows this many items per item of a bucket section
MAX_SCHEMA = 1000  # characters of a schema shown inline; real ones reach about 450
MAX_GAP_OPS = 20  # operator names listed per backend subscriber before "… and N more"
# Operators listed under "In-tree kernels only" in every format but JSON: a release adds XPU or MPS
# kernels to a thousand ops at once, and the per-key table already says what happened.
MAX_KERNEL_OPS = 30
MAX_SUBJECT = 120  # characters of a commit subject shown next to a change
MAX_WARNINGS = 10  # parse warnings a capped body lists; each is one line of at most 300 characters

_LOGIN = re.compile(r"@?([A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:/[A-Za-z0-9][A-Za-z0-9._-]{0,99})?)")
_SHA = re.compile(r"[0-9a-f]{7,40}")
_MARKER = re.compile(r"<!-- opdrift:[a-z-]+(?: [a-z]+=[0-9A-Za-z._-]+)* -->")


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
    generated: dt.date | None = None  # shown in the footer when given (keeps renders reproducible)
    marker: str | None = None  # replaces the format's marker, e.g. the weekly issue's per-window one
    # per backend subscription: the new or changed ops its backend lacks (bot.publish.config.backend_gaps)
    backend_gaps: tuple[BackendGap, ...] = ()
    # change fingerprint → the upstream commit that introduced it (bot.history.attribution.attribute)
    attributions: Mapping[str, Attribution] = field(default_factory=dict)
    chart: str = (
        ""  # a Mermaid chart built by bot.history.timeline.chart_of_last (its labels are sanitised there)
    )
    # HEAD's parse warnings that BASE's parse did not give (bot.drift.warnings.new_warnings)
    warnings: tuple[SourceWarning, ...] = ()


def blob_url(
    commit: str | None, repo_url: str = "https://github.com/pytorch/pytorch", path: str = NATIVE_PATH
) -> str | None:
    """The URL of native_functions.yaml at `commit`, or None when the commit is not a known sha."""
    if commit is None or _SHA.fullmatch(commit) is None:
        return None
    return f"{repo_url.rstrip('/')}/blob/{commit}/{path}"


def context_for(drift: Drift, **kwargs: object) -> ReportContext:
    """A context linking to pytorch/pytorch at the drift's base and head commits, when known."""
    ctx = ReportContext(**kwargs)  # type: ignore[arg-type]
    return ReportContext(
        **{
            **ctx.__dict__,
            "head_blob_url": ctx.head_blob_url or blob_url(drift.head.commit),
            "base_blob_url": ctx.base_blob_url or blob_url(drift.base.commit),
        }
    )


# --- templates ------------------------------------------------------------------------------------


def templates_root() -> Traversable:
    """The templates: the ``bot.templates`` package of an installed wheel, else ``templates/`` of a checkout."""
    try:
        root = importlib.resources.files("bot.templates")
        if root.joinpath("pr_comment.md.j2").is_file():
            return root
    except ModuleNotFoundError:
        pass
    return Path(__file__).resolve().parent.parent / "templates"


def templates_loader() -> jinja2.BaseLoader:
    root = templates_root()

    def load(name: str) -> str:
        text: str = root.joinpath(name).read_text(encoding="utf-8")
        return text

    return jinja2.FunctionLoader(load)


def _finalize_md(value: object) -> object:
    if isinstance(value, Safe | int):
        return value
    return md(value)


def _finalize_text(value: object) -> object:
    if isinstance(value, Safe | int):
        return value
    return terminal(value)


@cache
def environment(kind: Literal["md", "text"]) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=templates_loader(),
        autoescape=False,  # noqa: S701 - Markdown, not HTML: escaping is done by the filters and finalize
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        finalize=_finalize_md if kind == "md" else _finalize_text,
    )
    env.filters["code"] = code
    env.filters["md"] = md
    env.filters["html"] = html
    env.filters["cell"] = lambda s: code(s, in_table=True)
    env.filters["t"] = terminal
    return env


# --- the words ------------------------------------------------------------------------------------

_DETAIL_TEXT: dict[str, str] = {
    "argument_removed": "argument {subject} removed (was {before})",
    "argument_renamed": "argument {before} renamed to {after}",
    "argument_retyped": "argument {subject} retyped {before} → {after}",
    "argument_widened": "argument {subject} widened {before} → {after}",
    "alias_annotation_changed": "alias annotation of {subject} changed {before} → {after}",
    "default_removed": "default of {subject} removed (was {before})",
    "default_added": "default {after} added to {subject}",
    "default_changed": "default of {subject} changed {before} → {after}",
    "argument_added": "new argument {subject}: {after}",
    "argument_added_with_default": "new argument {after}",
    "argument_added_required": "new required argument {after}",
    "argument_inserted": "argument {after} inserted before existing ones",
    "out_argument_added": "new out argument {after}",
    "kwarg_only_made_positional": "keyword-only argument {subject} made positional",
    "positional_made_kwarg_only": "positional argument {subject} made keyword-only",
    "argument_moved": "argument {subject} moved from {before} to {after}",
    "arguments_reordered": "arguments reordered: {before} → {after}",
    "return_changed": "return changed {before} → {after}",
    "return_alias_annotation_changed": "return alias annotation changed {before} → {after}",
    "schema_changed": "schema changed {before} → {after}",
    "stopped_decomposing": "no longer decomposes: {before} → {after}",
    "now_decomposes": "now decomposes: {before} → {after}",
    "composite_changed": "composite kind {before} → {after}",
    "kernel_added": "kernel added for {subject}",
    "kernel_removed": "kernel removed for {subject}",
    "structured_changed": "structured {before} → {after}",
    "structured_delegate_changed": "structured_delegate {before} → {after}",
    "tag_added": "tag {subject} added",
    "tag_removed": "tag {subject} removed",
    "bucket_changed": "bucket {before} → {after}",
    "variant_removed": "variant {subject} removed",
    "variant_added": "variant {subject} added",
    "python_module_changed": "python_module {before} → {after}",
    "derivative_added": "autograd formula added",
    "derivative_removed": "autograd formula removed",
    "alias_of_changed": "alias of {before} → {after}",
}
# heavy plus, heavy minus, twisted arrows, pencil (escaped: ruff flags the first two as look-alikes)
_KIND_MARK = {"added": "\u2795", "removed": "\u2796", "renamed": "\U0001f500", "changed": "\u270f\ufe0f"}
_KIND_TEXT = {"added": "+", "removed": "-", "renamed": ">", "changed": "~"}
_SEVERITY_MARK = {"breaking": "❌ ", "compatible": "", "info": ""}
_SEVERITY_TEXT = {"breaking": "x ", "compatible": "+ ", "info": ". "}


# For the decomposition details an empty side means "kernels of its own", not "nothing".
_DETAIL_TEXT_EMPTY = {
    ("stopped_decomposing", "after"): "no longer decomposes: {before} dropped, it has kernels of its own",
    ("now_decomposes", "before"): "now decomposes: had kernels of its own, now {after}",
}


def describe(d: Detail, quote: Callable[[str], str]) -> str:
    """One sentence for a detail; `quote` renders each source-derived value (code span, or plain)."""
    template = _DETAIL_TEXT.get(d.code, d.code.replace("_", " ") + " {before} → {after}")
    if not d.after:
        template = _DETAIL_TEXT_EMPTY.get((d.code, "after"), template)
    if not d.before:
        template = _DETAIL_TEXT_EMPTY.get((d.code, "before"), template)
    return template.format(
        subject=quote(d.subject) if d.subject else "",
        before=quote(d.before) if d.before else "none",
        after=quote(d.after) if d.after else "none",
    )


def _kernel_state(rec: OpRecord, q: Callable[[str], str]) -> str:
    """How the operator gets its kernels, in a few words; `q` quotes the source-derived parts."""
    f = rec.facets
    if decomposes(rec):
        return f"decomposes ({q(IMPLICIT)})"
    if f.structured_delegate is not None:
        return f"kernel of {q(f.structured_delegate)}"
    generic = [k for k in f.dispatch if k in GENERIC_KEYS] or ([f.composite] if f.composite else [])
    backends = [k for k in f.dispatch if k not in GENERIC_KEYS]
    parts = []
    if generic:
        parts.append(" ".join(q(k) for k in generic))
    if backends:
        parts.append("in-tree kernels: " + " ".join(q(k) for k in backends))
    return "; ".join(parts) if parts else "no dispatch"


# --- the view model -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Section:
    """A titled list of changes, shown capped; `key` is stable for templates and JSON."""

    key: str
    title: str
    emoji: str
    hint: str
    changes: tuple[Change, ...]


@dataclass(frozen=True)
class BucketSection:
    bucket: str
    before: int
    after: int
    changes: tuple[Change, ...]
    added: int = 0
    removed: int = 0
    renamed: int = 0
    changed: int = 0
    kernels_only: int = 0  # changes left out of `changes`: in-tree kernels only, listed separately


@dataclass(frozen=True)
class View:
    drift: Drift
    lead: tuple[Section, ...]
    buckets: tuple[BucketSection, ...]
    acknowledged: tuple[Change, ...]
    counts: Mapping[str, int] = field(default_factory=dict)
    # changes whose only details are in-tree kernels added/removed, and a per-key tally of them
    kernels_only: tuple[Change, ...] = ()
    kernel_keys: tuple[tuple[str, int, int], ...] = ()


def lead_sections(drift: Drift, acks: Acknowledgements) -> tuple[Section, ...]:
    live = [c for c in drift.changes if c not in acks]
    return (
        Section(
            "needs_kernel",
            "Needs a kernel",
            "⚠️",
            "new operators, or ones that lost the kernel that served every backend (a decomposition or a "
            "CompositeExplicitAutograd kernel)",
            tuple(c for c in live if c.needs_kernel),
        ),
        Section(
            "breaking",
            "BC-breaking",
            "❌",
            "removals, renames and schema changes that break existing callers",
            tuple(c for c in live if c.breaking),
        ),
        Section(
            "new_core",
            "New core ops",
            "⭐",
            "operators that joined the core ATen opset",
            tuple(c for c in live if c.new_core),
        ),
        Section(
            "now_decomposes",
            "Now decompose",
            "♻️",
            "now CompositeImplicitAutograd: a backend kernel becomes optional",
            tuple(c for c in live if c.now_decomposes),
        ),
    )


def build_view(drift: Drift, acks: Acknowledgements) -> View:
    by_bucket: dict[str, list[Change]] = defaultdict(list)
    for c in drift.changes:
        by_bucket[c.category].append(c)
    order = [b.bucket for b in drift.buckets] + sorted(set(by_bucket) - {b.bucket for b in drift.buckets})
    counts = {b.bucket: (b.before, b.after) for b in drift.buckets}
    sections = []
    for bucket in order:
        every = by_bucket.get(bucket, [])
        cs = [c for c in every if not c.kernels_only]
        if not every:
            continue
        before, after = counts.get(bucket, (0, 0))
        sections.append(
            BucketSection(
                bucket,
                before,
                after,
                tuple(cs),
                kernels_only=len(every) - len(cs),
                added=sum(c.kind == "added" for c in cs),
                removed=sum(c.kind == "removed" for c in cs),
                renamed=sum(c.kind == "renamed" for c in cs),
                changed=sum(c.kind == "changed" for c in cs),
            )
        )
    lead = lead_sections(drift, acks)
    kernels_only = tuple(c for c in drift.changes if c.kernels_only)
    gained: dict[str, int] = defaultdict(int)
    lost: dict[str, int] = defaultdict(int)
    for c in kernels_only:
        for d in c.details:
            (gained if d.code == "kernel_added" else lost)[d.subject] += 1
    keys = sorted(set(gained) | set(lost), key=lambda k: (-gained[k] - lost[k], k))
    return View(
        kernels_only=kernels_only,
        kernel_keys=tuple((k, gained[k], lost[k]) for k in keys),
        drift=drift,
        lead=lead,
        buckets=tuple(sections),
        acknowledged=tuple(c for c in drift.changes if c in acks),
        counts={s.key: len(s.changes) for s in lead},
    )


# --- rendering ------------------------------------------------------------------------------------


def _source_label(meta: SourceMeta) -> str:
    """A short name: the torch version, the git revision, or the end of the path (two parts for a yaml)."""
    parts = meta.path.replace("\\", "/").rstrip("/").split("/")
    tail = "/".join(parts[-2:]) if parts[-1].endswith((".yaml", ".yml")) else parts[-1]
    label = meta.torch_version or meta.revision or tail or meta.kind
    if meta.commit:
        label += f" ({meta.commit[:10]})"
    return label


class _Helpers:
    """Per-render functions the templates call: they know the links and the acknowledgements."""

    def __init__(self, context: ReportContext, markdown: bool) -> None:
        self.ctx = context
        self.markdown = markdown

    def q(self, s: str) -> str:
        return code(s) if self.markdown else f"`{terminal(s)}`"

    def mark(self, c: Change) -> Safe:
        """The change kind as one symbol: an emoji in Markdown, an ASCII sign in text."""
        marks = _KIND_MARK if self.markdown else _KIND_TEXT
        return Safe(marks[c.kind])

    def warning(self, w: SourceWarning) -> Safe:
        """One parse warning: its line, linked at the head when known, and the message as plain text."""
        if w.line is None:
            where = Safe("")
        elif self.markdown:
            url = None if self.ctx.head_blob_url is None else f"{self.ctx.head_blob_url}#L{w.line}"
            where = Safe(f"{link(Safe(f'line {w.line}'), url)}: ")
        else:
            where = Safe(f"line {w.line}: ")
        more = f" (and {w.more} more line{'s' if w.more != 1 else ''})" if w.more else ""
        return Safe(where + (md(w.message) if self.markdown else terminal(w.message)) + more)

    def op(self, c: Change) -> Safe:
        """The operator's name as a code span, linked to its line at the head (base for removals)."""
        if not self.markdown:
            return terminal(c.name)
        url_base = self.ctx.base_blob_url if c.after is None else self.ctx.head_blob_url
        url = None if url_base is None else f"{url_base}#L{c.line}"
        return link(code(c.name), url)

    def details(
        self, c: Change, severities: Sequence[str] = ("breaking", "compatible", "info")
    ) -> list[Safe]:
        mark = _SEVERITY_MARK if self.markdown else _SEVERITY_TEXT
        return [
            Safe(f"{mark[d.severity]}{describe(d, self.q)}") for d in c.details if d.severity in severities
        ]

    def summary(self, c: Change) -> Safe:
        """A short phrase: what happened to the operator."""
        rec = c.record
        if c.kind == "added":
            return Safe(f"new, {_kernel_state(rec, self.q)}")
        if c.kind == "removed":
            return Safe("removed")
        if c.kind == "renamed":
            return Safe(f"renamed from {self.q(c.old_name or '')}")
        n = len(c.details)
        return Safe(f"{n} change{'s' if n != 1 else ''}")

    def kernel_reason(self, c: Change) -> Safe:
        rec = c.record
        if c.kind == "added":
            return Safe(f"new op; {_kernel_state(rec, self.q)}")
        if c.kind == "renamed":
            return Safe(f"renamed from {self.q(c.old_name or '')}; {_kernel_state(rec, self.q)}")
        before = c.before.facets if c.before is not None else None
        if before is not None and before.structured_delegate and not rec.facets.structured_delegate:
            # It ran its delegate's (out=) kernel; now each backend registers one for it directly.
            return Safe(
                f"no longer runs the kernel of {self.q(before.structured_delegate)}; now {_kernel_state(rec, self.q)}"
            )
        if before is not None and before.composite is not None and before.composite != IMPLICIT:
            # A CompositeExplicitAutograd kernel (often autogen's) served every backend; it is gone.
            return Safe(
                f"lost its {self.q(before.composite)} kernel, which served every backend; "
                f"now {_kernel_state(rec, self.q)}"
            )
        return Safe(f"stopped decomposing; now {_kernel_state(rec, self.q)}")

    def lead(self, key: str, c: Change) -> Safe:
        """Why the change is in lead section `key`, in one line."""
        if key == "needs_kernel":
            return self.kernel_reason(c)
        if key == "breaking":
            if c.kind != "changed":
                return self.summary(c)
            return Safe("; ".join(describe(d, self.q) for d in c.details if d.severity == "breaking"))
        if key == "new_core":
            return Safe("new op" if c.kind == "added" else "gained the core tag")
        if key == "now_decomposes":
            before = c.before.facets if c.before else None
            if before is None or not before.dispatch:
                return Safe("now decomposes")
            return Safe("had " + " ".join(self.q(k) for k in before.dispatch))
        return self.summary(c)

    def kernels(self, c: Change) -> Safe:
        """``+XPU +SparseXPU -MPS`` (a real minus sign): in-tree kernel keys the change added and removed."""
        parts = [("+" if d.code == "kernel_added" else "\u2212") + self.q(d.subject) for d in c.details]
        return Safe(" ".join(parts))

    def acked(self, c: Change) -> bool:
        return c in self.ctx.acknowledgements

    def ack(self, c: Change) -> Safe:
        a = self.ctx.acknowledgements.get(c)
        if a is None:
            return Safe("")
        where = self.q(a.where)
        return Safe(
            f"{md(a.reason) if self.markdown else terminal(a.reason)} ({where}, until {a.expires.isoformat()})"
        )

    def schema(self, c: Change) -> Safe:
        return code(c.record.schema, MAX_SCHEMA) if self.markdown else terminal(c.record.schema)

    def by(self, c: Change) -> Safe:
        """`` · by <sha> <subject> (#PR)``: the commit that introduced the change, when attributed."""
        a = self.ctx.attributions.get(c.fingerprint)
        if a is None:
            return Safe("")
        later = f" (+{a.later} later)" if a.later else ""
        if not self.markdown:
            pr = f" (#{a.pr})" if a.pr is not None else ""
            return Safe(f"  by {a.sha[:7]} {terminal(shorten(a.subject, MAX_SUBJECT))}{pr}{later}")
        # The PR number is ours (digits parsed from the subject), so its "#" may stay live.
        pr_link = f" ({link(Safe(f'#{a.pr}'), a.pr_url)})" if a.pr is not None else ""
        sha = link(code(a.sha[:7]), a.commit_url)
        return Safe(f" · by {sha} {md(shorten(a.subject, MAX_SUBJECT))}{pr_link}{later}")

    def tally(self, b: BucketSection) -> Safe:
        """``+2 added · -1 removed · 8 changed`` (a real minus sign): a bucket's changes by kind, the
        empty kinds left out."""
        parts = [
            f"{sign}{n} {kind}"
            for sign, n, kind in (
                ("+", b.added, "added"),
                ("\u2212", b.removed, "removed"),
                ("", b.renamed, "renamed"),
                ("", b.changed, "changed"),
            )
            if n
        ]
        if b.kernels_only:
            parts.append(f"{b.kernels_only} with in-tree kernel changes only")
        return Safe(" · ".join(parts))

    def who(self, g: BackendGap) -> Safe:
        return _mentions(g.who)

    def gap_ops(self, g: BackendGap, cap: int) -> Safe:
        shown = [self.q(n) for n in g.ops[:cap]]
        if len(g.ops) > cap:
            shown.append(f"… and {len(g.ops) - cap} more")
        return Safe(", ".join(shown))


def _marker(fmt: Format, context: ReportContext) -> Safe:
    if context.marker is None:
        return Safe(MARKERS.get(fmt, ""))
    if _MARKER.fullmatch(context.marker) is None:
        raise ValueError(f"not an opdrift marker: {context.marker!r}")
    return Safe(context.marker)


def _mentions(handles: Sequence[str]) -> Safe:
    out = []
    for h in handles:
        m = _LOGIN.fullmatch(h.strip())
        if m is None:
            raise ConfigError(f"not a GitHub login or org/team: {one_line(h)!r}")
        out.append("@" + m.group(1))
    return Safe(" ".join(out))


_UNCAPPED = 1 << 62


def _sections_of(view: View, cap: int | None) -> list[tuple[tuple[Change, ...], int]]:
    """Every capped list of the view with its cap (None: the complete render's): the bisection's unit
    of fairness.

    The lead lists (what a backend must do) get LEAD_WEIGHT times the cap of the bucket lists: they
    are why the comment exists, and their items are one short line each. The in-tree-kernels list
    never shows more than MAX_KERNEL_OPS, whatever the room.
    """
    c = _UNCAPPED if cap is None else cap
    lead = [(s.changes, c * LEAD_WEIGHT) for s in view.lead]
    return (
        lead
        + [(b.changes, c) for b in view.buckets]
        + [(view.kernels_only, min(c, MAX_KERNEL_OPS)), (view.acknowledged, c)]
    )


def _truncated(view: View, cap: int | None, warnings: int = 0) -> bool:
    """Whether `cap` cuts any list shorter than the complete render shows it."""
    if cap is not None and warnings > MAX_WARNINGS:
        return True
    return any(
        min(len(items), c) < min(len(items), full)
        for (items, c), (_, full) in zip(_sections_of(view, cap), _sections_of(view, None), strict=True)
    )


def _render_template(fmt: Format, view: View, context: ReportContext, cap: int | None) -> str:
    markdown = fmt != "text"
    env = environment("md" if markdown else "text")
    template = env.get_template(_TEMPLATES[fmt])
    d = view.drift
    h = _Helpers(context, markdown)
    text = template.render(
        marker=_marker(fmt, context),
        d=d,
        view=view,
        cap=cap if cap is not None else _UNCAPPED,
        lead_cap=cap * LEAD_WEIGHT if cap is not None else _UNCAPPED,
        kernel_cap=min(cap, MAX_KERNEL_OPS) if cap is not None else MAX_KERNEL_OPS,
        max_details=MAX_DETAILS if cap is not None else _UNCAPPED,
        title=context.title,
        base_label=_source_label(d.base),
        head_label=_source_label(d.head),
        h=h,
        truncated=_truncated(view, cap, len(context.warnings)),
        mentions=_mentions(context.mentions),
        full_report_url=link(Safe("full report"), context.full_report_url) if context.full_report_url else "",
        previous_url=link(Safe("previous report"), context.previous_url) if context.previous_url else "",
        generated=context.generated.isoformat() if context.generated else "",
        version=Safe(__version__),
        IMPLICIT=IMPLICIT,
        gaps=context.backend_gaps,
        gap_cap=min(cap, MAX_GAP_OPS) if cap is not None else MAX_GAP_OPS,
        chart=Safe(context.chart),
        warnings=context.warnings,
        warning_cap=MAX_WARNINGS if cap is not None else _UNCAPPED,
    )
    # Optional sections leave runs of blank lines; no source text can hold a newline, so squeeze them.
    return re.sub(r"\n{3,}", "\n\n", text)


def _fallback(fmt: Format, view: View, context: ReportContext, limit: int) -> str:
    """When not even one item per section fits: the headline numbers only."""
    counts = ", ".join(f"{s.emoji} {s.title}: {len(s.changes)}" for s in view.lead)
    d = view.drift
    text = (
        f"{_marker(fmt, context)}\n## Operator drift\n\n"
        f"{len(d.added)} added, {len(d.removed)} removed, {len(d.renamed)} renamed, {len(d.changed)} changed. "
        f"{counts}.\n\nThe report is too large to show here; see the {link(Safe('full report'), context.full_report_url)}.\n"
    )
    return text[:limit]


def render_json(drift: Drift, context: ReportContext) -> str:
    data = to_json(drift, context.acknowledgements)
    data["warnings"] = [{"line": w.line, "message": w.message, "more": w.more} for w in context.warnings]
    return json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def render(drift: Drift, fmt: Format, *, context: ReportContext) -> str:
    """Render `drift` in `fmt`. Bodies for GitHub are capped to the limit; text, markdown, json are complete."""
    if fmt == "json":
        return render_json(drift, context)
    if fmt not in _TEMPLATES:
        raise ValueError(f"unknown format {fmt!r}")
    view = build_view(drift, context.acknowledgements)
    limit = context.limit if context.limit is not None else LIMITS[fmt]
    full = _render_template(fmt, view, context, None)
    if limit is None or len(full) <= limit:
        return full
    # Bisection on the per-section cap: the body grows with the cap, so find the largest that fits.
    largest = max(len(x) for x, _ in _sections_of(view, 1))
    lo, hi = 0, largest
    best: str | None = None
    while lo <= hi:
        mid = (lo + hi) // 2
        body = _render_template(fmt, view, context, mid)
        if len(body) <= limit:
            best, lo = body, mid + 1
        else:
            hi = mid - 1
    return best if best is not None else _fallback(fmt, view, context, limit)


# --- JSON -----------------------------------------------------------------------------------------

JSON_VERSION = 1


def _change_json(c: Change, acks: Acknowledgements) -> dict[str, object]:
    rec = c.record
    a = acks.get(c)
    item: dict[str, object] = {
        "name": c.name,
        "kind": c.kind,
        "category": c.category,
        "fingerprint": c.fingerprint,
        "line": rec.line,
        "schema": rec.schema,
        "needs_kernel": c.needs_kernel,
        "breaking": c.breaking,
        "new_core": c.new_core,
        "now_decomposes": c.now_decomposes,
        "dispatch": list(rec.facets.dispatch),
        "tags": list(rec.facets.tags),
        "acknowledged": None
        if a is None
        else {"reason": a.reason, "expires": a.expires.isoformat(), "where": a.where},
    }
    if c.kind == "renamed":
        item["old_name"] = c.old_name
    if c.kind in ("changed", "renamed"):
        item["before_schema"] = c.before.schema if c.before else None
        item["changes"] = [
            {
                "code": d.code,
                "severity": d.severity,
                "subject": d.subject,
                "before": d.before,
                "after": d.after,
            }
            for d in c.details
        ]
    return item


def to_json(drift: Drift, acks: Acknowledgements = NO_ACKNOWLEDGEMENTS) -> dict[str, object]:
    """The documented JSON report (README, "JSON output"): everything, never truncated."""
    live = [c for c in drift.changes if c not in acks]
    return {
        "version": JSON_VERSION,
        "base": meta_json(drift.base),
        "head": meta_json(drift.head),
        "summary": {
            "added": len(drift.added),
            "removed": len(drift.removed),
            "renamed": len(drift.renamed),
            "changed": len(drift.changed),
            "breaking": sum(c.breaking for c in live),
            "needs_kernel": sum(c.needs_kernel for c in live),
            "new_core": sum(c.new_core for c in live),
            "now_decomposes": sum(c.now_decomposes for c in live),
            "acknowledged": len(drift.changes) - len(live),
            "operators": {"before": drift.base_operators, "after": drift.head_operators},
            "entries": {"before": drift.base_entries, "after": drift.head_entries},
        },
        "buckets": [{"bucket": b.bucket, "before": b.before, "after": b.after} for b in drift.buckets],
        "added": [_change_json(c, acks) for c in drift.added],
        "removed": [_change_json(c, acks) for c in drift.removed],
        "renamed": [_change_json(c, acks) for c in drift.renamed],
        "changed": [_change_json(c, acks) for c in drift.changed],
    }


# --- --fail-on ------------------------------------------------------------------------------------

FailOn = Literal["breaking", "kernel", "any", "never"]
FAIL_ON: tuple[FailOn, ...] = ("breaking", "kernel", "any", "never")
DEFAULT_FAIL_ON: FailOn = "breaking"


def failing(drift: Drift, level: FailOn, acks: Acknowledgements = NO_ACKNOWLEDGEMENTS) -> tuple[Change, ...]:
    """The unacknowledged changes that reach `level`.

    Levels nest: ``breaking`` (BC-breaking changes, removals, renames) ⊂ ``kernel`` (those plus ops that
    need a new kernel) ⊂ ``any`` (every change); ``never`` fails on nothing.
    """
    live = [c for c in drift.changes if c not in acks]
    if level == "never":
        return ()
    if level == "breaking":
        return tuple(c for c in live if c.breaking)
    if level == "kernel":
        return tuple(c for c in live if c.breaking or c.needs_kernel)
    return tuple(live)


__all__ = [
    "FAIL_ON",
    "FORMATS",
    "JOB_SUMMARY_MARKER",
    "MARKERS",
    "PR_COMMENT_MARKER",
    "REPORT_MARKER",
    "WEEKLY_ISSUE_MARKER",
    "FailOn",
    "Format",
    "ReportContext",
    "blob_url",
    "context_for",
    "failing",
    "kernel_required",
    "render",
    "templates_loader",
    "to_json",
]
