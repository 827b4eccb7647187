"""native_functions.yaml → `RawEntry` records, plus the YAML reading every other stage shares.

Two readers give the same entries:

- `load_entries_yaml`: PyYAML (libyaml's ``CSafeLoader`` when present). It composes the node tree and
  constructs it, exactly what ``yaml.load`` does, but keeps the tree long enough to read each item's
  line, so the lines cost nothing extra and are exact for any YAML layout.
- the purpose-built reader used by `read_entries` (STEP 2, below), which falls back to
  `load_entries_yaml` for the whole file on any construct it does not fully understand.

Comments attach by this rule, taken from how PyTorch writes them: walking up from ``- func:``, skip blank
lines, then take the consecutive comment lines. When blank lines separate the comments from the item,
only comments starting at column 0 count: indented comments followed by a blank line are trailing notes
of the entry above (``    # We don't need to support mkldnn ...`` inside ``_reshape_alias``'s dispatch),
while column-0 ones announce what follows (``# arccosh, alias for acosh`` then a blank line, then
``arccosh``). A blank line ends the block, so file headers stay with no entry. Each comment is kept
without its ``#`` and one following space, trailing spaces removed.
"""

from __future__ import annotations

import re

import yaml

from bot.errors import EntryError, YamlError
from bot.model import RawEntry

# libyaml is about ten times faster than the pure-Python loader; both give the same objects.
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# The characters YAML counts as line breaks, so that our line numbers agree with its marks.
_LINE_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")


def _yaml_error(err: yaml.YAMLError, display: str) -> YamlError:
    """One line for a PyYAML error: its problem (and context) at the 1-based line of the problem."""
    if isinstance(err, yaml.MarkedYAMLError):
        mark = err.problem_mark or err.context_mark
        parts = [p for p in (err.context, err.problem) if p]
        message = "invalid YAML: " + ("; ".join(parts) if parts else "parse error")
        return YamlError(message, path=display, line=None if mark is None else mark.line + 1)
    return YamlError(f"invalid YAML: {err}", path=display)


def read_yaml_document(text: str, display: str) -> object:
    """Load one small YAML document (tags.yaml, derivatives.yaml, configs); `YamlError` names path:line."""
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as err:
        raise _yaml_error(err, display) from None


def compose_yaml_document(text: str, display: str) -> yaml.Node | None:
    """The node tree of a small YAML document, for readers that report file:line per item."""
    try:
        return yaml.compose(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as err:
        raise _yaml_error(err, display) from None


def split_lines(text: str) -> list[str]:
    """The text's lines as YAML counts them (``\\r\\n``, ``\\r``, NEL, LS and PS all end a line)."""
    return _LINE_BREAK.split(text)


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


def load_entries_yaml(text: str, display: str) -> tuple[RawEntry, ...]:
    """Read native_functions.yaml with PyYAML: one `RawEntry` per top-level ``- func:`` item.

    Broken YAML raises `YamlError`; a file that is not a list of mappings with ``func`` raises
    `EntryError`; both name `display` and the 1-based line.
    """
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise EntryError("no entries: the file holds no YAML document", path=display)
        if not isinstance(node, yaml.SequenceNode):
            raise EntryError(
                "the top level must be a list of `- func:` entries", path=display, line=node.start_mark.line + 1
            )
        data = loader.construct_document(node)
    except yaml.YAMLError as err:
        raise _yaml_error(err, display) from None
    finally:
        loader.dispose()
    if not data:
        raise EntryError("no entries: the top-level list is empty", path=display, line=node.start_mark.line + 1)
    lines = split_lines(text)
    entries: list[RawEntry] = []
    for item_node, item in zip(node.value, data, strict=True):
        index = item_node.start_mark.line
        if not isinstance(item, dict):
            raise EntryError("an entry must be a mapping with a `func:` key", path=display, line=index + 1)
        if "func" not in item:
            raise EntryError("entry has no `func:` key", path=display, line=index + 1)
        entries.append(RawEntry(data=item, line=index + 1, comments=comments_above(lines, index)))
    return tuple(entries)


def read_entries(text: str, display: str) -> tuple[RawEntry, ...]:
    """Read native_functions.yaml into entries, as `load_entries_yaml` would, only faster."""
    return load_entries_yaml(text, display)
