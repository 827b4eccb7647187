"""The `opdrift` command line end to end: `opdrift.cli.app.main` in-process, and `python -m opdrift` as a process.

Happy paths run on the vendored release files, through every kind of SOURCE; the figures are checked
against torchgen's own operator list (tests/data/torchgen). The bad-input matrix holds each error to
the CLI's contract: exit 2, exactly one stderr line ``opdrift: error: FILE[:LINE]: ...``, no traceback,
and an ``-o FILE`` that is never created or touched.
"""

from __future__ import annotations

import json
import lzma
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from clirun import Opdrift, Run, opdrift_process
from datafiles import DATA, has_release_file, release_text, write_release
from goldens import check_golden, check_golden_entry, updating
from pytorch_history import History, build_history

from opdrift import pipeline
from opdrift.cli.app import main
from opdrift.pipeline import MAX_SHOWN_WARNINGS
from opdrift.sources import read as sources
from opdrift.taxonomy.buckets import BUCKETS

VERSION = "2.14.1"
OLDER = "2.13.0"
ERROR_PREFIX = "opdrift: error: "
REQUIRED_STATS_KEYS = (
    "entries",
    "operators",
    "base_operators",
    "overloads",
    "out_overloads",
    "composite_implicit",
    "by_category",
)
# Keys of `stats --format json` that say where the figures came from, not what they are.
PROVENANCE_KEYS = ("source", "commit", "torch_version")


def stats_json(run: Run) -> dict[str, object]:
    assert run.code == 0, run.err
    data = json.loads(run.out)
    assert isinstance(data, dict)
    return data


def figures(data: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in data.items() if k not in PROVENANCE_KEYS}


@cache
def torchgen_rows(version: str) -> dict[str, frozenset[str]]:
    """torchgen's parse_native_yaml output (name → dispatch keys), vendored as the independent oracle."""
    text = lzma.decompress((DATA / "torchgen" / f"{version}.tsv.xz").read_bytes()).decode("utf-8")
    rows = {}
    for line in text.splitlines():
        name, _schema, keys = line.split("\t")
        rows[name] = frozenset(keys.split(",")) if keys else frozenset()
    return rows


# --- shared inputs --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def release(release_file: Callable[[str], Path]) -> Path:
    """The real 2.14.1 native_functions.yaml, with tags.yaml and derivatives.yaml beside it."""
    return release_file(VERSION)


@pytest.fixture(scope="module")
def older_release(release_file: Callable[[str], Path]) -> Path:
    return release_file(OLDER)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> History:
    """A coarse PyTorch-shaped repository: one tagged commit per release, 2.13.0 then 2.14.1."""
    return build_history(tmp_path_factory.mktemp("hist") / "pytorch", first=OLDER, last=VERSION)


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory, release: Path) -> Path:
    """A snapshot of the 2.14.1 release written by `opdrift snapshot -o`."""
    path = tmp_path_factory.mktemp("snap") / "2.14.1.json"
    assert main(["snapshot", str(release), "-o", str(path)]) == 0
    return path


