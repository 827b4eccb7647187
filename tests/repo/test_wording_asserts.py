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
    # a C++ declaration: `at::Tensor & acos_out(const at::Tensor & self, at::Tensor & out)`
    re.compile(r"^\s*[\w:<>,&* ]+?[\s&*]\w+\(.*\)\s*;?\s*$", re.S),
    # an operator schema, also HTML-escaped: `qr(Tensor self, bool some=True) -> (Tensor Q, Tensor R)`
    re.compile(r"^\s*[\w.]+\(.*\)\s*(->|-&gt;)\s*.+$", re.S),
    # a comment of C++ source: `// {"schema": "aten::clamp.out(Tensor self, Scalar? min=None`
    re.compile(r"^\s*//"),
    # a URL
    re.compile(r"^https?://\S+$"),
    # a commit hash
    re.compile(r"^[0-9a-f]{7,40}$"),
)
# The few sentences that must stay in an assert, each with why. A path:line: prefix of the literal.
ALLOWED: dict[tuple[str, str], str] = {}


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
    stale = [
        key for key in ALLOWED if not any(p == key[0] and t.startswith(key[1]) for p, _, t in found)
    ]
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
