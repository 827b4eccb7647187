"""Say it so a maintainer can act. Each backend by its config name, never by kind and
path; the weekly issue of a backend's repository leads with that backend; a broken kernel shown as its
old and new C++ declaration with the changed parameters named; a grown impact marks what is new; a
landed PR that breaks a build leads the comment and tops the dashboard until ticked off, bounded.

Built from real data: release 2.14.1's files (tests/data/releases), pytorch_dlprim's real `src/` tree
and torch_xla's real yaml (tests/data/backends/real, SOURCES.md), a PR adding `bool fast=False` to
`mean.dim`/`mean.out` (dlprim registers `mean.out`, XLA `mean.dim`) and one removing
`mse_loss_backward` (dlprim registers it: dead; XLA's codegen refuses it: a break).
"""

from __future__ import annotations

import dataclasses
import json
import lzma
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from datafiles import DATA, release_text, write_release
from goldens import check_golden, updating
from pytorch_history import entry_blocks, entry_name
from watch_upstream import Run, Upstream, with_fast

from opdrift import pipeline
from opdrift.app.prepare import backend_work
from opdrift.app.subscriptions import backend_gaps, mentions_for
from opdrift.app.watch_breaks import BROKE_DAYS, expired, ticked
from opdrift.app.watch_state import MAX_BROKE, WatchState, read_state, state_block
from opdrift.config.backend_names import default_name
from opdrift.config.file import BotConfig, parse_config
from opdrift.drift.changes import compute_drift
from opdrift.errors import ConfigError
from opdrift.render.context import BackendGap, ReportContext
from opdrift.render.report import render
from opdrift.render.watch import LANDED_MARK, LandedBreak
from opdrift.schema.grammar import parse_schema
from opdrift.schema.kernel import kernel_changes, kernel_signature, named_changes

REAL = DATA / "backends" / "real"


def _without(text: str, *names: str) -> str:
    return "".join(b for b in entry_blocks(text) if entry_name(b) not in names)


def _config(folder: Path, dlprim: Path, *, named: bool = True) -> BotConfig:
    folder.mkdir(exist_ok=True)
    xla = REAL / "pytorch-xla.xla_native_functions.yaml.xz"
    (folder / "xla_native_functions.yaml").write_bytes(lzma.decompress(xla.read_bytes()))
    name = "name: dlprim, " if named else ""
    text = (
        "subscriptions:\n"
        f'  - who: ["@dlprim-team"]\n    backend: {{{name}kind: cpp, path: "{dlprim}"}}\n'
        '  - who: ["@xla-team"]\n    backend: {kind: xla, path: xla_native_functions.yaml}\n'
    )
    (folder / "opdrift.yml").write_text(text)
    return parse_config(text, str(folder / "opdrift.yml"), base_dir=str(folder))


# --- names -----------------------------------------------------------------------------------------


def test_a_backend_subscription_has_a_name_given_or_derived() -> None:
    cfg = parse_config(
        "subscriptions:\n"
        '  - who: ["@a"]\n    backend: {name: dlprim, kind: cpp, path: ../src}\n'
        '  - who: ["@b"]\n    backend: {kind: cpp, path: ../src}\n'
        '  - who: ["@c"]\n    backend: {kind: xla, path: codegen/xla_native_functions.yaml}\n'
        '  - who: ["@d"]\n    backend: {kind: dispatch, key: MPS}\n',
        "/repo/pytorch_dlprim/.github/opdrift.yml",
        base_dir="/repo/pytorch_dlprim/.github",
    )
    assert [s.backend.label for s in cfg.subscriptions if s.backend] == [
        "dlprim",
        "pytorch_dlprim",
        "xla",
        "MPS",
    ]
    # a list of another repository is called by that repository; a text list by its file
    assert default_name("cpp", "gh:artyom-beilis/pytorch_dlprim@main:src") == "pytorch_dlprim"
    assert default_name("text", "backends/mybackend_ops.txt") == "mybackend_ops"
    with pytest.raises(ConfigError, match="name: one line of at most 50"):
        parse_config(
            'subscriptions:\n  - who: ["@a"]\n    backend: {name: "' + "x" * 51 + '", kind: xla, path: x}\n',
            "c.yml",
        )


# --- the kernel's declarations ---------------------------------------------------------------------


