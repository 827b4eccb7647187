"""What the last `opdrift watch` run saw, kept in a hidden block of the dashboard issue's body.

The workflow then needs no storage of its own: each run reads the block back, and writes it with the
new body. The block holds the scan's watermark, each row as shown (so a PR nobody touched since is
shown again without a request), each row's impact fingerprint (to tell news from what was already
said), the open PRs judged to affect nothing at their head (not judged again), the PRs that could not
be read (tried again next run), and the PRs named as landed (kept while nothing else changes, so a
quiet run leaves the body byte-identical). Rows the body has no room to show are kept too, with
counts instead of op names.

The block is untrusted: anyone who can edit the issue can write it. It is read with `bot.shapes`
kinds, bounded in size, and every field checked (a sha is 40 hex digits, a login a login); whatever
does not read is a cold start with a warning, never an error. A cold start forgets what was already
said: every open PR that affects a backend is news again, and its subscribers are mentioned again.
Handles come from the config, never from the block: a row's stored handles only choose among the
config's handles of its backend. What this module writes, it reads back: `state_block` leaves out
what the reader would refuse (a row it would refuse costs that row, not the whole block).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from bot.app.watch_breaks import DeclarationError, break_data, read_signatures
from bot.app.watch_models import models_data, with_models
from bot.coverage.kinds import backend_key, parse_kind
from bot.render.context import GAP_LISTS
from bot.render.watch import (
    DIGEST_HEX,
    MAX_FINGERPRINT,
    ROW_NOTES,
    BackendImpact,
    BrokenKernel,
    Landed,
    LandedBreak,
    OpList,
    PullRow,
    breaks_build,
    pull_url,
)
from bot.shapes import BOOLEAN, INTEGER, LIST, OBJECT, OPT_STRING, STRING, STRINGS, Kind, Reader

VERSION = 1
_OPEN = f"<!-- opdrift:watch-state v{VERSION}\n"
_OPENING, _CLOSING = "<!-- opdrift:watch-state v", "\n-->"  # read by _find_block
_VERSION_LINE = re.compile(r"(\d+)\n")
Say = Callable[[str], None]
MAX_STATE_CHARS = 60_000  # a body holds 65,536: a bigger block is not one this code wrote
MAX_QUIET = 300  # open PRs remembered as affecting nothing at their head
MAX_LANDED = 50
MAX_RETRY = 30  # PRs that could not be read, tried again next run
MAX_TRIES = 24  # a day of hourly runs: a PR that never reads stops costing requests
_REASON = 200  # characters of a retry's reason, as written (escapes included)
MAX_TOLD = 100  # PRs whose subscribers were mentioned within the last day
MAX_CLOSED = 30  # PRs closed unlanded within the last week, with the fingerprint last told
MAX_BROKE = 10  # landed PRs that break a backend's build, shown atop the dashboard
# Characters each section but the rows may take in the block, as written: every one is bounded, so
# whatever else a hostile upstream fills, the rows keep MAX_STATE_CHARS minus these (about 9,000,
# half a dozen rows with their op names) and the block never outgrows what `read_state` takes. The
# quiet list needs none: 300 pairs of a number and a sha are at most 17,100 characters.
SECTION_CHARS = {"landed": 8_000, "retry": 8_000, "closed": 9_000, "told": 4_000, "broke": 6_000}
_LANDED_TEXT = 120  # characters of a landed PR's title, as written

_SHA = re.compile(r"[0-9a-f]{40}")
_SHORT = re.compile(rf"[0-9a-f]{{{DIGEST_HEX}}}")
_DIGEST = re.compile(r"[0-9a-f]{64}")
_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?")
_WHEN = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{8,15}(?:Z|[+-][0-9]{2}:[0-9]{2})")
_NAME = re.compile(r"[A-Za-z0-9_.]{1,200}")  # an operator name, overload included
_MAX_TEXT = 300


@dataclass(frozen=True)
class Retry:
    """An open PR a run could not read (its listing's compare, or its operator files, failed): the
    next run fetches it again, whatever the watermark says, at most MAX_TRIES times."""

    number: int
    head_sha: str
    reason: str
    tries: int = 1


@dataclass(frozen=True)
class Closed:
    """A PR closed without landing, and the fingerprint its row had: if it reopens within a week,
    what it asks is compared with that (closing and reopening is no way to be announced again)."""

    number: int
    when: str  # when a run saw it closed (ISO 8601)
    fingerprint: tuple[str, ...]


@dataclass(frozen=True)
class WatchState:
    watermark: str | None = None
    rows: tuple[PullRow, ...] = ()
    quiet: tuple[tuple[int, str], ...] = ()  # (number, head sha): open, touching, affecting nothing
    landed: tuple[Landed, ...] = ()
    # what the rows were judged against: the subscribed backend lists (`watch_judge.backend_digest`);
    # another one (a list changed, a backend added) has every open PR judged again
    backends: str | None = None
    retry: tuple[Retry, ...] = ()
    # (number, when): the last time a run mentioned the subscribers for that PR (at most once a day)
    told: tuple[tuple[int, str], ...] = ()
    closed: tuple[Closed, ...] = ()  # PRs closed unlanded lately: a reopened one is not news again
    broke: tuple[LandedBreak, ...] = ()  # landed PRs that break a backend's build (the dashboard's top)


COLD = WatchState()


class StateError(Exception):
    """The block does not read: the run starts cold (with a warning)."""


def _fail(where: str, message: str) -> StateError:
    return StateError(message)


_READ: Reader[str] = Reader(_fail)


def _matching(regex: re.Pattern[str], what: str) -> Kind[str]:
    return Kind(what, lambda v: isinstance(v, str) and regex.fullmatch(v) is not None)


_SHA_KIND = _matching(_SHA, "a commit sha")
_LOGIN_KIND = _matching(_LOGIN, "a GitHub login")
_WHEN_KIND = _matching(_WHEN, "an ISO 8601 time")
_TEXT: Kind[str] = Kind(
    f"a string of at most {_MAX_TEXT} characters", lambda v: isinstance(v, str) and len(v) <= _MAX_TEXT
)
_NUMBER: Kind[int] = Kind("a pull request number", lambda v: INTEGER.accepts(v) and 0 < v < 10**10)
_COUNT: Kind[int] = Kind("a count", lambda v: INTEGER.accepts(v) and 0 <= v < 10**7)
_NAMES: Kind[tuple[str, ...]] = Kind(
    "a list of operator names", lambda v: STRINGS.accepts(v) and all(_NAME.fullmatch(x) for x in v), tuple
)
_DIGESTS: Kind[tuple[str, ...]] = Kind(
    f"a list of at most {MAX_FINGERPRINT} digests",
    lambda v: STRINGS.accepts(v) and len(v) <= MAX_FINGERPRINT and all(_SHORT.fullmatch(x) for x in v),
    tuple,
)


_HANDLES: Kind[tuple[str, ...]] = Kind(
    "a list of handles",
    lambda v: STRINGS.accepts(v) and len(v) <= 100 and all(len(x) <= 100 for x in v),
    tuple,
)


def _handle(h: str) -> str:
    return h.lstrip("@").lower()[:100]


def read_impact(d: Any, where: str, who: Mapping[str, tuple[str, ...]]) -> BackendImpact | None:
    """One backend's impact as `impact_data` wrote it (StateError when it does not read); None when
    the config (WHO: backend key → handles) no longer subscribes that backend."""
    d = _READ.read(OBJECT, d, where, where)
    keys = ("kind", "where", "needs", "breaks", "removes", "more")
    _READ.exact_keys(d, keys, where, where, optional=("who", "also", "models"))
    kind = parse_kind(_READ.field(STRING, d, "kind", f"{where}.kind", where))
    if kind is None:
        raise StateError(f"{where}.kind: unknown kind")
    path = _READ.field(_TEXT, d, "where", f"{where}.where", where)
    broken = []
    items: list[Any] = _READ.field(LIST, d, "breaks", f"{where}.breaks", where)
    for i, item in enumerate(items):
        at = f"{where}.breaks[{i}]"
        b = _READ.read(LIST, item, at, at)
        if len(b) not in (3, 4):
            raise StateError(f"{at}: expected [op, form, parts] or [op, form, parts, signatures]")
        op = _READ.read(_NAMES, [b[0]], at, at)[0]
        form = _READ.read(_TEXT, b[1], at, at)
        if form not in ("", "int64_t", "SymInt"):
            raise StateError(f"{at}: unknown form")
        parts = []
        for p in _READ.read(LIST, b[2], at, at):
            part = _READ.read(STRINGS, p, at, at)
            if len(part) != 3 or any(len(x) > _MAX_TEXT for x in part):
                raise StateError(f"{at}: a part is [where, before, after]")
            parts.append((part[0], part[1], part[2]))
        try:
            sigs = read_signatures(b[3], at) if len(b) == 4 else (None, None)
        except DeclarationError as err:
            raise StateError(str(err)) from None
        broken.append(BrokenKernel(op, form, tuple(parts), *sigs))
    more = _READ.field(LIST, d, "more", f"{where}.more", where)
    if len(more) != 3 or not all(_COUNT.accepts(m) for m in more):
        raise StateError(f"{where}.more: expected three counts")
    key = backend_key(kind, path)
    if key not in who:
        return None  # the config no longer subscribes this backend: its part of the row goes
    handles = who[key]
    if "who" in d:  # the subscriptions that matched: a choice among the config's handles, never more
        stored: tuple[str, ...] = _READ.field(_HANDLES, d, "who", f"{where}.who", where)
        handles = tuple(h for h in handles if _handle(h) in stored) or handles
    impact = BackendImpact(  # with its model counts, when they read (bot.app.watch_models)
        kind,
        path,
        handles,
        _READ.field(_NAMES, d, "needs", f"{where}.needs", where),
        tuple(broken),
        _READ.field(_NAMES, d, "removes", f"{where}.removes", where),
        more[0],
        more[1],
        more[2],
        _also(d["also"], f"{where}.also") if "also" in d else (),
    )
    return with_models(impact, d.get("models"))


def _also(d: Any, where: str) -> tuple[OpList, ...]:
    """The other lists as `impact_data` wrote them: {field: [ops, more]}, fields of GAP_LISTS only."""
    d = _READ.read(OBJECT, d, where, where)
    out = []
    for g in GAP_LISTS:
        if g.field not in d:
            continue
        at = f"{where}.{g.field}"
        item = _READ.read(LIST, d[g.field], at, at)
        if len(item) != 2 or not _COUNT.accepts(item[1]):
            raise StateError(f"{at}: expected [ops, more]")
        out.append(OpList(g.field, _READ.read(_NAMES, item[0], at, at), item[1]))
    if len(out) != len(d):
        raise StateError(f"{where}: an unknown list")
    return tuple(out)


def _row(d: Any, where: str, who: Mapping[str, tuple[str, ...]]) -> PullRow | None:
    d = _READ.read(OBJECT, d, where, where)
    _READ.exact_keys(
        d, ("n", "title", "author", "draft", "updated", "url", "head", "fp", "impacts"), where, where,
        optional=("note",),
    )  # fmt: skip
    note = d.get("note", "")
    if not isinstance(note, str) or (note and note not in ROW_NOTES):
        raise StateError(f"{where}.note: unknown note")
    number = _READ.field(_NUMBER, d, "n", f"{where}.n", where)
    url = _READ.field(_TEXT, d, "url", f"{where}.url", where)
    if pull_url(url, number) is None:
        raise StateError(f"{where}.url: not a link to pull request {number}")
    listed: list[Any] = _READ.field(LIST, d, "impacts", where, where)
    impacts = [read_impact(x, f"{where}.impacts[{i}]", who) for i, x in enumerate(listed)]
    kept = tuple(i for i in impacts if i is not None)
    if not kept and not note:
        return None
    return PullRow(
        number,
        _READ.field(_TEXT, d, "title", f"{where}.title", where),
        _READ.field(_LOGIN_KIND, d, "author", f"{where}.author", where),
        _READ.field(BOOLEAN, d, "draft", f"{where}.draft", where),
        _READ.field(_WHEN_KIND, d, "updated", f"{where}.updated", where),
        url,
        _READ.field(_SHA_KIND, d, "head", f"{where}.head", where),
        kept,
        _READ.field(_DIGESTS, d, "fp", f"{where}.fp", where),
        note,
    )


def _decode(data: Any, who: Mapping[str, tuple[str, ...]]) -> WatchState:
    d = _READ.read(OBJECT, data, "state", "state")
    _READ.exact_keys(
        d,
        ("watermark", "rows", "quiet", "landed"),
        "state",
        "state",
        optional=("backends", "retry", "told", "closed", "broke"),
    )
    watermark = _READ.field(OPT_STRING, d, "watermark", "state.watermark", "state")
    if watermark is not None and not _WHEN.fullmatch(watermark):
        raise StateError("state.watermark: not an ISO 8601 time")
    backends = _READ.field(OPT_STRING, d, "backends", "state.backends", "state")
    if backends is not None and not _DIGEST.fullmatch(backends):
        raise StateError("state.backends: not a digest")
    listed: list[Any] = _READ.field(LIST, d, "rows", "rows", "rows")
    rows = [_row(x, f"rows[{i}]", who) for i, x in enumerate(listed)]
    numbers = [r.number for r in rows if r is not None]
    if len(set(numbers)) != len(numbers):
        raise StateError("rows: a pull request twice")
    quiet = []
    for q in _READ.field(LIST, d, "quiet", "quiet", "quiet")[:MAX_QUIET]:
        if not (isinstance(q, list) and len(q) == 2 and _NUMBER.accepts(q[0]) and _SHA_KIND.accepts(q[1])):
            raise StateError("quiet: expected [number, sha] pairs")
        quiet.append((int(q[0]), str(q[1])))
    landed = []
    for x in _READ.field(LIST, d, "landed", "landed", "landed")[:MAX_LANDED]:
        if not (isinstance(x, list) and len(x) == 3 and _NUMBER.accepts(x[0]) and _TEXT.accepts(x[1])):
            raise StateError("landed: expected [number, title, url]")
        if not _TEXT.accepts(x[2]) or pull_url(x[2], x[0]) is None:
            raise StateError("landed: not a link to the pull request")
        landed.append(Landed(x[0], x[1], x[2]))
    retry = []
    for x in _READ.field(LIST, d, "retry", "retry", "retry") if "retry" in d else []:
        if not (isinstance(x, list) and len(x) == 4 and _NUMBER.accepts(x[0]) and _SHA_KIND.accepts(x[1])):
            raise StateError("retry: expected [number, sha, reason, tries]")
        if not (isinstance(x[2], str) and len(x[2]) <= _REASON and _COUNT.accepts(x[3])):
            raise StateError("retry: expected [number, sha, reason, tries]")
        retry.append(Retry(x[0], x[1], x[2], x[3]))
    told = []
    for x in _READ.field(LIST, d, "told", "told", "told")[:MAX_TOLD] if "told" in d else []:
        if not (isinstance(x, list) and len(x) == 2 and _NUMBER.accepts(x[0]) and _WHEN_KIND.accepts(x[1])):
            raise StateError("told: expected [number, time] pairs")
        told.append((int(x[0]), str(x[1])))
    closed = []
    for x in _READ.field(LIST, d, "closed", "closed", "closed")[:MAX_CLOSED] if "closed" in d else []:
        if not (isinstance(x, list) and len(x) == 3 and _NUMBER.accepts(x[0]) and _WHEN_KIND.accepts(x[1])):
            raise StateError("closed: expected [number, time, fingerprint]")
        closed.append(Closed(x[0], x[1], _READ.read(_DIGESTS, x[2], "closed", "closed")))
    found: list[Any] = _READ.field(LIST, d, "broke", "broke", "broke") if "broke" in d else []
    broke = [_broke(x, f"broke[{i}]", who) for i, x in enumerate(found[:MAX_BROKE])]
    return WatchState(
        watermark,
        tuple(r for r in rows if r is not None),
        tuple(quiet),
        tuple(landed),
        backends,
        tuple(retry[:MAX_RETRY]),
        tuple(told),
        tuple(closed),
        tuple(x for x in broke if x is not None),
    )


def _broke(x: Any, at: str, who: Mapping[str, tuple[str, ...]]) -> LandedBreak | None:
    """One entry of the `broke` section, as `_broke_data` wrote it; None when none of its backends
    is subscribed any more."""
    if not (isinstance(x, list) and len(x) == 5 and _NUMBER.accepts(x[0]) and _TEXT.accepts(x[1])):
        raise StateError(f"{at}: expected [number, title, url, landed at, impacts]")
    if not isinstance(x[2], str) or pull_url(x[2], x[0]) is None or not _WHEN_KIND.accepts(x[3]):
        raise StateError(f"{at}: not a link to the pull request, or no time")
    items: list[Any] = _READ.read(LIST, x[4], at, at)
    found = [read_impact(y, f"{at}.impacts[{j}]", who) for j, y in enumerate(items)]
    kept = tuple(y for y in found if y is not None)
    return LandedBreak(x[0], x[1], x[2], x[3], kept) if kept else None


def _find_block(text: str) -> tuple[str, str] | None:
    """The first ``<!-- opdrift:watch-state vN`` line's N and the text from the next line up to the
    following ``\n-->``. Found with str.find, not one regex with ``(.*?)`` between the two: on a body
    forged to hold thousands of unclosed openings, that regex rescans the rest of the body once per
    opening (quadratic; 1.9 s for a 130,000-character body)."""
    at = text.find(_OPENING)
    while at != -1:
        m = _VERSION_LINE.match(text, at + len(_OPENING))
        if m is not None:
            end = text.find(_CLOSING, m.end())
            # no closing after this opening: none after a later one either
            return None if end == -1 else (m.group(1), text[m.end() : end])
        at = text.find(_OPENING, at + 1)
    return None


def read_state(body: str | None, who: Mapping[str, tuple[str, ...]]) -> tuple[WatchState, str | None]:
    """The state the issue's BODY holds, and a warning when it holds one that does not read (then the
    state is COLD). WHO: each subscribed backend's key → its handles (rows of other backends go)."""
    if not body:
        return COLD, None
    found = _find_block(body[: MAX_STATE_CHARS + 70_000])
    if found is None:
        return COLD, "the watch issue has no state block: starting cold (every affecting PR is news)"
    version, block = found
    problem: str
    if version != str(VERSION):
        problem = f"version {version[:8]} is not {VERSION}"
    elif len(block) > MAX_STATE_CHARS:
        problem = f"over {MAX_STATE_CHARS} characters"
    else:
        try:
            return _decode(json.loads(block), who), None
        except (ValueError, RecursionError) as err:
            problem = f"not JSON ({type(err).__name__})"
        except StateError as err:
            problem = str(err)[:200]
    return COLD, f"the watch issue's state block does not read ({problem}): starting cold"


