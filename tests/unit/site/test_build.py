"""`opdrift site`: the files at their stable paths, the data behind them, escaping, and the CLI's errors."""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from clirun import Opdrift
from datafiles import release_text
from goldens import check_error_line, updating
from sitebuild import BACKEND_LIST, SNAPSHOTS, hostile_source

from opdrift.coverage.backends import read_backend, read_text_list
from opdrift.coverage.check import compute_coverage
from opdrift.model import Snapshot
from opdrift.site.build import SourceOrderError, order_sources
from opdrift.site.html import CSP, el, join, safe_url
from opdrift.site.model import file_name
from opdrift.snapshot import load_snapshot
from opdrift.work.rules import BACKEND_CODEGEN, TRAINING_ONLY, words


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from opdrift.cli import main

    root = tmp_path_factory.mktemp("site")
    backend = root / "list.txt"
    backend.write_text(BACKEND_LIST)
    out = root / "out"
    code = main(
        [
            "site",
            "-o",
            str(out),
            "--backend",
            f"mine:text={backend}",
            "--backend",
            "mps:dispatch=MPS",
            *map(str, SNAPSHOTS),
        ]
    )
    assert code == 0
    return out


@pytest.mark.slow
def test_the_pages_and_the_json_sit_at_their_stable_paths(built: Path) -> None:
    for rel in (
        "index.html",
        "coverage.html",
        "growth.html",
        "data/ops.json",
        "ops/add.html",
        "data/ops/add.json",
        "assets/site.js",
        "assets/site.css",
        ".nojekyll",
    ):
        assert (built / rel).is_file(), rel
    index = json.loads((built / "data/ops.json").read_text())
    now = load_snapshot(SNAPSHOTS[-1])
    present = [op for op in index["ops"] if op["g"] == 0]
    assert len(present) == len(set(now.decisions)) > 1500
    assert len(list((built / "ops").glob("*.html"))) == len(index["ops"])
    assert index["releases"] == ["2.12.0", "2.13.0", "2.14.1", "2.15.0"]


@pytest.mark.slow
def test_an_operator_page_has_every_overload_its_history_and_its_links(built: Path) -> None:
    now = load_snapshot(SNAPSHOTS[-1])
    data = json.loads((built / "data/ops/_cdist_backward.json").read_text())
    assert {o["name"] for o in data["overloads"]} == {
        n for n, r in now.operators.items() if r.base == "_cdist_backward"
    }
    assert data["first_release"] == "2.12.0"
    renamed = [h for h in data["history"] if any(d["code"] == "argument_renamed" for d in h["details"])]
    assert renamed and renamed[0]["callers"] == "breaking" and renamed[0]["kernel"] in ("compatible", "none")
    page = (built / "ops/_cdist_backward.html").read_text()
    assert (
        "https://github.com/pytorch/pytorch/blob/v2.15.0/aten/src/ATen/native/native_functions.yaml#L" in page
    )
    assert (
        "_cdist_backward(Tensor grad_output, Tensor x1, Tensor x2, float p, Tensor cdist) -&gt; Tensor"
        in page
    )


@pytest.mark.slow
def test_a_removed_operator_links_the_last_release_that_had_it_at_its_line(built: Path) -> None:
    # The removal release's line is another entry by then (cholesky's landed on nonzero.out).
    releases = json.loads((built / "data/ops.json").read_text())["releases"]
    texts = {v: release_text(v).splitlines() for v in releases}
    removed = 0
    for path in sorted((built / "data/ops").glob("*.json")):
        for event in json.loads(path.read_text())["history"]:
            if event["kind"] != "removed":
                continue
            removed += 1
            previous = releases[releases.index(event["release"]) - 1]
            prefix = f"https://github.com/pytorch/pytorch/blob/v{previous}/aten/src/ATen/native/native_functions.yaml#L"
            assert event["url"].startswith(prefix), (path.name, event)
            at = int(event["url"].removeprefix(prefix)) - 1
            lines = texts[previous]
            rest = itertools.takewhile(lambda ln: not ln.startswith("- func:"), lines[at + 1 :])
            entry = [lines[at], *rest]
            # Its own entry, or (an `autogen:` operator) the entry that generates it.
            own = entry[0].startswith(f"- func: {event['name']}(")
            generated = any(ln.strip().startswith("autogen:") and event["name"] in ln for ln in entry)
            assert own or generated, (path.name, event["name"], entry[0])
    assert removed >= 100


