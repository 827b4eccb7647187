"""What the last `opdrift watch` run saw, kept in a hidden block of the dashboard issue's body.

The workflow then needs no storage of its own: each run reads the block back, and writes it with the
new body. The block holds the scan's watermark, each row as shown (so a PR nobody touched since is
shown again without a request), each row's impact fingerprint (to tell news from what was already
said), the open PRs judged to affect nothing at their head (not judged again), and the PRs named as
landed (kept while nothing else changes, so a quiet run leaves the body byte-identical).

The block is untrusted: anyone who can edit the issue can write it. It is read with `bot.shapes`
kinds, bounded in size, and every field checked (a sha is 40 hex digits, a login a login); whatever
does not read is a cold start with a warning, never an error and never a mention: handles come from
the config, not from the block, and a row read back is old news, which no comment repeats.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.coverage.oplist import BACKEND_KINDS
from bot.render.watch import (
    DIGEST_HEX,
    MAX_FINGERPRINT,
    BackendImpact,
    BrokenKernel,
    Landed,
    PullRow,
    pull_url,
)
from bot.shapes import BOOLEAN, INTEGER, LIST, OBJECT, OPT_STRING, STRING, STRINGS, Kind, Reader

VERSION = 1
_OPEN = f"<!-- opdrift:watch-state v{VERSION}\n"
_BLOCK = re.compile(r"<!-- opdrift:watch-state v(\d+)\n(.*?)\n-->", re.DOTALL)
MAX_STATE_CHARS = 60_000  # a body holds 65,536: a bigger block is not one this code wrote
MAX_QUIET = 300  # open PRs remembered as affecting nothing at their head
MAX_LANDED = 50

_SHA = re.compile(r"[0-9a-f]{40}")
_SHORT = re.compile(rf"[0-9a-f]{{{DIGEST_HEX}}}")
_DIGEST = re.compile(r"[0-9a-f]{64}")
_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?")
_WHEN = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{8,15}(?:Z|[+-][0-9]{2}:[0-9]{2})")
_NAME = re.compile(r"[A-Za-z0-9_.]{1,200}")  # an operator name, overload included
_MAX_TEXT = 300


@dataclass(frozen=True)
class WatchState:
    watermark: str | None = None
    rows: tuple[PullRow, ...] = ()
    quiet: tuple[tuple[int, str], ...] = ()  # (number, head sha): open, touching, affecting nothing
    landed: tuple[Landed, ...] = ()
    # what the rows were judged against: the subscribed backend lists (`watch_judge.backend_digest`);
    # another one (a list changed, a backend added) has every open PR judged again
    backends: str | None = None


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


def _keys(d: Mapping[str, object], keys: tuple[str, ...], where: str) -> None:
    _READ.exact_keys(d, keys, where, where)


def read_impact(d: Any, where: str, who: Mapping[str, tuple[str, ...]]) -> BackendImpact | None:
    """One backend's impact as `impact_data` wrote it (StateError when it does not read); None when
    the config (WHO: backend key → handles) no longer subscribes that backend."""
    d = _READ.read(OBJECT, d, where, where)
    _keys(d, ("kind", "where", "needs", "breaks", "removes", "more"), where)
    kind = _READ.field(STRING, d, "kind", f"{where}.kind", where)
    if kind not in BACKEND_KINDS:
        raise StateError(f"{where}.kind: unknown kind")
    path = _READ.field(_TEXT, d, "where", f"{where}.where", where)
    broken = []
    items: list[Any] = _READ.field(LIST, d, "breaks", f"{where}.breaks", where)
    for i, item in enumerate(items):
        at = f"{where}.breaks[{i}]"
        b = _READ.read(LIST, item, at, at)
        if len(b) != 3:
            raise StateError(f"{at}: expected [op, form, parts]")
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
        broken.append(BrokenKernel(op, form, tuple(parts)))
    more = _READ.field(LIST, d, "more", f"{where}.more", where)
    if len(more) != 3 or not all(_COUNT.accepts(m) for m in more):
        raise StateError(f"{where}.more: expected three counts")
    key = f"{kind}:{path}"
    if key not in who:
        return None  # the config no longer subscribes this backend: its part of the row goes
    return BackendImpact(
        kind,
        path,
        who[key],
        _READ.field(_NAMES, d, "needs", f"{where}.needs", where),
        tuple(broken),
        _READ.field(_NAMES, d, "removes", f"{where}.removes", where),
        more[0],
        more[1],
        more[2],
    )


def _row(d: Any, where: str, who: Mapping[str, tuple[str, ...]]) -> PullRow | None:
    d = _READ.read(OBJECT, d, where, where)
    _keys(d, ("n", "title", "author", "draft", "updated", "url", "head", "fp", "impacts"), where)
    number = _READ.field(_NUMBER, d, "n", f"{where}.n", where)
    url = _READ.field(_TEXT, d, "url", f"{where}.url", where)
    if pull_url(url, number) is None:
        raise StateError(f"{where}.url: not a link to pull request {number}")
    listed: list[Any] = _READ.field(LIST, d, "impacts", where, where)
    impacts = [read_impact(x, f"{where}.impacts[{i}]", who) for i, x in enumerate(listed)]
    kept = tuple(i for i in impacts if i is not None)
    if not kept:
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
    )


def _decode(data: Any, who: Mapping[str, tuple[str, ...]]) -> WatchState:
    d = _READ.read(OBJECT, data, "state", "state")
    _READ.exact_keys(d, ("watermark", "rows", "quiet", "landed"), "state", "state", optional=("backends",))
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
        if not isinstance(x[2], str) or pull_url(x[2], x[0]) is None:
            raise StateError("landed: not a link to the pull request")
        landed.append(Landed(x[0], x[1], x[2]))
    return WatchState(
        watermark, tuple(r for r in rows if r is not None), tuple(quiet), tuple(landed), backends
    )


def read_state(body: str | None, who: Mapping[str, tuple[str, ...]]) -> tuple[WatchState, str | None]:
    """The state the issue's BODY holds, and a warning when it holds one that does not read (then the
    state is COLD). WHO: each subscribed backend's key → its handles (rows of other backends go)."""
    if not body:
        return COLD, None
    m = _BLOCK.search(body[: MAX_STATE_CHARS + 70_000])
    if m is None:
        return COLD, "the watch issue has no state block: starting cold (every affecting PR is news)"
    problem: str
    if m.group(1) != str(VERSION):
        problem = f"version {m.group(1)[:8]} is not {VERSION}"
    elif len(m.group(2)) > MAX_STATE_CHARS:
        problem = f"over {MAX_STATE_CHARS} characters"
    else:
        try:
            return _decode(json.loads(m.group(2)), who), None
        except (ValueError, RecursionError) as err:
            problem = f"not JSON ({type(err).__name__})"
        except StateError as err:
            problem = str(err)[:200]
    return COLD, f"the watch issue's state block does not read ({problem}): starting cold"