_FORMS = ("", "int64_t", "SymInt")


class _AnyBackend(Mapping[str, tuple[str, ...]]):
    """Every backend subscribed, with no handles: to check that a row the writer made reads back."""

    def __getitem__(self, key: str) -> tuple[str, ...]:
        return ()

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def _readable(i: BackendImpact) -> BackendImpact:
    """I without the op names the reader refuses (counted instead), so that one odd name costs its
    mention in a list, not the row."""
    lacking = tuple(o for o in i.lacking if _NAME.fullmatch(o))
    removed = tuple(o for o in i.removed if _NAME.fullmatch(o))
    broken = tuple(
        replace(b, form=b.form if b.form in _FORMS else "") for b in i.broken if _NAME.fullmatch(b.op)
    )
    also = tuple(
        replace(x, ops=kept, more=x.more + len(x.ops) - len(kept))
        for x in i.also
        for kept in [tuple(o for o in x.ops if _NAME.fullmatch(o))]
    )
    return replace(
        i,
        also=also,
        lacking=lacking,
        broken=broken,
        removed=removed,
        more_lacking=i.more_lacking + len(i.lacking) - len(lacking),
        more_broken=i.more_broken + len(i.broken) - len(broken),
        more_removed=i.more_removed + len(i.removed) - len(removed),
    )