@pytest.mark.slow
def test_every_page_carries_the_csp_and_no_inline_script(built: Path) -> None:
    for page in [
        built / "index.html",
        built / "coverage.html",
        built / "growth.html",
        *sorted((built / "ops").glob("a*.html")),
    ]:
        text = page.read_text()
        assert CSP in text.replace("&#39;", "'")
        for tag in re.findall(r"<script[^>]*>", text):
            assert 'type="application/json"' in tag or re.search(r'src="(\.\./)?assets/site\.js"', tag), (
                page,
                tag,
            )
        assert not re.search(r"\son[a-z]+=", text), page


@pytest.mark.slow
def test_the_coverage_counts_are_the_coverage_commands(built: Path) -> None:
    now = load_snapshot(SNAPSHOTS[-1])
    cov = compute_coverage(now, read_text_list(BACKEND_LIST, "list.txt"))
    page = (built / "coverage.html").read_text()
    conv = [op for op in cov.ops if op.bucket == "convolution"]
    missing = sum(1 for op in conv if not op.covered)
    row = re.search(r'<tr data-bucket="convolution">(.*?)</tr>', page)
    assert row is not None
    assert f'data-backend="mine">{missing} of {len(conv)}<' in row.group(1)
    total = re.search(r'<tr class="total" data-bucket="all">(.*?)</tr>', page)
    assert total is not None
    gap = sum(1 for op in cov.ops if not op.covered)
    assert f'data-backend="mine">{gap} of {len(cov.ops)}<' in total.group(1)
    add = json.loads((built / "data/ops/add.json").read_text())
    assert add["coverage"]["mine"]["covered"] == sum(
        1 for o in add["overloads"] if o["coverage"]["mine"]["covered"]
    )


@pytest.mark.slow
def test_the_growth_page_marks_the_2021_figures(built: Path) -> None:
    page = (built / "growth.html").read_text()
    assert "<svg" in page and "2021 post" in page and ">1215<" in page


def test_markup_in_a_source_is_text_everywhere(tmp_path: Path, opdrift: Opdrift) -> None:
    source = hostile_source(tmp_path / "src")
    run = opdrift("site", "-o", str(tmp_path / "out"), str(source))
    assert run.code == 0, run.err
    for page in (tmp_path / "out").rglob("*.html"):
        text = page.read_text()
        assert "<img" not in text and "<iframe" not in text and 'onerror="' not in text, page
        assert len(re.findall(r"<script", text)) <= 2
    assert (
        "&lt;img src=x onerror=&quot;window.pwned=2&quot;&gt;" in (tmp_path / "out/ops/abs.html").read_text()
    )


def test_the_builder_escapes_and_refuses_unsafe_links() -> None:
    assert el("td", {"title": '"><x'}, "<b>") == '<td title="&quot;&gt;&lt;x">&lt;b&gt;</td>'
    assert join("a&b") == "a&amp;b"
    for bad in ("javascript:alert(1)", "data:text/html,x", "//evil.example/x", "http://x"):
        assert not safe_url(bad)
        with pytest.raises(ValueError, match="unsafe"):
            el("a", {"href": bad}, "x")
    with pytest.raises(ValueError, match="bad attribute"):
        el("a", {"onclick": "x"})
    assert file_name("add") == "add" and "/" not in file_name("../etc/passwd")


def test_usage_errors_are_one_line_and_leave_no_directory(tmp_path: Path, opdrift: Opdrift) -> None:
    out = tmp_path / "out"
    bad = opdrift("site", "-o", str(out), "--backend", "xla=foo.yaml", str(SNAPSHOTS[-1]))
    assert bad.code == 2 and "NAME:KIND=PATH" in bad.err and len(bad.err.strip().splitlines()) == 1
    missing = opdrift(
        "site", "-o", str(out), "--backend", f"x:text={tmp_path / 'nope.txt'}", str(SNAPSHOTS[-1])
    )
    assert missing.code == 2 and "nope.txt" in missing.err and "Traceback" not in missing.err
    twice = opdrift(
        "site",
        "-o",
        str(out),
        "--backend",
        "a:dispatch=MPS",
        "--backend",
        "a:dispatch=CPU",
        str(SNAPSHOTS[-1]),
    )
    assert twice.code == 2 and "given twice" in twice.err
    assert not out.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_directory_it_did_not_write_is_never_replaced(
    tmp_path: Path, opdrift: Opdrift, release_file: Callable[[str], Path]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "precious.txt").write_text("keep")
    run = opdrift("site", "-o", str(out), str(SNAPSHOTS[-1]))
    assert run.code == 2 and "refusing to replace" in run.err
    assert (out / "precious.txt").read_text() == "keep"
    other = tmp_path / "site"
    assert opdrift("site", "-o", str(other), str(SNAPSHOTS[-1])).code == 0
    assert opdrift("site", "-o", str(other), str(SNAPSHOTS[-2]), str(SNAPSHOTS[-1])).code == 0
    # The site is a link to the one complete build beside it; the previous build's directory is gone.
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["out", "site", os.readlink(other)])


