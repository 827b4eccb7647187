"""What the code cites exists. A test's docstring or comment naming ``bot/x.py`` or ``opdrift.x.y`` names a
module (or a name in it) that is there, so a reader who follows it finds the code. A ``Note [Title]``
cited anywhere in bot/, scripts/ or tests/ is written once, in torchgen's habit:

    # Note [Title]
    # ~~~~~~~~~~~~
    # the explanation, once

so a rule explained in one place is cited by name everywhere else (PyTorch's own notes, which the
code cites as torchgen's, are listed in `PYTORCH_NOTES`)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# bot/history/attribution.py, bot/coverage/data/names.tsv.xz, opdrift.render.report.render
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


def _test_files() -> list[Path]:
    """The tests' Python files, in every folder of tests/ but data/ (other projects' files)."""
    tests = ROOT / "tests"
    return sorted(p for p in tests.rglob("*.py") if p.relative_to(tests).parts[0] != "data")


def test_every_module_a_test_cites_exists() -> None:
    stale = []
    for path in _test_files():
        if path.name == Path(__file__).name:  # its own examples are stale on purpose
            continue
        text = path.read_text(encoding="utf-8")
        for match in _CITED.finditer(text):
            why = _missing(match.group(0))
            if why is not None:
                line = text.count("\n", 0, match.start()) + 1
                stale.append(f"{path.relative_to(ROOT)}:{line}: {match.group(0)}: {why}")
    assert stale == []


# Notes of PyTorch's that the code cites, and where PyTorch writes them: not ours to define.
PYTORCH_NOTES = {
    "Overload Ambiguity With Functional Variants": "torchgen/model.py",
    "bernoulli.p schema": "aten/src/ATen/native/native_functions.yaml",
}
_NOTE = re.compile(r"Note \[([^\]\n]+)\]")
_HEADING = re.compile(r"^\s*# Note \[([^\]]+)\]\s*\n\s*# ~+\s*$", re.MULTILINE)
# a citation wrapped over lines, in a comment or a docstring, reads as one line
_WRAP = re.compile(r"\s*\n\s*(?:#\s*)?")


def _notes(texts: dict[str, str]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(title → where it is written as a heading, title → where it is cited) over TEXTS (path → text)."""
    written: dict[str, list[str]] = {}
    cited: dict[str, list[str]] = {}
    for path, text in texts.items():
        for m in _HEADING.finditer(text):
            written.setdefault(m.group(1), []).append(f"{path}:{text.count(chr(10), 0, m.start(1)) + 1}")
        for m in _NOTE.finditer(_WRAP.sub(" ", text)):
            cited.setdefault(m.group(1), []).append(path)
    return written, cited


def _note_problems(texts: dict[str, str]) -> list[str]:
    written, cited = _notes(texts)
    problems = [
        f"Note [{t}] is written {len(w)} times: {', '.join(w)}" for t, w in written.items() if len(w) > 1
    ]
    for title, where in sorted(cited.items()):
        if title not in written and title not in PYTORCH_NOTES:
            problems.append(f"Note [{title}] is cited ({', '.join(sorted(set(where)))}) but written nowhere")
    return problems


def _sources() -> dict[str, str]:
    paths = [*ROOT.glob("bot/**/*.py"), *ROOT.glob("scripts/*.py"), *_test_files()]
    return {
        str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
        for p in sorted(paths)
        if p.name != Path(__file__).name
    }


def test_every_cited_note_is_written_exactly_once() -> None:
    written, cited = _notes(_sources())
    assert [w.split(":")[0] for w in written["SymInt kernels from 1.13"]] == ["bot/schema/kernel.py"]
    assert len(set(cited["SymInt kernels from 1.13"])) > 5  # cited by name, not explained again
    assert _note_problems(_sources()) == []


def test_a_note_cited_but_not_written_or_written_twice_is_found() -> None:
    heading = "# Note [Twice]\n# ~~~~~~~~~~~\n# why\n"
    problems = _note_problems(
        {
            "a.py": heading + "x = 1  # see Note [Nowhere]\n",
            "b.py": heading
            + '"""wrapped: see Note\n    [Twice] and torchgen\'s Note [bernoulli.p schema]"""\n',
        }
    )
    assert problems == [
        "Note [Twice] is written 2 times: a.py:1, b.py:1",
        "Note [Nowhere] is cited (a.py) but written nowhere",
    ]


def test_a_stale_citation_is_found() -> None:
    assert _missing("bot/nativeyaml.py") == "no such file"
    assert _missing("opdrift.attribution") == "opdrift has no attribution"
    assert (
        _missing("opdrift.taxonomy.overrides.no_such_name")
        == "opdrift.taxonomy.overrides has no no_such_name"
    )
    assert _missing("bot/history/attribution.py") is None
    assert _missing("opdrift.yamltext.NodeReader") is None
