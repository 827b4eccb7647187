"""Each release's own codegen: the registered operators equal that release wheel's RegistrationDeclarations.h.

tests/data/wheels/<version>/operators.txt.xz lists the names each wheel's header registers (written
by tests/data/make_wheel_expected.py; README.md there names the wheels). The release's rules come
from its version: a wheel's metadata, a checkout's or a revision's version.txt, or --codegen.
"""

from __future__ import annotations

import json
import lzma
import os
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest
from clirun import Opdrift
from datafiles import DATA, RELEASES, release_text, write_release

from opdrift import pipeline
from opdrift.history import walk as history
from opdrift.model import NATIVE_PATH, TAGS_PATH, VERSION_PATH, OperatorSet, SourceMeta, TextFile
from opdrift.operators.codegen import (
    KNOWN_RELEASES,
    NEWEST,
    RULES,
    CodegenError,
    kernel_binding,
    rules_for_release,
    rules_for_version,
)
from opdrift.operators.entries import read_entries
from opdrift.operators.native import build_operators
from opdrift.schema.grammar import parse_schema
from opdrift.schema.kernel import kernel_signature
from opdrift.sources.read import read_revision, read_source

WHEELS = DATA / "wheels"
# The wheels whose release files are vendored too; the older lists (1.9.0-1.11.0) feed the name table only.
VENDORED = sorted(
    (p.parent.name for p in WHEELS.glob("*/operators.txt.xz") if p.parent.name in RELEASES),
    key=lambda v: tuple(map(int, v.split("."))),
)


@cache
def wheel_names(version: str) -> list[str]:
    return lzma.decompress((WHEELS / version / "operators.txt.xz").read_bytes()).decode("utf-8").split()


@cache
def built(version: str, release: str | None = None) -> OperatorSet:
    """VERSION's release files built by the rules of RELEASE (default: VERSION's own)."""
    rules = rules_for_version(version) if release is None else rules_for_release(release)
    return build_operators(
        read_entries(release_text(version), "native_functions.yaml"),
        meta=SourceMeta(kind="yaml", path="native_functions.yaml"),
        native_display="native_functions.yaml",
        tags=TextFile("tags.yaml", release_text(version, "tags.yaml")),
        codegen=rules,
    )


def test_a_list_for_every_release() -> None:
    assert set(VENDORED) == set(RELEASES)
    assert len(VENDORED) == 18
    for version in VENDORED:
        names = wheel_names(version)
        assert names == sorted(set(names)) and len(names) > 2500


@pytest.mark.slow
@pytest.mark.parametrize("version", VENDORED)
def test_registered_operators_equal_the_wheels(version: str) -> None:
    ops = built(version)
    assert [op.name for op in ops.operators] == wheel_names(version)
    assert not [w for w in ops.warnings if "does not group" in w]


@pytest.mark.parametrize(
    ("version", "missing", "extra"),
    [
        # 1.12's codegen named generated functional variants as its autogen: lines spell them
        ("1.12.0", "_foreach_abs.functional", "_foreach_zero"),
        # core CompositeImplicitAutograd groups got their autogen: operators from 2.6 on
        ("2.4.0", None, "upsample_bilinear2d.vec_out"),
        ("2.5.0", None, "avg_pool1d.out"),
    ],
)
def test_the_newest_rules_are_wrong_for_older_releases(version: str, missing: str | None, extra: str) -> None:
    """Why the rules are per release: built by the newest, these releases miss and add operators."""
    names = {op.name for op in built(version, KNOWN_RELEASES[-1]).operators}
    wanted = set(wheel_names(version))
    assert extra in names - wanted
    if missing is not None:
        assert missing in wanted - names


def test_1_12_without_its_rules_warns_of_clashes_and_with_them_does_not() -> None:
    newest = [w for w in built("1.12.0", KNOWN_RELEASES[-1]).warnings if "does not group" in w]
    assert len(newest) == 44
    assert not [w for w in built("1.12.0").warnings if "does not group" in w]


def test_versions_select_rules() -> None:
    assert rules_for_version(None) is NEWEST
    assert rules_for_version("not a version") is NEWEST
    assert rules_for_version("2.14.1") is NEWEST
    assert rules_for_version("2.99.0") is NEWEST
    assert rules_for_version("2.6.0a0+git1234abc").since == "2.6"
    assert rules_for_version("2.5.1").since == "2.3"
    assert rules_for_version("1.12.1").since == "1.12"
    assert rules_for_version("1.11.0") is RULES[0]  # older than every row: the oldest
    assert rules_for_release("2.5") == rules_for_version("2.5.0")
    assert rules_for_release("2.14.1") is NEWEST
    assert [r.since for r in RULES] == sorted(
        (r.since for r in RULES), key=lambda s: tuple(map(int, s.split(".")))
    )


