"""No test asserts an English sentence (tests/README.md, "Wording in golden files"): what a user reads is
compared with a golden file, and a test asserts the facts that hold whatever the wording. An assert whose
string literal holds ten words or more pins a sentence; data that merely has many words (a C++
declaration, an operator schema, a URL, a commit hash) is not wording and may stay."""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
MIN_WORDS = 10
_WORD = re.compile(r"[A-Za-z']+")
_ENTITY = re.compile(r"&#?\w+;")
# Markdown table rows, headings, list items and HTML are lines of a rendering, not sentences of a test.
_LINE_OF_A_RENDERING = ("|", "#", "- ", "<")
# Data that has words without being wording, each a whole literal:
_DATA = (
    # a C++ declaration, or its start: `at::Tensor & acos_out(const at::Tensor & self, at::Tensor & out)`
    re.compile(r"^\s*(const\s+)?[\w:<>]+(\s*[&*])?\s+\w+\((?=.*(::|;))", re.S),
    # an operator schema, also HTML-escaped: `qr(Tensor self, bool some=True) -> (Tensor Q, Tensor R)`
    re.compile(r"^\s*[\w.]+\(.*\)\s*(->|-&gt;)\s*.+$", re.S),
    # a comment of C++ source: `// {"schema": "aten::clamp.out(Tensor self, Scalar? min=None`
    re.compile(r"^\s*//"),
    # a URL
    re.compile(r"^https?://\S+$"),
    # a commit hash
    re.compile(r"^[0-9a-f]{7,40}$"),
)
# The few literals that must stay in an assert, each with why: (module, the literal's start) → reason.
ALLOWED: dict[tuple[str, str], str] = {
    ("integration/test_openapi_conformity.py", "GET /repos/{owner}/{repo} 200 at owner:"): (
        "the test suite's own OpenAPI checker's finding (jsonschema's words), not opdrift's"
    ),
    ("integration/test_site_browser.py", "return [...document.querySelectorAll("): (
        "JavaScript the browser runs, not a sentence"
    ),
    ("unit/test_snapshot.py", '\n "warnings": [\n'): "the snapshot's JSON layout, byte for byte: data",
    ("unit/test_version.py", "opdrift (\\d+"): "a regex of the --version line's version format",
    ("unit/work/test_rules.py", "bot/render/explain.py:2: backend_codegen:"): (
        "a repo check's finding, quoting the made-up source the test wrote"
    ),
}


def _words(text: str) -> int:
    """The words of a literal; a path (`aten/src/ATen/native/native_functions.yaml`) is one, an HTML
    entity (`&quot;`) none."""
    text = _ENTITY.sub(" ", text)
    return sum(1 if "/" in token else len(_WORD.findall(token)) for token in text.split())


def _is_data(text: str) -> bool:
    return any(pattern.match(text) for pattern in _DATA)


def sentence_asserts(root: Path) -> list[tuple[str, int, str]]:
    """Each assert of root's test modules that pins a sentence: (path relative to root, line, literal)."""
    found = []
    for path in sorted(root.rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Assert):
                continue
            for sub in ast.walk(node.test):
                if not (isinstance(sub, ast.Constant) and isinstance(sub.value, str)):
                    continue
                text = sub.value
                if _words(text) < MIN_WORDS or text.startswith(_LINE_OF_A_RENDERING):
                    continue
                if _is_data(text):
                    continue
                found.append((str(path.relative_to(root)), node.lineno, text))
                break
    return found


def _not_allowed(found: list[tuple[str, int, str]]) -> list[str]:
    return [
        f"{path}:{line}: {text[:80]!r}"
        for path, line, text in found
        if not any(path == where and text.startswith(start) for where, start in ALLOWED)
    ]


def test_no_assert_pins_an_english_sentence() -> None:
    assert _not_allowed(sentence_asserts(TESTS)) == []


