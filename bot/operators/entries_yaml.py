"""native_functions.yaml → `RawEntry` records, read by PyYAML: the path `opdrift.operators.entries.read_entries`
takes for a file its purpose-built reader declines (and the reference that reader is tested against).
"""

from __future__ import annotations

import yaml

from opdrift.errors import EntryError
from opdrift.model import RawEntry
from opdrift.operators.entries import comments_above
from opdrift.yamltext import loading, refuse_aliases, split_lines


def load_entries_yaml(text: str, display: str) -> tuple[RawEntry, ...]:
    """Read native_functions.yaml with PyYAML: one `RawEntry` per top-level ``- func:`` item.

    Broken YAML raises `YamlError`; a file that is not a list of mappings with ``func`` raises
    `EntryError`; both name `display` and the 1-based line.
    """
    with loading(text, display) as loader:
        node = loader.get_single_node()
        if node is None:
            raise EntryError("no entries: the file holds no YAML document", path=display)
        if not isinstance(node, yaml.SequenceNode):
            raise EntryError(
                "the top level must be a list of `- func:` entries",
                path=display,
                line=node.start_mark.line + 1,
            )
        refuse_aliases(node, display)
        data = loader.construct_document(node)
    if not data:
        raise EntryError(
            "no entries: the top-level list is empty", path=display, line=node.start_mark.line + 1
        )
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
