"""Hostile inputs a fork's pull request controls (YAML, snapshots, configs, paths): each ends fast, in
one `opdrift: error:` line (exit 2) or a normal run with a warning, never a traceback."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from clirun import ROOT, Opdrift, Run, opdrift_process
from datafiles import release_text
from goldens import check_golden_entry, updating
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opdrift.errors import OpdriftError, SchemaError, SnapshotError, YamlError
from opdrift.model import DERIVATIVES_PATH, NATIVE_PATH, TAGS_PATH, TextFile
from opdrift.operators.native import read_derivatives
from opdrift.schema.grammar import parse_schema
from opdrift.signals.pyside import read_python_side
from opdrift.site.model import SiteRelease, file_name
from opdrift.site.write import MARKER, write_site
from opdrift.snapshot import from_json
from opdrift.yamltext import check_unique_keys, value_error

# Seconds a reader may take on one hostile input: five times what a reader bounded in time needs on a
# loaded 2-core machine, and far below what the unbounded readers took (an alias bomb expands to 10^9
# nodes; the quadratic patterns rescan 200,000 characters once per character). A bound that catches a
# blow-up and cannot flake on shared cores; timings are bench/'s.
BUDGET = 10.0

NATIVE = (
    "- func: abs(Tensor self) -> Tensor\n"
    "  variants: function, method\n"
    "  dispatch:\n"
    "    CPU: abs_cpu\n"
    "- func: neg(Tensor self) -> Tensor\n"
)
# Nine levels of ten aliases each: 500 bytes that reach 10^9 nodes through the aliases.
BOMB = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 10)
)


def _indented(text: str) -> str:
    return "  " + text.rstrip("\n").replace("\n", "\n  ") + "\n"


def checkout(root: Path, files: dict[str, str]) -> str:
    """A PyTorch checkout holding NATIVE (unless FILES replaces it) and FILES."""
    for path, text in {NATIVE_PATH: NATIVE, **files}.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return str(root)


def timed(opdrift: Opdrift, *argv: str) -> tuple[Run, float]:
    start = time.perf_counter()
    run = opdrift(*argv)
    return run, time.perf_counter() - start


def one_error_line(run: Run) -> str:
    assert run.code == 2, run
    assert "Traceback" not in run.err
    lines = run.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("opdrift: error: "), run.err
    assert len(lines[0]) < 1000  # a line a person reads, however long the hostile text it quotes
    return lines[0]


# --- alias bombs and quadratic patterns ---------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [NATIVE_PATH, TAGS_PATH],
)
def test_alias_bomb_is_refused_fast(opdrift: Opdrift, tmp_path: Path, path: str) -> None:
    if path == NATIVE_PATH:
        text = "- func: foo(Tensor self) -> Tensor\n" + _indented(BOMB) + "  when: 2026-02-30\n"
    else:
        text = "- tag: core\n" + _indented(BOMB) + "  when: 2026-02-30\n"
    assert len(text) < 700
    run, took = timed(opdrift, "stats", checkout(tmp_path, {path: text}))
    line = one_error_line(run)
    assert f"{path}:3: YAML anchors and aliases are not allowed" in line
    assert took < BUDGET


def test_value_error_and_unique_keys_visit_each_node_once() -> None:
    text = BOMB + "when: 2026-02-30\nwhen: 2026-02-28\n"
    start = time.perf_counter()
    err = value_error(ValueError("day is out of range for month"), text, "f.yaml")
    assert err.line == 11
    with pytest.raises(YamlError, match="duplicate key 'when'"):
        check_unique_keys(yaml.compose(text, Loader=yaml.SafeLoader), "f.yaml")
    assert time.perf_counter() - start < BUDGET


def test_config_files_refuse_aliases(tmp_path: Path) -> None:
    allow = tmp_path / "allow.yaml"
    allow.write_text("acknowledged: &a\n  - x\nagain: *a\n", encoding="utf-8")
    from opdrift.drift.allowlist import load_allowlist

    with pytest.raises(OpdriftError, match="aliases are not allowed"):
        load_allowlist(str(allow))


@pytest.mark.parametrize(
    "tail",
    [" " * 200_000 + "x", " " * 200_000 + "\t#", "  #" + " " * 200_000 + "x"],
    ids=["spaces-then-text", "spaces-then-comment", "comment-then-spaces"],
)
def test_derivatives_long_line_is_linear(tail: str) -> None:
    text = "- name: abs(Tensor self) -> Tensor" + tail + "\n  self: grad\n"
    start = time.perf_counter()
    if "#" not in tail:
        with pytest.raises(SchemaError) as info:
            read_derivatives(TextFile(display="derivatives.yaml", text=text))
        assert info.value.line == 1
    else:
        assert read_derivatives(TextFile(display="derivatives.yaml", text=text)) == frozenset({"abs"})
    assert time.perf_counter() - start < BUDGET


def test_derivatives_of_a_release_still_read() -> None:
    text = release_text("2.14.1", "derivatives.yaml")
    names = read_derivatives(TextFile(display="d", text=text))
    assert {"abs", "mm"} <= names and len(names) > 600


def test_overrides_many_newlines_are_linear() -> None:
    text = (
        "\n" * 240_000
        + "    torch.concat: lambda tensors, dim=0: -1,  # alias for torch.cat\n"
        + " \n" * 120_000
    )
    start = time.perf_counter()
    signals, warnings = read_python_side([("torch/overrides.py", "o.py", text)], "t")
    assert time.perf_counter() - start < BUDGET
    assert signals.aliases["concat"].target == "cat" and not warnings


def test_derivatives_line_in_a_checkout_ends_fast(opdrift: Opdrift, tmp_path: Path) -> None:
    derivatives = "- name: abs(Tensor self) -> Tensor" + " " * 200_000 + "x\n  self: grad\n"
    run, took = timed(opdrift, "stats", checkout(tmp_path, {DERIVATIVES_PATH: derivatives}))
    assert f"{DERIVATIVES_PATH}:1: malformed schema" in one_error_line(run)
    assert took < BUDGET


# --- deep nesting ------------------------------------------------------------------------------


def test_deeply_nested_type_is_a_schema_error(opdrift: Opdrift, tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="nested more than 16 deep"):
        parse_schema("foo(Tensor" + "?" * 1000 + " self) -> Tensor")
    native = "- func: foo(Tensor" + "?" * 1000 + " self) -> Tensor\n"
    run, took = timed(opdrift, "stats", checkout(tmp_path, {NATIVE_PATH: native}))
    assert f"{NATIVE_PATH}:1: malformed schema" in one_error_line(run)
    assert took < BUDGET
    # What PyTorch writes still parses.
    assert str(parse_schema("f(Tensor?[] a, int[]? b) -> Tensor")) == "f(Tensor?[] a, int[]? b) -> Tensor"


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("torch/_refs/__init__.py", "x = " + "+".join(["1"] * 3000) + "\n"),
        ("torch/_decomp/decompositions.py", "x = " + "-" * 10_000 + "1\n"),
    ],
    ids=["refs-3000-terms", "decomp-10000-minus"],
)
def test_python_side_too_deep_is_a_warning(
    opdrift: Opdrift, tmp_path: Path, path: str, text: str, request: pytest.FixtureRequest
) -> None:
    root = checkout(tmp_path, {path: text})
    run, took = timed(opdrift, "stats", root)
    assert run.code == 0 and "Traceback" not in run.err, run
    (line,) = [x for x in run.err.splitlines() if f"{path}:1: " in x]  # one warning, at the file's line
    said = line.replace(root, "SOURCE") + "\n"
    check_golden_entry("warnings.lines.txt", f"python side too deep: {path}", said, updating(request))
    assert took < BUDGET


# --- a snapshot's values are checked before use --------------------------------------------------

SHIPPED = Path(__file__).resolve().parents[2] / "snapshots" / "v2.15.0.json"


def _edited_snapshot(edit: Callable[[dict[str, Any]], None]) -> str:
    data = json.loads(SHIPPED.read_text(encoding="utf-8"))
    edit(data)
    return json.dumps(data, indent=1)


def _facet(name: str, key: str, value: object) -> Callable[[dict[str, Any]], None]:
    return lambda d: d["operators"][name]["facets"].__setitem__(key, value)


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (_facet("abs", "structured_delegate", "nope.out"), "structured_delegate: names no operator"),
        (_facet("abs", "alias_of", "nope"), "alias_of: names no base operator"),
        (_facet("abs", "composite", "CompositeMagic"), "unknown composite kind 'CompositeMagic'"),
        (_facet("abs", "variants", ["function", "operator"]), "unknown variant 'operator'"),
        (lambda d: d["operators"]["abs"].__setitem__("line", 10**30), "is past the end"),
        (lambda d: d["source"].__setitem__("date", "yesterday"), "expected an ISO 8601 date"),
        (lambda d: d["source"].__setitem__("commit", "../../evil"), "expected a full hex commit sha"),
        (lambda d: d["source"].__setitem__("torch_version", "2/../../x"), "expected a version"),
    ],
    ids=["delegate", "alias", "composite", "variant", "line", "date", "commit", "version"],
)
@pytest.mark.slow
def test_snapshot_refuses_inconsistent_values(
    opdrift: Opdrift, tmp_path: Path, edit: Callable[[dict[str, Any]], None], needle: str
) -> None:
    path = tmp_path / "snap.json"
    path.write_text(_edited_snapshot(edit), encoding="utf-8")
    with pytest.raises(SnapshotError, match=re.escape(needle)):
        from_json(path.read_text(encoding="utf-8"), str(path))
    assert needle in one_error_line(opdrift("stats", str(path)))


def test_site_links_only_a_sha_or_a_release_tag() -> None:
    assert SiteRelease("x", "../../evil", NATIVE_PATH).line_url(3) is None
    assert SiteRelease("x", "v2.14.1", NATIVE_PATH).line_url(3) == (
        f"https://github.com/pytorch/pytorch/blob/v2.14.1/{NATIVE_PATH}#L3"
    )
    assert SiteRelease("x", "a" * 40, NATIVE_PATH).line_url(3) is not None


def test_snapshot_with_a_real_commit_and_date_loads() -> None:
    def edit(d: dict[str, Any]) -> None:
        d["source"].update(commit="a" * 40, date="2026-02-27T10:00:00+01:00")

    snap = from_json(_edited_snapshot(edit), "snap.json")
    assert snap.meta.commit == "a" * 40


def test_snapshot_schema_nested_deep_is_one_error(opdrift: Opdrift, tmp_path: Path) -> None:
    def edit(d: dict[str, Any]) -> None:
        d["operators"]["abs"]["schema"] = "abs(Tensor" + "?" * 1000 + " self) -> Tensor"

    path = tmp_path / "snap.json"
    path.write_text(_edited_snapshot(edit), encoding="utf-8")
    assert "nested more than 16 deep" in one_error_line(opdrift("stats", str(path)))


# --- a kill at the worst moment leaves the old output or the new, and no lasting leftovers -------------


def _killed_at(point: str, *argv: str) -> None:
    """Run `opdrift ARGV` as a process, stopped at POINT (tests/killpoint.py), and kill it there (SIGKILL)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTHON"))}
    env |= {"PYTHONPATH": str(ROOT)}
    harness = [sys.executable, str(ROOT / "tests" / "killpoint.py"), point]
    proc = subprocess.Popen([*harness, *argv], stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    try:
        assert proc.stderr is not None
        seen = []  # a warning may come first; the pause line must come before the process ends
        while (line := proc.stderr.readline()) not in ("", f"opdrift: paused at {point}\n"):
            seen.append(line)
        assert line, "".join(seen)
    finally:
        proc.kill()
        proc.wait(timeout=60)
        if proc.stderr is not None:
            proc.stderr.close()


@pytest.mark.slow
def test_killed_site_builds_always_leave_a_site(tmp_path: Path) -> None:
    out = tmp_path / "site"
    old_release, new_release = str(SHIPPED.with_name("v2.14.1.json")), str(SHIPPED)
    assert opdrift_process("site", "-o", str(out), old_release).code == 0
    before = (out / "index.html").read_bytes()
    for point in ("site-swap", "site-cleanup"):
        _killed_at(point, "site", "-o", str(out), old_release, new_release)
        assert (out / MARKER).is_file() and (out / "index.html").is_file()
    # Killed after the swap: the new site is in place.
    assert (out / "index.html").read_bytes() != before
    run = opdrift_process("site", "-o", str(out), old_release)
    assert run.code == 0, run.err
    assert (out / "index.html").read_bytes() == before
    beside = sorted(p.name for p in tmp_path.iterdir())
    assert beside == sorted([os.readlink(out), "site"]), beside


def test_a_site_from_an_older_opdrift_is_replaced(tmp_path: Path) -> None:
    out = tmp_path / "site"
    out.mkdir()
    (out / MARKER).write_text("old\n")
    (out / "stale.html").write_text("old\n")
    write_site(out, {"index.html": b"new"})
    assert out.is_symlink() and (out / "index.html").read_bytes() == b"new"
    assert not (out / "stale.html").exists() and len(list(tmp_path.iterdir())) == 2


def test_killed_snapshot_write_leaves_the_old_file_and_no_lasting_temp(tmp_path: Path) -> None:
    source = tmp_path / "src"
    checkout(source, {})
    target = tmp_path / "snap.json"
    target.write_text("old\n")
    _killed_at("snapshot-rename", "snapshot", str(source), "-o", str(target))
    assert target.read_text() == "old\n"
    assert len(list(tmp_path.glob(".snap.json.*.tmp"))) == 1  # what the kill left
    assert opdrift_process("snapshot", str(source), "-o", str(target)).code == 0
    assert json.loads(target.read_text())["format_version"] == 2
    assert list(tmp_path.glob(".snap.json.*")) == []


# --- every operator name makes a file name ---------------------------------------------------------


def test_site_with_a_300_character_name_and_a_case_collision(opdrift: Opdrift, tmp_path: Path) -> None:
    long = "x" * 300
    native = "".join(
        f"- func: {name}(Tensor self) -> Tensor\n" for name in ("Foo", "foo", long, "_cast_Byte")
    )
    source = checkout(tmp_path / "src", {NATIVE_PATH: native})
    out = tmp_path / "site"
    run = opdrift("site", "-o", str(out), source)
    assert run.code == 0, run.err
    pages = [p.name for p in (out / "ops").iterdir()]
    assert len(pages) == 4 and len({p.casefold() for p in pages}) == 4
    assert max(len(p) for p in pages) <= 255
    assert {"foo.html", "-foo.html", "_cast_-byte.html"} <= set(pages)
    index = (out / "index.html").read_text(encoding="utf-8")
    assert all(f"ops/{p}" in index for p in pages)
    assert file_name(long) == file_name(long) != file_name("x" * 299 + "y")


# --- alias bombs and deep nesting in a history walk: each hostile commit is recorded, the walk goes on --


def _history(dest: Path, texts: list[str]) -> list[str]:
    """A repository whose native_functions.yaml goes through TEXTS, one commit each; their shas."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env |= {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@localhost"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@localhost"}

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(dest), *args], check=True, capture_output=True, env=env, text=True
        )
        return done.stdout.strip()

    (dest / NATIVE_PATH).parent.mkdir(parents=True)
    git("init", "-q", "-b", "main")
    shas = []
    for i, text in enumerate(texts):
        (dest / NATIVE_PATH).write_text(text, encoding="utf-8")
        git("add", "-A")
        env |= {
            "GIT_AUTHOR_DATE": f"@{1700000000 + i} +0000",
            "GIT_COMMITTER_DATE": f"@{1700000000 + i} +0000",
        }
        git("commit", "-qm", f"step {i}")
        shas.append(git("rev-parse", "HEAD"))
    return shas


def test_history_keep_going_over_hostile_commits(
    opdrift: Opdrift, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    bomb = NATIVE + "- func: foo(Tensor self) -> Tensor\n" + _indented(BOMB) + "  when: 2026-02-30\n"
    nested = NATIVE + "- func: foo(Tensor" + "?" * 1000 + " self) -> Tensor\n"
    fixed = NATIVE + "- func: foo(Tensor self) -> Tensor\n"
    shas = _history(tmp_path / "repo", [NATIVE, bomb, nested, fixed])
    run, took = timed(opdrift, "history", str(tmp_path / "repo"), "--keep-going", "--format", "csv")
    assert run.code == 0 and "Traceback" not in run.err, run
    first = run.err.splitlines()[0]
    assert first.startswith("opdrift: skipped 2 commit(s) ")
    check_golden_entry("warnings.lines.txt", "history: skipped commits", first + "\n", updating(request))
    rows = run.out.strip().splitlines()
    assert len(rows) == 5  # the header and one row per commit
    assert all(any(sha in row for row in rows) for sha in shas)
    assert took < 4 * BUDGET


# --- the general net: every reader, random and adversarial bytes ----------------------------------

# What the readers meet in the worst case: each reproduction above, and their kin.
ADVERSARIAL = [
    BOMB,
    "- func: foo(Tensor" + "?" * 1000 + " self) -> Tensor\n",
    " " * 50_000 + "x",
    "\n" * 60_000,
    "x = " + "+".join(["1"] * 3000),
    "x = " + "-" * 10_000,
    "[" * 5000,
    "{" * 5000,
    "- " * 3000,
    "1" * 5000,
    '"' * 1000,
    "&a [*a, *a]",
    "<<: *a",
    "\x00",
    "\ufeff",
    "\r",
    "\t",
    "#" * 100,
    "torch.x: lambda" + "# " * 5000,
]
TOKENS = [
    "- ",
    ": ",
    "func",
    "name",
    "tag",
    "Tensor",
    "(",
    ")",
    "->",
    "?",
    "[]",
    "\n",
    "  ",
    "#",
    "'",
    '"',
    "{",
    "}",
    "[",
    "]",
    ",",
    "*",
    "&",
    "!",
    "|",
    ">",
    "%",
    "@",
    "`",
    "2026-02-30",
    "null",
    "1",
    "-1",
    "1e400",
    "def ",
    "import ",
    "return ",
    "torch.",
    "aten.",
    "lambda",
    "alias for",
    '{"',
    '": ',
    "true",
    "\\u0000",
]
# A valid start for each reader, so that the bytes also land past the first line's checks.
BASES = {
    "native": NATIVE,
    "tags": "- tag: core\n  desc: x\n",
    "derivatives": "- name: abs(Tensor self) -> Tensor\n  self: grad * self.sgn()\n",
    "python": "def f(a):\n    return torch.exp(a)\n",
    "snapshot": "",  # filled from a real run (the fixture below)
    "backend": "abs\nneg\n",
    "config": "subscriptions: []\n",
    "allowlist": "acknowledged: []\n",
    "overrides": "abs: misc\n",
    "cache": '{"operators": 1}',
}
BACKEND_FILES = {
    "text": "ops.txt",
    "xla": "xla_native_functions.yaml",
    "xpu": "xpu_functions.yaml",
    "op-plugin": "op_plugin_functions.yaml",
    "torch-mlir": "GeneratedTorchOps.td",
}


def _content() -> st.SearchStrategy[bytes]:
    text = st.one_of(
        st.lists(st.sampled_from(TOKENS), max_size=60).map("".join),
        st.sampled_from(ADVERSARIAL),
        st.text(max_size=200),
    )
    return st.one_of(
        st.binary(max_size=400),
        text.map(lambda t: t.encode("utf-8", "surrogatepass")),
        st.tuples(st.sampled_from(ADVERSARIAL), st.integers(0, 3)).map(
            lambda p: p[0].encode("utf-8") * (1 + p[1])
        ),
    )


def _run_reader(kind: str, data: bytes, root: Path, snapshot_text: str) -> int:
    """Feed DATA to the reader of KIND (through the CLI where a command reads it); the exit code."""
    from opdrift.app.overrides import load_overrides
    from opdrift.cli import main
    from opdrift.config.file import load_config
    from opdrift.drift.allowlist import load_allowlist
    from opdrift.history.cache import DiskCache, decode_summary

    base = (BASES[kind] if kind != "snapshot" else snapshot_text).encode("utf-8")
    data = base[: len(data) % (len(base) + 1)] + data  # spliced into a valid file at some point
    source = root / "src"
    checkout(source, {})
    path = root / "input"
    if kind in ("native", "tags", "derivatives", "python"):
        rel = {"native": NATIVE_PATH, "tags": TAGS_PATH, "derivatives": DERIVATIVES_PATH}.get(
            kind, "torch/_refs/__init__.py"
        )
        (source / rel).parent.mkdir(parents=True, exist_ok=True)
        (source / rel).write_bytes(data)
        return main(["stats", str(source)])
    if kind == "snapshot":
        path = root / "snap.json"
        path.write_bytes(data)
        return main(["stats", str(path)])
    if kind == "backend":
        code = 0
        for backend_kind, name in BACKEND_FILES.items():
            (root / name).write_bytes(data)
            code = max(code, main(["coverage", "--backend", f"{backend_kind}={root / name}", str(source)]))
        return code
    path.write_bytes(data)
    if kind == "cache":
        cache = DiskCache(root / "cache", warn=lambda _: None)
        key = cache.key("x")
        target = cache._path("point", key)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        value = cache.get("point", key)
        if value is not None:
            decode_summary(value)
        return 0
    load = {"config": load_config, "allowlist": load_allowlist, "overrides": load_overrides}[kind]
    try:
        load(str(path))
    except OpdriftError:
        return 2
    return 0


@pytest.fixture(scope="module")
def small_snapshot(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("snap")
    out = root / "snap.json"
    assert opdrift_process("snapshot", checkout(root / "src", {}), "-o", str(out)).code == 0
    return out.read_text(encoding="utf-8")


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(kind=st.sampled_from(sorted(BASES)), data=_content())
@pytest.mark.slow
def test_every_reader_ends_fast_in_0_1_or_2(
    kind: str, data: bytes, small_snapshot: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = tmp_path_factory.mktemp(kind)
    start = time.perf_counter()
    try:
        code = _run_reader(kind, data, root, small_snapshot)
    except SystemExit as exc:  # argparse
        code = exc.code if isinstance(exc.code, int) else 1
    took = time.perf_counter() - start
    assert code in (0, 1, 2)
    assert took < 5 * BUDGET, (kind, took)


@pytest.mark.parametrize("kind", ["native", "snapshot", "allowlist", "history-merge"])
def test_an_input_over_its_size_budget_is_one_error_line(opdrift: Opdrift, tmp_path: Path, kind: str) -> None:
    big = tmp_path / ("snap.json" if kind == "snapshot" else "big.yaml")
    with big.open("wb") as f:
        f.truncate(64 * 1024 * 1024 + 1)  # sparse: the size is checked before anything is read
    if kind == "native":
        source = checkout(tmp_path / "src", {})
        (tmp_path / "src" / NATIVE_PATH).unlink()
        (tmp_path / "src" / NATIVE_PATH).symlink_to(big)
        run = opdrift("stats", source)
    elif kind == "snapshot":
        run = opdrift("stats", str(big))
    elif kind == "allowlist":
        source = checkout(tmp_path / "src", {})
        run = opdrift("diff", source, source, "--allow-list", str(big))
    else:
        run = opdrift("history-merge", str(big))
    line = one_error_line(run)
    assert "limit" in line or "over" in line, line
