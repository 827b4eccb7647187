"""What GitHub would still make live of a rendered Markdown text: the checks tests/unit/test_text.py and
the watch's tests share (a mention, a link, a `#N` reference, an emoji shortcode left in the text)."""

from __future__ import annotations

import html as htmllib
import re

from opdrift.text import ZWJ

# What GitHub's filters would still recognise in rendered text (code spans are left alone by them).
LIVE = {
    "GH- reference": re.compile(r"(?i)(?<![\w-])GH-[0-9]+"),
    "emoji shortcode": re.compile(r":[\w+-]+:"),
    "commit sha": re.compile(r"(?<![\w-])[0-9a-f]{7,40}(?![\w-])"),
    "# reference": re.compile(r"#[0-9]+"),
    "mention": re.compile(r"@[\w-]"),
    "URL": re.compile(r"(?i)https?://|www\."),
}
# A fenced code block (its fence three or more backticks, closed by the same run): GitHub's filters
# leave its lines alone, as they do a code span's.
_FENCED = re.compile(r"(?ms)^[ ]*(`{3,})[^`\n]*\n.*?^[ ]*\1[ ]*$")
_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")
_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")


def rendered(markdown: str) -> str:
    """Roughly the text GitHub shows (and filters): backslash escapes and entities resolved."""
    return htmllib.unescape(_ESCAPED.sub(r"\1", markdown))


def live(markdown: str) -> dict[str, list[str]]:
    """Each live reference left in MARKDOWN's text outside code spans and the links the bot built."""
    text = rendered(_SPAN.sub("", re.sub(r"\]\([^)]*\)", "]", _FENCED.sub("", markdown))))
    return {kind: found for kind, pattern in LIVE.items() if (found := pattern.findall(text))}


def visible(text: str) -> str:
    """What a reader sees: the zero-width joiners have no width."""
    return text.replace(ZWJ, "")
