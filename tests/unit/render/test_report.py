"""Rendering: golden files for every format, size limits, fairness, and hostile operator names.

Refresh the golden files with ``pytest tests/unit/render/test_report.py --update-golden`` (or OPDRIFT_UPDATE_GOLDEN=1),
then read the diff: the rendered Markdown is the product.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from clirun import Opdrift
from driftcases import (
    HOSTILE_NAMES,
    hostile_pair,
    many_added,
    real_snapshot,
    realistic_pair,
    rec,
    snap,
)
from goldens import check_golden, updating

from opdrift.drift.allowlist import acknowledge, parse_allowlist
from opdrift.drift.changes import Drift, compute_drift
from opdrift.drift.policy import FailOn, failing
from opdrift.drift.warnings import SourceWarning
from opdrift.errors import ConfigError
from opdrift.render.context import ReportContext
from opdrift.render.drift_json import to_json
from opdrift.render.fit import GITHUB_BODY_LIMIT, MAX_KERNEL_OPS
from opdrift.render.jinja import templates_root
from opdrift.render.markers import MARKERS, PR_COMMENT_MARKER, WEEKLY_ISSUE_MARKER, Format
from opdrift.render.report import render
from opdrift.text import ZWJ, code, md

GOLDEN = Path(__file__).parents[2] / "golden"
EXT: dict[Format, str] = {
    "pr-comment": "md",
    "weekly-issue": "md",
    "job-summary": "md",
    "markdown": "md",
    "text": "txt",
    "json": "json",
}
FORMATS: tuple[Format, ...] = tuple(EXT)


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return updating(request)


def golden_context(drift: Drift) -> ReportContext:
    return ReportContext(title="golden", mentions=("torch-mlir-bot", "pytorch/xla-team")).linked(drift)


# --- golden files ----------------------------------------------------------------------------------

CASES = {
    "synthetic": lambda: compute_drift(*realistic_pair()),
    "empty": lambda: compute_drift(realistic_pair()[0], realistic_pair()[0]),
    "hostile": lambda: compute_drift(*hostile_pair()),
}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case: str, fmt: Format, update_golden: bool) -> None:
    drift = CASES[case]()
    check_golden(f"{case}.{fmt}.{EXT[fmt]}", render(drift, fmt, context=golden_context(drift)), update_golden)


HOSTILE_WARNINGS = (
    SourceWarning(541, "unknown key '@octocat [x](https://e.com) <b>bold</b> #1' kept"),
    SourceWarning(5084, "tag 'not_a_tag' is not defined in tags.yaml", more=2),
    SourceWarning(None, "`\u202e` ``` | table | ```"),
)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("case", ["empty", "synthetic"])
def test_golden_with_parse_warnings(case: str, fmt: Format, update_golden: bool) -> None:
    """HEAD's parse warnings: listed with or without drift, escaped, linked to their line at the head."""
    drift = CASES[case]()
    blob = (
        "https://github.com/pytorch/pytorch/blob/" + "a" * 40 + "/aten/src/ATen/native/native_functions.yaml"
    )
    context = replace(golden_context(drift), warnings=HOSTILE_WARNINGS, head_blob_url=blob)
    body = render(drift, fmt, context=context)
    check_golden(f"{case}-warnings.{fmt}.{EXT[fmt]}", body, update_golden)
    if fmt in ("pr-comment", "weekly-issue", "job-summary", "markdown"):
        assert "@octocat" not in body and "<b>bold" not in body and "](https://e.com)" not in body
        assert "\u202e" not in body
        assert f"[line 541]({blob}#L541)" in body


def test_warnings_are_capped_in_github_bodies_and_complete_elsewhere() -> None:
    drift = CASES["empty"]()
    many = tuple(SourceWarning(i, f"unknown key 'k{i}' kept") for i in range(1, 26))
    context = replace(golden_context(drift), warnings=many)
    roomy = render(drift, "pr-comment", context=context)
    assert "unknown key 'k25'" in roomy  # all of them, while the body fits
    tight = replace(context, limit=len(roomy) - 1)
    capped = render(drift, "pr-comment", context=tight)
    assert "unknown key 'k10'" in capped and "k11'" not in capped and "… and 15 more" in capped
    full = render(drift, "markdown", context=context)
    assert "unknown key 'k25'" in full and "… and" not in full
    assert len(json.loads(render(drift, "json", context=context))["warnings"]) == 25


