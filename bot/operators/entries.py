"""native_functions.yaml → `RawEntry` records.

Two readers give the same entries:

- `opdrift.operators.entries_yaml.load_entries_yaml`: PyYAML (libyaml's ``CSafeLoader`` when present). It composes the node tree and
  constructs it, exactly what ``yaml.load`` does, but keeps the tree long enough to read each item's
  line, so the lines cost nothing extra and are exact for any YAML layout.
- the purpose-built reader used by `read_entries` (STEP 2, below), which falls back to
  `load_entries_yaml` for the whole file on any construct it does not fully understand. Only then is
  PyYAML imported: a process that reads a release never loads it.

Comments attach by this rule, taken from how PyTorch writes them: walking up from ``- func:``, skip blank
lines, then take the consecutive comment lines. When blank lines separate the comments from the item,
only comments starting at column 0 count: indented comments followed by a blank line are trailing notes
of the entry above (``    # We don't need to support mkldnn ...`` inside ``_reshape_alias``'s dispatch),
while column-0 ones announce what follows (``# arccosh, alias for acosh`` then a blank line, then
``arccosh``). A blank line ends the block, so file headers stay with no entry. Each comment is kept
without its ``#`` and one following space, trailing spaces removed.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from opdrift.model import RawEntry
from opdrift.yamlplain import ASCII_LINES, TYPED_START, Untyped, plain_scalar


def _comment_text(stripped: str) -> str:
    body = stripped[1:]
    if body.startswith(" "):
        body = body[1:]
    return body.rstrip()


def comments_above(lines: list[str], index: int) -> tuple[str, ...]:
    """The comment block attached to the item on 0-based line `index` (rule in the module docstring)."""
    j = index - 1
    while j >= 0 and not lines[j].strip(" \t"):
        j -= 1
    separated = j < index - 1
    found: list[str] = []
    while j >= 0:
        line = lines[j]
        stripped = line.lstrip(" \t")
        if not stripped.startswith("#") or (separated and line[0] != "#"):
            break
        found.append(_comment_text(stripped))
        j -= 1
    found.reverse()
    return tuple(found)


def read_entries(text: str, display: str) -> tuple[RawEntry, ...]:
    """Read native_functions.yaml into entries: the fast reader, or PyYAML when it declines the file.

    The result is the same as `load_entries_yaml`'s (data, lines and comments); errors come from the
    PyYAML path, because the fast reader declines every file it cannot read in full.
    """
    try:
        return _read_entries_fast(text)
    except _Decline:
        # Imported here: PyYAML is a tenth of a run's cost to import, and no release needs it.
        from opdrift.operators.entries_yaml import load_entries_yaml

        return load_entries_yaml(text, display)


# --------------------------------------------------------------------------------------------------
# The fast reader.
#
# native_functions.yaml is a list of flat mappings written in a handful of line shapes:
#
#     - func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
#       variants: function, method        # a trailing comment
#       tags: [core, pointwise]
#       cpp_no_default_args: ['atol', 'rtol']
#       dispatch:
#         CPU, CUDA: add_out
#       dispatch: {}
#       precomputed:
#       - dim -> int dim
#
# The reader accepts exactly these shapes (items at column 0, keys at column 2, a nested mapping at
# column 4, a block list at column 2, single-line scalars) and declines the whole file, so that PyYAML
# reads it, on anything else: tabs, other indentation, anchors, aliases, tags, block scalars, multi-line
# scalars, escapes, '' inside single quotes, nested or multi-line flow collections, non-empty flow
# mappings, document markers, directives, stray line breaks (lone CR, NEL, LS, PS), a BOM, characters
# YAML forbids, over-long keys, and any line it cannot place. Plain scalars are typed as PyYAML's
# resolver and constructors type them (`opdrift.yamlplain`): ``True`` and ``null`` here, while ``1`` or
# ``2001-12-14`` make the reader decline, so that PyYAML makes of them what it makes.
# --------------------------------------------------------------------------------------------------


class _Decline(Exception):
    """The fast reader met something it does not fully understand: let PyYAML read the file."""


# Characters that cannot start a plain scalar in block context (or start one only in ways we decline).
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")


@functools.cache
def _non_ascii_decline() -> re.Pattern[str]:
    """Non-ASCII characters that YAML treats as line breaks or a byte-order mark, or forbids outright.

    Compiled on first use: its Unicode class takes milliseconds to compile, and ASCII files (every
    PyTorch release so far) never need it.
    """
    return re.compile(
        "[\x85\u2028\u2029\ufeff]|[^\x0a\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
    )


# Keys we take as plain scalars: words, dots and ", "-separated lists of them (``CPU, CUDA``).
_KEY = re.compile(r"[A-Za-z0-9_.]+(?:, *[A-Za-z0-9_.]+)*\Z")
# libyaml forgets a simple key once it is 1024 characters long; stay well clear of that rule.
_MAX_KEY = 512

# What a key line's value turned out to be, and where an indented line sits.
_SCALAR, _PENDING, _LIST, _EMPTY_MAP = range(4)


def _resolve(text: str) -> object:
    """A plain scalar typed as PyYAML types it (`opdrift.yamlplain`); `_Decline` when only PyYAML can say."""
    if text[0] not in TYPED_START:  # most scalars: a string, without a call
        return text
    try:
        return plain_scalar(text)
    except Untyped:
        raise _Decline from None


def _after_token(tail: str) -> None:
    """What may follow a closed quote or flow list on its line: nothing, or spaces and a comment."""
    if tail:
        rest = tail.lstrip(" ")
        if rest and not (rest[0] == "#" and len(rest) < len(tail)):
            raise _Decline


def _quoted(token: str) -> str:
    """A single-line quoted scalar that is the whole token (no escapes, no doubled quotes)."""
    quote = token[0]
    if len(token) < 2 or token[-1] != quote:
        raise _Decline
    body = token[1:-1]
    if quote in body or (quote == '"' and "\\" in body):
        raise _Decline
    return body


def _plain(text: str) -> object:
    """A single-line plain scalar in block context, comment already cut and spaces stripped."""
    if text[0] in _INDICATORS or ": " in text or text[-1] == ":":
        raise _Decline
    return _resolve(text)


def _flow_list(rest: str) -> tuple[object, ...]:
    """``[a, 'b', "c"]`` on one line, no nesting; `rest` starts with ``[``."""
    end = rest.find("]")
    if end < 0:
        raise _Decline
    _after_token(rest[end + 1 :])
    inner = rest[1:end]
    if "[" in inner or "{" in inner or "}" in inner:
        raise _Decline
    if not inner.strip(" "):
        return ()
    items: list[object] = []
    for raw in inner.split(","):
        item = raw.strip(" ")
        if not item:
            raise _Decline
        if item[0] == "'" or item[0] == '"':
            items.append(_quoted(item))
        elif item[0] in _INDICATORS or ":" in item or "#" in item:
            raise _Decline
        else:
            items.append(_resolve(item))
    return tuple(items)


def _value(rest: str) -> tuple[int, object]:
    """The value after ``key: `` (or after ``- `` in a block list), as (what it is, value)."""
    rest = rest.lstrip(" ")
    if not rest or rest[0] == "#":
        return _PENDING, None
    first = rest[0]
    if first == "'" or first == '"':
        close = rest.find(first, 1)
        if close < 0:
            raise _Decline
        _after_token(rest[close + 1 :])
        return _SCALAR, _quoted(rest[: close + 1])
    if first == "[":
        return _LIST, _flow_list(rest)
    if first == "{":
        if not rest.startswith("{}"):
            raise _Decline
        _after_token(rest[2:])
        return _EMPTY_MAP, None
    cut = rest.find(" #")
    if cut >= 0:
        rest = rest[:cut]
    return _SCALAR, _plain(rest.rstrip(" "))


def _key_line(body: str) -> tuple[object, int, object]:
    """``key: value`` with the indentation removed → (key, what the value is, value)."""
    colon = body.find(": ")
    if colon < 0:
        if not body.endswith(":"):
            raise _Decline
        colon = len(body) - 1
    key_text = body[:colon]
    if len(key_text) > _MAX_KEY or not _KEY.match(key_text):
        raise _Decline
    kind, value = _value(body[colon + 1 :])
    return _resolve(key_text), kind, value


def _item_line(body: str) -> tuple[int, object]:
    """A block-list item's text after ``- ``: a scalar or a flow list, never a mapping."""
    kind, value = _value(body)
    if kind in (_PENDING, _EMPTY_MAP):
        raise _Decline
    return kind, value


def _check_characters(text: str) -> str:
    """The text with CRLF turned into LF, or `_Decline` for characters the reader does not handle."""
    if "\r" in text:
        if text.count("\r") != text.count("\r\n"):
            raise _Decline
        text = text.replace("\r\n", "\n")
    if text.isascii():
        if text.encode("ascii").translate(None, ASCII_LINES):
            raise _Decline
    elif _non_ascii_decline().search(text):
        raise _Decline
    return text


# A value that starts with none of these is a plain scalar, unless it holds a ``:`` (then we look closer).
_NOT_PLAIN_START = _INDICATORS | {" "}


def _pair(body: str, keys: dict[str, object]) -> tuple[object, int, object]:
    """``key: value`` with the indentation removed → (key, what the value is, value).

    The common shape, ``key: plain value  # comment`` with no ``:`` in the value, is read here with
    string methods; every other shape goes through `_key_line`.
    """
    key_text, sep, value = body.partition(": ")
    if not sep or not value or value[0] in _NOT_PLAIN_START or ":" in value:
        return _key_line(body)
    if key_text in keys:
        key = keys[key_text]
    else:
        if len(key_text) > _MAX_KEY or not _KEY.match(key_text):
            raise _Decline
        key = keys[key_text] = _resolve(key_text)
    if "#" in value:
        cut = value.find(" #")
        if cut >= 0:
            value = value[:cut]
    value = value.rstrip(" ")
    return key, _SCALAR, _resolve(value)


# What an indented line is, as the main loop sees it. Scalars are stored as they are; any other value
# is stored as (what it is, value) and made fresh for each entry, so entries never share a list.
_K2, _K2_OTHER, _K4, _K4_OTHER, _ITEM, _ITEM_OTHER, _SKIP = range(7)
_SKIPPED: tuple[int, Any, Any] = (_SKIP, None, None)
_CLOSED = object()  # `open_key` when no column-2 key is waiting for a nested block


def _indented(line: str, keys: dict[str, object]) -> tuple[int, Any, Any]:
    """An indented line → (what it is, key, value); see the codes above."""
    body = line.lstrip(" ")
    if not body or body[0] == "#":
        return _SKIPPED
    indent = len(line) - len(body)
    key_text, sep, value = body.partition(": ")
    if (
        sep
        and key_text in keys
        and value
        and value[0] not in _NOT_PLAIN_START
        and ":" not in value
        and "#" not in value
        and (indent == 2 or indent == 4)
    ):
        # The usual ``key: value`` line under a key seen before, read without the general path.
        value = value.rstrip(" ")
        return (_K2 if indent == 2 else _K4, keys[key_text], _resolve(value))
    if indent == 2 and body[0] == "-":
        if body[1:2] != " ":
            raise _Decline
        kind, item = _item_line(body[2:])
        return (_ITEM, None, item) if kind == _SCALAR else (_ITEM_OTHER, None, (kind, item))
    if indent != 2 and indent != 4:
        raise _Decline
    key, kind, parsed = _pair(body, keys)
    code = _K2 if indent == 2 else _K4
    return (code, key, parsed) if kind == _SCALAR else (code + 1, key, (kind, parsed))


def _read_entries_fast(text: str) -> tuple[RawEntry, ...]:
    lines = _check_characters(text).split("\n")
    keys: dict[str, object] = {}  # key text → key, once checked
    # Parsed indented lines by their exact text: many repeat verbatim across entries.
    seen: dict[str, tuple[int, Any, Any]] = {}
    # Before the first item only blank and comment lines may stand.
    start = 0
    while start < len(lines) and (not lines[start] or lines[start].lstrip(" ")[:1] == "#"):
        start += 1
    if start == len(lines) or lines[start][0] != "-":
        raise _Decline
    entries: list[RawEntry] = []
    entry: dict[Any, object] = {}
    # The column-2 key whose value is still open, and the nested block it has become.
    open_key: object = _CLOSED
    block_map: dict[Any, object] | None = None
    block_list: list[object] | None = None
    kind: int
    value: Any
    for index, line in enumerate(lines):
        if not line:
            continue
        first = line[0]
        if first == " ":
            parsed = seen.get(line)
            if parsed is None:
                parsed = seen[line] = _indented(line, keys)
            code, key, value = parsed
            if code == _K2:
                entry[key] = value
                open_key = _CLOSED
                block_map = block_list = None
            elif code == _K4:
                if block_map is None:
                    block_map = entry[_open(open_key, block_list)] = {}
                block_map[key] = value
            elif code == _SKIP:
                continue
            elif code == _K2_OTHER:
                kind, value = value
                entry[key] = _fresh(kind, value)
                open_key = key if kind == _PENDING else _CLOSED
                block_map = block_list = None
            elif code == _K4_OTHER:
                if block_map is None:
                    block_map = entry[_open(open_key, block_list)] = {}
                block_map[key] = _fresh(*value)
            else:
                if block_list is None:
                    block_list = entry[_open(open_key, block_map)] = []
                block_list.append(value if code == _ITEM else _fresh(*value))
        elif first == "-":
            if line[1:2] != " " or line[2:3] in (" ", "#", ""):
                raise _Decline
            value = line[8:]
            if (
                line.startswith("- func: ")
                and value
                and value[0] not in _NOT_PLAIN_START
                and ":" not in value
                and "#" not in value
            ):
                # The usual item line, read here because it is one line in six.
                key, kind = "func", _SCALAR
                value = _resolve(value.rstrip(" "))
            else:
                key, kind, value = _pair(line[2:], keys)
            if kind == _SCALAR:
                entry = {key: value}
                open_key = _CLOSED
            else:
                entry = {key: _fresh(kind, value)}
                open_key = key if kind == _PENDING else _CLOSED
            block_map = block_list = None
            # Most items follow a blank line after the previous entry: look closer only near comments.
            j = index - 1
            while j >= 0 and not lines[j]:
                j -= 1
            comments = comments_above(lines, index) if j >= 0 and lines[j].lstrip(" ")[:1] in "#" else ()
            entries.append(RawEntry(entry, index + 1, comments))
        elif first != "#":
            raise _Decline
    if any("func" not in e.data for e in entries):
        raise _Decline
    return tuple(entries)


def _open(open_key: object, other_block: object) -> Any:
    """The key a nested block starts under; decline if no key is open or it already holds another block."""
    if open_key is _CLOSED or other_block is not None:
        raise _Decline
    return open_key


def _fresh(kind: int, value: object) -> object:
    """A new object for a non-scalar value (lists and mappings are never shared between entries)."""
    if kind == _LIST:
        return list(value)  # type: ignore[call-overload]
    if kind == _EMPTY_MAP:
        return {}
    return None