def test_a_kernel_change_is_told_by_parameter_name() -> None:
    """Release entries: 2.14.1's `mean.dim` with `bool fast` inserted after `keepdim`; and `std.correction`
    of 2.0.0 → 2.1.0 (`int? correction` → `Scalar? correction`)."""
    old = parse_schema(
        "mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"
    )
    new = parse_schema(
        "mean.dim(Tensor self, int[1]? dim, bool keepdim=False, bool fast=False, *, ScalarType? dtype=None) -> Tensor"
    )
    (change, _) = sorted(kernel_changes(old, new), key=lambda k: k.form != "int64_t")
    assert [(p.kind, p.after, p.anchor) for p in change.named()] == [("added", "bool fast", "keepdim")]
    assert change.before.declaration("mean.dim") == (
        "at::Tensor mean_dim(const at::Tensor & self, at::OptionalIntArrayRef dim, bool keepdim, "
        "::std::optional<at::ScalarType> dtype)"
    )
    # the positional reading it replaces: "parameter 4 … → bool" and "parameters added …"
    assert change.differences()[0] == ("parameter 4", "::std::optional<at::ScalarType>", "bool")
    # a rename alone breaks no kernel, and is not told; a retype is, by the name
    renamed = parse_schema(
        "mean.dim(Tensor input, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"
    )
    assert named_changes(kernel_signature(old, "int64_t"), kernel_signature(renamed, "int64_t")) == ()
    retyped = [
        (p.kind, p.name, p.before, p.after)
        for p in named_changes(
            kernel_signature(parse_schema("std.correction(Tensor self, int[1]? dim=None, *, int? correction=None, bool keepdim=False) -> Tensor"), "int64_t"),
            kernel_signature(parse_schema("std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor"), "int64_t"),
        )
    ]  # fmt: skip
    assert retyped == [
        ("retyped", "correction", "::std::optional<int64_t>", "const ::std::optional<at::Scalar> &")
    ]


# --- the weekly issue of a backend's repository ----------------------------------------------------


@pytest.mark.slow
def test_the_weekly_issue_of_dlprims_repository_leads_with_dlprim(
    tmp_path: Path, dlprim_src: Path, request: pytest.FixtureRequest
) -> None:
    base = write_release("2.14.1", tmp_path / "base")
    head = write_release("2.14.1", tmp_path / "head")
    head.write_text(_without(with_fast(release_text("2.14.1")), "mse_loss_backward"))
    b, h = pipeline.load_snapshot(str(base)), pipeline.load_snapshot(str(head))
    # HEAD as 2.14.1 (a bare yaml names no release): its model table answers for the gap's ops
    as_release = dataclasses.replace(h, meta=dataclasses.replace(h.meta, torch_version="2.14.1"))
    folder = tmp_path / "cfg"
    folder.mkdir()
    (folder / "src").symlink_to(dlprim_src)
    text = 'subscriptions:\n  - who: ["@dlprim-team"]\n    backend: {name: dlprim, kind: cpp, path: src}\n'
    cfg = parse_config(text, str(folder / "opdrift.yml"), base_dir=str(folder))
    drift = compute_drift(b, h)
    lacking, implemented = backend_work(cfg, as_release)
    ctx = ReportContext(
        title="2026-W49",
        mentions=mentions_for(cfg, drift.changes, lacking, implemented),
        backend_gaps=backend_gaps(cfg, drift.changes, lacking, implemented),
        backends=("dlprim",),
    )
    body = render(drift, "weekly-issue", context=ctx)
    # The wording is the golden file's; what follows holds whatever the wording.
    check_golden("present-dlprim.weekly-issue.md", body, updating(request))
    lead, rest = body.split("\n---\n", 1)
    # dlprim first, by its name, with its subscribers; the break said in dlprim's form (mean.dim's users
    # break with mean.out, whose kernel mean.dim's structured kernel runs), the removed registration;
    # then the generic drift
    assert "### 🔌" in lead and "`dlprim`" in lead and "@dlprim-team" in lead
    assert "`mean.out`" in lead and "bool fast" in lead and "`mse_loss_backward`" in lead
    assert "operators ·" in rest and "### 🔌" not in rest
    assert "cc @dlprim-team (`dlprim`)" in rest
    assert "cpp" not in lead and str(folder) not in body  # never the kind, never a machine path
    # a quiet week for its backend still says so, first
    quiet = render(
        compute_drift(b, pipeline.load_snapshot(str(base))),
        "weekly-issue",
        context=ReportContext(backends=("dlprim",)),
    )
    assert "🔌" not in quiet  # no drift at all: nothing to lead with
    other = write_release("2.14.1", tmp_path / "other")
    other.write_text(_without(release_text("2.14.1"), "_cufft_clear_plan_cache"))
    calm = compute_drift(b, pipeline.load_snapshot(str(other)))
    gaps = backend_gaps(cfg, calm.changes, *backend_work(cfg, pipeline.load_snapshot(str(other))))
    said = render(calm, "weekly-issue", context=ReportContext(backend_gaps=gaps, backends=("dlprim",)))
    assert "✅ **`dlprim`**: nothing in this drift asks anything of it" in said.split("\n---\n", 1)[0]


