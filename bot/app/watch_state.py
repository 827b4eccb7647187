"""What the last `opdrift watch` run saw, kept in a hidden block of the dashboard issue's body.

The workflow then needs no storage of its own: each run reads the block back, and writes it with the
new body. The block holds the scan's watermark, each row as shown (so a PR nobody touched since is
shown again without a request), each row's impact fingerprint (to tell news from what was already
said), the open PRs judged to affect nothing at their head (not judged again), the PRs that could not
be read (tried again next run), and the PRs named as landed (kept while nothing else changes, so a
quiet run leaves the body byte-identical). Rows the body has no room to show are kept too, with
counts instead of op names.

The block is untrusted: anyone who can edit the issue can write it. It is read with `opdrift.shapes`
kinds, bounded in size, and every field checked (a sha is 40 hex digits, a login a login); whatever
does not read is a cold start with a warning, never an error. A cold start forgets what was already
said: every open PR that affects a backend is news again, and its subscribers are mentioned again.
Handles come from the config, never from the block: a row's stored handles only choose among the
config's handles of its backend. What this module writes, it reads back: `state_block` leaves out
what the reader would refuse (a row it would refuse costs that row, not the whole block). Each
backend's impact in a row is written and read by `opdrift.app.watch_impact` (the judgement cache stores
the same form), its kernels' declarations and landed breaks by `opdrift.app.watch_breaks`, its model
counts by `opdrift.app.watch_models`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from opdrift.app.watch_impact import COUNT, MAX_TEXT, READ, TEXT, StateError, impact_data, read_impact
from opdrift.render.watch import (
    DIGEST_HEX,
    MAX_FINGERPRINT,
    ROW_NOTES,
    Landed,
    LandedBreak,
    PullRow,
    breaks_build,
    pull_url,
)
from opdrift.shapes import BOOLEAN, INTEGER, LIST, OBJECT, OPT_STRING, STRINGS, Kind

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
_LANDEDTEXT = 120  # characters of a landed PR's title, as written

_SHA = re.compile(r"[0-9a-f]{40}")
_SHORT = re.compile(rf"[0-9a-f]{{{DIGEST_HEX}}}")
_DIGEST = re.compile(r"[0-9a-f]{64}")
_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?")
_WHEN = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{8,15}(?:Z|[+-][0-9]{2}:[0-9]{2})")


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


def _matching(regex: re.Pattern[str], what: str) -> Kind[str]:
    return Kind(what, lambda v: isinstance(v, str) and regex.fullmatch(v) is not None)


_SHA_KIND = _matching(_SHA, "a commit sha")
_LOGIN_KIND = _matching(_LOGIN, "a GitHub login")
_WHEN_KIND = _matching(_WHEN, "an ISO 8601 time")
_NUMBER: Kind[int] = Kind("a pull request number", lambda v: INTEGER.accepts(v) and 0 < v < 10**10)
_DIGESTS: Kind[tuple[str, ...]] = Kind(
    f"a list of at most {MAX_FINGERPRINT} digests",
    lambda v: STRINGS.accepts(v) and len(v) <= MAX_FINGERPRINT and all(_SHORT.fullmatch(x) for x in v),
    tuple,
)


def _row(d: Any, where: str, who: Mapping[str, tuple[str, ...]]) -> PullRow | None:
    d = READ.read(OBJECT, d, where, where)
    READ.exact_keys(
        d, ("n", "title", "author", "draft", "updated", "url", "head", "fp", "impacts"), where, where,
        optional=("note",),
    )  # fmt: skip
    note = d.get("note", "")
    if not isinstance(note, str) or (note and note not in ROW_NOTES):
        raise StateError(f"{where}.note: unknown note")
    number = READ.field(_NUMBER, d, "n", f"{where}.n", where)
    url = READ.field(TEXT, d, "url", f"{where}.url", where)
    if pull_url(url, number) is None:
        raise StateError(f"{where}.url: not a link to pull request {number}")
    listed: list[Any] = READ.field(LIST, d, "impacts", where, where)
    impacts = [read_impact(x, f"{where}.impacts[{i}]", who) for i, x in enumerate(listed)]
    kept = tuple(i for i in impacts if i is not None)
    if not kept and not note:
        return None
    return PullRow(
        number,
        READ.field(TEXT, d, "title", f"{where}.title", where),
        READ.field(_LOGIN_KIND, d, "author", f"{where}.author", where),
        READ.field(BOOLEAN, d, "draft", f"{where}.draft", where),
        READ.field(_WHEN_KIND, d, "updated", f"{where}.updated", where),
        url,
        READ.field(_SHA_KIND, d, "head", f"{where}.head", where),
        kept,
        READ.field(_DIGESTS, d, "fp", f"{where}.fp", where),
        note,
    )


def _decode(data: Any, who: Mapping[str, tuple[str, ...]]) -> WatchState:
    d = READ.read(OBJECT, data, "state", "state")
    READ.exact_keys(
        d,
        ("watermark", "rows", "quiet", "landed"),
        "state",
        "state",
        optional=("backends", "retry", "told", "closed", "broke"),
    )
    watermark = READ.field(OPT_STRING, d, "watermark", "state.watermark", "state")
    if watermark is not None and not _WHEN.fullmatch(watermark):
        raise StateError("state.watermark: not an ISO 8601 time")
    backends = READ.field(OPT_STRING, d, "backends", "state.backends", "state")
    if backends is not None and not _DIGEST.fullmatch(backends):
        raise StateError("state.backends: not a digest")
    listed = _entries(d, "rows")
    rows = [_row(x, f"rows[{i}]", who) for i, x in enumerate(listed)]
    numbers = [r.number for r in rows if r is not None]
    if len(set(numbers)) != len(numbers):
        raise StateError("rows: a pull request twice")
    quiet = tuple(_quiet(x) for x in _entries(d, "quiet", MAX_QUIET))
    landed = tuple(_landed(x) for x in _entries(d, "landed", MAX_LANDED))
    retry = tuple(_retry(x) for x in _entries(d, "retry"))[:MAX_RETRY]
    told = tuple(_told(x) for x in _entries(d, "told", MAX_TOLD))
    closed = tuple(_closed(x) for x in _entries(d, "closed", MAX_CLOSED))
    broke = [_broke(x, f"broke[{i}]", who) for i, x in enumerate(_entries(d, "broke", MAX_BROKE))]
    return WatchState(
        watermark,
        tuple(r for r in rows if r is not None),
        quiet,
        landed,
        backends,
        retry,
        told,
        closed,
        tuple(x for x in broke if x is not None),
    )


def _entries(d: dict[str, Any], name: str, limit: int | None = None) -> list[Any]:
    """The section NAME's entries, the first LIMIT of them; none when it is absent (an older block)."""
    if name not in d:
        return []
    found: list[Any] = READ.field(LIST, d, name, name, name)
    return found if limit is None else found[:limit]


