"""``--backend NAME:KIND=PATH`` of `opdrift site`: the name a column shows, and `coverage`'s KIND=PATH."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath

from opdrift.coverage.backends import BackendKind, parse_named_backend_arg
from opdrift.coverage.kinds import KIND_BY_ID
from opdrift.errors import ConfigError

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,39}")


@dataclass(frozen=True)
class SiteBackend:
    name: str
    kind: BackendKind
    value: str  # a path, or a dispatch key for kind dispatch

    @property
    def label(self) -> str:
        """What the site shows of PATH: the file's name only, so no machine path is published."""
        return f"dispatch key {self.value}" if KIND_BY_ID[self.kind].in_pytorch else PurePath(self.value).name


def parse_site_backend(arg: str) -> SiteBackend:
    # coverage's own reader of [NAME:]KIND=PATH; a column must have a NAME, and one fit for a page.
    name, kind, value = parse_named_backend_arg(arg)
    if name is None or _NAME.fullmatch(name) is None:
        raise ConfigError(
            f"--backend expects NAME:KIND=PATH with NAME of letters, digits, '_.+-' (up to 40), got {arg!r}"
        )
    return SiteBackend(name, kind, value)


def check_unique(backends: list[SiteBackend]) -> None:
    seen: set[str] = set()
    for b in backends:
        if b.name in seen:
            raise ConfigError(f"--backend name {b.name!r} given twice: each column needs its own name")
        seen.add(b.name)