REAL_PAIRS = [("2.12.0", "2.13.0"), ("2.13.0", "2.14.1"), ("2.14.1", "2.15.0")]


@pytest.mark.parametrize(("base", "head"), REAL_PAIRS)
@pytest.mark.slow
def test_golden_real(
    base: str, head: str, tmp_path_factory: pytest.TempPathFactory, update_golden: bool
) -> None:
    root = str(tmp_path_factory.getbasetemp() / "releases")
    drift = compute_drift(real_snapshot(base, root), real_snapshot(head, root))
    assert not drift.is_empty
    # The snapshots were read from a temporary directory: keep only the stable end of the path.
    drift = replace(
        drift,
        base=replace(drift.base, path=f"{base}/native_functions.yaml"),
        head=replace(drift.head, path=f"{head}/native_functions.yaml"),
    )
    for fmt in FORMATS:
        body = render(drift, fmt, context=golden_context(drift))
        if fmt == "json":
            # The full JSON of a release pair runs to a megabyte; the golden keeps what identifies each change.
            data = json.loads(body)
            for key in ("added", "removed", "renamed", "changed"):
                data[key] = [
                    [c["name"], c["category"], c["fingerprint"], *(d["code"] for d in c.get("changes", ()))]
                    for c in data[key]
                ]
            body = json.dumps(data, indent=1) + "\n"
        check_golden(f"real-{base}-{head}.{fmt}.{EXT[fmt]}", body, update_golden)


# --- structure -------------------------------------------------------------------------------------


def test_text_shows_only_the_buckets_that_moved(tmp_path_factory: pytest.TempPathFactory) -> None:
    """2.13.0 → 2.14.1 changes 321 operators and no bucket's count: the text says so in one line
    instead of 23 unchanged rows; 2.14.1 → 2.15.0 moves one bucket, which is the one row shown."""
    root = str(tmp_path_factory.getbasetemp() / "releases")

    def bucket_rows(base: str, head: str) -> list[str]:
        drift = compute_drift(real_snapshot(base, root), real_snapshot(head, root))
        text = render(drift, "text", context=golden_context(drift))
        return text.split("BASE OPERATORS BY BUCKET\n")[1].split("\n\n")[0].splitlines()

    assert bucket_rows("2.13.0", "2.14.1") == ["  no bucket changed"]
    assert [r.split() for r in bucket_rows("2.14.1", "2.15.0")] == [
        ["private", "446", "->", "451", "+5"],
        ["(22", "other", "buckets", "unchanged)"],
    ]