def make_wheel(path: Path, members: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in members.items():
            z.writestr(name, text)
    return path


def release_wheel(directory: Path, version: str) -> Path:
    """A wheel-shaped zip holding the packaged yaml of a release, as torch wheels from 1.12 on do."""
    members = {
        "torch/__init__.py": "",
        sources.WHEEL_NATIVE: release_text(version),
        sources.WHEEL_TAGS: release_text(version, "tags.yaml"),
        f"torch-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n",
    }
    if has_release_file(version, "derivatives.yaml"):
        members[sources.WHEEL_DERIVATIVES] = release_text(version, "derivatives.yaml")
    return make_wheel(directory / f"torch-{version}-cp311-cp311-macosx_11_0_arm64.whl", members)


def edited_release(
    directory: Path, edit: Callable[[list[str]], None], name: str = "native_functions.yaml"
) -> Path:
    """The real 2.14.1 file with EDIT applied to its lines (keepends); written as DIRECTORY/NAME."""
    lines = release_text(VERSION).splitlines(keepends=True)
    edit(lines)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text("".join(lines), encoding="utf-8")
    return path


def line_of(prefix: str) -> int:
    """1-based line of the first line of the real 2.14.1 file that starts with PREFIX."""
    for number, line in enumerate(release_text(VERSION).splitlines(), start=1):
        if line.startswith(prefix):
            return number
    raise LookupError(prefix)


# --- happy paths on real data ------------------------------------------------------------------


def test_stats_json_of_2_14_1_matches_torchgen(release: Path, opdrift: Opdrift) -> None:
    data = stats_json(opdrift("stats", str(release), "--format", "json"))
    for key in REQUIRED_STATS_KEYS:
        assert key in data, key
    rows = torchgen_rows(VERSION)
    names = set(rows)
    assert data["operators"] == len(rows) == 3103
    entries = sum(line.startswith("- func:") for line in release_text(VERSION).splitlines())
    assert data["entries"] == entries == 2585
    assert data["base_operators"] == len({n.split(".")[0] for n in names})
    assert data["overloads"] == sum("." in n for n in names)
    assert data["composite_implicit"] == sum("CompositeImplicitAutograd" in keys for keys in rows.values())
    out_overloads = data["out_overloads"]
    assert isinstance(out_overloads, int)
    # every operator named .out is an out overload; a few more (.grad_input, .values...) are too
    assert sum(n.endswith(".out") for n in names) <= out_overloads < len(names)
    by_category = data["by_category"]
    assert isinstance(by_category, dict)
    assert set(by_category) == set(BUCKETS)
    assert sum(by_category.values()) == data["base_operators"]
    assert data["source"] == str(release)


@pytest.mark.slow
def test_snapshot_reads_back_to_the_same_classification(
    release: Path, stored: Path, tmp_path: Path, opdrift: Opdrift
) -> None:
    from_source = stats_json(opdrift("stats", str(release), "--format", "json"))
    from_snapshot = stats_json(opdrift("stats", str(stored), "--format", "json"))
    assert from_snapshot == from_source  # provenance included: the snapshot keeps its source's metadata
    # explain reads the same decision from either
    for op in ("add.Tensor", "conv2d"):
        a = opdrift("explain", op, str(release))
        b = opdrift("explain", op, str(stored))
        assert a.code == b.code == 0
        assert a.out.splitlines()[:4] == b.out.splitlines()[:4]
    # the snapshot's operator keys are torchgen's names
    data = json.loads(stored.read_text(encoding="utf-8"))
    assert set(data["operators"]) == set(torchgen_rows(VERSION))
    # and snapshotting a snapshot gives the same bytes again
    again = tmp_path / "again.json"
    assert opdrift("snapshot", str(stored), "-o", str(again)).code == 0
    assert again.read_bytes() == stored.read_bytes()


@pytest.mark.slow
def test_snapshot_is_deterministic_to_file_and_stdout(
    release: Path, stored: Path, tmp_path: Path, opdrift: Opdrift
) -> None:
    second = tmp_path / "second.json"
    run = opdrift("snapshot", str(release), "-o", str(second))
    assert (run.code, run.out, run.err) == (0, "", "")
    assert second.read_bytes() == stored.read_bytes()
    to_stdout = opdrift("snapshot", str(release))
    assert to_stdout.code == 0 and to_stdout.out.encode("utf-8") == stored.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["second.json"]  # no temp file left behind
    # overwriting an existing snapshot replaces it whole
    second.write_text("stale\n")
    assert opdrift("snapshot", str(release), "-o", str(second)).code == 0
    assert second.read_bytes() == stored.read_bytes()


def test_explain_prints_bucket_and_rule(release: Path, opdrift: Opdrift) -> None:
    # docs/taxonomy.md: conv operators of every kind are `convolution`; a pointwise op with its own kernels
    # is `primitive_pointwise`.
    for op, bucket in (("conv2d", "convolution"), ("add.Tensor", "primitive_pointwise")):
        run = opdrift("explain", op, str(release))
        assert run.code == 0 and run.err == ""
        lines = run.out.splitlines()
        assert lines[0].startswith(f"{op}  (base operator {op.split('.')[0]}:")
        assert lines[1].split() == ["bucket:", bucket]
        assert lines[2].startswith("rule:") and len(lines[2].split()) == 2
        assert lines[3].startswith("reason:") and len(lines[3]) > len("reason:  ")
        # the op's own record, pointing at its line in the file
        assert f"{op}  [functional]  {release}:{line_of(f'- func: {op}(')}" in lines


def test_explain_of_an_unknown_operator_is_a_one_line_error(release: Path, opdrift: Opdrift) -> None:
    run = opdrift("explain", "no_such_op.Tensor", str(release))
    assert_one_line_error(run, str(release), "no_such_op.Tensor")


@pytest.mark.slow
def test_every_kind_of_source_gives_the_same_figures(
    release: Path,
    older_release: Path,
    history: History,
    stored: Path,
    tmp_path: Path,
    opdrift: Opdrift,
) -> None:
    expected = figures(stats_json(opdrift("stats", str(release), "--format", "json")))
    wheel = release_wheel(tmp_path, VERSION)
    at_tag = f"{history.path}@v{VERSION}"
    cases = {
        "yaml": (str(release), None, None),
        "checkout": (str(history.path), None, history.tag_sha(VERSION)),
        "git tag": (at_tag, VERSION, history.tag_sha(VERSION)),
        "git sha": (f"{history.path}@{history.tag_sha(VERSION)[:12]}", None, history.tag_sha(VERSION)),
        "wheel": (str(wheel), VERSION, None),
        "snapshot": (str(stored), None, None),
    }
    for kind, (spec, version, commit) in cases.items():
        data = stats_json(opdrift("stats", spec, "--format", "json"))
        assert figures(data) == expected, kind
        assert data["torch_version"] == version, kind
        assert data["commit"] == commit, kind
    # an older revision of the same repository reads as that release, not as the working tree
    older = stats_json(opdrift("stats", f"{history.path}@v{OLDER}", "--format", "json"))
    assert figures(older) == figures(stats_json(opdrift("stats", str(older_release), "--format", "json")))
    assert older["operators"] == len(torchgen_rows(OLDER)) != expected["operators"]
    # snapshots of every kind of source hold the same operators
    for kind in ("checkout", "git tag", "wheel"):
        out = tmp_path / f"{kind}.json"
        assert opdrift("snapshot", cases[kind][0], "-o", str(out)).code == 0
        assert set(json.loads(out.read_text())["operators"]) == set(torchgen_rows(VERSION)), kind


def test_pre_1_12_wheel_lands_near_the_posts_figures(tmp_path: Path, opdrift: Opdrift) -> None:
    header = lzma.decompress((DATA / "wheels" / "1.10.0" / "RegistrationDeclarations.h.xz").read_bytes())
    wheel = make_wheel(
        tmp_path / "torch-1.10.0-cp39-none-macosx_10_9_x86_64.whl",
        {"torch/__init__.py": "", sources.WHEEL_REGISTRATIONS: header.decode("utf-8")},
    )
    data = stats_json(opdrift("stats", str(wheel), "--format", "json"))
    assert data["torch_version"] == "1.10.0"  # from the wheel's file name: this one has no METADATA
    assert data["operators"] == header.decode("utf-8").count(' // {"schema": ')
    # docs/taxonomy.md: late-2021 master had 2055 entries and 1215 base operators
    for key, post in (("entries", 2055), ("base_operators", 1215)):
        value = data[key]
        assert isinstance(value, int) and abs(value - post) / post < 0.1, key


def test_stats_text_and_markdown_formats(release: Path, tmp_path: Path, opdrift: Opdrift) -> None:
    numbers = stats_json(opdrift("stats", str(release), "--format", "json"))
    text = opdrift("stats", str(release))
    assert text.code == 0 and text.err == ""
    assert any(
        line.split()[-1] == str(numbers["operators"]) for line in text.out.splitlines() if line.strip()
    )
    out = tmp_path / "stats.md"
    assert opdrift("stats", str(release), "--format", "markdown", "-o", str(out)).code == 0
    assert f"| registered operators | {numbers['operators']} |" in out.read_text(encoding="utf-8")


def test_overrides_move_a_base_operator(release: Path, tmp_path: Path, opdrift: Opdrift) -> None:
    overrides = tmp_path / "overrides.yaml"
    overrides.write_text("overrides:\n  conv2d:\n    bucket: misc\n    reason: we lower it ourselves\n")
    run = opdrift("explain", "conv2d", str(release), "--overrides", str(overrides))
    assert run.code == 0
    assert run.out.splitlines()[1:4] == [
        "bucket:  misc",
        "rule:    override",
        f"reason:  we lower it ourselves ({overrides})",  # the reason says where it was set
    ]
    before = stats_json(opdrift("stats", str(release), "--format", "json"))["by_category"]
    after = stats_json(opdrift("stats", str(release), "--format", "json", "--overrides", str(overrides)))[
        "by_category"
    ]
    assert isinstance(before, dict) and isinstance(after, dict)
    assert after["misc"] == before["misc"] + 1 and after["convolution"] == before["convolution"] - 1


# --- the bad-input matrix --------------------------------------------------------------------------


def assert_one_line_error(run: Run, *needles: str) -> str:
    """Exit 2 and one stderr line that starts with the prefix and holds every needle; returns it."""
    assert run.code == 2, (run.code, run.err)
    assert "Traceback" not in run.err and "Traceback" not in run.out
    assert run.err.startswith(ERROR_PREFIX), run.err
    assert run.err.endswith("\n") and run.err.count("\n") == 1, f"not one line: {run.err!r}"
    for needle in needles:
        assert needle in run.err, (needle, run.err)
    return run.err


@dataclass(frozen=True)
class Inputs:
    tmp: Path
    release: Path
    history: History
    stored: Path


@dataclass(frozen=True)
class BadCase:
    """ARGS (the SOURCE and any options) and the texts the error line must hold."""

    args: list[str]
    needles: list[str]


def _broken_yaml(i: Inputs) -> BadCase:
    line = line_of("- func: add.Tensor(") + 3  # its `  variants: function, method` line
    path = edited_release(
        i.tmp / "tab", lambda ls: ls.__setitem__(line - 1, "\tvariants: function, method\n")
    )
    return BadCase([str(path)], [f"{path}:{line}: ", "invalid YAML"])


def _bad_indentation(i: Inputs) -> BadCase:
    line = line_of("- func: add.Tensor(") + 3
    path = edited_release(i.tmp / "indent", lambda ls: ls.__setitem__(line - 1, "   variants: function\n"))
    return BadCase([str(path)], [f"{path}:{line}: ", "invalid YAML"])


def _no_func(i: Inputs) -> BadCase:
    line = line_of("- func: conv2d(")
    path = edited_release(
        i.tmp / "nofunc", lambda ls: ls.__setitem__(line - 1, ls[line - 1].replace("func", "fnuc"))
    )
    return BadCase([str(path)], [f"{path}:{line}: ", "func"])


def _malformed_schema(i: Inputs) -> BadCase:
    line = line_of("- func: add.Tensor(")
    broken = "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1 -> Tensor"
    path = edited_release(i.tmp / "schema", lambda ls: ls.__setitem__(line - 1, f"- func: {broken}\n"))
    return BadCase([str(path)], [f"{path}:{line}: ", broken])


def _duplicate_operator(i: Inputs) -> BadCase:
    first = line_of("- func: conv2d(")
    at = len(release_text(VERSION).splitlines()) + 2
    copy = release_text(VERSION).splitlines(keepends=True)[first - 1]
    path = edited_release(i.tmp / "dup", lambda ls: ls.extend(["\n", copy]))
    return BadCase([str(path)], [f"{path}:{at}: ", "'conv2d'", str(first)])


def _not_utf8(i: Inputs) -> BadCase:
    path = i.tmp / "latin1" / "native_functions.yaml"
    path.parent.mkdir()
    path.write_bytes(b"- func: a(Tensor self) -> Tensor\n# caf\xe9\n- func: b(Tensor self) -> Tensor\n")
    return BadCase([str(path)], [f"{path}:2: ", "UTF-8"])


def _empty_file(i: Inputs) -> BadCase:
    path = i.tmp / "empty" / "native_functions.yaml"
    path.parent.mkdir()
    path.write_text("")
    return BadCase([str(path)], [f"{path}: "])


def _comments_only(i: Inputs) -> BadCase:
    path = i.tmp / "comments" / "native_functions.yaml"
    path.parent.mkdir()
    path.write_text("# nothing here yet\n\n")
    return BadCase([str(path)], [f"{path}: "])


def _missing_file(i: Inputs) -> BadCase:
    path = i.tmp / "absent" / "native_functions.yaml"
    return BadCase([str(path)], [f"{path}: ", "no such file"])


def _wheel_without_files(i: Inputs) -> BadCase:
    wheel = make_wheel(i.tmp / "torch-2.0.0-py3-none-any.whl", {"torch/__init__.py": ""})
    return BadCase([str(wheel)], [f"{wheel}: ", "not a torch wheel"])


def _not_a_zip(i: Inputs) -> BadCase:
    wheel = i.tmp / "torch-2.0.0-cp311-none-any.whl"
    wheel.write_bytes(b"PK\x03\x04 truncated")
    return BadCase([str(wheel)], [f"{wheel}: ", "wheel"])


def _not_pytorch_directory(i: Inputs) -> BadCase:
    directory = i.tmp / "elsewhere"
    directory.mkdir()
    (directory / "README.md").write_text("not pytorch\n")
    return BadCase([str(directory)], [f"{directory}: ", "not a PyTorch checkout"])


def _unknown_revision(i: Inputs) -> BadCase:
    return BadCase([f"{i.history.path}@v9.9.9"], [f"{i.history.path}: ", "'v9.9.9'"])


def _revision_of_non_repository(i: Inputs) -> BadCase:
    directory = i.tmp / "plain"
    directory.mkdir()
    return BadCase([f"{directory}@HEAD"], [f"{directory}: ", "not a git repository"])


def _truncated_snapshot(i: Inputs) -> BadCase:
    text = i.stored.read_text(encoding="utf-8")
    cut = text.splitlines(keepends=True)[:40]
    path = i.tmp / "truncated.json"
    path.write_text("".join(cut), encoding="utf-8")
    return BadCase([str(path)], [f"{path}:", "invalid JSON"])


def _inconsistent_snapshot(i: Inputs) -> BadCase:
    lines = i.stored.read_text(encoding="utf-8").splitlines(keepends=True)
    at = next(n for n, line in enumerate(lines, start=1) if line.startswith('  "add.Tensor": '))
    lines[at - 1] = lines[at - 1].replace('"bucket": "primitive_pointwise"', '"bucket": "misc"')
    path = i.tmp / "inconsistent.json"
    path.write_text("".join(lines), encoding="utf-8")
    return BadCase([str(path)], [f"{path}:{at}: ", "add.Tensor"])


def _not_a_snapshot(i: Inputs) -> BadCase:
    path = i.tmp / "package.json"
    path.write_text('{"name": "left-pad"}\n')
    return BadCase([str(path)], [f"{path}: ", "format_version"])


def _overrides_unknown_bucket(i: Inputs) -> BadCase:
    path = i.tmp / "overrides.yaml"
    path.write_text("reason: ours\noverrides:\n  conv2d: misc\n  add: pointwiseish\n")
    return BadCase([str(i.release), "--overrides", str(path)], [f"{path}:4: ", "'pointwiseish'"])


def _overrides_missing(i: Inputs) -> BadCase:
    path = i.tmp / "no-overrides.yaml"
    return BadCase([str(i.release), "--overrides", str(path)], [f"{path}: "])


def _overrides_broken_yaml(i: Inputs) -> BadCase:
    path = i.tmp / "overrides.yaml"
    path.write_text("overrides:\n  conv2d: misc\n\tadd: misc\n")
    return BadCase([str(i.release), "--overrides", str(path)], [f"{path}:3: "])


BAD_CASES: dict[str, Callable[[Inputs], BadCase]] = {
    "broken yaml (tab)": _broken_yaml,
    "broken yaml (indentation)": _bad_indentation,
    "entry without func": _no_func,
    "malformed schema": _malformed_schema,
    "duplicate operator": _duplicate_operator,
    "not utf-8": _not_utf8,
    "empty file": _empty_file,
    "comments only": _comments_only,
    "missing file": _missing_file,
    "wheel without the files": _wheel_without_files,
    "wheel that is not a zip": _not_a_zip,
    "directory not pytorch-shaped": _not_pytorch_directory,
    "unknown git revision": _unknown_revision,
    "revision of a non-repository": _revision_of_non_repository,
    "truncated snapshot json": _truncated_snapshot,
    "inconsistent snapshot json": _inconsistent_snapshot,
    "json that is not a snapshot": _not_a_snapshot,
    "overrides with an unknown bucket": _overrides_unknown_bucket,
    "overrides file missing": _overrides_missing,
    "overrides file not yaml": _overrides_broken_yaml,
}


@pytest.mark.parametrize("command", ["snapshot", "stats"])
@pytest.mark.parametrize("existing", [False, True], ids=["no-output-yet", "output-exists"])
@pytest.mark.parametrize("case", list(BAD_CASES))
@pytest.mark.slow
def test_bad_input_is_one_line_exit_2_and_writes_nothing(
    case: str,
    existing: bool,
    command: str,
    release: Path,
    history: History,
    stored: Path,
    tmp_path: Path,
    opdrift: Opdrift,
) -> None:
    bad = BAD_CASES[case](_inputs(tmp_path, release, history, stored))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = out_dir / "result.json"
    previous = b'{"previous": "run"}\n'
    if existing:
        target.write_bytes(previous)
    run = opdrift(command, *bad.args, "-o", str(target))
    assert_one_line_error(run, *bad.needles)
    assert run.out == ""
    if existing:
        assert target.read_bytes() == previous
    else:
        assert not target.exists()
    assert sorted(p.name for p in out_dir.iterdir()) == (["result.json"] if existing else [])


def _inputs(tmp_path: Path, release: Path, history: History, stored: Path) -> Inputs:
    directory = tmp_path / "in"
    directory.mkdir()
    return Inputs(directory, release, history, stored)


@pytest.mark.parametrize(
    "case", ["broken yaml (tab)", "malformed schema", "missing file", "overrides with an unknown bucket"]
)
def test_explain_reports_bad_input_the_same_way(
    case: str,
    release: Path,
    history: History,
    stored: Path,
    tmp_path: Path,
    opdrift: Opdrift,
) -> None:
    bad = BAD_CASES[case](_inputs(tmp_path, release, history, stored))
    source, *options = bad.args
    assert_one_line_error(opdrift("explain", "add.Tensor", source, *options), *bad.needles)


def test_output_into_a_missing_directory_is_one_line(release: Path, tmp_path: Path, opdrift: Opdrift) -> None:
    target = tmp_path / "no" / "such" / "dir" / "snap.json"
    assert_one_line_error(opdrift("snapshot", str(release), "-o", str(target)), f"{target}: ", "cannot write")
    assert not (tmp_path / "no").exists()


def test_empty_output_name_is_one_clear_line(
    release: Path, tmp_path: Path, opdrift: Opdrift, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # where an empty name would land if it were taken as "."
    err = assert_one_line_error(opdrift("snapshot", str(release), "-o", ""))
    assert not err.startswith(f"{ERROR_PREFIX}: "), err  # an empty path must not print as ": ..."
    assert list(tmp_path.iterdir()) == []


def test_unknown_key_is_kept_and_not_fatal(release: Path, tmp_path: Path, opdrift: Opdrift) -> None:
    line = line_of("- func: add.Tensor(")
    path = edited_release(tmp_path, lambda ls: ls.insert(line, "  frobnicate: True\n"))
    out = tmp_path / "snap.json"
    run = opdrift("snapshot", str(path), "-o", str(out))
    assert run.code == 0 and "Traceback" not in run.err
    # the entry is still classified like the untouched release's
    plain = stats_json(opdrift("stats", str(release), "--format", "json"))
    edited = stats_json(opdrift("stats", str(out), "--format", "json"))
    assert figures(edited) == figures(plain)
    # the key is kept on the operator (the snapshot format has no place for it)
    ops = pipeline.operators_from_files(sources.read_source(str(path)))
    add = next(op for op in ops.operators if op.name == "add.Tensor")
    assert add.unknown_keys == (("frobnicate", "True"),)
    assert ops.warnings == (f"{path}:{line}: unknown key 'frobnicate' kept",)


def test_unknown_key_warning_reaches_stderr(tmp_path: Path, opdrift: Opdrift) -> None:
    line = line_of("- func: add.Tensor(")
    path = edited_release(tmp_path, lambda ls: ls.insert(line, "  frobnicate: True\n"))
    for argv in (["snapshot", str(path), "-o", str(tmp_path / "s.json")], ["stats", str(path)]):
        run = opdrift(*argv)
        assert run.code == 0
        assert run.err.count("\n") == 1 and "warning" in run.err.lower(), run.err
        assert f"{path}:{line}: " in run.err and "frobnicate" in run.err


@pytest.mark.parametrize(
    "field",
    [
        'variants: "func\\ntion"',
        'structured: "yes\\nno"',
        'structured_delegate: "x\\ny"',
        'autogen: "a\\nb"',
        'device_check: "a\\nb"',
    ],
)
def test_a_value_holding_a_line_break_still_gives_one_line(
    field: str, tmp_path: Path, opdrift: Opdrift
) -> None:
    path = tmp_path / "native_functions.yaml"
    path.write_text(f"- func: a(Tensor self) -> Tensor\n  {field}\n")
    assert_one_line_error(opdrift("stats", str(path)), f"{path}:1: ")


# --- hostile input ---------------------------------------------------------------------------------


def test_unicode_in_comments_defaults_and_kernels_is_read(tmp_path: Path, opdrift: Opdrift) -> None:
    path = tmp_path / "native_functions.yaml"
    path.write_text(
        "# Grüße: ünïcödé comments are common in real files\n"
        '- func: pad_mode(Tensor self, str mode="réflexion") -> Tensor\n'
        "  dispatch:\n"
        "    CPU: pad_kernel_ø\n"
        "# 注释 (a comment in Chinese)\n"
        '- func: pad_mode.out(Tensor self, str mode="réflexion", *, Tensor(a!) out) -> Tensor(a!)\n'
        "  dispatch:\n"
        "    CPU: pad_out_ø\n",
        encoding="utf-8",
    )
    data = stats_json(opdrift("stats", str(path), "--format", "json"))
    assert (data["entries"], data["operators"], data["base_operators"], data["out_overloads"]) == (2, 2, 1, 1)
    run = opdrift("explain", "pad_mode", str(path))
    assert run.code == 0 and 'str mode="réflexion"' in run.out
    snap = tmp_path / "s.json"
    assert opdrift("snapshot", str(path), "-o", str(snap)).code == 0
    snap.read_bytes().decode("ascii")  # stored escaped: a snapshot is plain ASCII whatever the input
    assert stats_json(opdrift("stats", str(snap), "--format", "json")) == data


@pytest.mark.parametrize("name", ["café", "加法", "a\u200bb", "\uff41\uff44\uff44"])
def test_non_ascii_operator_names_are_a_clear_error(name: str, tmp_path: Path, opdrift: Opdrift) -> None:
    # ATen operator names are C++ identifiers; a name that is not one cannot be registered.
    path = tmp_path / "native_functions.yaml"
    path.write_text(
        f"- func: ok(Tensor self) -> Tensor\n- func: {name}(Tensor self) -> Tensor\n", encoding="utf-8"
    )
    target = tmp_path / "out.json"
    # the name is quoted with repr(), so an invisible character shows as an escape
    assert_one_line_error(opdrift("snapshot", str(path), "-o", str(target)), f"{path}:2: ", repr(name)[1:-1])
    assert not target.exists()


def test_non_ascii_operator_asked_of_explain(release: Path, opdrift: Opdrift) -> None:
    assert_one_line_error(opdrift("explain", "加法.Tensor", str(release)), "加法.Tensor")


def test_very_long_names_are_counted_and_explained(tmp_path: Path, opdrift: Opdrift) -> None:
    long = "x" * 100_000
    path = tmp_path / "native_functions.yaml"
    path.write_text(
        f"- func: {long}(Tensor self) -> Tensor\n"
        "  dispatch:\n"
        "    CPU: k\n"
        f"- func: {long}.{'o' * 50_000}(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n"
        "  dispatch:\n"
        "    CPU: k_out\n"
        f"- func: {long}y_(Tensor(a!) self) -> Tensor(a!)\n"
        "  dispatch:\n"
        "    CPU: k_\n"
    )
    data = stats_json(opdrift("stats", str(path), "--format", "json"))
    assert (data["entries"], data["operators"], data["base_operators"], data["overloads"]) == (3, 3, 2, 1)
    by_category = data["by_category"]
    assert isinstance(by_category, dict) and by_category["inplace"] == 1
    run = opdrift("explain", long, str(path))
    assert run.code == 0 and run.out.startswith(f"{long}  (base operator {long}: 2 registered operators)")


def _big_native_functions(path: Path, target_bytes: int) -> int:
    """Write a native_functions.yaml of at least TARGET_BYTES: unique entries under long comment blocks.

    Comment blocks and long names make up the size, so that the file is as big as a hostile one while
    the entry count stays near 25 000 (10x the real file), keeping the run to seconds.
    """
    comment = "# " + "lorem ipsum dolor sit amet " * 4 + "\n"
    block = comment * 16
    parts: list[str] = []
    size = n = 0
    while size < target_bytes:
        name = f"hostile_{n:06d}_" + "z" * 200
        entry = f"{block}- func: {name}(Tensor self, int dim=-1) -> Tensor\n  dispatch:\n    CPU: k{n}\n\n"
        parts.append(entry)
        size += len(entry)
        n += 1
    path.write_text("".join(parts), encoding="ascii")
    return n


@pytest.mark.slow
def test_a_50_mb_file_is_read_with_correct_counts(tmp_path: Path, opdrift: Opdrift) -> None:
    path = tmp_path / "native_functions.yaml"
    n = _big_native_functions(path, 50 * 1024 * 1024)
    assert path.stat().st_size >= 50 * 1024 * 1024
    start = time.monotonic()
    data = stats_json(opdrift("stats", str(path), "--format", "json"))
    elapsed = time.monotonic() - start
    assert (data["entries"], data["operators"], data["base_operators"], data["overloads"]) == (n, n, n, 0)
    by_category = data["by_category"]
    assert isinstance(by_category, dict) and sum(by_category.values()) == n
    # not a timing assertion (bench/ does that): a guard against an accidental quadratic blow-up
    assert elapsed < 120, elapsed


def test_a_file_over_the_size_limit_is_refused_without_reading_it(tmp_path: Path, opdrift: Opdrift) -> None:
    path = tmp_path / "native_functions.yaml"
    with path.open("wb") as f:
        f.truncate(sources.MAX_FILE_BYTES + 1)  # sparse: costs no disk, and must not be read
    target = tmp_path / "out.json"
    err = assert_one_line_error(
        opdrift("snapshot", str(path), "-o", str(target)),
        f"{path}: ",
        f"{sources.MAX_FILE_BYTES}-byte limit",
    )
    assert str(sources.MAX_FILE_BYTES + 1) in err
    assert not target.exists()


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["frobnicate"],
        ["snapshot"],
        ["stats"],
        ["explain", "add"],
        ["stats", "x.yaml", "--format", "xml"],
        ["snapshot", "x.yaml", "--no-such-option"],
    ],
    ids=[
        "nothing",
        "unknown-command",
        "snapshot-no-source",
        "stats-no-source",
        "explain-no-source",
        "bad-format",
        "bad-option",
    ],
)
def test_usage_errors_exit_2_through_argparse(argv: list[str], opdrift: Opdrift) -> None:
    run = opdrift(*argv)
    assert run.code == 2
    assert run.out == "" and "Traceback" not in run.err
    # One line, like every other error: no usage block before it.
    assert run.err.startswith("opdrift: error: ") and run.err.count("\n") == 1, run.err