def impact_data(impact: BackendImpact) -> dict[str, object]:
    i = _readable(impact)
    return {
        "kind": i.kind,
        "where": i.where[:_MAX_TEXT],
        # without their "@": the issue body mentions nobody, not even in its hidden block
        "who": [_handle(h) for h in i.who[:100]],
        "needs": list(i.lacking),
        "breaks": [break_data(b, _MAX_TEXT) for b in i.broken],
        "removes": list(i.removed),
        "more": [i.more_lacking, i.more_broken, i.more_removed],
        **({"also": {x.field: [list(x.ops), x.more] for x in i.also}} if i.also else {}),
        **models_data(i),
    }


def written_len(text: str) -> int:
    """How many characters TEXT takes in the block, quotes included: `_text` writes ASCII only, so
    an emoji takes 12 (its surrogate pair escaped), a control character or a ``-`` 6."""
    return len(json.dumps(text, ensure_ascii=True)) + 5 * text.count("-")


def fit_text(text: str, limit: int) -> str:
    """The longest start of TEXT that takes at most LIMIT characters in the block (quotes aside).
    Texts are bounded by what they take when written, never by what they show: 256 emoji are 256
    characters of a title and 3,072 of the block. `bot.app.watch` cuts a title with it too, so that
    the body shows what a later run, reading the state, shows again."""
    if written_len(text) <= limit + 2:
        return text
    low, high = 0, min(len(text), limit)
    while low < high:  # the longest prefix that fits: written_len grows with the prefix
        mid = (low + high + 1) // 2
        if written_len(text[:mid]) <= limit + 2:
            low = mid
        else:
            high = mid - 1
    return text[:low]