def _quiet(x: Any) -> tuple[int, str]:
    if not (isinstance(x, list) and len(x) == 2 and _NUMBER.accepts(x[0]) and _SHA_KIND.accepts(x[1])):
        raise StateError("quiet: expected [number, sha] pairs")
    return int(x[0]), str(x[1])


def _landed(x: Any) -> Landed:
    if not (isinstance(x, list) and len(x) == 3 and _NUMBER.accepts(x[0]) and TEXT.accepts(x[1])):
        raise StateError("landed: expected [number, title, url]")
    if not TEXT.accepts(x[2]) or pull_url(x[2], x[0]) is None:
        raise StateError("landed: not a link to the pull request")
    return Landed(x[0], x[1], x[2])


def _retry(x: Any) -> Retry:
    if not (isinstance(x, list) and len(x) == 4 and _NUMBER.accepts(x[0]) and _SHA_KIND.accepts(x[1])):
        raise StateError("retry: expected [number, sha, reason, tries]")
    if not (isinstance(x[2], str) and len(x[2]) <= _REASON and COUNT.accepts(x[3])):
        raise StateError("retry: expected [number, sha, reason, tries]")
    return Retry(x[0], x[1], x[2], x[3])


def _told(x: Any) -> tuple[int, str]:
    if not (isinstance(x, list) and len(x) == 2 and _NUMBER.accepts(x[0]) and _WHEN_KIND.accepts(x[1])):
        raise StateError("told: expected [number, time] pairs")
    return int(x[0]), str(x[1])


