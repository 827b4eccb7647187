"""What the tests cite of the package exists: a docstring or comment naming ``bot/x.py`` or ``bot.x.y``
names a module (or a name in it) that is there, so a reader who follows it finds the code."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# bot/history/attribution.py, bot/coverage/data/names.tsv.xz, bot.render.report.render
_CITED = re.compile(r"\bbot(?:[./][A-Za-z_][A-Za-z0-9_]*)+(?:\.(?:py|tsv|xz))*")


def _missing(ref: str) -> str | None:
    """Why REF names nothing, or None: the longest module prefix must exist, and a dotted remainder
    must be a name its module spells."""
    if "/" in ref:
        return None if (ROOT / ref).exists() else "no such file"
    parts = ref.split(".")
    for i in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:i])
        module = base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py"
        if module.is_file():
            rest = parts[i:]
            if rest and re.search(rf"\b{re.escape(rest[0])}\b", module.read_text(encoding="utf-8")) is None:
                return f"{'.'.join(parts[:i])} has no {rest[0]}"
            return None
    return "no such module"


def test_every_module_a_test_cites_exists() -> None:
    stale = []
    for path in sorted((ROOT / "tests").glob("*.py")):
        if path.name == Path(__file__).name:  # its own examples are stale on purpose
            continue
        text = path.read_text(encoding="utf-8")
        for match in _CITED.finditer(text):
            why = _missing(match.group(0))
            if why is not None:
                line = text.count("\n", 0, match.start()) + 1
                stale.append(f"tests/{path.name}:{line}: {match.group(0)}: {why}")
    assert stale == []


def test_a_stale_citation_is_found() -> None:
    assert _missing("bot/nativeyaml.py") == "no such file"
    assert _missing("bot.attribution") == "bot has no attribution"
    assert _missing("bot.taxonomy.overrides.no_such_name") == "bot.taxonomy.overrides has no no_such_name"
    assert _missing("bot/history/attribution.py") is None
    assert _missing("bot.yamltext.NodeReader") is None