def row_title(title: str) -> str:
    return fit_text(title, _MAX_TEXT)


def landed_title(title: str) -> str:
    return fit_text(title, _LANDED_TEXT)


def impact_rank(row: PullRow) -> int:
    """What keeps a row in a full state: 0 when it would break a backend's build (a kernel that stops
    compiling, an op its codegen refuses once removed), 1 when it asks for ops to write, 2 else. Rows
    are dropped by this first and by their last update second, never by how long their text is."""
    if any(breaks_build(i) for i in row.impacts):
        return 0
    if any(i.lacking or i.more_lacking for i in row.impacts):
        return 1
    return 2


def _row_data(r: PullRow) -> dict[str, object]:
    return {
        "n": r.number,
        "title": row_title(r.title),
        "author": r.author,
        "draft": r.draft,
        "updated": r.updated_at,
        "url": r.url,
        "head": r.head_sha,
        "fp": list(r.fingerprint),
        "impacts": [impact_data(i) for i in r.impacts],
        **({"note": r.note} if r.note else {}),
    }


def _text(data: object) -> str:
    return json.dumps(data, separators=(",", ":"), sort_keys=True, ensure_ascii=True).replace("-", "\\u002d")


def _within(entries: list[Any], budget: int) -> list[Any]:
    """The first ENTRIES whose written JSON list takes at most BUDGET characters."""
    out: list[Any] = []
    used = 2
    for entry in entries:
        used += len(_text(entry)) + (1 if out else 0)
        if used > budget:
            break
        out.append(entry)
    return out