def _closed(x: Any) -> Closed:
    if not (isinstance(x, list) and len(x) == 3 and _NUMBER.accepts(x[0]) and _WHEN_KIND.accepts(x[1])):
        raise StateError("closed: expected [number, time, fingerprint]")
    return Closed(x[0], x[1], READ.read(_DIGESTS, x[2], "closed", "closed"))


def _broke(x: Any, at: str, who: Mapping[str, tuple[str, ...]]) -> LandedBreak | None:
    """One entry of the `broke` section, as `_broke_data` wrote it; None when none of its backends
    is subscribed any more."""
    if not (isinstance(x, list) and len(x) == 5 and _NUMBER.accepts(x[0]) and TEXT.accepts(x[1])):
        raise StateError(f"{at}: expected [number, title, url, landed at, impacts]")
    if not isinstance(x[2], str) or pull_url(x[2], x[0]) is None or not _WHEN_KIND.accepts(x[3]):
        raise StateError(f"{at}: not a link to the pull request, or no time")
    items: list[Any] = READ.read(LIST, x[4], at, at)
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


class _AnyBackend(Mapping[str, tuple[str, ...]]):
    """Every backend subscribed, with no handles: to check that a row the writer made reads back."""

    def __getitem__(self, key: str) -> tuple[str, ...]:
        return ()

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def written_len(text: str) -> int:
    """How many characters TEXT takes in the block, quotes included: `_text` writes ASCII only, so
    an emoji takes 12 (its surrogate pair escaped), a control character or a ``-`` 6."""
    return len(json.dumps(text, ensure_ascii=True)) + 5 * text.count("-")


def fit_text(text: str, limit: int) -> str:
    """The longest start of TEXT that takes at most LIMIT characters in the block (quotes aside).
    Texts are bounded by what they take when written, never by what they show: 256 emoji are 256
    characters of a title and 3,072 of the block. `opdrift.app.watch_reconcile` cuts a title with it too, so
    that the body shows what a later run, reading the state, shows again."""
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
    return fit_text(title, MAX_TEXT)


def landed_title(title: str) -> str:
    return fit_text(title, _LANDEDTEXT)


def impact_rank(row: PullRow) -> int:
    """What keeps a row in a full state: 0 when it would break a backend's build (a kernel that stops
    compiling, an op its codegen refuses once removed), 1 when it asks for ops to write, 2 else. Rows
    are dropped by this first and by their last update second, never by how long their text is."""
    if any(breaks_build(i) for i in row.impacts):
        return 0
    if any(i.count("ops") for i in row.impacts):
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
    data = _sections(state, tell)
    data["rows"] = _fitting_rows(rows, MAX_STATE_CHARS - len(_text(data)), tell)
    return f"{_OPEN}{_text(data)}{_CLOSING}"


def _sections(state: WatchState, tell: Say) -> dict[str, object]:
    """Every section of the block but the rows (written empty), each within its share."""
    landed = [
        [x.number, landed_title(x.title), x.url]
        for x in state.landed[:MAX_LANDED]
        if _NUMBER.accepts(x.number) and TEXT.accepts(x.url) and pull_url(x.url, x.number) is not None
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
            if _NUMBER.accepts(x.number) and _SHA.fullmatch(x.head_sha) and COUNT.accepts(x.tries)
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
    return data


def _fitting_rows(
    rows: list[tuple[PullRow, dict[str, object]]], room: int, tell: Say
) -> list[dict[str, object]]:
    """The rows' data, in their order, that fit ROOM characters: those that ask least of a backend go
    first (`impact_rank`), the least recently updated among them first."""
    sizes = {id(one): len(_text(one)) + 1 for _, one in rows}
    keep = sorted(rows, key=lambda x: (impact_rank(x[0]), _recency(x[0].updated_at)))
    total = sum(sizes.values())
    while keep and total > room:
        gone, one = keep.pop()
        total -= sizes[id(one)]
        tell(f"#{gone.number} cannot be kept in the watch state (it is full): it will be news again")
    kept = {id(one) for _, one in keep}
    return [one for _, one in rows if id(one) in kept]


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
