"""Text from a PR's files stays inert in every Markdown output the bot posts:
no ``GH-1`` references, emoji shortcodes, commit shas, mentions or links, and it still reads the same."""

from __future__ import annotations

import html as htmllib
from pathlib import Path

import pytest
from clirun import Opdrift
from datafiles import write_release
from fake_github import FakeGitHub
from inert import LIVE, live, rendered, visible

from opdrift.text import ZWJ, html, md

HOSTILE_TEXT = [
    "unknown key 'GH-1' kept",
    "gh-12 and Gh-3",
    ":white_check_mark: No operator changes :+1: :-1: :e-mail:",
    "x_:white_check_mark:_y",
    "a5c3785ed8d6a35868bc169f07e40e889087fd2e and a5c3785 and 1234567",
    "pytorch/pytorch#1 owner/repo@a5c3785 @pytorch/xla user@example.com",
    "https://evil.test www.evil.test mailto:x@evil.test",
    "aten::add.Tensor(Tensor self) -> Tensor",  # stays as it is
]


@pytest.mark.parametrize("text", HOSTILE_TEXT)
def test_md_and_html_leave_nothing_live_and_read_the_same(text: str) -> None:
    out = md(text)
    assert live(out) == {}
    assert visible(rendered(out)) == text
    # Inside raw HTML (a <summary>) Markdown is not parsed, and GitHub's filters still run.
    out = html(text)
    assert [kind for kind, p in LIVE.items() if p.search(htmllib.unescape(out))] == []
    assert visible(htmllib.unescape(out)) == text


def test_ordinary_text_gets_no_joiner() -> None:
    for text in ("aten::add.Tensor", "its only kernel is for CUDA", "2026-01-05", "abcdef", "a:b c:d"):
        assert ZWJ not in md(text)


# --- through the real templates ----------------------------------------------------------------------

KEYS = "".join(f"  GH-{i}: x\n" for i in range(1, 101))
ENTRY = (
    "\n- func: opdrift_hostile(Tensor self) -> Tensor\n"
    + KEYS
    + '  ":white_check_mark:": x\n'
    + '  tags: [GH-7, ":tada:", "a5c3785ed8d6a35868bc169f07e40e889087fd2e"]\n'
    + "  dispatch:\n    CPU: opdrift_hostile_kernel\n"
)


@pytest.fixture(scope="module")
def hostile_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """Release 2.14.1, and the same with one entry of 100 unknown keys GH-1 … GH-100, a shortcode key
    and unknown tags: what a fork's PR can put into native_functions.yaml."""
    root = tmp_path_factory.mktemp("hostile")
    base = write_release("2.14.1", root / "base")
    head = write_release("2.14.1", root / "head")
    with head.open("a") as fh:
        fh.write(ENTRY)
    return str(base), str(head)


@pytest.mark.parametrize("fmt", ["pr-comment", "weekly-issue", "job-summary", "markdown"])
@pytest.mark.slow
def test_yaml_references_are_inert_in_every_report(
    hostile_pair: tuple[str, str], opdrift: Opdrift, fmt: str
) -> None:
    run = opdrift("diff", *hostile_pair, "--format", fmt, "--fail-on", "never")
    assert run.code == 0, run.err
    body = run.out
    assert "unknown key" in body and "tags.yaml" in body  # the warnings are there
    assert live(body) == {}
    shown = visible(rendered(body))
    assert "unknown key 'GH-1' kept" in shown
    assert "unknown key ':white_check_mark:' kept" in shown
    assert "tag ':tada:' " in shown  # the shortcode as written, not an emoji
    if fmt == "markdown":  # the full report lists all of them
        assert all(f"unknown key 'GH-{i}' kept" in shown for i in range(1, 101))


@pytest.mark.slow
def test_backend_file_names_are_inert_in_coverage_markdown(
    hostile_pair: tuple[str, str], opdrift: Opdrift, tmp_path: Path
) -> None:
    folder = tmp_path / "GH-12"
    folder.mkdir()
    (folder / ":tada: GH-3 a5c3785ed8d6.cpp").write_text(
        'TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {\n  m.impl("add.Tensor", add_impl);\n}\n'
        "TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {\n"
        "  m.fallback(torch::CppFunction::makeFromBoxedFunction<&fallback>());\n}\n"
    )
    run = opdrift(
        "coverage", "--backend", f"cpp={tmp_path}", hostile_pair[1], "--base", hostile_pair[0],
        "--format", "markdown",
    )  # fmt: skip
    assert run.code == 0, run.err
    assert "GH-12/:tada: GH-3 a5c3785ed8d6.cpp:5" in visible(rendered(run.out))
    assert live(run.out) == {}


@pytest.mark.slow
def test_the_posted_comment_and_the_job_summary_are_inert(
    hostile_pair: tuple[str, str],
    opdrift: Opdrift,
    github_server: FakeGitHub,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    token = "ghs_inertT0ken1234567890abcdefghij"
    github_server.add_token(token, "opdrift-bot")
    github_server.add_repo("pytorch/pytorch")
    pr = github_server.add_pull("pytorch/pytorch")
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_TOKEN", token)
    monkeypatch.setenv("GITHUB_API_URL", github_server.api_url)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    run = opdrift("comment", "--repo", "pytorch/pytorch", "--pr", str(pr), *hostile_pair)
    assert run.code == 0, run.err
    (comment,) = github_server.comments("pytorch/pytorch", pr)
    for body in (str(comment["body"]), summary.read_text()):
        assert "unknown key 'GH-1' kept" in visible(rendered(body))
        assert live(body) == {}
