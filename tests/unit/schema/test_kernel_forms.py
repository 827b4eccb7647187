"""The kernel verdict per form: a change to the SymInt form alone breaks only kernels written with SymInts.

Backed by the release wheels' c10 dispatch headers (cited at `PLAIN_KERNELS_FOR_SYMINT_SINCE`) and by a
run on a real torch kept as data (tests/data/observed/symint_kernels.py and .json).
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from clirun import Opdrift
from datafiles import DATA, write_release
from driftcases import rec, snap
from goldens import check_golden_entry, updating
from releasesnap import release_snapshot

from opdrift.drift.allowlist import Acknowledgements, acknowledge, parse_allowlist
from opdrift.drift.changes import Change, Drift, compute_drift
from opdrift.drift.policy import failing
from opdrift.render.context import ReportContext
from opdrift.render.markers import Format
from opdrift.render.report import render
from opdrift.schema.kernel import PLAIN_KERNELS_FOR_SYMINT_SINCE, judged_form
from opdrift.site.build import build_site
from opdrift.site.pages import op_page

OBSERVED = DATA / "observed" / "symint_kernels.json"
TRIL_TRIU = ["tril", "tril.out", "tril_", "triu", "triu.out", "triu_"]


def _drift(base: str, head: str) -> Drift:
    return compute_drift(release_snapshot(base), release_snapshot(head))


def _by_name(drift: Drift) -> dict[str, Change]:
    return {c.name: c for c in drift.changes}


# --- the rule and its evidence ---------------------------------------------------------------------


def test_the_observed_run_backs_the_rule() -> None:
    """On torch 2.13.0 an int64_t kernel for a SymInt schema registers and gets its values, boxed from
    Python and unboxed from C++ in the SymInt form at:: callers use; a SymInt kernel for an int schema
    is refused at registration. Every kernel returns self + sum(size) * n = 1 + 5 * 4."""
    observed = json.loads(OBSERVED.read_text(encoding="utf-8"))
    assert observed["torch"].startswith("2.13.0")
    assert judged_form("int64_t", observed["torch"]) == "int64_t"
    cases = {c["operator"]: c for c in observed["cases"]}
    plain = cases["symint_schema_plain_kernel"]
    assert plain["schema"] == "(Tensor self, SymInt[] size, SymInt n) -> Tensor"
    assert (plain["kernel_form"], plain["registered"]) == ("int64_t", True)
    assert plain["boxed_call"] == plain["unboxed_call_SymInt"] == plain["unboxed_call_int64_t"] == 21
    assert cases["symint_schema_symint_kernel"]["registered"]
    refused = cases["int_schema_symint_kernel"]
    assert (refused["kernel_form"], refused["registered"]) == ("SymInt", False)
    assert "doesn't match the expected function schema" in refused["registration_error"]


@pytest.mark.parametrize(
    ("version", "accepted"),
    [
        ("1.12.0", False),
        ("1.12.1", False),
        ("1.13.0", True),
        ("1.13.0a0+gitdeadbee", True),
        ("2.0.0", True),
        ("2.15.0", True),
        (None, True),  # unknown: a recent checkout
        ("main", True),
    ],
)
def test_plain_kernels_for_symint_schemas_since_1_13(version: str | None, accepted: bool) -> None:
    """Note [SymInt kernels from 1.13]: a kernel is judged in its own form from 1.13, else in the SymInt
    form; one whose form is not known stays not known from 1.13."""
    assert PLAIN_KERNELS_FOR_SYMINT_SINCE == "1.13"
    assert judged_form("int64_t", version) == ("int64_t" if accepted else "SymInt")
    assert judged_form("SymInt", version) == "SymInt"
    assert judged_form(None, version) == (None if accepted else "SymInt")


# --- real release pairs ----------------------------------------------------------------------------


def test_2_10_widened_only_the_symint_form() -> None:
    """2.10.0 turned tril's and triu's `int diagonal` into `SymInt diagonal`: every kernel change of
    2.9.0 → 2.10.0 is to the SymInt form, so no kernel written with int64_t breaks."""
    changes = _by_name(_drift("2.9.0", "2.10.0"))
    verdicts = Counter(c.kernel for c in changes.values())
    assert verdicts["breaking"] == 0
    assert sorted(n for n, c in changes.items() if c.kernel == "symint") == TRIL_TRIU
    (form,) = changes["tril"].kernel_changes
    assert (form.form, form.differences()) == ("SymInt", (("parameter 2", "int64_t", "c10::SymInt"),))
    # a SymInt-only change asks nothing of a profile as a whole (only of SymInt kernels)
    assert changes["tril"].profiles == ()


@pytest.mark.slow
def test_int64_t_form_changes_stay_breaking() -> None:
    correction = _by_name(_drift("2.0.0", "2.1.0"))["std.correction"]
    assert correction.kernel == "breaking"
    later = _by_name(_drift("2.13.0", "2.14.1"))
    for name in ("_scaled_mm_v2", "_scaled_mm_v2.out"):
        assert later[name].kernel == "breaking", name
        assert {k.form for k in later[name].kernel_changes} == {"SymInt", "int64_t"}


def test_1_13_is_judged_by_its_own_rule_and_1_12_by_its_own() -> None:
    """1.13.0 widened 133 operators' ints to SymInts, and its dispatcher takes int64_t kernels for them:
    "symint". The same changes built against a 1.12 dispatcher, which had the SymInt signature only,
    break every kernel. (`cat` and `cat.out` are among the breaking ones: 1.13's codegen took a structured
    group's tensor lists as ITensorListRef, 1.12's did not.)"""
    by_113 = _drift("1.12.0", "1.13.0")
    assert Counter(c.kernel for c in by_113.changes if c.kernel_changes) == {"symint": 133, "breaking": 32}
    head = release_snapshot("1.13.0")
    as_112 = compute_drift(
        release_snapshot("1.12.0"), replace(head, meta=replace(head.meta, torch_version="1.12.0"))
    )
    assert Counter(c.kernel for c in as_112.changes if c.kernel_changes) == {"breaking": 163}
    widened = _by_name(by_113)["narrow_copy"]
    assert widened.kernel == "symint" and _by_name(as_112)["narrow_copy"].kernel == "breaking"


def test_a_synthetic_widening_by_each_release_rule() -> None:
    before = rec("f(Tensor self, int[] size, int n) -> Tensor")
    after = rec("f(Tensor self, SymInt[] size, SymInt n) -> Tensor")
    assert compute_drift(snap([before]), snap([after], version="1.13.0")).changed[0].kernel == "symint"
    assert compute_drift(snap([before]), snap([after], version="1.12.0")).changed[0].kernel == "breaking"
    # narrowing back is also the SymInt form alone: a SymInt kernel no longer registers (observed)
    assert compute_drift(snap([after]), snap([before])).changed[0].kernel == "symint"


# --- what the reports, the policy and the site say -------------------------------------------------


def test_fail_on_kernel_ignores_symint_only_changes() -> None:
    drift = _drift("2.9.0", "2.10.0")
    symint = {c.name for c in drift.changes if c.kernel == "symint"}
    assert symint and not symint & {c.name for c in failing(drift, "kernel")}
    assert symint <= {c.name for c in failing(drift, "any")}


def _render(drift: Drift, fmt: Format, acks: Acknowledgements | None = None) -> str:
    context = ReportContext() if acks is None else ReportContext(acknowledgements=acks)
    return render(drift, fmt, context=context)


def test_json_counts_breaking_and_symint_apart() -> None:
    data = json.loads(_render(_drift("2.9.0", "2.10.0"), "json"))
    assert (data["summary"]["kernel_breaking"], data["summary"]["kernel_symint"]) == (0, 6)
    assert sorted(c["name"] for c in data["changed"] if c["kernel"] == "symint") == TRIL_TRIU
    earlier = json.loads(_render(_drift("2.0.0", "2.1.0"), "json"))
    kernels = Counter(c["kernel"] for c in earlier["changed"])
    assert (earlier["summary"]["kernel_breaking"], earlier["summary"]["kernel_symint"]) == (
        kernels["breaking"],
        kernels["symint"],
    )
    assert kernels["breaking"] == 44 and kernels["symint"] == 90


FOLDED = "6 operators changed only their SymInt form"


@pytest.mark.parametrize("fmt", ["pr-comment", "weekly-issue", "job-summary", "markdown"])
def test_markdown_folds_symint_only_changes_into_one_line(fmt: Format) -> None:
    body = _render(_drift("2.9.0", "2.10.0"), fmt)
    (line,) = [ln for ln in body.splitlines() if FOLDED in ln]
    assert line.startswith("<details><summary>🔧 <b>")
    assert "kernels written with <code>int64_t</code> still build" in line
    assert "### 🔧" not in body  # no breaking change, so no section of its own
    assert "- `tril` (`view`): SymInt kernels: `diagonal` retyped `int64_t` → `c10::SymInt`" in body
    assert "(6 more changed only their SymInt form) | 0 |" in body


def test_text_folds_symint_only_changes_into_one_line(request: pytest.FixtureRequest) -> None:
    text = _render(_drift("2.9.0", "2.10.0"), "text")
    lines = text.splitlines()
    at = lines.index("  🔧 Kernel signature changed: 0")
    folded = lines[at + 1]
    assert folded.strip().startswith(f"{FOLDED}: ") and "int64_t" in folded and "c10::SymInt" in folded
    check_golden_entry(
        "report.lines.txt", "kernel signature: SymInt form only", folded + "\n", updating(request)
    )


def test_a_breaking_section_keeps_its_list_and_adds_the_folded_line() -> None:
    body = _render(_drift("2.0.0", "2.1.0"), "markdown")
    assert "### 🔧 Kernel signature changed (44)" in body
    section = body.split("### 🔧 Kernel signature changed (44)")[1].split("\n### ")[0]
    assert "<summary>🔧 <b>90 operators changed only their SymInt form</b>" in section
    assert "std.correction" in section


def test_acknowledged_symint_changes_are_not_counted() -> None:
    drift = _drift("2.9.0", "2.10.0")
    allow = parse_allowlist(
        '- name: "aten::tril*"\n  reason: "tracked"\n  expires: 2099-01-01\n', "allowlist.yaml"
    )
    acks = acknowledge(drift, allow, today=dt.date(2026, 1, 1))
    data = json.loads(_render(drift, "json", acks))
    assert data["summary"]["kernel_symint"] == 3
    assert "3 operators changed only their SymInt form" in _render(drift, "text", acks)


def test_the_site_names_the_symint_verdict() -> None:
    """tril's page built from 2.9.0 and 2.10.0 says its 2.10.0 change is to the SymInt form only."""
    site = build_site([release_snapshot("2.9.0"), release_snapshot("2.10.0")], [])
    (tril,) = [op for op in site.ops if op.name == "tril"]
    page = op_page(site, tril)
    assert '<span class="verdict symint">SymInt form only</span>' in page
    assert '<span class="verdict breaking">' not in page


