"""The engine's rules are one table (`opdrift.work.rules.RULE_TABLE`): each rule's example, a real operator
of a vendored release, gets that rule from `opdrift.work.engine` itself; each rule is cited; and its
wording is written nowhere but its row, so `explain`, the site, coverage and the drift say it alike."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from goldens import check_golden_entry, updating
from releasesnap import release_snapshot

from opdrift.render.explain import explain_view, render_text
from opdrift.work.engine import RULES, Backend, Engine
from opdrift.work.rules import (
    NEEDS_KERNEL,
    RULE_BY_ID,
    RULE_TABLE,
    TRAINING_ONLY,
    VERIFIER_REJECTS,
    Rule,
    words,
)

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("rule", RULE_TABLE, ids=lambda r: r.id)
def test_each_rule_s_example_gets_that_rule_from_the_engine(rule: Rule) -> None:
    ex = rule.example
    snapshot = release_snapshot(ex.release)
    backend = Backend(ex.profile, frozenset(ex.listed), frozenset(ex.autograd), edge=ex.edge)
    engine = Engine(snapshot.operators, backend, version=snapshot.meta.torch_version)
    verdict = engine.judge(snapshot.operators[ex.op])
    assert (verdict.rule, verdict.covered, verdict.via) == (rule.id, rule.covered, ex.via)


def test_the_table_holds_every_rule_the_engine_answers_with_in_its_order(
    request: pytest.FixtureRequest,
) -> None:
    assert [r.id for r in RULE_TABLE] == [*RULES, TRAINING_ONLY, VERIFIER_REJECTS, NEEDS_KERNEL]
    assert len(RULE_BY_ID) == len(RULE_TABLE)
    for rule in RULE_TABLE:
        for said in (rule.words(), rule.words("x.out"), rule.words("", "export")):
            assert said.strip() and "{" not in said, rule.id
    # a verdict that names the op carrying it says which; one that names none still reads whole
    named, unnamed = words("backend_codegen", "add.Tensor"), words("backend_codegen")
    assert named.endswith(" add.Tensor") and named.removesuffix("add.Tensor") in unnamed
    said = f"{named}\n{unnamed}\n"
    check_golden_entry(
        "explain.lines.txt", "backend_codegen: with and without the op", said, updating(request)
    )


# torchgen/dest/register_dispatch_key.py@v2.13.0, executorch:exir/verification/verifier.py@cff6f4d
_AT_RELEASE = re.compile(
    r"(?:executorch:)?(?:aten|c10|torch|torchgen|tools|exir|kernels)/[\w/.]+\.\w+@(?:v\d+\.\d+\.\d+|[0-9a-f]{7,40})"
)


def test_every_rule_is_cited() -> None:
    """A file of PyTorch's (or ExecuTorch's) at a release or commit, or observed data in this repository
    (which must exist). The upstream files are not vendored, so only their form is checked here."""
    for rule in RULE_TABLE:
        if _AT_RELEASE.fullmatch(rule.citation):
            continue
        assert (ROOT / rule.citation).is_file(), f"{rule.id}: {rule.citation}"


def _patterns(rule: Rule) -> dict[str, re.Pattern[str]]:
    """A rule's sentences of more than a word, as patterns over a text where ``{via}`` is anything."""
    out = {}
    for sentence in (rule.wording, rule.without_via, rule.export_wording, rule.edge_wording):
        if " " in sentence:
            out[sentence] = re.compile(".+".join(re.escape(part) for part in sentence.split("{via}")))
    return out


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    """The strings of a module but its docstrings (prose, not output); an f-string with ``{…}`` for
    each value it formats."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                skip.add(id(body[0].value))
        if isinstance(node, ast.JoinedStr):
            skip.update(id(v) for v in node.values)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = "".join(
                v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "{…}"
                for v in node.values
            )
            out.append((node.lineno, text))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            out.append((node.lineno, node.value))
    return out


_RULE_NAMES = {"NEEDS_KERNEL", "TRAINING_ONLY", "VERIFIER_REJECTS"} | {r.id.upper() for r in RULE_TABLE}


def _wording_maps(tree: ast.AST) -> list[int]:
    """Lines of dict literals that map a rule id (its string or its constant) to words."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Dict):
            continue
        for key, value in zip(node.keys, node.values, strict=True):
            is_rule = (isinstance(key, ast.Constant) and key.value in RULE_BY_ID) or (
                isinstance(key, ast.Name) and key.id in _RULE_NAMES
            )
            is_words = isinstance(value, ast.JoinedStr) or (
                isinstance(value, ast.Constant) and isinstance(value.value, str)
            )
            if is_rule and is_words:
                found.append(node.lineno)
                break
    return found