def impact_data(i: BackendImpact) -> dict[str, object]:
    return {
        "kind": i.kind,
        "where": i.where[:_MAX_TEXT],
        "needs": list(i.lacking),
        "breaks": [
            [b.op, b.form, [[w[:_MAX_TEXT], x[:_MAX_TEXT], y[:_MAX_TEXT]] for w, x, y in b.parts]]
            for b in i.broken
        ],
        "removes": list(i.removed),
        "more": [i.more_lacking, i.more_broken, i.more_removed],
    }


def state_block(state: WatchState) -> str:
    """The hidden block for STATE: one line of JSON in an HTML comment. No ``--`` can end the comment
    early: every ``-`` of the JSON is written as its ``\\u002d`` escape inside strings (no number of it
    is negative), which JSON reads back as itself."""
    data = {
        "watermark": state.watermark,
        "backends": state.backends,
        "rows": [
            {
                "n": r.number,
                "title": r.title[:_MAX_TEXT],
                "author": r.author,
                "draft": r.draft,
                "updated": r.updated_at,
                "url": r.url,
                "head": r.head_sha,
                "fp": list(r.fingerprint),
                "impacts": [impact_data(i) for i in r.impacts],
            }
            for r in state.rows
        ],
        "quiet": [[n, sha] for n, sha in state.quiet[:MAX_QUIET]],
        "landed": [[x.number, x.title[:_MAX_TEXT], x.url] for x in state.landed[:MAX_LANDED]],
    }
    text = json.dumps(data, separators=(",", ":"), sort_keys=True, ensure_ascii=True).replace("-", "\\u002d")
    return f"{_OPEN}{text}\n-->"