@pytest.mark.slow
def test_sources_given_newest_first_build_the_same_site(tmp_path: Path, opdrift: Opdrift) -> None:
    """The last SOURCE is "current": given newest first, the order is taken from the versions, not
    from the command line (it used to call 2.14.1 current here)."""
    pair = [str(SNAPSHOTS[-2]), str(SNAPSHOTS[-1])]
    forward = opdrift("site", "-o", str(tmp_path / "forward"), *pair)
    backward = opdrift("site", "-o", str(tmp_path / "backward"), *reversed(pair))
    assert forward.code == backward.code == 0, backward.err
    assert forward.err == ""
    assert (
        backward.err == f"opdrift: SOURCEs taken oldest first: {pair[0]}, {pair[1]} (the last is current)\n"
    )
    files = sorted(
        p.relative_to(tmp_path / "forward") for p in (tmp_path / "forward").rglob("*") if p.is_file()
    )
    assert files
    for name in files:
        assert (tmp_path / "backward" / name).read_bytes() == (tmp_path / "forward" / name).read_bytes(), name


@pytest.mark.slow
def test_an_order_it_cannot_tell_is_refused(
    tmp_path: Path, opdrift: Opdrift, release_file: Callable[[str], Path], request: pytest.FixtureRequest
) -> None:
    bare = str(release_file("2.14.1"))
    run = opdrift("site", "-o", str(tmp_path / "a"), bare, str(SNAPSHOTS[-1]))
    assert run.code == 2 and not (tmp_path / "a").exists()
    said = check_error_line("site: order of the SOURCEs", run.err.replace(bare, "SOURCE"), updating(request))
    assert "SOURCE" in said and str(SNAPSHOTS[-1]) not in said  # names the one it cannot place
    # The weekly workflow's own list: the shipped main.json is v2.15.0.json byte for byte (no date, one
    # version), and two SOURCEs with the same operators give the same site in either order.
    main_json = str(SNAPSHOTS[-1].parent / "main.json")
    run = opdrift("site", "-o", str(tmp_path / "b"), str(SNAPSHOTS[-2]), str(SNAPSHOTS[-1]), main_json)
    assert (run.code, run.err) == (0, "")


def test_order_sources_by_version_then_date() -> None:
    snaps = {
        v: load_snapshot(str(path))
        for v, path in zip(("2.12.0", "2.13.0", "2.14.1", "2.15.0"), SNAPSHOTS, strict=True)
    }

    def at(v: str, version: str | None, date: str | None) -> tuple[str, Snapshot]:
        snap = snaps[v]
        return v, replace(snap, meta=replace(snap.meta, torch_version=version, date=date))

    def names(pairs: list[tuple[str, Snapshot]]) -> list[str]:
        return [n for n, _ in order_sources(pairs)]

    # a pre-release (main's version.txt) sorts before its release, after the one before
    assert names(
        [at("2.15.0", "2.15.0", None), at("2.14.1", "2.15.0a0", None), at("2.13.0", "2.14.1", None)]
    ) == [
        "2.13.0",
        "2.14.1",
        "2.15.0",
    ]
    # one version, two commits: the date decides (time zones compared as instants)
    assert names(
        [
            at("2.15.0", "2.15.0a0", "2026-01-02T00:30:00+01:00"),
            at("2.14.1", "2.15.0a0", "2026-01-01T23:45:00+00:00"),
        ]
    ) == ["2.15.0", "2.14.1"]
    # no versions at all: dates alone
    assert names(
        [at("2.15.0", None, "2026-03-01T00:00:00Z"), at("2.12.0", None, "2025-03-01T00:00:00Z")]
    ) == [
        "2.12.0",
        "2.15.0",
    ]
    # one version, different operators, and not both dated: refused, naming both
    with pytest.raises(SourceOrderError, match=re.escape("cannot tell which of 2.14.1 and 2.15.0 is newer")):
        order_sources([at("2.14.1", "2.15.0", None), at("2.15.0", "2.15.0", "2026-01-01T00:00:00Z")])
    with pytest.raises(
        SourceOrderError, match=re.escape("2.12.0 records no torch version and 2.15.0 no commit date")
    ):
        order_sources([at("2.15.0", "2.15.0", None), at("2.12.0", None, "2025-03-01T00:00:00Z")])


