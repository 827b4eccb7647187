"""The detail codes are one table (`opdrift.schema.codes.Code`): each code carries its severity and its
wording, a detail of a code the table lacks cannot be made, and every code a real diff emits is worded."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from package_copy import PackageCopy
from releasesnap import release_snapshot

from opdrift.drift.changes import KERNEL_ONLY_CODES, compute_drift
from opdrift.render.details import describe
from opdrift.schema.codes import BY_ID, Code, Detail

ROOT = Path(__file__).resolve().parents[3]


def _quote(s: str) -> str:
    return f"`{s}`"


def test_every_code_has_its_wording_and_severity() -> None:
    for code in Code:
        for template in (code.row.wording, code.row.if_no_before, code.row.if_no_after):
            if template is None:
                continue
            said = template.format(subject="`s`", before="`b`", after="`a`")
            assert said.strip() and "{" not in said and code.id not in said, code
        assert code.severity in ("breaking", "compatible", "info")
        assert BY_ID[code.id] is code
    assert {"kernel_added", "kernel_removed"} == KERNEL_ONLY_CODES


def test_a_code_without_wording_cannot_be_made() -> None:
    # Before the table, `describe` worded an unknown code "bogus code `a` → `b`" without a word.
    with pytest.raises(ValueError, match="unknown detail code 'bogus_code'"):
        Detail("bogus_code", "info", "", "a", "b")
    assert describe(Code.ARGUMENT_RENAMED("x", "x", "y"), _quote) == "argument `x` renamed to `y`"
    assert (
        describe(Code.NOW_DECOMPOSES("", "", "CIA"), _quote)
        == "now decomposes: had kernels of its own, now `CIA`"
    )


def test_no_module_spells_a_code_outside_the_table() -> None:
    """Every detail is made by calling its code: no `Detail("...")` with a literal code in bot/."""
    for path in sorted((ROOT / "bot").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Detail":
                assert path.name == "codes.py", f"{path.relative_to(ROOT)}:{node.lineno}"


def test_a_detail_is_json_in_one_place() -> None:
    """`Detail.as_json` is the one conversion: it has exactly the drift schema's ``detail`` keys, in their
    order, and no module of bot/ builds a detail's JSON by hand (a dict literal with "code" and
    "severity" keys; there were three, in the drift report, coverage's alerts and the site's export)."""
    schema = json.loads((ROOT / "schemas" / "drift.schema.json").read_text(encoding="utf-8"))
    keys = schema["$defs"]["detail"]["required"]
    d = Code.ARGUMENT_RENAMED("x", "x", "y")
    assert list(d.as_json()) == keys
    assert d.as_json() == {
        "code": "argument_renamed",
        "severity": d.severity,
        "subject": "x",
        "before": "x",
        "after": "y",
    }
    for path in sorted((ROOT / "bot").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict):
                literal = {k.value for k in node.keys if isinstance(k, ast.Constant)}
                assert not {"code", "severity"} <= literal or path.name == "codes.py", (
                    f"{path.relative_to(ROOT)}:{node.lineno}"
                )


@pytest.mark.parametrize(("base", "head"), [("1.12.0", "2.15.0"), ("2.14.1", "2.15.0")])
def test_every_code_a_real_diff_emits_is_worded(base: str, head: str) -> None:
    drift = compute_drift(release_snapshot(base), release_snapshot(head))
    seen = {d.code for c in drift.changes for d in c.details}
    assert len(seen) >= 10 if base == "1.12.0" else seen
    for c in drift.changes:
        for d in c.details:
            assert d.code in BY_ID and d.severity in (BY_ID[d.code].severity, "info"), d
            said = describe(d, _quote)
            assert "{" not in said and d.code not in said, said


_NEW_CODE = """    OPDRIFT_PROBE = _Row("breaking", "probe {subject} went {before} → {after}", kernels_only=True, apart=True)
"""
_PROBE = """
import json
from opdrift.drift.changes import KERNEL_ONLY_CODES
from opdrift.render.details import describe
from opdrift.schema.codes import Code
from opdrift.site import pages
d = Code.OPDRIFT_PROBE("x", "a", "b")
print(json.dumps({"said": describe(d, lambda s: f"`{s}`"), "severity": d.severity,
                  "kernels_only": "opdrift_probe" in KERNEL_ONLY_CODES,
                  "apart": "opdrift_probe" in pages._SHOWN_APART}))
"""


def test_adding_a_code_touches_only_the_code_table(package_copy: PackageCopy) -> None:
    """A copy of the package with one more `Code` member: its detail is worded, has its severity, and
    the in-tree-kernels-only and listed-apart sets follow, with no other file changed."""
    anchor = "\n\nBY_ID: dict[str, Code]"
    codes_py = package_copy.edit("schema/codes.py", anchor, "\n" + _NEW_CODE.rstrip("\n") + anchor)
    assert json.loads(package_copy.python(_PROBE)) == {
        "said": "probe `x` went `a` → `b`",
        "severity": "breaking",
        "kernels_only": True,
        "apart": True,
    }
    assert re.search(r"^    OPDRIFT_PROBE = ", codes_py.read_text(encoding="utf-8"), re.M)
