"""docs/coverage.md's worked example of each kind: every kind of the kind table has one, its excerpt is
in the real list vendored in tests/data/, and its commands, run on that list, print the lines shown."""

from __future__ import annotations

import lzma
import re
import shlex
import tarfile
from pathlib import Path

import pytest
from clirun import ROOT

from opdrift.cli import main
from opdrift.coverage.kinds import KIND_TABLE

PAGE = ROOT / "docs" / "coverage.md"
DATA = ROOT / "tests" / "data"
# <!-- kind: KIND FILE PATH -->: FILE under tests/data (.xz, .tar.xz or plain), PATH what the commands
# name it ("-": they name no file)
_MARKER = re.compile(r"^<!-- kind: (\S+) (\S+) (\S+) -->\n", re.MULTILINE)
_FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def sections(text: str) -> list[tuple[str, str, str, str]]:
    """(kind, file, path, body) for each marked example of TEXT, its body up to the next heading of a
    kind or section."""
    found = []
    marks = list(_MARKER.finditer(text))
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        body = text[m.end() : end]
        body = body.split("\n## ", 1)[0]
        found.append((m.group(1), m.group(2), m.group(3), body))
    return found


def excerpt_and_runs(body: str) -> tuple[str, list[tuple[str, list[str]]]]:
    """The body's first non-console block (the excerpt), and its console runs: each `$ opdrift` line
    with the output lines shown after it."""
    excerpt = ""
    runs: list[tuple[str, list[str]]] = []
    for lang, block in _FENCE.findall(body):
        if lang != "console":
            excerpt = excerpt or block
            continue
        for line in block.splitlines():
            if line.startswith("$ "):
                runs.append((line[2:], []))
            elif runs:
                runs[-1][1].append(line.rstrip())
    return excerpt, runs


def materialise(file: str, path: str, tmp: Path) -> tuple[Path | None, list[str]]:
    """FILE (under tests/data) laid out at tmp/PATH's last part: the path to give opdrift, and the texts
    an excerpt may come from."""
    source = DATA / file
    if file.endswith(".tar.xz"):
        with tarfile.open(source, "r:xz") as tar:
            tar.extractall(tmp, filter="data")
        texts = [p.read_text(encoding="utf-8", errors="replace") for p in tmp.rglob("*") if p.is_file()]
        return (tmp / Path(path).name if path != "-" else None), texts
    data = lzma.decompress(source.read_bytes()) if file.endswith(".xz") else source.read_bytes()
    text = data.decode("utf-8")
    if path == "-":
        return None, [text]
    dest = tmp / Path(path).name
    dest.write_bytes(data)
    return dest, [text]


def printed_in_order(shown: list[str], printed: list[str]) -> str | None:
    """None when every shown line (but `…`, any lines left out) is a printed line, in order; else the
    first that is not."""
    at = 0
    for line in shown:
        if line.strip() == "…":
            continue
        while at < len(printed) and printed[at] != line:
            at += 1
        if at == len(printed):
            return line
        at += 1
    return None


_SECTIONS = sections(PAGE.read_text(encoding="utf-8"))


def test_every_kind_has_one_worked_example() -> None:
    kinds = [kind for kind, _, _, _ in _SECTIONS]
    assert sorted(kinds) == sorted(k.id for k in KIND_TABLE)
    for kind, _, _, body in _SECTIONS:
        assert body.lstrip().startswith(f"### `{kind}`"), kind
        excerpt, runs = excerpt_and_runs(body)
        assert excerpt.strip() and runs and all(out for _, out in runs), kind


@pytest.mark.parametrize(("kind", "file", "path", "body"), _SECTIONS, ids=[s[0] for s in _SECTIONS])
@pytest.mark.slow
def test_the_example_is_the_real_file_and_what_opdrift_prints(
    kind: str,
    file: str,
    path: str,
    body: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    given, texts = materialise(file, path, tmp_path)
    excerpt, runs = excerpt_and_runs(body)
    assert any(excerpt in text for text in texts), f"{kind}: the excerpt is not in {file}"
    monkeypatch.chdir(ROOT)
    for command, shown in runs:
        argv = shlex.split(command)
        assert argv[0] == "opdrift"
        if given is not None:
            argv = [re.sub(rf"=({re.escape(path)})$", f"={given}", a) for a in argv]
            assert str(given) in " ".join(argv), f"{kind}: {command} does not name {path}"
        code = main(argv[1:])
        out = capsys.readouterr().out
        assert code in (0, 1), out
        missing = printed_in_order(shown, out.splitlines())
        assert missing is None, f"{kind}: `{command}` does not print {missing!r}"


def test_the_checks_would_catch_a_wrong_example() -> None:
    printed = ["backend x", "  add.Tensor: covered (listed): listed", "  add.out: covered (listed): listed"]
    assert printed_in_order(["…", "  add.out: covered (listed): listed"], printed) is None
    assert printed_in_order(["  add.out: covered (listed): listed", "backend x"], printed) == "backend x"
    page = "<!-- kind: text backends/ops.txt x.txt -->\n### `text`\n\n```text\nrelu\n```\n\n```console\n$ opdrift a\nb\n```\n"
    ((kind, file, path, body),) = sections(page)
    assert (kind, file, path) == ("text", "backends/ops.txt", "x.txt")
    assert excerpt_and_runs(body) == ("relu\n", [("opdrift a", ["b"])])