def test_in_tree_kernel_changes_are_a_table_and_a_short_list(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """2.13.0 → 2.14.1: most "changed" ops only gained XPU/MPS kernels; every format but JSON tallies
    them per dispatch key and lists a few, and the headline says how many of the changes they are."""
    root = str(tmp_path_factory.getbasetemp() / "releases")
    drift = compute_drift(real_snapshot("2.13.0", root), real_snapshot("2.14.1", root))
    only = [c for c in drift.changes if c.kernels_only]
    n = len(only)
    assert n > MAX_KERNEL_OPS
    more = f"… and {n - MAX_KERNEL_OPS} more: the JSON report lists them all"
    gained: dict[str, int] = {}
    for c in only:
        for d in c.details:
            if d.code == "kernel_added":
                gained[d.subject] = gained.get(d.subject, 0) + 1

    text = render(drift, "text", context=ReportContext())
    # the headline's counts (its wording: golden/real-2.13.0-2.14.1.*, the same drift)
    assert f"{len(drift.changed)} changed ({n} of them " in text
    section = text.split("\nIN-TREE KERNELS ONLY")[1]
    assert len(re.findall(r"^    \S+: \+", section, re.M)) == MAX_KERNEL_OPS
    assert f"\n    {more}\n" in section
    for key, count in gained.items():
        assert re.search(rf"^  {re.escape(key)} +\+{count} -", section, re.M), key
    assert len(text.splitlines()) < 300

    formats: tuple[Format, ...] = ("markdown", "pr-comment", "weekly-issue", "job-summary")
    for fmt in formats:
        body = render(drift, fmt, context=ReportContext())
        assert f"**{len(drift.changed)}** changed ({n} of them " in body
        section = body.split("<b>In-tree kernels only</b>")[1].split("</details>")[0]
        assert len(re.findall(r"^- `", section, re.M)) == MAX_KERNEL_OPS
        assert f"\n- {more}\n" in section
        for key, count in gained.items():
            assert f"| {code(key, in_table=True)} | {count} |" in section
        # Capping the list is not a cut for size: a body that fits says nothing about the limit.
        assert "Long sections are cut" not in body
    # A body squeezed below the kernel cap still says where the rest is; the lead sections, which
    # are why the comment exists, are cut last.
    small = render(drift, "pr-comment", context=ReportContext(limit=7_000))
    assert len(small) <= 7_000
    kernels = small.split("<b>In-tree kernels only</b>")[1].split("</details>")[0]
    shown = len(re.findall(r"^- `", kernels, re.M))
    assert 0 < shown < MAX_KERNEL_OPS
    lead = small.split("### Operators by bucket")[0]
    assert "… and" not in lead
    assert f"\n- … and {n - shown} more: the JSON report lists them all\n" in kernels
    assert "Long sections are cut" in small

    data = json.loads(render(drift, "json", context=ReportContext()))
    assert {c["name"] for c in data["changed"]} >= {c.name for c in only}  # JSON keeps every one


def test_bucket_summaries_separate_their_parts() -> None:
    """``+2 added · 8 changed``: each kind of change is its own part of the bucket's summary line."""
    drift = compute_drift(*hostile_pair())
    body = render(drift, "markdown", context=ReportContext())
    summaries = re.findall(r"<details><summary><b>[^<]*</b> \([^)]*\): (.*)</summary>", body)
    assert summaries
    for summary in summaries:
        parts = summary.split(" · ")
        assert all(re.fullmatch(r"[+\u2212]?\d+ [a-z -]+", p) for p in parts), summary
        assert len(parts) == len(re.findall(r"\d+", summary))


def test_markers_lead_the_github_bodies() -> None:
    drift = compute_drift(*realistic_pair())
    for fmt, marker in MARKERS.items():
        assert render(drift, fmt, context=ReportContext()).startswith(marker + "\n")
    assert PR_COMMENT_MARKER == "<!-- opdrift:pr-comment -->"
    custom = ReportContext(marker="<!-- opdrift:weekly window=2026-W48 -->")
    assert render(drift, "weekly-issue", context=custom).startswith(
        "<!-- opdrift:weekly window=2026-W48 -->\n"
    )
    assert WEEKLY_ISSUE_MARKER not in render(drift, "weekly-issue", context=custom)


def test_empty_drift_is_a_short_note() -> None:
    base, _ = realistic_pair()
    body = render(compute_drift(base, base), "pr-comment", context=ReportContext())
    assert "No operator changes" in body
    assert len(body) < 500
    assert "<details>" not in body


def test_lead_sections_come_first_in_order() -> None:
    body = render(compute_drift(*realistic_pair()), "pr-comment", context=ReportContext())
    positions = [body.index(h) for h in ("### ⚠️ Needs a kernel", "### ❌ BC-breaking", "### ⭐ New core ops")]
    positions.append(body.index("### ♻️ Now decompose"))
    positions.append(body.index("### Operators by bucket"))
    assert positions == sorted(positions)


def test_needs_a_kernel_says_why_for_each_way_in(request: pytest.FixtureRequest) -> None:
    base = snap(
        [
            rec("sigmoid(Tensor self) -> Tensor", delegate="sigmoid.out"),
            rec(
                "sigmoid.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", dispatch=["CPU"], structured=True
            ),
            rec("hardswish(Tensor self) -> Tensor"),
            rec("mps_pool_backward(Tensor grad, Tensor self) -> Tensor", dispatch=["MPS"]),
            # 1.12→1.13 linalg_qr.out: its CompositeExplicitAutograd kernel became CPU/CUDA ones
            rec(
                "qr.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
                composite="CompositeExplicitAutograd",
            ),
        ]
    )
    head = snap(
        [
            rec("sigmoid(Tensor self) -> Tensor", dispatch=["CPU", "CUDA"]),
            rec(
                "sigmoid.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", dispatch=["CPU"], structured=True
            ),
            rec("hardswish(Tensor self) -> Tensor", dispatch=["CPU"]),
            rec("pool_backward(Tensor grad, Tensor self) -> Tensor", dispatch=["CPU", "MPS"]),
            rec("qr.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", dispatch=["CPU", "CUDA"]),
        ]
    )
    text = render(compute_drift(base, head), "text", context=ReportContext())
    lead = text[text.index("Needs a kernel") : text.index("BC-breaking")]
    # each way in, by what it names (the wording: golden/needs-kernel-ways.text.txt)
    rows = {line.split()[0]: line for line in lead.splitlines() if line.startswith("      ")}
    assert set(rows) == {"sigmoid", "hardswish", "qr.out", "pool_backward"}
    assert "`sigmoid.out`" in rows["sigmoid"] and "`CPU` `CUDA`" in rows["sigmoid"]
    assert "`CompositeExplicitAutograd`" in rows["qr.out"] and "`CPU` `CUDA`" in rows["qr.out"]
    assert "`mps_pool_backward`" in rows["pool_backward"] and "`CPU` `MPS`" in rows["pool_backward"]
    assert "`CPU`" in rows["hardswish"]
    assert len(set(rows.values())) == 4  # four reasons, not one
    check_golden("needs-kernel-ways.text.txt", lead[: lead.rindex("\n") + 1], updating(request))
    # a renamed op is news for every backend, not a change in one backend's kernels only
    changes = text[text.index("CHANGES BY BUCKET") :]
    assert "pool_backward" in changes.split("IN-TREE KERNELS ONLY")[0]


def test_ops_link_to_their_line_at_the_commit() -> None:
    drift = compute_drift(*realistic_pair())
    body = render(drift, "pr-comment", context=ReportContext().linked(drift))
    head = (
        "https://github.com/pytorch/pytorch/blob/" + "b" * 40 + "/aten/src/ATen/native/native_functions.yaml"
    )
    base = head.replace("b" * 40, "a" * 40)
    assert f"[`linalg_polar.out`]({head}#L14727)" in body
    # A removed op only exists at the base commit.
    assert f"[`cholesky`]({base}#L9324)" in body
    # No commit, no links.
    assert "](http" not in render(drift, "pr-comment", context=ReportContext())


def test_mentions_are_validated_and_the_only_at_signs() -> None:
    drift = compute_drift(*hostile_pair())
    body = render(drift, "pr-comment", context=ReportContext(mentions=("octocat", "@pytorch/xla")))
    assert "cc @octocat @pytorch/xla" in body
    outside = strip_code_spans(body)
    assert re.findall(r"@(?!\u200d)\w", outside) == ["@o", "@p"]
    with pytest.raises(ConfigError):
        render(drift, "pr-comment", context=ReportContext(mentions=("x](http://evil)",)))


# --- limits ----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_ten_thousand_new_ops_fit_and_every_bucket_shows() -> None:
    drift = compute_drift(*many_added(10_000, {"fft": 3, "linalg": 40, "sparse": 700}))
    ctx = ReportContext()
    fmts: tuple[Format, ...] = ("pr-comment", "weekly-issue")
    for fmt in fmts:
        body = render(drift, fmt, context=ctx)
        assert len(body) <= GITHUB_BODY_LIMIT
        for bucket in ("fft", "linalg", "sparse", "misc"):
            assert f"<b>{bucket}</b>" in body
        # Small buckets show in full; the big ones are cut with a count of what is left out.
        assert all(f"`fft_op_{i}`" in body for i in range(3))
        assert "… and" in body and "more in `misc`" in body
        assert "Long sections are cut" in body
    data = to_json(drift)
    assert len(data["added"]) == 10_743  # type: ignore[arg-type]
    full = render(drift, "markdown", context=ctx)
    assert "`big_op_09999`" in full and "… and" not in full


@pytest.mark.slow
def test_real_drift_of_thousands_fits_and_every_bucket_shows(tmp_path: Path) -> None:
    """1.12.0 → 2.15.0: thousands of real changes across every bucket."""
    drift = compute_drift(real_snapshot("1.12.0", str(tmp_path)), real_snapshot("2.15.0", str(tmp_path)))
    assert len(drift.changes) > 2_000
    touched = {c.category for c in drift.changes}
    for fmt in ("pr-comment", "weekly-issue"):
        body = render(drift, fmt, context=ReportContext())
        assert len(body) <= GITHUB_BODY_LIMIT
        for bucket in touched:
            assert f"<b>{bucket}</b>" in body, (fmt, bucket)
    data = to_json(drift)
    listed = 0
    for key in ("added", "removed", "renamed", "changed"):
        items = data[key]
        assert isinstance(items, list)
        listed += len(items)
    assert listed == len(drift.changes)


@pytest.mark.slow
def test_fair_share_grows_to_fill_the_body() -> None:
    """The cap is the largest that fits: one more item per section would overflow. Here the ⚠️ list
    alone is over the limit, so it is what is cut (the bucket lists show nothing), and no further
    than needed."""
    drift = compute_drift(*many_added(3_000, {"linalg": 2_000}))
    body = render(drift, "pr-comment", context=ReportContext())
    assert len(body) > GITHUB_BODY_LIMIT * 0.8
    lead = body.split("### Operators by bucket")[0]
    assert len(re.findall(r"^- `\w+_op_\d+`", lead, re.M)) > 100
    assert not re.search(r"`big_op_\d+`: new", body)  # no bucket item before the lead is whole


@pytest.mark.slow
def test_the_lead_is_whole_before_a_bucket_list_shows_an_item() -> None:
    """Ops that need no kernel (a decomposition) fill the buckets; the few that need one are all in
    the ⚠️ list, whatever the cap, and the buckets share the rest fairly."""
    base, head = many_added(0)
    extra = [
        rec(
            f"big_op_{i:05d}(Tensor self, int dim, bool keepdim=False) -> Tensor",
            bucket="misc",
            line=20000 + i,
        )
        for i in range(3_000)
    ]
    extra += [rec(f"linalg_op_{i}(Tensor self) -> Tensor", bucket="linalg", line=i + 1) for i in range(2_000)]
    extra += [rec(f"needs_{i}(Tensor self) -> Tensor", dispatch=["CPU"], line=40000 + i) for i in range(40)]
    head = snap([*head.operators.values(), *extra], version="2.14.1")
    drift = compute_drift(base, head)
    body = render(drift, "pr-comment", context=ReportContext())
    assert len(body) <= GITHUB_BODY_LIMIT
    lead = body.split("### Operators by bucket")[0]
    assert len(re.findall(r"^- `needs_\d+`", lead, re.M)) == 40
    shown_big = len(re.findall(r"`big_op_\d+`: new", body))
    shown_linalg = len(re.findall(r"`linalg_op_\d+`: new", body))
    assert shown_big == shown_linalg > 10


def test_limit_override_and_fallback() -> None:
    drift = compute_drift(*many_added(50))
    body = render(drift, "pr-comment", context=ReportContext(limit=3_000))
    assert len(body) <= 3_000
    tiny = render(drift, "pr-comment", context=ReportContext(limit=400))
    assert len(tiny) <= 400 and tiny.startswith(PR_COMMENT_MARKER)


# --- safety ----------------------------------------------------------------------------------------

_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")


def strip_code_spans(text: str) -> str:
    """The text GitHub would still interpret: code spans removed (CommonMark's backtick-run rule)."""
    return _SPAN.sub("", text)


def test_code_span_holds_any_backticks() -> None:
    for s in ("a`b", "``", "`x", "x`", "a```b``c", " lead"):
        span = code(s)
        m = _SPAN.fullmatch(span)
        assert m is not None, span
        inner = m.group(2)
        if inner.startswith(" ") and inner.endswith(" ") and inner.strip(" "):
            inner = inner[1:-1]
        assert inner == s


def test_md_escapes_structure_links_html_and_mentions() -> None:
    out = md("# head [x](http://e) <b> @all *em* #12 www.e.com")
    assert out.startswith("\\#")
    assert "<b>" not in out and "&lt;b&gt;" in out
    assert "\\[x\\]\\(http:" in out and "://" not in out
    assert f"@{ZWJ}all" in out and f"#{ZWJ}12" in out
    assert "\\*em\\*" in out and "www." not in out


@pytest.mark.parametrize("fmt", ["pr-comment", "weekly-issue", "job-summary", "markdown"])
def test_hostile_names_render_inert(fmt: Format) -> None:
    drift = compute_drift(*hostile_pair())
    body = render(drift, fmt, context=ReportContext().linked(drift))
    outside = strip_code_spans(body)
    for bad in (
        "<script",
        "<img",
        "<b>bold",
        "<b>2.14",
        "<b>t<",
        "](http://evil",
        "@everyone",
        "@here",
        "@team",
        "\x1b",
    ):
        assert bad not in outside, bad
    for line in body.splitlines():
        # Every line is one the templates made: none starts with injected structure.
        assert not line.startswith(("# Injected", "## pwned", "<img")), line
    # The only raw HTML is the template's own.
    assert set(re.findall(r"</?([a-z]+)", outside)) <= {"details", "summary", "b", "sub"}
    # Every hostile name is still shown, verbatim up to the inline length cap.
    for name in HOSTILE_NAMES[:4]:
        assert name in body.replace("` ", "`").replace(" `", "`") or name in body
    assert "L" * 290 in body and "L" * 301 not in body


def test_hostile_text_and_json() -> None:
    drift = compute_drift(*hostile_pair())
    text = render(drift, "text", context=ReportContext())
    assert "\x1b" not in text
    assert "# Injected heading" in text  # shown, but on the op's own line
    assert not any(line.startswith("# Injected") for line in text.splitlines())
    data = json.loads(render(drift, "json", context=ReportContext()))
    assert {c["name"] for c in data["added"]} >= set(HOSTILE_NAMES)


# --- JSON and acknowledgements ---------------------------------------------------------------------


def test_json_documented_fields() -> None:
    drift = compute_drift(*realistic_pair())
    data = json.loads(render(drift, "json", context=ReportContext()))
    assert set(data) >= {"base", "head", "summary", "added", "removed", "changed", "renamed", "buckets"}
    s = data["summary"]
    assert (s["added"], s["removed"], s["renamed"], s["changed"]) == (
        len(drift.added),
        len(drift.removed),
        len(drift.renamed),
        len(drift.changed),
    )
    assert s["breaking"] == sum(c.breaking for c in drift.changes)
    assert s["needs_kernel"] == sum(c.needs_kernel for c in drift.changes)
    changed = {c["name"]: c for c in data["changed"]}
    assert {"name", "category", "fingerprint", "changes"} <= set(changed["_cdist_backward"])
    assert changed["_cdist_backward"]["changes"][0]["code"] == "argument_renamed"
    assert data["base"]["torch_version"] == "2.13.0"


def test_acknowledged_changes_collapse_and_do_not_fail() -> None:
    import datetime as dt

    drift = compute_drift(*realistic_pair())
    fp = next(c.fingerprint for c in drift.changes if c.name == "_cdist_backward")
    allow = parse_allowlist(
        f'- name: "aten::cholesky*"\n  reason: gone for good\n  expires: 2030-01-01\n'
        f"- fingerprint: {fp}\n  reason: renamed on purpose\n  expires: 2030-01-01\n",
        "allow.yaml",
    )
    acks = acknowledge(drift, allow, today=dt.date(2026, 1, 1))
    assert {c.name for c in failing(drift, "breaking")} == {
        "_cdist_backward",
        "cholesky",
        "cholesky.out",
        "std.names_dim",
        "tile.sym",
    }
    assert {c.name for c in failing(drift, "breaking", acks)} == {"std.names_dim", "tile.sym"}
    body = render(drift, "pr-comment", context=ReportContext(acknowledgements=acks))
    lead = body.split("### Operators by bucket")[0]
    assert "`cholesky`" not in lead and "`_cdist_backward`" not in lead
    assert "Acknowledged in the allow-list (3)" in body and "renamed on purpose" in body
    assert "`allow.yaml:4`" in body
    assert (
        json.loads(render(drift, "json", context=ReportContext(acknowledgements=acks)))["summary"][
            "acknowledged"
        ]
        == 3
    )


def test_fail_on_levels_nest() -> None:
    drift = compute_drift(*realistic_pair())
    levels: tuple[FailOn, ...] = ("never", "breaking", "kernel", "any")
    never, breaking, kernel, anything = (set(failing(drift, lv)) for lv in levels)
    assert never == set() and never < breaking < kernel < anything
    assert anything == set(drift.changes)
    assert failing(compute_drift(snap([]), snap([])), "any") == ()


def test_templates_are_found_in_the_checkout() -> None:
    root = templates_root()
    for name in (
        "pr_comment.md.j2",
        "weekly_issue.md.j2",
        "job_summary.md.j2",
        "report.md.j2",
        "report.txt.j2",
    ):
        assert root.joinpath(name).is_file()


# --- the command ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_diff_command_exit_codes_and_output(
    tmp_path: Path, opdrift: Opdrift, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datafiles import write_release

    old = str(write_release("2.13.0", tmp_path / "2.13.0"))
    new = str(write_release("2.14.1", tmp_path / "2.14.1"))
    monkeypatch.chdir(tmp_path)

    run = opdrift("diff", new, new)
    assert run.code == 0
    assert "No operator changes" in run.out

    out = tmp_path / "drift.json"
    run = opdrift("diff", old, new, "--format", "json", "-o", str(out))
    assert run.code == 1  # default --fail-on breaking
    assert "reach --fail-on breaking" in run.err
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["summary"]["breaking"] > 0 and data["head"]["path"].endswith("native_functions.yaml")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".drift.json")] == []  # no temp file left

    run = opdrift("diff", old, new, "--fail-on", "never", "--format", "markdown")
    assert run.code == 0
    assert run.out.startswith("<!-- opdrift:report -->\n")

    # Acknowledge every breaking change: breaking passes, kernel still fails.
    drift = json.loads(out.read_text(encoding="utf-8"))
    fps = [
        c["fingerprint"]
        for key in ("added", "removed", "renamed", "changed")
        for c in drift[key]
        if c["breaking"]
    ]
    allow = tmp_path / "allow.yaml"
    allow.write_text(
        "".join(f"- fingerprint: '{fp}'\n  reason: known\n  expires: 2999-12-31\n" for fp in fps)
        + "- name: nothing\n  reason: old\n  expires: 2000-01-01\n",
        encoding="utf-8",
    )
    run = opdrift("diff", old, new, "--allowlist", str(allow), "-o", str(tmp_path / "r.txt"))
    assert run.code == 0
    assert f"{allow}:{3 * len(fps) + 1}: warning: allow-list entry" in run.err
    assert (
        opdrift("diff", old, new, "--allowlist", str(allow), "--fail-on", "kernel", "-o", "r.txt").code == 1
    )

    bad = tmp_path / "bad.yaml"
    bad.write_text("- name: x\n  reason: r\n", encoding="utf-8")
    run = opdrift("diff", old, new, "--allowlist", str(bad))
    assert run.code == 2
    assert f"{bad}:1: every allow-list entry needs an expiry date" in run.err
    assert opdrift("diff", str(tmp_path / "missing.yaml"), new).code == 2


