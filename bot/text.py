"""Escaping for everything that comes from a source and ends up in Markdown, HTML or a terminal.

Operator names, schemas, comments and revisions are data written by other people. A rendered report
must show them verbatim and must never let them act: no Markdown structure, no HTML, no links, no
@mentions, no ``#123`` or ``GH-123`` references, no emoji shortcodes, no terminal escape sequences. Each helper returns a `Safe` string,
and the report's Jinja2 environment escapes any plain `str` that reaches the output without one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

# Between "@" or "#" and what follows, so GitHub's mention and reference filters see no handle.
ZWJ = "\u200d"

# C0/C1 controls and the Unicode line/paragraph separators: they end lines or drive terminals. And the
# bidirectional marks, overrides and isolates, which would show the rest of a line reversed.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NEWLINES = re.compile("\r\n|[\r\n\x0b\x0c\x85\u2028\u2029]")
_BACKTICK_RUN = re.compile("`+")
# Punctuation that opens inline structure anywhere in a line (emphasis, links, images, code, tables).
_MD_INLINE = re.compile(r"([\\`*_\[\]()!|~])")
# What opens block structure at the start of a line: headings, lists, quotes, setext underlines.
_MD_LEADING = re.compile(r"^(\s*)([#+\-=>]|[0-9]+[.)])")

# Longest op name or schema shown inline in a capped report; the full text stays in the file reports.
MAX_INLINE = 300


class Safe(str):
    """A string already escaped for its target; the report environment passes it through unchanged."""

    __slots__ = ()


def one_line(text: str) -> str:
    """Newlines become spaces and other control characters (bidi ones too) become U+FFFD, so text stays
    on its line and reads in its order."""
    return _CONTROL.sub("\ufffd", _NEWLINES.sub(" ", text))


def shorten(text: str, limit: int = MAX_INLINE) -> str:
    """Cut `text` to at most `limit` characters, marking the cut with an ellipsis."""
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def code(text: object, limit: int = MAX_INLINE, *, in_table: bool = False) -> Safe:
    """A Markdown code span showing `text` literally, whatever backticks, pipes or HTML it holds.

    The fence is one backtick longer than the longest run inside (CommonMark), padded with a space
    when the text starts or ends with a backtick or space, since the parser strips one of each.
    Inside a GFM table a pipe splits the cell even within a code span, so it is escaped there.
    """
    body = shorten(one_line(str(text)), limit)
    if not body:
        return Safe("` `")
    longest = max((len(m.group(0)) for m in _BACKTICK_RUN.finditer(body)), default=0)
    fence = "`" * (longest + 1)
    if body.startswith(("`", " ")) or body.endswith(("`", " ")):
        body = f" {body} "
    if in_table:
        body = body.replace("|", "\\|")
    return Safe(f"{fence}{body}{fence}")


def code_block(lines: Sequence[str], lang: str = "", *, indent: int = 0, limit: int = 2000) -> Safe:
    """A fenced Markdown code block showing LINES literally (each on one line, cut at LIMIT), its fence
    longer than any backtick run inside, the whole indented by INDENT spaces (to sit in a list item)."""
    body = [shorten(one_line(x), limit) for x in lines]
    longest = max((len(m.group(0)) for x in body for m in _BACKTICK_RUN.finditer(x)), default=0)
    fence = "`" * max(3, longest + 1)
    pad = " " * indent
    info = lang if re.fullmatch(r"[a-z+-]{0,20}", lang) else ""
    return Safe("\n".join(f"{pad}{x}" for x in (f"{fence}{info}", *body, fence)))


# GitHub's filters run on the rendered text (after Markdown, so backslash escapes are gone by then;
# `md` has already put them in, hence the backslashes in these classes). Each pattern is what one
# filter would still recognise once ``@`` and ``#`` are broken:
# - ``GH-123``, GitHub's other spelling of ``#123`` (any case);
_GH_REF = re.compile(r"(?i)(gh-)(?=[0-9])")
# - an emoji shortcode ``:white_check_mark:``, ``:+1:`` (a name of word characters, ``+`` and ``-``);
_SHORTCODE = re.compile(r":(?=[\w+\\-]+:)")
# - a commit sha: a word of 7 to 40 hex digits, linked when the repository has such a commit. Any
#   longer run is cut too, so no 7-digit piece of it is left after the cut;
_HEX_WORD = re.compile(r"(?<![\w])[0-9A-Fa-f]{7,}(?![\w])")
_HEX_PIECE = 6
# - a bare URL: ``http://``, ``https://``, ``ftp://`` … and ``www.``.
_WWW = re.compile(r"(?i)\bwww\.")


def _cut_hex(m: re.Match[str]) -> str:
    word = m.group(0)
    return ZWJ.join(word[i : i + _HEX_PIECE] for i in range(0, len(word), _HEX_PIECE))


def _neutralize(text: str) -> str:
    """Break GitHub's text filters: @mentions (users, ``@org/team``), references (``#1``, ``GH-1``,
    ``owner/repo#1``, ``user@sha``), commit shas, emoji shortcodes and bare-URL autolinks.

    A zero-width joiner between the sigil and what follows: each filter's pattern no longer matches,
    and the rendered text reads the same (the joiner has no width).
    """
    text = text.replace("@", "@" + ZWJ).replace("#", "#" + ZWJ)
    text = _GH_REF.sub(lambda m: m.group(1) + ZWJ, text)
    text = _SHORTCODE.sub(":" + ZWJ, text)
    text = _HEX_WORD.sub(_cut_hex, text)
    text = text.replace("://", ":" + ZWJ + "//")
    return _WWW.sub(lambda m: m.group(0)[:3] + ZWJ + ".", text)


def md(text: object) -> Safe:
    """Plain Markdown text shown literally: structure escaped, HTML entities, no mentions or links."""
    s = one_line(str(text))
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = _MD_INLINE.sub(r"\\\1", s)
    s = _MD_LEADING.sub(lambda m: m.group(1) + "\\" + m.group(2), s)
    return Safe(_neutralize(s))


def html(text: object) -> Safe:
    """Text inside raw HTML (``<summary>``), where Markdown is not parsed: entities only."""
    s = one_line(str(text))
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    return Safe(_neutralize(s))


def terminal(text: object) -> Safe:
    """Text for a terminal: one line, no escape sequences."""
    return Safe(one_line(str(text)))


_URL = re.compile(r"https?://[A-Za-z0-9.-]+(?::[0-9]+)?(?:/[A-Za-z0-9._~%/+-]*)?(?:#L[0-9]+)?")


def link(label: Safe, url: str | None) -> Safe:
    """``[label](url)`` when `url` is a plain http(s) URL the bot built; otherwise just the label."""
    if url is None or _URL.fullmatch(url) is None:
        return label
    return Safe(f"[{label}]({url})")


def did_you_mean(value: str, known: Iterable[str]) -> str:
    """``; did you mean MPS?`` for the names in `known` closest to `value` (ignoring case), or ""."""
    by_folded: dict[str, list[str]] = {}
    for name in sorted(set(known)):
        by_folded.setdefault(name.casefold(), []).append(name)
    folded = value.casefold()
    import difflib  # here: only a mistyped name needs it, and every command loads this module

    # A name that differs only in case is the one meant (``xpu``: XPU, not also CPU).
    close = (
        [folded]
        if folded in by_folded
        else difflib.get_close_matches(folded, list(by_folded), n=3, cutoff=0.6)
    )
    names = [name for match in close for name in by_folded[match]]
    return f"; did you mean {' or '.join(names)}?" if names else ""