@pytest.mark.parametrize("text", ["3.0", "1.11", "2.16", "latest", ""])
def test_an_unknown_release_is_an_error_naming_the_known_ones(text: str) -> None:
    with pytest.raises(CodegenError, match=r"known: 1\.12, 1\.13, 2\.0, .*, 2\.15$"):
        rules_for_release(text)


# --- how a SOURCE's version is found -------------------------------------------------------------


def _checkout(dest: Path, version: str, version_txt: str | None) -> Path:
    for path, name in ((NATIVE_PATH, "native_functions.yaml"), (TAGS_PATH, "tags.yaml")):
        (dest / path).parent.mkdir(parents=True, exist_ok=True)
        (dest / path).write_text(release_text(version, name), encoding="utf-8")
    if version_txt is not None:
        (dest / VERSION_PATH).write_text(version_txt, encoding="utf-8")
    return dest


def test_a_checkouts_version_txt_selects_its_rules(tmp_path: Path) -> None:
    ops = pipeline.operators_from_files(read_source(str(_checkout(tmp_path, "1.12.0", "1.12.0\n"))))
    assert [op.name for op in ops.operators] == wheel_names("1.12.0")


def test_a_bare_yaml_takes_the_newest_rules_and_codegen_overrides(opdrift: Opdrift, tmp_path: Path) -> None:
    native = str(write_release("2.5.0", tmp_path))
    newest = opdrift("explain", "avg_pool1d.out", native)
    assert newest.code == 0 and "avg_pool1d.out" in newest.out
    own = opdrift("explain", "avg_pool1d.out", native, "--codegen", "2.5")
    assert own.code == 2 and "avg_pool1d.out" in own.err and "Traceback" not in own.err
    stats = opdrift("stats", native, "--codegen", "2.5", "--format", "json")
    assert stats.code == 0 and '"operators": 3130' in stats.out.replace("\n", " ").replace("  ", " ")


def test_an_unknown_codegen_is_one_line_exit_2(opdrift: Opdrift, release_file: object) -> None:
    native = str(release_file("2.14.1"))  # type: ignore[operator]
    for argv in (["stats", native], ["snapshot", native], ["diff", native, native]):
        run = opdrift(*argv, "--codegen", "9.9")
        assert run.code == 2 and run.err.count("\n") == 1 and "Traceback" not in run.err
        assert "--codegen '9.9'" in run.err and "known: 1.12, 1.13, 2.0" in run.err


def _git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@l", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@l")
    done = subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, env=env, text=True
    )
    return done.stdout.strip()


@pytest.mark.slow
def test_history_and_dir_at_rev_use_the_version_txt_of_each_commit(tmp_path: Path) -> None:
    """2.5.0's files, then version.txt alone moves to 2.6 (listed, not counted), then an edit: the
    edit's point is built by 2.6's rules, so the core CompositeImplicitAutograd groups' operators
    appear in its drift, as a cold DIR@REV build of that commit has them."""
    repo = _checkout(tmp_path / "repo", "2.5.0", "2.5.0a0\n")
    _git(repo, "init", "-q", "-b", "main")
    shas = []
    for change in ("start", "version", "edit"):
        if change == "version":
            (repo / VERSION_PATH).write_text("2.6.0a0\n", encoding="utf-8")
        if change == "edit":
            native = repo / NATIVE_PATH
            native.write_text(native.read_text(encoding="utf-8") + "\n# a comment\n", encoding="utf-8")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", change)
        shas.append(_git(repo, "rev-parse", "HEAD"))

    first = pipeline.operators_from_files(read_revision(str(repo), shas[0]))
    assert [op.name for op in first.operators] == wheel_names("2.5.0")
    last = read_revision(str(repo), shas[2])
    assert last.meta.torch_version == "2.6.0a0"

    points = history.walk(str(repo), history.WalkOptions()).points
    assert [p.subject for p in points] == ["start", "edit"]
    assert points[0].operators == 3130
    cold = history.cold_point(last)
    assert points[1].operators == len(cold.operators) == 3134
    drift = points[1].drift
    core_cia = {
        "avg_pool1d.out",
        "adaptive_avg_pool1d.out",
        "upsample_bilinear2d.vec_out",
        "upsample_nearest2d.vec_out",
    }
    assert drift is not None and drift.removed == ()
    assert core_cia <= set(drift.added)