# --- backend gaps, attribution, chart (the weekly issue's extras) -----------------------------------


def test_backend_gaps_are_a_short_capped_section_with_validated_mentions() -> None:
    from opdrift.render.context import BackendGap
    from opdrift.render.fit import MAX_GAP_OPS

    drift = compute_drift(*realistic_pair())
    many = tuple(f"op_{i:03d}" for i in range(MAX_GAP_OPS + 5))
    gaps = (
        BackendGap(("@xla-team",), "xla", "xla_native_functions.yaml", ("hardswish",), name="xla"),
        BackendGap(("@org/opencl", "@bob"), "cpp", "src/ops", many, name="opencl"),
    )
    for fmt in ("pr-comment", "weekly-issue"):
        body = render(drift, fmt, context=ReportContext(backend_gaps=gaps).linked(drift))
        assert "### 🔌 Backends that lack new ops, or ops that now need a kernel" in body
        assert (
            "- @xla-team (`xla`): ⚠️ `xla` lacks **1** of the new ops, or "
            "ops that now need a kernel: `hardswish`\n" in body
        )
        line = next(x for x in body.splitlines() if x.startswith("- @org/opencl @bob (`opencl`):"))
        assert f"lacks **{len(many)}** of" in line
        assert line.endswith(f"`op_{MAX_GAP_OPS - 1:03d}`, … and 5 more")
    plain = render(drift, "weekly-issue", context=ReportContext().linked(drift))
    assert "Backends that lack" not in plain
    bad = (BackendGap(("@ev il",), "xla", "x.yaml", ("a",)),)
    with pytest.raises(ConfigError):
        render(drift, "pr-comment", context=ReportContext(backend_gaps=bad).linked(drift))