_MISTYPED = (
    ("stat", "x.yaml"),
    ("stats", "x.yaml", "--format", "xml"),
    ("stats", "x.yaml", "--formatt=json"),
)


def test_a_mistyped_command_or_option_gets_a_did_you_mean(
    opdrift: Opdrift, request: pytest.FixtureRequest
) -> None:
    """A mistyped command (`stat`) or option (`--formatt`) names the one meant, not only "invalid choice"
    or "unrecognized arguments"; a wrong choice lists the choices. The wording is the golden file's."""
    said = ""
    for argv in _MISTYPED:
        run = opdrift(*argv)
        assert run.code == 2 and run.out == "" and run.err.count("\n") == 1, run.err
        said += f"$ opdrift {' '.join(argv)}\n{run.err}"
    check_golden("cli-usage-errors.txt", said, updating(request))
    assert said.count("did you mean") == 2
    assert "did you mean" not in opdrift("stats", "x.yaml", "--zzz").err


def test_main_builds_only_the_command_it_runs(
    release: Path, opdrift: Opdrift, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`opdrift stats FILE` builds the parser of stats alone: adding every command's arguments cost a
    whole `stats` run more than counting and printing its table."""
    import argparse

    from opdrift.cli import app

    real = app.build_parser
    built: list[argparse.ArgumentParser] = []

    def recording(command: str | None = None) -> argparse.ArgumentParser:
        built.append(real(command))
        return built[-1]

    monkeypatch.setattr(app, "build_parser", recording)
    assert opdrift("stats", str(release)).code == 0
    [commands] = [a for a in built[0]._actions if isinstance(a, argparse._SubParsersAction)]
    assert list(commands.choices) == ["stats"]


@pytest.mark.parametrize("argv", [["--help"], ["-h", "stats"]])
def test_top_level_help_lists_every_command(argv: list[str], opdrift: Opdrift) -> None:
    """Help before a command is the top level's, with every command (the mistyped ones: above)."""
    from opdrift.cli.registry import COMMANDS

    run = opdrift(*argv)
    assert run.code == 0
    listed = {ln.split()[0] for ln in run.out.splitlines() if ln.startswith("    ") and ln[4] != " "}
    assert [c.name for c in COMMANDS if c.name not in listed] == []


# --- as a process: python -m opdrift, and python -O -m bot --------------------------------------------------


def test_python_m_bot_prints_what_main_prints(release: Path, opdrift: Opdrift) -> None:
    in_process = opdrift("stats", str(release), "--format", "json")
    process = opdrift_process("stats", str(release), "--format", "json")
    assert (
        (process.code, process.out, process.err)
        == (in_process.code, in_process.out, in_process.err)
        == (
            0,
            in_process.out,
            "",
        )
    )


@pytest.mark.parametrize("optimize", [False, True], ids=["python", "python-O"])
@pytest.mark.slow
def test_errors_as_a_process_with_and_without_asserts(optimize: bool, tmp_path: Path) -> None:
    # `python -O` strips asserts: validation that relied on them would let these through.
    line = line_of("- func: add.Tensor(")
    broken = "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1 -> Tensor"
    schema = edited_release(tmp_path / "schema", lambda ls: ls.__setitem__(line - 1, f"- func: {broken}\n"))
    nofunc = edited_release(
        tmp_path / "nofunc", lambda ls: ls.__setitem__(line - 1, ls[line - 1].replace("func", "fnuc"))
    )
    target = tmp_path / "out.json"
    for path, needles in ((schema, [f"{schema}:{line}: ", broken]), (nofunc, [f"{nofunc}:{line}: "])):
        run = opdrift_process("snapshot", str(path), "-o", str(target), optimize=optimize)
        assert_one_line_error(run, *needles)
        assert not target.exists()
    usage = opdrift_process("explain", optimize=optimize)
    assert (
        usage.code == 2 and usage.err.startswith("opdrift: error: explain: ") and "Traceback" not in usage.err
    )


def test_every_option_and_argument_has_help() -> None:
    """`opdrift COMMAND --help` explains every option: an option without help shows only its name."""
    import argparse

    from opdrift.cli.app import build_parser

    missing: list[str] = []
    for action in build_parser()._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        for command, sub in action.choices.items():
            for option in sub._actions:
                if not option.help:
                    missing.append(f"{command} {'/'.join(option.option_strings) or option.dest}")
    assert missing == []


def test_every_source_help_names_the_gh_sources_once() -> None:
    """Each command that takes a SOURCE reads gh: specs too (opdrift.cli.common.read_any_source): its help
    says so, once, in the shared text."""
    import argparse

    from opdrift.cli.app import build_parser
    from opdrift.cli.options import SOURCE_HELP

    forms = ("gh:OWNER/NAME@REF", "gh:OWNER/NAME#PR ", "gh:OWNER/NAME#PR:merge-base")
    with_help = set()
    for action in build_parser()._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        for command, sub in action.choices.items():
            if sub.epilog != SOURCE_HELP:
                continue
            with_help.add(command)
            text = " ".join(sub.format_help().split())
            for form in forms:
                assert text.count(form) == 1, (command, form)
    assert {"snapshot", "stats", "explain", "diff", "comment", "issue", "coverage", "site"} <= with_help


# --- parse warnings in reports ---------------------------------------------------------------------


def _warned_release(directory: Path) -> tuple[Path, int, int]:
    """2.14.1 with a hostile unknown key on add.Tensor and an undefined tag on relu; (path, the lines of
    their entries in the edited file)."""
    add = line_of("- func: add.Tensor(")
    relu = line_of("- func: relu(Tensor self)")
    relu_tags = next(
        n for n, ln in enumerate(release_text(VERSION).splitlines()[relu:], relu) if ln.startswith("  tags:")
    )

    def edit(lines: list[str]) -> None:
        lines[relu_tags] = "  tags: [core, pointwise, not_a_tag]\n"
        lines.insert(add, "  frobnicate: '@octocat [x](https://e.com) <b>'\n")

    path = edited_release(directory, edit)
    (directory / "tags.yaml").write_text(release_text(VERSION, "tags.yaml"))
    return path, add, relu + 1


@pytest.mark.slow
def test_diff_reports_the_warnings_head_has_and_base_had_not(
    release: Path, tmp_path: Path, opdrift: Opdrift, request: pytest.FixtureRequest
) -> None:
    head, add_line, relu_line = _warned_release(tmp_path / "head")
    run = opdrift("diff", str(release), str(head), "--format", "json")
    assert run.code == 0, run.err
    warnings = json.loads(run.out)["warnings"]
    assert [(w["line"], w["more"]) for w in warnings] == [(add_line, 0), (relu_line, 0)]
    assert "'frobnicate'" in warnings[0]["message"] and "'not_a_tag'" in warnings[1]["message"]
    said = "".join(f"{w['message']}\n" for w in warnings)
    check_golden_entry("warnings.lines.txt", "diff: head's new warnings", said, updating(request))
    comment = opdrift("diff", str(release), str(head), "--format", "pr-comment").out
    assert str(tmp_path) not in comment  # the runner's path of the file stays out of what is posted
    assert "### 🧐 HEAD's native_functions.yaml: 2 warnings" in comment
    assert f"line {add_line}: unknown key 'frobnicate' kept" in comment
    text = opdrift("diff", str(release), str(head)).out
    assert "WARNINGS AT HEAD (2)" in text and f"line {relu_line}: tag 'not_a_tag'" in text
    # The same warnings on both sides are not news, wherever their lines moved.
    same = json.loads(opdrift("diff", str(head), str(head), "--format", "json").out)
    assert same["warnings"] == []
    clean = opdrift("diff", str(release), str(release), "--format", "pr-comment").out
    assert "🧐" not in clean


def test_a_message_on_many_lines_is_listed_once_with_a_count() -> None:
    from opdrift.drift.warnings import SourceWarning, new_warnings

    head = [f"f.yaml:{n}: unknown key 'grad_mode' kept" for n in (10, 20, 30)] + [
        "f.yaml:40: tag 'x' is not defined"
    ]
    assert new_warnings(head, "f.yaml") == (
        SourceWarning(10, "unknown key 'grad_mode' kept", more=2),
        SourceWarning(40, "tag 'x' is not defined"),
    )
    base = ["g.yaml:7: unknown key 'grad_mode' kept"]
    assert new_warnings(head, "f.yaml", base, "g.yaml") == (SourceWarning(40, "tag 'x' is not defined"),)
    # a message without this file's location keeps its text, with the file's name in place of its path
    assert new_warnings(["/runner/f.yaml: something"], "/runner/f.yaml") == (
        SourceWarning(None, "native_functions.yaml: something"),
    )


@pytest.mark.slow
def test_warnings_survive_stored_snapshots_as_the_action_diffs_them(
    release: Path, tmp_path: Path, opdrift: Opdrift
) -> None:
    head, add_line, relu_line = _warned_release(tmp_path / "head")
    base_json, head_json = tmp_path / "base.json", tmp_path / "head.json"
    assert opdrift("snapshot", str(release), "-o", str(base_json)).code == 0
    assert opdrift("snapshot", str(head), "-o", str(head_json)).code == 0
    report = json.loads(opdrift("diff", str(base_json), str(head_json), "--format", "json").out)
    assert [w["line"] for w in report["warnings"]] == [add_line, relu_line]
    # HEAD's warnings stored in BASE are old news, whether BASE is a snapshot or the file itself
    for base in (head_json, head):
        again = json.loads(opdrift("diff", str(base), str(head_json), "--format", "json").out)
        assert again["warnings"] == []


def test_an_old_clash_is_not_new_when_an_edit_moves_its_lines(tmp_path: Path, opdrift: Opdrift) -> None:
    """1.12.0 holds 44 autogen clashes (our 2.x grouping); a comment added on top moves every line."""
    base = write_release("1.12.0", tmp_path / "base")
    head = tmp_path / "head" / "native_functions.yaml"
    head.parent.mkdir()
    head.write_text("# a comment on top\n" + base.read_text())
    run = opdrift("diff", str(base), str(head), "--format", "json")
    # stderr shows the first few of each side's 44 and says how many more there are
    assert run.code == 0 and run.err.count("does not group") == 2 * MAX_SHOWN_WARNINGS
    assert run.err.count(f"and {44 - MAX_SHOWN_WARNINGS} more warnings of this parse") == 2
    assert json.loads(run.out)["warnings"] == []
