"""The words `watch`'s templates call (``w`` in templates/watch_*.md.j2): a row's title and author, what a
pull request does to a backend in one phrase per thing, the counts of a row's short cell, the handles
to mention. Each escapes what it shows (`opdrift.text`): every text of a row comes from someone else."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from opdrift.release_calendar import ships_in_words
from opdrift.render.context import BackendGap, BrokenKernel, break_item
from opdrift.render.details import broken_change, broken_declarations
from opdrift.render.helpers import mentions
from opdrift.render.reach import reach_phrase
from opdrift.render.watch import (
    LANDED_MARK,
    NEW,
    ROW_NOTES,
    Landed,
    LandedBreak,
    PullRow,
    WatchView,
    pull_url,
)
from opdrift.text import Safe, code, link, md


class Words:
    """What the templates call: each escapes what it shows."""

    def __init__(self, view: WatchView) -> None:
        self.view = view

    @staticmethod
    def count(n: int) -> str:
        return f"{n:,}"  # 3,000 open pull requests

    @staticmethod
    def runs(n: int) -> str:
        # The example workflow runs hourly (examples/downstream/watch.yml).
        return "one more hourly run" if n == 1 else f"{n:,} more hourly runs ({n:,} hours)"

    def title(self, row: PullRow | Landed) -> Safe:
        label = Safe(f"#{row.number}")  # the bot's own reference: the one that may link
        url = pull_url(row.url, row.number)
        return Safe(f"{link(label, url) if url else label} {md(row.title[:256])}")

    def author(self, row: PullRow) -> Safe:
        return code(row.author, 40, in_table=True)  # a login GitHub would refuse must not split the row

    def note(self, row: PullRow) -> Safe:
        return md(ROW_NOTES.get(row.note, ""))

    def ships(self, row: PullRow) -> Safe:
        """``: if it lands now, ships in 2.16 (branch cut …)``, by the PR's last update; "" past the
        calendar. Our own words and digits: nothing to escape."""
        words = ships_in_words(row.updated_at)
        return Safe(f"; if it lands now, it {words}" if words else "")

    def backend(self, imp: BackendGap) -> Safe:
        """The backend by its name (`dlprim`), never by its kind and path."""
        return Safe(f"**{code(imp.label, 80)}**")

    def landed(self, imp: BackendGap) -> list[Safe]:
        """What a PR that landed does to the backend's build, said in the present: it has landed."""
        return self.effects(imp, landed=True)

    def effects(
        self, imp: BackendGap, row: PullRow | None = None, indent: int = 4, *, landed: bool = False
    ) -> list[Safe]:
        """One phrase per thing the PR does to the backend. With ROW (the run's comment), what is new
        since the last comment about a PR that asked less then is marked 🆕 (`WatchView.fresh`). INDENT:
        the column a phrase starts at in its list item (a code block under it is indented as much)."""
        fresh = (
            self.view.fresh.get(f"{row.number}\0{imp.key}", frozenset()) if row is not None else frozenset()
        )

        def names(ops: Sequence[str], what: str) -> str:
            return ", ".join(
                f"{code(o)} {NEW}" if f"{imp.key}\0{what}\0{o}" in fresh else code(o) for o in ops
            )

        out: list[Safe] = []
        for b in imp.broken:
            said = self._broken(b, indent, landed)
            out.append(Safe(f"{NEW} {said}") if break_item(imp, b) in fresh else said)
        if imp.more_of("broken"):
            verb = "breaks" if landed else "would break"
            out.append(Safe(f"… and {verb} {imp.more_of('broken')} more of your kernels"))
        if n := imp.count("ops"):
            more = f", … and {imp.more_of('ops')} more" if imp.more_of("ops") else ""
            out.append(
                Safe(
                    f"⚠️ adds {n} op{'s' if n != 1 else ''} you would need: {names(imp.ops, 'need')}{more}"
                    f"{reach_phrase(imp.ops_models)}"
                )
            )
        if n := imp.count("removed"):
            more = f", … and {imp.more_of('removed')} more" if imp.more_of("removed") else ""
            out.append(
                Safe(
                    f"🗑️ removes {n} op{'s' if n != 1 else ''} you implement, which your codegen refuses: "
                    f"{names(imp.removed, 'remove')}{more}"
                )
            )
        for kind, ops, rest in imp.also():
            n = len(ops) + rest
            more = f", … and {rest} more" if rest else ""
            listed = names(ops, kind.field)
            out.append(Safe(f"{kind.mark} {n} op{'s' if n != 1 else ''} {kind.says}: {listed}{more}"))
        return out

    def landed_mark(self, x: LandedBreak) -> Safe:
        return Safe(LANDED_MARK.format(int(x.number)))

    def broke_who(self) -> Safe:
        """The handles of every backend a PR that just landed breaks, each once, with its backends."""
        return self._who(imp for x in self.view.broke_now for imp in x.impacts)

    def _who(self, impacts: Iterable[BackendGap]) -> Safe:
        seen: dict[str, str] = {}
        names: dict[str, dict[str, None]] = {}
        for imp in impacts:
            for h in imp.who:
                seen.setdefault(h.lower(), h)
                names.setdefault(h.lower(), {})[imp.label] = None
        return Safe(
            " ".join(
                f"{mentions((h,))} ({', '.join(code(n, 80) for n in names[key])})" for key, h in seen.items()
            )
        )

    def grown(self, row: PullRow, imp: BackendGap) -> bool:
        """Whether the comment names this backend of ROW because the PR asks more of it than at the
        last comment (then what is new is marked), rather than because it is new."""
        return f"{row.number}\0{imp.key}" in self.view.fresh

    @staticmethod
    def _broken(b: BrokenKernel, indent: int = 4, landed: bool = False) -> Safe:
        """A broken kernel: what changed, each parameter by its name, then the declaration it is
        written against and the one it must become, as every report says it (`broken_change`).
        LANDED: the PR is in, so the kernel stops compiling now, not once it lands."""
        stops = "stops" if landed else "would stop"
        said = f"{broken_change(b, code)}{reach_phrase(b.models)}"
        block = broken_declarations(b, indent)
        return Safe(
            f"🔧 {stops} your {code(b.op)} kernel from compiling: {said}" + (f"\n{block}" if block else "")
        )

    def models_caveat(self) -> Safe:
        """Once per output: the release of the model table its counts come from (HEAD's own, or the
        nearest one's); "" when it shows none."""
        v = self.view
        impacts = [i for r in v.rows for i in r.impacts] + [i for x in v.broke for i in x.impacts]
        reach = [
            m
            for i in (*impacts, *(i for _, news in v.news for i in news))
            for m in (i.ops_models, *(b.models for b in i.broken))
            if m is not None
        ]
        releases = sorted({m.release for m in reach})
        return Safe(f" · model counts from torch {', '.join(releases)}'s table" if releases else "")

    def summary(self, imp: BackendGap) -> Safe:
        """The row's short cell: counts."""
        parts = []
        if n := imp.count("broken"):
            parts.append(f"🔧 {n} kernel{'s' if n != 1 else ''} would break")
        if n := imp.count("ops"):
            parts.append(f"⚠️ {n} op{'s' if n != 1 else ''} to write")
        if n := imp.count("removed"):
            parts.append(f"🗑️ {n} removed")
        for kind, ops, rest in imp.also():
            parts.append(f"{kind.mark} {len(ops) + rest} {kind.short}")
        return Safe(", ".join(parts))

    def news_who(self) -> Safe:
        """The handles of every backend the news concerns, each once (GitHub handles are
        case-insensitive), in the order the backends come, each with the backends it is mentioned
        for: ``@dlprim-team (dlprim)``."""
        return self._who(imp for _, impacts in self.view.news for imp in impacts)