# --- what each release's codegen gave the operators it registered ----------------------------------

# The releases whose whole RegistrationDeclarations.h is vendored beside their operator list.
HEADERS = ("1.12.0", "1.13.0", "2.14.1")


@cache
def header_lines(version: str) -> dict[str, tuple[str, dict[str, str]]]:
    """name → (the C++ declaration, the JSON comment) of each line of VERSION's header, read with json."""
    text = lzma.decompress((WHEELS / version / "RegistrationDeclarations.h.xz").read_bytes()).decode()
    out: dict[str, tuple[str, dict[str, str]]] = {}
    for line in text.splitlines():
        at = line.find("// {")
        if at != -1:
            comment = json.loads(line[at + 3 :])
            out[comment["schema"].removeprefix("aten::").split("(", 1)[0]] = (line[:at], comment)
    return out


@pytest.mark.parametrize("version", HEADERS)
def test_default_kernels_equal_the_wheels(version: str) -> None:
    """The header's "default" is torchgen's `has_composite_kernel or has_autogenerated_composite_kernel`
    (gen.py): a composite kernel, or the one torchgen writes for a structured group's functional and
    in-place members. 1.12's generated out= operators had none (its generate_function registered no
    kernel for them), its generated functional ones had one."""
    wheel = header_lines(version)
    ops = built(version).operators
    differ = []
    for op in ops:
        structured_member = (op.structured or op.structured_delegate is not None) and op.kind in (
            "functional",
            "inplace",
        )
        ours = op.composite is not None or structured_member
        if ours != (wheel[op.name][1]["default"] == "True"):
            differ.append(op.name)
    assert differ == []
    generated_out = [op for op in ops if "generated" in op.tags and op.kind == "out"]
    if version == "1.12.0":
        assert len(generated_out) == 98
        assert all(op.composite is None and op.dispatch == () for op in generated_out)
    else:
        assert generated_out and all(op.composite == "CompositeExplicitAutograd" for op in generated_out)


_LIST_PARAMETER = re.compile(r"(const ITensorListRef &|TensorList) \w+")


@pytest.mark.parametrize("version", HEADERS)
def test_tensor_lists_are_taken_as_each_release_declares(version: str) -> None:
    """A structured group's Tensor[] is `const at::ITensorListRef &` from 1.13 on and `at::TensorList`
    in 1.12 (`ilistref_for_structured`); every other operator's is `at::TensorList`."""
    rules = rules_for_version(version)
    wheel = header_lines(version)
    checked = 0
    for op in built(version).operators:
        declared = _LIST_PARAMETER.findall(wheel[op.name][0])
        if not declared:
            continue
        signature = kernel_signature(parse_schema(op.schema), "SymInt", kernel_binding(op, rules))
        ours = [p.removeprefix("at::").replace("const at::", "const ") for p in signature.parameters]
        assert [p for p in ours if p in ("const ITensorListRef &", "TensorList")] == declared, op.name
        checked += 1
    assert checked > 100


def test_1_12_to_1_13_changes_the_kernels_of_cat(opdrift: Opdrift, tmp_path: Path) -> None:
    """The same yaml entries, but 1.13's codegen takes cat's tensors as ITensorListRef: the diff of the
    two releases (each a checkout with its version.txt) says so for cat and cat.out, and nothing else."""
    base = _checkout(tmp_path / "a", "1.12.0", "1.12.0\n")
    head = _checkout(tmp_path / "b", "1.13.0", "1.13.0\n")
    run = opdrift("diff", str(base), str(head), "--format", "json", "--fail-on", "never")
    assert run.code == 0, run.err
    changed = {c["name"]: c for c in json.loads(run.out)["changed"]}
    lists = {n for n, c in changed.items() if any(d["code"] == "tensor_lists_changed" for d in c["changes"])}
    assert lists == {"cat", "cat.out"}
    for name in lists:
        c = changed[name]
        assert c["kernel"] == "breaking" and c["schema"] == c["before_schema"]
        (detail,) = c["changes"]
        assert (detail["before"], detail["after"]) == ("at::TensorList", "const at::ITensorListRef &")
    # what each wheel declares
    assert "(TensorList tensors, int64_t dim)" in header_lines("1.12.0")["cat"][0]
    assert "(const ITensorListRef & tensors, int64_t dim)" in header_lines("1.13.0")["cat"][0]