# --- the watch -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_watch_comment_names_dlprim_shows_both_declarations_and_marks_what_is_new(
    tmp_path: Path, dlprim_src: Path, request: pytest.FixtureRequest
) -> None:
    up = Upstream(tmp_path / "up", "2.14.1")
    run = Run(up, _config(tmp_path / "cfg", dlprim_src))
    fast = with_fast(up.base_text)
    # main after 2.14.1 says 2.15.0a0: the models are counted from the nearest table, 2.14.1's
    version = {"version.txt": "2.15.0a0\n"}
    run.pulls.add(
        7,
        up.commit({"aten/src/ATen/native/native_functions.yaml": fast, **version}, "mean: fast"),
        title="mean: a fast path",
    )
    run.now = "2026-12-05T02:00:00Z"
    first = run()
    assert not run.warnings
    # The wording is the golden file's; what follows holds whatever the wording.
    check_golden("present-dlprim.watch-comment.md", first.comment, updating(request))
    comment = first.comment
    assert comment.startswith("<!-- opdrift:watch-comment -->\n@dlprim-team (`dlprim`) @xla-team (`xla`): ")
    assert "`cpp`" not in comment and str(dlprim_src) not in comment and str(dlprim_src) not in first.body
    assert "🆕" not in comment  # all of it is new: nothing to mark
    # the same PR now also removes mse_loss_backward: news again, and only that is marked new
    grown = up.commit(
        {"aten/src/ATen/native/native_functions.yaml": _without(fast, "mse_loss_backward"), **version},
        "and drop",
    )
    run.pulls.update(7, head_sha=grown)
    run.now = "2026-12-06T03:00:00Z"  # a day later: a PR's subscribers are mentioned at most once a day
    second = run()
    check_golden("present-dlprim.watch-comment-grown.md", second.comment, updating(request))
    assert "`mse_loss_backward` 🆕" in second.comment
    assert "🆕 🔧" not in second.comment  # the broken kernel was said before
    assert (
        second.comment.count("🆕") == 2 + 2
    )  # the two lines that say what 🆕 is, and one op for each backend
    # each broken kernel says how many models reach it on the backend's paths (the golden file), the
    # table said once; a later run draws the dashboard from the state, and says the same
    assert comment.count("model counts from torch 2.14.1's table") == 1
    run.now = "2026-12-06T04:00:00Z"
    third = run()
    # dlprim's mean.out kernel is what mean.dim's structured kernel runs: mean.dim's callers count, and
    # the count says they reach it through mean.dim; the state keeps that, so the dashboard says it too
    said = comment.split("(your form: `int64_t`) ", 1)[1].split("\n", 1)[0]
    assert said.startswith("— used by ") and "none" not in said and said.endswith(", through `mean.dim`")
    assert third.comment == "" and said in third.body
    assert third.body.count("model counts from torch 2.14.1's table") == 1
    # and the JSON gives the counts behind each phrase
    schema = json.loads((Path(__file__).parents[3] / "schemas" / "watch.schema.json").read_text())
    jsonschema.validate(third.json, schema)
    pulls: list[dict[str, Any]] = third.json["pulls"]  # type: ignore[assignment]
    dlprim = next(b for b in pulls[0]["backends"] if b["name"] == "dlprim")
    assert dlprim["breaks"][0]["op"] == "mean.out" and dlprim["breaks"][0]["models"]["used_by"] > 0
    users = dlprim["breaks"][0]["models"]["used_by"]
    assert dlprim["breaks"][0]["models"]["through"] == {"models": users, "ops": ["mean.dim"], "more": 0}
    xla = next(b for b in pulls[0]["backends"] if b["name"] == "xla")
    assert xla["breaks"][0]["models"] == {
        "used_by": 25, "of": 47, "no_data_yet": False, "cpu_only": False, "release": "2.14.1", "through": None
    }  # fmt: skip