@pytest.mark.slow
def test_with_history_each_change_names_its_commit_and_pr(tmp_path: Path, opdrift: Opdrift) -> None:
    from pytorch_history import build_history

    repo = build_history(tmp_path / "pytorch", first="2.12.0", last="2.13.0", fine=True, cap=30)
    out = tmp_path / "site"
    run = opdrift(
        "site", "-o", str(out), "--history", str(repo.path), f"{repo.path}@v2.12.0", f"{repo.path}@v2.13.0"
    )
    assert run.code == 0, run.err
    # cap=30: 30 single-entry commits, then the release commit brings the rest of 2.13.0
    by_sha = {c.sha: c for c in repo.commits if c.version == "2.13.0"}
    checked = exact = 0
    for path in sorted((out / "data" / "ops").glob("*.json")):
        data = json.loads(path.read_text())
        for event in data["history"]:
            if event["commit"] is None:
                continue
            # a commit of the range (opdrift.history.attribution chose it), listed among the op's commits,
            # linked with its PR
            commit = by_sha[event["commit"]["sha"]]
            assert commit.sha in [c["sha"] for c in data["commits"]]
            page = (out / "ops" / f"{path.stem}.html").read_text()
            assert f"https://github.com/pytorch/pytorch/commit/{commit.sha}" in page
            if commit.changed is not None:
                assert event["commit"]["pr"] == int(commit.subject.rsplit("(#", 1)[1].rstrip(")"))
                assert f"https://github.com/pytorch/pytorch/pull/{event['commit']['pr']}" in page
                exact += commit.changed.split(".", 1)[0] == data["name"]
            checked += 1
    assert checked >= 5 and exact >= 5
    tags = opdrift("site", "-o", str(tmp_path / "tags"), "--tags", "v*", f"{repo.path}@v2.13.0")
    assert tags.code == 2 and "--tags needs --history" in tags.err


@pytest.mark.slow
def test_the_op_page_words_functionalization_and_the_first_release_as_they_are(
    tmp_path: Path, opdrift: Opdrift, built: Path
) -> None:
    """torch-mlir (export profile) has no codegen: its out= variants are covered because
    functionalization turns them into their functional op, and the cell says so. An op present in the
    first SOURCE may be older than it: its page does not call that release its first."""
    import lzma

    td = tmp_path / "GeneratedTorchOps.td"
    td.write_bytes(
        lzma.decompress(
            (Path(__file__).parents[2] / "data/backends/real/torch-mlir.GeneratedTorchOps.td.xz").read_bytes()
        )
    )
    out = tmp_path / "out"
    pair = [str(SNAPSHOTS[-2]), str(SNAPSHOTS[-1])]
    run = opdrift("site", "-o", str(out), "--backend", f"torch-mlir:torch-mlir={td}", *pair)
    assert run.code == 0, run.err
    add = (out / "ops/add.html").read_text()
    assert f"✓ {words(BACKEND_CODEGEN, 'add.Tensor')}" in add and "backend codegen" not in add
    assert "Present in the first release shown, <strong>2.14.1</strong>." in add
    assert "First seen in" not in add
    # A training-only op is neither served nor needed by an export backend, as `opdrift coverage`
    # counts it: not a ✓, not a ✗, and out of the totals.
    backward = (out / "ops/_cdist_backward.html").read_text()
    said = words(TRAINING_ONLY)
    assert f"· {said}" in backward and f"✓ {said}" not in backward
    page = json.loads((out / "data/ops/_cdist_backward.json").read_text())
    cells = [o["coverage"]["torch-mlir"] for o in page["overloads"]]
    assert {"covered": False, "rule": "training_only", "via": ""} in cells
    needed = [c for c in cells if c["rule"] != "training_only"]
    assert page["coverage"]["torch-mlir"] == {
        "covered": sum(c["covered"] for c in needed),
        "overloads": len(needed),
    }
    now = load_snapshot(SNAPSHOTS[-1])
    cov = compute_coverage(now, read_backend("torch-mlir", str(td)))
    total = re.search(r'<tr class="total" data-bucket="all">(.*?)</tr>', (out / "coverage.html").read_text())
    assert total is not None and cov.training_only
    served = len(cov.ops) - len(cov.training_only)
    assert f'data-backend="torch-mlir">{len(cov.uncovered)} of {served}<' in total.group(1)
    # in the four-release site, an op 2.15.0 brought is "first seen" there
    assert "First seen in <strong>2.15.0</strong>." in (built / "ops/_philox_randint.html").read_text()
    assert (
        "Present in the first release shown, <strong>2.12.0</strong>."
        in (built / "ops/_cdist_backward.html").read_text()
    )