def state_block(state: WatchState, dropped: Say | None = None) -> str:
    """The hidden block for STATE: one line of JSON in an HTML comment. No ``--`` can end the comment
    early: every ``-`` of the JSON is written as its ``\\u002d`` escape inside strings (no number of it
    is negative), which JSON reads back as itself.

    Only what `read_state` accepts is written, and never more than it takes: a row it would refuse
    is left out (DROPPED is told why: that PR will be news again); every other section is cut to
    its share (SECTION_CHARS, the newest entries kept); and rows past MAX_STATE_CHARS go, those that
    ask least of a backend first (`impact_rank`), the least recently updated among them first."""
    tell = dropped or (lambda _: None)
    rows: list[tuple[PullRow, dict[str, object]]] = []
    for r in state.rows:
        one = _row_data(r)
        try:
            _row(json.loads(json.dumps(one)), "row", _AnyBackend())
        except StateError as err:
            tell(f"#{r.number} cannot be kept in the watch state ({str(err)[:200]}): it will be news again")
            continue
        rows.append((r, one))
    landed = [
        [x.number, landed_title(x.title), x.url]
        for x in state.landed[:MAX_LANDED]
        if _NUMBER.accepts(x.number) and _TEXT.accepts(x.url) and pull_url(x.url, x.number) is not None
    ]
    data: dict[str, object] = {
        "watermark": state.watermark if state.watermark and _WHEN.fullmatch(state.watermark) else None,
        "backends": state.backends if state.backends and _DIGEST.fullmatch(state.backends) else None,
        "rows": [],
        "quiet": [
            [n, sha] for n, sha in state.quiet[:MAX_QUIET] if _NUMBER.accepts(n) and _SHA.fullmatch(sha)
        ],
        "landed": _within(landed, SECTION_CHARS["landed"]),
    }
    # Each written only when it holds something, so that older blocks stay byte-identical.
    sections = {
        "retry": [
            [x.number, x.head_sha, fit_text(x.reason, _REASON), x.tries]
            for x in state.retry[:MAX_RETRY]
            if _NUMBER.accepts(x.number) and _SHA.fullmatch(x.head_sha) and _COUNT.accepts(x.tries)
        ],
        "told": [
            [n, when] for n, when in state.told[:MAX_TOLD] if _NUMBER.accepts(n) and _WHEN.fullmatch(when)
        ],
        "closed": [
            [x.number, x.when, list(x.fingerprint)]
            for x in state.closed[:MAX_CLOSED]
            if _NUMBER.accepts(x.number) and _WHEN.fullmatch(x.when) and _DIGESTS.accepts(list(x.fingerprint))
        ],
        "broke": [one for one in (_broke_data(x, tell) for x in state.broke[:MAX_BROKE]) if one is not None],
    }
    for name, entries in sections.items():
        if entries:
            data[name] = _within(entries, SECTION_CHARS[name])
    room = MAX_STATE_CHARS - len(_text(data))
    sizes = {id(one): len(_text(one)) + 1 for _, one in rows}
    keep = sorted(rows, key=lambda x: (impact_rank(x[0]), _recency(x[0].updated_at)))
    total = sum(sizes.values())
    while keep and total > room:
        gone, one = keep.pop()
        total -= sizes[id(one)]
        tell(f"#{gone.number} cannot be kept in the watch state (it is full): it will be news again")
    kept = {id(one) for _, one in keep}
    data["rows"] = [one for _, one in rows if id(one) in kept]
    return f"{_OPEN}{_text(data)}{_CLOSING}"


def _broke_data(x: LandedBreak, tell: Say) -> list[object] | None:
    """X as the `broke` section writes it (its title fitted as a row's), or None, told, when
    `read_state` would refuse it."""
    one: list[object] = [
        x.number,
        row_title(x.title),
        x.url,
        x.landed_at,
        [impact_data(i) for i in x.impacts],
    ]
    try:
        _broke(json.loads(json.dumps(one)), "broke", _AnyBackend())
    except StateError as err:
        tell(f"#{x.number} cannot be kept among the landed breaks ({str(err)[:200]})")
        return None
    return one


def _recency(when: str) -> tuple[int, ...]:
    """A sort key putting the most recently updated first (ISO 8601 times sort as they read)."""
    return tuple(-ord(c) for c in when)