def _written_outside(patterns: dict[str, dict[str, re.Pattern[str]]], root: Path) -> list[str]:
    stray = []
    for path in sorted((root / "bot").rglob("*.py")):
        if path.relative_to(root).as_posix() == "bot/work/rules.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = path.relative_to(root).as_posix()
        for line, text in _strings(tree):
            stray += [
                f"{where}:{line}: {rid}: {said!r}"
                for rid, ps in patterns.items()
                for said, p in ps.items()
                if p.search(text)
            ]
        stray += [f"{where}:{line}: a rule id mapped to words" for line in _wording_maps(tree)]
    for path in sorted((root / "templates").glob("*.j2")):
        text = path.read_text(encoding="utf-8")
        stray += [
            f"templates/{path.name}: {rid}: {said!r}"
            for rid, ps in patterns.items()
            for said, p in ps.items()
            if p.search(text)
        ]
    return stray


@pytest.mark.slow
def test_no_rule_is_worded_outside_its_table() -> None:
    """Before the table, explain said a functionalized op was "no work of its own: functionalized into
    its functional op add" and the site "functionalized into add"; explain and the site each kept a
    dict of rule → words."""
    assert _written_outside({r.id: _patterns(r) for r in RULE_TABLE}, ROOT) == []


def test_a_rule_worded_outside_its_table_is_found(tmp_path: Path) -> None:
    # a copy of bot/render/explain.py as it could drift
    (tmp_path / "bot" / "render").mkdir(parents=True)
    (tmp_path / "templates").mkdir()
    (tmp_path / "bot" / "render" / "explain.py").write_text(
        '"""no work of its own: functionalized into its functional op (a docstring is prose)."""\n'
        'SAID = f"no work of its own: functionalized into {via}"\n'
        'WORDS = {"autograd_key": "at the Autograd key", NEEDS_KERNEL: f"needs {x}"}\n',
        encoding="utf-8",
    )
    (tmp_path / "templates" / "t.md.j2").write_text("{{ n }} only in training graphs\n", encoding="utf-8")
    found = _written_outside({r.id: _patterns(r) for r in RULE_TABLE}, tmp_path)
    assert found == [
        "bot/render/explain.py:2: backend_codegen: 'no work of its own: functionalized into {via}'",
        "bot/render/explain.py:3: a rule id mapped to words",
        "templates/t.md.j2: training_only: 'only in training graphs'",
    ]


def test_explain_words_every_rule_an_edge_backend_gets(tmp_path: Path) -> None:
    """The edge dialect's verifier refusal had no words in explain: `explain addbmm --backend
    executorch=…` stopped on a KeyError. Every rule now reads from its row."""
    from opdrift.coverage.oplist import BackendList

    snapshot = release_snapshot("2.15.0")
    # a backend of the executorch kind that lists nothing: addbmm is neither core nor view_copy
    backend = BackendList("executorch", "functions.yaml", ())
    text = render_text(explain_view(snapshot, "addbmm", [backend]))
    assert (
        f"addbmm: {RULE_BY_ID[VERIFIER_REJECTS].words()} ({VERIFIER_REJECTS}): neither served nor needed"
        in text
    )
    # its out= variant is refused with it: a kernel listed for it would be extra
    assert f"addbmm.out: {words(VERIFIER_REJECTS)} ({VERIFIER_REJECTS})" in text