def test_a_backend_gap_names_the_kernels_it_implements_that_break_apart_from_what_it_lacks() -> None:
    from opdrift.render.context import BackendGap, BrokenKernel

    drift = compute_drift(*realistic_pair())
    broken = (BrokenKernel("rrelu_with_noise", ""),)
    gaps = (
        BackendGap(("@ascend",), "op-plugin", "op_plugin_functions.yaml", (), broken, name="npu"),
        BackendGap(("@xla-team",), "xla", "xla_native_functions.yaml", ("hardswish",), name="xla"),
    )
    body = render(drift, "pr-comment", context=ReportContext(backend_gaps=gaps).linked(drift))
    assert (
        "### 🔌 Backends that lack new ops, or ops that now need a kernel, or whose kernels they break"
        in body
    )
    lines = [x for x in body.splitlines() if x.startswith("- @")]
    assert lines[:2] == [
        "- @ascend (`npu`): 🔧 `npu` implements **1** op whose kernel"
        " no longer builds in the form you write it: `rrelu_with_noise`",
        "- @xla-team (`xla`): ⚠️ `xla` lacks **1** of the new ops, or ops that now need a kernel: `hardswish`",
    ]


def test_a_backend_gap_names_the_ops_it_implements_that_upstream_removed() -> None:
    from opdrift.render.context import BackendGap

    drift = compute_drift(*realistic_pair())
    gaps = (
        BackendGap(
            ("@xla-team",), "xla", "xla_native_functions.yaml", (), (), ("cholesky", "qr"), name="xla"
        ),
    )
    body = render(drift, "pr-comment", context=ReportContext(backend_gaps=gaps).linked(drift))
    assert (
        "### 🔌 Backends that lack new ops, or ops that now need a kernel, or whose kernels they break"
        in body
    )
    assert [x for x in body.splitlines() if x.startswith("- @")] == [
        "- @xla-team (`xla`): 🗑️ `xla` implements **2** ops upstream"
        " removed or renamed, which your codegen then refuses by name: `cholesky`, `qr`",
    ]


def test_the_chart_is_embedded_in_the_weekly_issue_only() -> None:
    from opdrift.history.timeline import Point, PointDrift, Timeline
    from opdrift.render.timeline import chart_of_last

    drift = compute_drift(*realistic_pair())
    points = tuple(
        Point(
            sha=str(i) * 40,
            date="",
            subject="s",
            operators=100 + i,
            base_operators=50,
            by_category=(),
            drift=PointDrift(base=str(i - 1) * 40, added=tuple(f"op{i}_{k}" for k in range(i))),
        )
        for i in range(1, 6)
    )
    chart = chart_of_last(Timeline(repo="r", to_rev="HEAD", to_sha="f" * 40, points=points), 3)
    issue = render(drift, "weekly-issue", context=ReportContext(chart=chart).linked(drift))
    assert "### 📈 Operators over the week's last commits" in issue
    assert "```mermaid" in issue and '"3333333"' in issue and '"2222222"' not in issue
    assert "  bar [3, 4, 5]" in issue and "last 3 commits" in issue
    comment = render(drift, "pr-comment", context=ReportContext(chart=chart).linked(drift))
    assert "mermaid" not in comment
