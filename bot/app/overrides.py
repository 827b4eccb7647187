"""The overrides file, read at the edge: the taxonomy classifies without touching a file.

`opdrift.taxonomy.overrides.parse_overrides` turns the text into `Overrides` (pure); this reads the file
the way every user file is read (size-capped, strict UTF-8, one error naming it) and hands the text
over. An import contract (pyproject.toml, "Classification reads no files") keeps `opdrift.taxonomy`
from importing `opdrift.sources`.
"""

from __future__ import annotations

from opdrift.errors import ConfigError
from opdrift.sources.read import read_text
from opdrift.taxonomy.overrides import Overrides, parse_overrides


def load_overrides(path: str) -> Overrides:
    """Read and parse an overrides file; a missing or unreadable file is a ConfigError naming it."""
    return parse_overrides(read_text(path, "overrides file", ConfigError), path)