@pytest.mark.slow
def test_a_landed_break_leads_until_ticked_off(
    tmp_path: Path, dlprim_src: Path, request: pytest.FixtureRequest
) -> None:
    up = Upstream(tmp_path / "up", "2.14.1")
    run = Run(up, _config(tmp_path / "cfg", dlprim_src))
    head = up.commit({"aten/src/ATen/native/native_functions.yaml": with_fast(up.base_text)}, "mean: fast")
    run.pulls.add(8, head, title="mean: a fast path")
    run()
    run.pulls.update(8, state="merged")
    landed = run()
    # a comment of its own, in the present: it has landed; the news comment has nothing to say
    (own,) = landed.landed_comments
    assert landed.comment == "" and landed.comments == (own,)
    check_golden("present-dlprim.watch-landed.md", own, updating(request))
    assert own.startswith("<!-- opdrift:watch-comment -->\n@dlprim-team (`dlprim`) @xla-team (`xla`): 🚨 ")
    assert "would" not in own  # it has landed: said in the present
    body = landed.body
    assert body.index("## 🚨 Landed: breaks your build") < body.index("## Open upstream pull requests")
    assert "- [ ] [#8](https://github.com/pytorch/pytorch/pull/8) mean: a fast path" in body
    assert LANDED_MARK.format(8) in body
    # the next run, nothing new: it stays, and says nothing
    again = run()
    assert again.comments == () and "## 🚨 Landed" in again.body
    # a maintainer ticks it off: the next run drops it
    run.body = again.body.replace("- [ ] [#8]", "- [x] [#8]")
    assert ticked(run.body) == {8}
    done = run()
    assert "🚨" not in done.body and done.comment == ""
    assert read_state(done.body, {"cpp:" + str(dlprim_src): ("@dlprim-team",)})[0].broke == ()


def test_landed_breaks_are_bounded() -> None:
    assert expired("2026-12-01T00:00:00Z", "2026-12-16T00:00:01Z")
    assert not expired("2026-12-01T00:00:00Z", f"2026-12-{1 + BROKE_DAYS:02d}T00:00:00Z")
    imp = BackendGap(("@xla-team",), "xla", "x.yaml", removed=("old_op",))
    many = tuple(
        LandedBreak(
            n, f"PR {n}", f"https://github.com/pytorch/pytorch/pull/{n}", "2026-12-01T00:00:00Z", (imp,)
        )
        for n in range(1, 30)
    )
    state, problem = read_state(state_block(WatchState(broke=many)), {"xla:x.yaml": ("@xla-team",)})
    assert problem is None and [x.number for x in state.broke] == list(range(1, MAX_BROKE + 1))


def test_landed_break_comments_are_bounded(request: pytest.FixtureRequest) -> None:
    """Each landed break its own comment, at most MAX_LANDED_COMMENTS a run; the others named together
    in one more, with their backends' subscribers."""
    from opdrift.render.watch import MAX_LANDED_COMMENTS, WatchView, render_landed

    imp = BackendGap(("@xla-team",), "xla", "x.yaml", removed=("old_op",), name="xla")
    now = tuple(
        LandedBreak(
            n, f"PR {n}", f"https://github.com/pytorch/pytorch/pull/{n}", "2026-12-01T00:00:00Z", (imp,)
        )
        for n in range(9, 4, -1)
    )
    comments = render_landed(WatchView("pytorch/pytorch", (), (), (), "", broke_now=now))
    assert len(comments) == MAX_LANDED_COMMENTS + 1 == 4
    for n, one in zip((9, 8, 7), comments, strict=False):
        assert (
            f"[#{n}](https://github.com/pytorch/pytorch/pull/{n}) PR {n} landed in `pytorch/pytorch`" in one
        )
        assert "🗑️ removes 1 op you implement" in one and "@xla-team (`xla`)" in one
    rest = comments[-1]
    # the two left over, named together with their backends' subscribers (golden/watch-landed-more.md)
    assert re.findall(r"^- \[#(\d+)\]", rest, re.M) == ["6", "5"] and "@xla-team" in rest
    assert "- [#6](https://github.com/pytorch/pytorch/pull/6) PR 6: **`xla`**" in rest
    check_golden("watch-landed-more.md", rest, updating(request))
    assert render_landed(WatchView("pytorch/pytorch", (), (), (), "")) == ()
