"""The functions the drift templates call (``h.op(c)``, ``h.lead(key, c)``...): one change's words,
marks and links, in Markdown or in terminal text.

They know the render's context (links, acknowledgements, attributions), so the templates stay free of
escaping decisions: every source-derived value is quoted here through `opdrift.text`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from opdrift.coverage.workitems import ModelReach
from opdrift.dispatchkeys import CIA, GENERIC_KEYS
from opdrift.drift.changes import Change, decomposes
from opdrift.drift.flags import FLAG_TABLE
from opdrift.drift.warnings import SourceWarning
from opdrift.errors import ConfigError
from opdrift.model import OpRecord
from opdrift.operators.kernels import PROFILES
from opdrift.release_calendar import ships_in_words
from opdrift.render.context import GAP_LISTS, BackendGap, ReportContext
from opdrift.render.details import broken_change, broken_declarations, describe, describe_kernel
from opdrift.render.rank import Item
from opdrift.render.reach import reach_phrase
from opdrift.render.view import BucketSection
from opdrift.schema.codes import Code
from opdrift.taxonomy.scope import scope_of
from opdrift.text import Safe, code, link, md, one_line, shorten, terminal

MAX_SCHEMA = 1000  # characters of a schema shown inline; real ones reach about 450
MAX_SUBJECT = 120  # characters of a commit subject shown next to a change

_LOGIN = re.compile(r"@?([A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:/[A-Za-z0-9][A-Za-z0-9._-]{0,99})?)")

# heavy plus, heavy minus, twisted arrows, pencil (escaped: ruff flags the first two as look-alikes)
_KIND_MARK = {"added": "\u2795", "removed": "\u2796", "renamed": "\U0001f500", "changed": "\u270f\ufe0f"}
_KIND_TEXT = {"added": "+", "removed": "-", "renamed": ">", "changed": "~"}
_SEVERITY_MARK = {"breaking": "❌ ", "compatible": "", "info": ""}
FAMILY_SHOWN = 3  # names a family line shows before "and N others"
_SEVERITY_TEXT = {"breaking": "x ", "compatible": "+ ", "info": ". "}
# What a caller's break leaves of out-of-tree kernels, by kernel verdict (`opdrift.schema.kernel`).
_KERNELS_STILL_BUILD = {
    "compatible": "; C++ kernels still build",
    "symint": "; C++ kernels written with int64_t still build",
}


def _kernel_state(rec: OpRecord, q: Callable[[str], str]) -> str:
    """How the operator gets its kernels, in a few words; `q` quotes the source-derived parts."""
    f = rec.facets
    if decomposes(rec):
        return f"decomposes ({q(CIA)})"
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


class Helpers:
    """Per-render functions the templates call: they know the links and the acknowledgements."""

    def __init__(self, context: ReportContext, markdown: bool) -> None:
        self.ctx = context
        self.markdown = markdown
        self._mentions = mentions(context.mentions)  # checked now: a bad handle fails every render

    def mentions(self) -> Safe:
        """The context's mentions as ``@login @org/team``, each handle of a backend subscription with the
        backends it is mentioned for: ``@dlprim-team (dlprim)``."""
        if not self.ctx.backend_gaps:
            return self._mentions
        out = []
        for handle in self.ctx.mentions:
            key = handle.lstrip("@").lower()
            names = dict.fromkeys(
                g.label
                for g in self.ctx.backend_gaps
                if g.warns() and key in {w.lstrip("@").lower() for w in g.who}
            )
            said = mentions((handle,))
            out.append(f"{said} ({', '.join(self.q(n) for n in names)})" if names else said)
        return Safe(" ".join(out))

    def site_link(self) -> Safe:
        """The operator catalogue, linked."""
        return link(Safe("the operator catalogue"), self.ctx.site_url)

    def chart(self) -> Safe:
        """The Mermaid chart, sanitised where it was built (opdrift.render.timeline.chart_of_last)."""
        return Safe(self.ctx.chart)

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

    def any_core(self, changes: Sequence[Change]) -> bool:
        return any("core" in c.record.facets.tags for c in changes)

    def scope(self, c: Change) -> Safe:
        """Why only some backends need the operator (`opdrift.taxonomy.scope`)."""
        found = scope_of(c.record)
        text = "needed by every backend" if found.generic else found.reason
        return Safe(md(text) if self.markdown else terminal(text))

    def family(self, key: str, item: Item) -> Safe:
        """One line for a family of changes: how many, what they are, and the first few names."""
        members = item.changes
        kinds = {c.kind for c in members}
        verb = {"added": "added", "removed": "removed", "renamed": "renamed", "changed": "changed"}
        what = " and ".join(verb[k] for k in ("added", "removed", "renamed", "changed") if k in kinds)
        # Changed members that share one reason say it once (a removal's reason is only "removed").
        shared = kinds == {"changed"} and len({self._reason_text(key, c) for c in members}) == 1
        said = f" ({self.lead(key, members[0])})" if shared else ""
        if key == "needs_kernel" and not shared:
            # which kinds of backend must act, over the whole family (the section's promise per line)
            who = {p for c in members for p in c.needs_kernel_for}
            said += f" · for {', '.join(p for p in PROFILES if p in who)}" if who else ""
        label = item.label.format(key=self.q(item.key))
        strong = f"**{len(members)} {label}**" if self.markdown else f"{len(members)} {label}"
        if not self.markdown or len(members) <= FAMILY_SHOWN:
            return Safe(f"{strong} {what}{said}: {', '.join(self.op(c) for c in members)}")
        # Every name stays in the line (folded): a capped body may show none of the bucket lists.
        shown = ", ".join(self.op(c) for c in members[:FAMILY_SHOWN])
        every = ", ".join(self.op(c) for c in members)
        return Safe(
            f"{strong} {what}{said}: {shown} and {len(members) - FAMILY_SHOWN} others "
            f"<details><summary>all {len(members)}</summary>{every}</details>"
        )

    def _reason_text(self, key: str, c: Change) -> str:
        # The lead sentence without the operator's own name, to see whether a family shares one.
        return str(self.lead(key, c)).replace(c.name, "")

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
        who = f" · for {', '.join(c.needs_kernel_for)}" if c.needs_kernel_for else ""
        return Safe(self._kernel_why(c) + who)

    def _kernel_why(self, c: Change) -> str:
        rec = c.record
        if c.kind == "added":
            return f"new op; {_kernel_state(rec, self.q)}"
        if c.kind == "renamed":
            return f"renamed from {self.q(c.old_name or '')}; {_kernel_state(rec, self.q)}"
        before = c.before.facets if c.before is not None else None
        if before is not None and before.structured_delegate and not rec.facets.structured_delegate:
            # It ran its delegate's (out=) kernel; now each backend registers one for it directly.
            return f"no longer runs the kernel of {self.q(before.structured_delegate)}; now {_kernel_state(rec, self.q)}"
        after = rec.facets.composite
        if before is not None and before.composite not in (None, CIA) and after not in (None, CIA):
            # One default kernel for another: CompositeExplicitAutograd → NonFunctional keeps serving
            # eager backends but no longer XLA or Lazy.
            return f"its default kernel is now {self.q(after or '')} (was {self.q(before.composite or '')})"
        if before is not None and before.composite is not None and before.composite != CIA:
            # A CompositeExplicitAutograd kernel (often autogen's) served every backend; it is gone.
            return f"lost its {self.q(before.composite)} kernel; now {_kernel_state(rec, self.q)}"
        return f"stopped decomposing; now {_kernel_state(rec, self.q)}"

    def lead(self, key: str, c: Change) -> Safe:
        """Why the change is in lead section `key`, in one line."""
        if key == "needs_kernel":
            return self.kernel_reason(c)
        if key == "breaking":
            if c.kind != "changed":
                return self.summary(c)
            said = "; ".join(describe(d, self.q) for d in c.details if d.severity == "breaking")
            # Callers break, kernels do not (a rename, a new default): say so, it is half the news.
            return Safe(said + _KERNELS_STILL_BUILD.get(c.kernel, ""))
        if key == "kernel_breaking":
            return self.kernel_signature(c)
        if key == "new_core":
            return Safe("new op" if c.kind == "added" else "gained the core tag")
        if key == "now_decomposes":
            before = c.before.facets if c.before else None
            if before is None or not before.dispatch:
                return Safe("now decomposes")
            return Safe("had " + " ".join(self.q(k) for k in before.dispatch))
        return self.summary(c)

    def symint_only(self, n: int) -> Safe:
        """The one line that folds the changes to the SymInt form alone: only kernels written with
        c10::SymInt must follow (see Note [SymInt kernels from 1.13])."""
        ops = f"{n} operator changed only its" if n == 1 else f"{n} operators changed only their"
        if not self.markdown:
            return Safe(
                f"{ops} SymInt form: kernels written with int64_t still build; "
                "those written with c10::SymInt must follow"
            )
        # HTML, not Markdown: the line is a <summary>, where GitHub renders no code spans.
        return Safe(
            f"🔧 <b>{ops} SymInt form</b>: kernels written with <code>int64_t</code> still build; "
            "those written with <code>c10::SymInt</code> must follow"
        )

    def kernel_signature(self, c: Change) -> Safe:
        """What changed in the kernel's C++ signature, once per set of forms it changed alike."""
        return Safe(describe_kernel(c.kernel_changes, self.q))

    def kernels(self, c: Change) -> Safe:
        """``+XPU +SparseXPU -MPS`` (a real minus sign): in-tree kernel keys the change added and removed."""
        parts = [("+" if d.code == Code.KERNEL_ADDED.id else "\u2212") + self.q(d.subject) for d in c.details]
        return Safe(" ".join(parts))

    def badges(self, c: Change) -> Safe:
        """The flags a bucket list's line shows after the change (`Flag.badge`, `Flag.text_badge`):
        `` · ⚠️ needs a kernel (eager) · ❌ breaking``, or `` [needs kernel] [breaking]`` in text. Their
        words are ours (flag names and profile names), never the source's."""
        if self.markdown:
            return Safe("".join(f" · {f.badge(c)}" for f in FLAG_TABLE if f.badge is not None and f(c)))
        return Safe("".join(f" [{f.text_badge}]" for f in FLAG_TABLE if f.text_badge is not None and f(c)))

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
        """`` · by <sha> <subject> (#PR); ships in 2.16 (branch cut …)``: the commit that introduced the
        change, when attributed, and the release its date puts it in."""
        a = self.ctx.attributions.get(c.fingerprint)
        if a is None:
            return Safe("")
        later = f" (+{a.later} later)" if a.later else ""
        ships = ships_in_words(a.date)  # our own words and digits: nothing to escape
        later += f"; {ships}" if ships else ""
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
        """The gap's handles, and which backend they are mentioned for: ``@dlprim-team (dlprim)``."""
        return Safe(f"{mentions(g.who)} ({self.q(g.label)})") if g.who else Safe("")

    def handles(self, g: BackendGap) -> Safe:
        """The gap's handles alone, where the backend's name stands beside them."""
        return mentions(g.who)

    def names(self, names: Sequence[str]) -> Safe:
        """``a``, ``a and b``, ``a, b and c``: each quoted."""
        quoted = [self.q(n) for n in names]
        return Safe(", ".join(quoted[:-1]) + " and " + quoted[-1] if len(quoted) > 1 else "".join(quoted))

    def gaps_of(self, name: str) -> list[BackendGap]:
        """The gaps of the backend called NAME (one per subscription naming it), in config order."""
        return [g for g in self.ctx.backend_gaps if g.label == name]

    def broken_details(self, g: BackendGap, cap: int) -> list[Safe]:
        """For each op whose kernel broke (at most CAP), what the gap's record says of it, as the
        watch says it (`broken_change`): what changed in its C++ signature, each parameter by its
        name, in the form it is judged in; then (Markdown) its declaration before and after, as a
        ``diff`` block under the list item."""
        out = []
        for b in g.broken[:cap]:
            block = broken_declarations(b) if self.markdown else ""
            said = f"{self.q(b.op)}: {broken_change(b, self.q)}"
            out.append(Safe(f"{said}\n{block}" if block else said))
        return out

    def models(self, reach: ModelReach | None) -> Safe:
        """ " — used by 31 of 51 models" after a list of ops (`ModelReach.short_words`); "" without data."""
        return Safe(reach_phrase(reach))

    def models_caveat(self) -> Safe:
        """Once per report: the release whose model table the gaps' counts come from, when it is not
        HEAD's own; "" when it is, or when no gap has counts."""
        gaps = [*self.ctx.backend_gaps, *self.ctx.impact]
        said = "; ".join(dict.fromkeys(g.models_caveat for g in gaps if g.models_caveat))
        return Safe(f"<sub>{md(said[:1].upper() + said[1:])}.</sub>") if said else Safe("")

    def gap_ops(self, g: BackendGap, cap: int) -> Safe:
        return self._names(g.ops, cap)

    def broken_ops(self, g: BackendGap, cap: int) -> Safe:
        return self._names(g.broken_names, cap)

    def removed_ops(self, g: BackendGap, cap: int) -> Safe:
        return self._names(g.removed, cap)

    def gap_lists(self, g: BackendGap, cap: int, warns: bool = True) -> list[tuple[Safe, int, Safe]]:
        """The gap's non-empty lists of GAP_LISTS that warn (WARNS) or do not: each as (mark and
        "N op(s) " with what it asks, its size, its names capped at CAP)."""
        out = []
        for kind in GAP_LISTS:
            names: tuple[str, ...] = getattr(g, kind.field)
            if names and kind.warns == warns:
                n = len(names)
                words = Safe(f"{kind.mark} **{n}** op{'s' if n != 1 else ''} {kind.says}")
                out.append((words, n, self._names(names, cap)))
        return out

    def gap_counts(self, g: BackendGap) -> Safe:
        """The impact table's cell for the lists of GAP_LISTS: "📐 1 recorded schema changed", …"""
        parts = [
            f"{kind.mark} {len(getattr(g, kind.field))} {kind.short}"
            for kind in GAP_LISTS
            if getattr(g, kind.field)
        ]
        return Safe(" · ".join(parts))

    def _names(self, names: Sequence[str], cap: int) -> Safe:
        shown = [self.q(n) for n in names[:cap]]
        if len(names) > cap:
            shown.append(f"… and {len(names) - cap} more")
        return Safe(", ".join(shown))


def mentions(handles: Sequence[str]) -> Safe:
    out = []
    for h in handles:
        m = _LOGIN.fullmatch(h.strip())
        if m is None:
            raise ConfigError(f"not a GitHub login or org/team: {one_line(h)!r}")
        out.append("@" + m.group(1))
    return Safe(" ".join(out))
