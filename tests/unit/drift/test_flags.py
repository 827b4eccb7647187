"""The change flags are one table (`opdrift.drift.flags`): the view, the JSON report, subscriptions,
annotations, --fail-on and the docs derive from it, and a new flag is one row."""

from __future__ import annotations

import json
import re
from pathlib import Path

from datafiles import write_release
from package_copy import THIS_CHECKOUT, PackageCopy

from opdrift.drift.flags import FACETS, FAIL_ON, FLAG_TABLE, FLAGS, SECTIONS, SUMMARY_ORDER
from opdrift.drift.policy import FAIL_ON as POLICY_FAIL_ON

ROOT = Path(__file__).resolve().parents[3]


def test_the_table_is_consistent_and_the_docs_list_every_facet() -> None:
    assert len(FLAGS) == len(FLAG_TABLE)
    assert POLICY_FAIL_ON == FAIL_ON
    assert all(f.folded_into in {s.id for s in SECTIONS} for f in FLAG_TABLE if f.folded_into)
    # the published JSON summary's order (docs/drift.md, "The JSON report")
    assert [f.id for f in SUMMARY_ORDER] == [
        "breaking",
        "needs_kernel",
        "new_core",
        "now_decomposes",
        "kernel_breaking",
        "kernel_symint",
    ]
    assert "kernel_breaking" in FACETS  # a report section nobody could subscribe to before
    row = next(
        line
        for line in (ROOT / "docs" / "config.md").read_text().splitlines()
        if line.startswith("| `facets`")
    )
    assert re.findall(r"`(\w+)`", row.split("|")[2]) == list(FACETS)


# A flag no one needs, on a real diff: the new operators, failing even `--fail-on breaking`.
_NEW_FLAG = """    Flag(
        "brand_new",
        "🏷️",
        "Brand new",
        "operators that did not exist",
        lambda c: c.kind == "added",
        "breaking",
        badge=lambda c: "🏷️ brand new",
        text_badge="brand new",
    ),
"""

_PROBE = """
import json, sys
from opdrift import pipeline
from opdrift.drift.changes import compute_drift
from opdrift.drift.policy import failing
from opdrift.publish.actions import annotation_lines
from opdrift.app.subscriptions import matches
from opdrift.config.file import parse_config
from opdrift.render.context import ReportContext
from opdrift.render.report import render

drift = compute_drift(pipeline.load_snapshot(sys.argv[1]), pipeline.load_snapshot(sys.argv[2]))
config = parse_config("subscriptions:\\n  - who: ['@tags']\\n    facets: [brand_new]\\n", "c.yml")
tagged = [c.name for c in drift.changes if matches(config.subscriptions[0], c)]
ctx = ReportContext().linked(drift)
print(json.dumps({
    "subscribed": tagged,
    "kernel": [c.name for c in failing(drift, "kernel")],
    "breaking": [c.name for c in failing(drift, "breaking")],
    "annotations": annotation_lines(drift.changes, limit=10000),
    "markdown": render(drift, "markdown", context=ctx),
    "text": render(drift, "text", context=ctx),
    "json": json.loads(render(drift, "json", context=ctx)),
}))
"""


def test_adding_a_flag_touches_only_the_flag_table(tmp_path: Path, package_copy: PackageCopy) -> None:
    """A copy of the package with one more `Flag` row: a lead section, its badge, JSON keys, a
    subscribable facet, annotations and --fail-on follow, with no other file changed."""
    anchor = "    # Only the SymInt form changed:"
    package_copy.edit("drift/flags.py", anchor, _NEW_FLAG + anchor)
    base = write_release("2.14.1", tmp_path / "a")
    head = write_release("2.15.0", tmp_path / "b")
    out = json.loads(package_copy.python(_PROBE, str(base), str(head)))
    tagged = out["subscribed"]
    assert len(tagged) >= 5  # 2.15.0 adds seven operators
    assert set(tagged) <= set(out["breaking"])  # its --fail-on level (an addition breaks nothing else)
    assert re.search(
        rf"^\| 🏷️ \| \*\*Brand new\*\*: operators that did not exist \| {len(tagged)} \|$",
        out["markdown"],
        re.M,
    )
    assert f"### 🏷️ Brand new ({len(tagged)})" in out["markdown"]
    assert " · 🏷️ brand new" in out["markdown"] and " [brand new]" in out["text"]
    assert f"🏷️ Brand new: {len(tagged)}" in out["text"]
    report = out["json"]
    assert report["summary"]["brand_new"] == len(tagged)
    every = [c for kind in ("added", "removed", "renamed", "changed") for c in report[kind]]
    assert sorted(c["name"] for c in every if c["brand_new"]) == sorted(tagged)
    assert any(line.endswith("; brand new") for line in out["annotations"])


# --- dispatch keys (`opdrift.dispatchkeys`) -----------------------------------------------------------

_NEW_KEY = """    CompositeKey(
        "CompositeExplicitAutogradTest",
        "explicit test",
        -1,
        lambda key: key not in FUNCTIONAL_BACKEND_KEYS,
        True,
        True,
    ),
"""
_ENTRY = """
- func: opdrift_probe(Tensor self) -> Tensor
  dispatch:
    CompositeExplicitAutogradTest: opdrift_probe
"""
_KEY_PROBE = """
import json, sys
from opdrift import pipeline
from opdrift.operators.kernels import kernel_for, table_of
from opdrift.taxonomy.scope import scope_of
rec = pipeline.load_snapshot(sys.argv[1]).operators["opdrift_probe"]
table = table_of(rec.facets)
print(json.dumps({"composite": rec.facets.composite, "kernels": [list(k) for k in rec.facets.kernels],
                  "PrivateUse1": kernel_for(table, "PrivateUse1"), "XLA": kernel_for(table, "XLA"),
                  "generic": scope_of(rec).generic}))
"""


def _probe_key(package: PackageCopy, native: Path) -> dict[str, object]:
    result: dict[str, object] = json.loads(package.python(_KEY_PROBE, str(native)))
    return result


def test_adding_a_composite_dispatch_key_touches_only_the_key_table(
    tmp_path: Path, package_copy: PackageCopy
) -> None:
    """A copy of the package with one more `CompositeKey` row: an entry registered to that alias key
    gets it as its composite kind, no backend kernel, and a kernel that serves every backend."""
    native = write_release("2.15.0", tmp_path / "r")
    native.write_text(native.read_text(encoding="utf-8") + _ENTRY, encoding="utf-8")
    # Without the row, the key is an in-tree backend's: the test can fail.
    assert _probe_key(THIS_CHECKOUT, native) == {
        "composite": None,
        "kernels": [["CompositeExplicitAutogradTest", "own"]],
        "PrivateUse1": None,
        "XLA": None,
        "generic": False,
    }
    anchor = "COMPOSITE_TABLE: tuple[CompositeKey, ...] = (\n"
    package_copy.edit("dispatchkeys.py", anchor, anchor + _NEW_KEY)
    assert _probe_key(package_copy, native) == {
        "composite": "CompositeExplicitAutogradTest",
        "kernels": [["CompositeExplicitAutogradTest", "CompositeExplicitAutogradTest"]],
        "PrivateUse1": "CompositeExplicitAutogradTest",
        "XLA": None,  # its row serves no functionalized backend
        "generic": True,
    }