def test_every_allowed_sentence_is_still_asserted() -> None:
    found = sentence_asserts(TESTS)
    stale = [key for key in ALLOWED if not any(p == key[0] and t.startswith(key[1]) for p, _, t in found)]
    assert stale == []


def test_a_sentence_is_found_and_data_is_not(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text(
        "def test_a(out):\n"
        "    assert 'the kernel of this op no longer builds in the form you write it' in out\n"
        "    assert 'short fact' in out\n"
        "    assert 'at::Tensor & acos_out(const at::Tensor & self, at::Tensor & out)' in out\n"
        "    assert 'qr(Tensor self, bool some=True) -> (Tensor Q, Tensor R)' in out\n"
        "    assert 'https://github.com/pytorch/pytorch/blob/v2.15.0/aten/src/ATen/native/x.yaml' in out\n"
        "    assert 'cba9ff9f09d232e3442be618fa0e32aeb407c36a' in out\n"
        "    assert out, 'a message of the assert itself may say what it likes in many words'\n",
        encoding="utf-8",
    )
    found = sentence_asserts(tmp_path)
    assert [(path, line) for path, line, _ in found] == [("test_x.py", 2)]


# --- The keyed golden files (goldens.check_golden_entry): every entry is one a test asks for ---


def _asked_keys(root: Path) -> dict[str, list[re.Pattern[str]]]:
    """Golden file → the keys the tests under root ask of it, as patterns (an f-string's fields match
    anything)."""
    asked: dict[str, list[re.Pattern[str]]] = {}
    for path in sorted(root.rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {
            target.id: node.value.value
            for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            if node.func.id == "check_golden_entry" and len(node.args) >= 2:
                name_arg, key = node.args[0], node.args[1]
                name = (
                    name_arg.value
                    if isinstance(name_arg, ast.Constant)
                    else names.get(getattr(name_arg, "id", ""), "")
                )
            elif node.func.id == "check_error_line" and node.args:
                name, key = "errors.lines.txt", node.args[0]
            else:
                continue
            asked.setdefault(str(name), []).append(re.compile(_key_pattern(key)))
    return asked


def _key_pattern(key: ast.expr) -> str:
    if isinstance(key, ast.Constant):
        return re.escape(str(key.value))
    assert isinstance(key, ast.JoinedStr), ast.unparse(key)
    return "".join(
        re.escape(str(part.value)) if isinstance(part, ast.Constant) else ".+" for part in key.values
    )


def _unasked_entries(golden: Path, asked: dict[str, list[re.Pattern[str]]]) -> list[str]:
    unasked = []
    for path in sorted(golden.glob("*.lines.*")):
        keys = re.findall(r"^## (.+)$", path.read_text(encoding="utf-8"), re.M)
        patterns = asked.get(path.name, [])
        unasked += [f"{path.name}: {key}" for key in keys if not any(p.fullmatch(key) for p in patterns)]
    return unasked


def test_every_entry_of_a_keyed_golden_file_is_asked_for() -> None:
    """An entry no test asks for any more is stale wording: drop it from its file."""
    assert _unasked_entries(TESTS / "golden", _asked_keys(TESTS)) == []


def test_an_entry_no_test_asks_for_is_found(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text(
        "def test_a(y, u):\n"
        "    check_golden_entry('x.lines.txt', f'python side: {y}', 'said\\n', u)\n"
        "    check_error_line('config: a key', 'opdrift: error: x\\n', u)\n",
        encoding="utf-8",
    )
    (tmp_path / "golden").mkdir()
    (tmp_path / "golden" / "x.lines.txt").write_text("## python side: a.py\nsaid\n## gone\nold\n")
    (tmp_path / "golden" / "errors.lines.txt").write_text("## config: a key\nopdrift: error: x\n")
    assert _unasked_entries(tmp_path / "golden", _asked_keys(tmp_path)) == ["x.lines.txt: gone"]