def test_a_callers_break_says_int64_t_kernels_still_build() -> None:
    """2.2.0 swapped `_efficient_attention_backward`'s max_seqlen_q and max_seqlen_k and made them
    SymInts: callers by position break, the int64_t form is unchanged (both int64_t)."""
    drift = _drift("2.1.0", "2.2.0")
    change = _by_name(drift)["_efficient_attention_backward"]
    assert (change.breaking, change.kernel) == (True, "symint")
    lines = _render(drift, "text").splitlines()
    (line,) = [ln for ln in lines if ln.strip().startswith("_efficient_attention_backward [private] ")]
    assert "arguments reordered" in line
    assert line.endswith("; C++ kernels written with int64_t still build  (line 14515)")


@pytest.mark.slow
def test_codegen_names_the_release_a_bare_yaml_is_judged_by(opdrift: Opdrift, tmp_path: Path) -> None:
    """A bare yaml has no version and gets the newest rules; `diff --codegen 1.12` judges its
    kernels by 1.12's dispatcher, which had only the SymInt form."""
    base = write_release("1.12.0", tmp_path / "1.12.0")
    widened = base.read_text(encoding="utf-8").replace(
        "- func: narrow_copy(Tensor self, int dim, int start, int length) -> Tensor",
        "- func: narrow_copy(Tensor self, int dim, SymInt start, SymInt length) -> Tensor",
    )
    head = tmp_path / "head" / "native_functions.yaml"
    head.parent.mkdir()
    head.write_text(widened, encoding="utf-8")

    def kernel(*extra: str) -> str:
        run = opdrift("diff", str(base), str(head), "--format", "json", "--fail-on", "never", *extra)
        assert run.code == 0, run.err
        (change,) = json.loads(run.out)["changed"]
        assert change["name"] == "narrow_copy"
        return str(change["kernel"])

    assert kernel() == "symint"
    assert kernel("--codegen", "1.12") == "breaking"
    assert kernel("--codegen", "1.13") == "symint"


@pytest.mark.slow
def test_every_consecutive_release_pair_counted() -> None:
    """docs/drift.md's figure: of the kernel-signature changes between consecutive releases 1.12.0 →
    2.15.0, how many break every kernel and how many only the SymInt form."""
    releases = ["1.12.0", "1.13.0", *(f"2.{m}.0" for m in range(14)), "2.14.1", "2.15.0"]
    total: Counter[str] = Counter()
    for base, head in itertools.pairwise(releases):
        total += Counter(c.kernel for c in _drift(base, head).changes if c.kernel_changes)
    assert total == {"symint": 484, "breaking": 149}  # 147 schema changes, and 1.13's cat and cat.out
