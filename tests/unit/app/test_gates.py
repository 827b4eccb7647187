"""`opdrift gates`: op-plugin's version gates for a torch release, against what Ascend did by hand.

The real files are Ascend/op-plugin's op_plugin_functions.yaml before and after the two commits that
registered 2.13 (ba79f856) and 2.14 (49c8366e), tests/data/backends/real/SOURCES.md.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from clirun import Opdrift

from opdrift.app.gates import gates_of
from opdrift.model import Snapshot

ROOT = Path(__file__).resolve().parents[3]
REAL = Path(__file__).parents[2] / "data" / "backends" / "real" / "op-plugin.gates.tar.xz"
SHIPPED_2_14 = ROOT / "snapshots" / "v2.14.1.json"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The four real files by name (before-ba79f856, ba79f856, before-49c8366e, 49c8366e), as text."""
    folder = tmp_path_factory.mktemp("op-plugin")
    with tarfile.open(REAL) as tar:
        tar.extractall(folder, filter="data")
    return {p.stem: p.read_bytes().decode("utf-8") for p in (folder / "op-plugin-gates").iterdir()}


def _write(tmp_path: Path, text: str, name: str = "op_plugin_functions.yaml") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def _gates(text: str) -> dict[tuple[int, str], str]:
    """(line of the entry's func, gate key) → the gate as written, for every gated entry."""
    root = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    assert isinstance(root, yaml.MappingNode)
    found = {}
    for key, seq in root.value:
        if not isinstance(seq, yaml.SequenceNode) or key.value == "all_version":
            continue
        for entry in seq.value:
            fields = {k.value: v for k, v in entry.value}
            line = fields["func"].start_mark.line + 1
            for k, v in fields.items():
                if k in ("acl_op", "op_api", "sparse", "exposed", "dvm", "internal_format_opapi"):
                    found[(line, k)] = text[v.start_mark.index : v.end_mark.index]
    return found


@pytest.mark.slow
def test_the_2_13_gates_are_ba79f856s(files: dict[str, str], tmp_path: Path) -> None:
    """From the list before ba79f856, the 2.13 gates cap exactly the entries ba79f856 capped, with its
    gates: the 27 ATen entries whose operator 2.13 removed (the Dimname overloads) at [v2.1, v2.12], and
    torch_npu's own npu_max.names_dim / npu_min.names_dim, whose schemas use Dimname, likewise (their
    `exposed:` gate too). ba79f856 did nothing else to the yaml (it had registered v2.13 in
    all_version earlier, d6062360), so the whole file comes out byte for byte as the commit's. The rest
    of that commit is C++ (NamedTensorCompat.h and the kernels' #if guards), which no yaml holds."""
    before, after = files["before-ba79f856"], files["ba79f856"]
    run = gates_of(f"NPU:op-plugin={_write(tmp_path, before)}", "2.13", None, load=_no_load)
    old = _gates(before)
    theirs = {k: v for k, v in _gates(after).items() if old[k] != v}
    ours = {(c.line, c.key): c.after for c in run.plan.caps}
    assert ours == theirs and len({line for line, _ in ours}) == 29
    assert set(ours.values()) == {"[v2.1, v2.12]"}
    assert run.plan.text == after
    reasons = {c.name: c.reason for c in run.plan.caps}
    assert reasons["cat.names"] == "removed upstream in 2.13 (last in 2.12)"
    assert reasons["npu_min.names_dim"] == "uses Dimname, which 2.13 removed"
    # torch_npu's own kl_div_backward (custom:) is not ATen's, which 1.13 removed: left alone.
    assert "kl_div_backward" not in reasons


def test_the_2_14_registration_is_49c8366es_with_its_cpp_to_fix(
    files: dict[str, str], tmp_path: Path
) -> None:
    """49c8366e appended v2.14 to all_version and changed `_scaled_mm_v2`'s C++ by hand: it joined a
    structured group in 2.14 (pytorch#185272), so torchgen binds its Tensor[] as ITensorListRef. The
    gates append v2.14 the same way, and list that binding with its new declaration; they also list
    `_scaled_grouped_mm_v2`, which joined one in 2.14 too and which Ascend fixed a month later
    (f2d45694, 2026-08-03)."""
    before, after = files["before-49c8366e"], files["49c8366e"]
    path = _write(tmp_path, before)
    run = gates_of(f"op-plugin={path}", "2.14", None, load=_no_load)
    assert run.plan.text == after and run.plan.appended and not run.plan.caps
    assert [b.name for b in run.plan.bindings] == ["_scaled_mm_v2", "_scaled_grouped_mm_v2"]
    scaled = run.plan.bindings[0]
    assert "joins a structured group" in scaled.why
    # In op-plugin's own parameter names, as its C++ spells them.
    assert scaled.declaration.startswith(
        "at::Tensor _scaled_mm_v2(const at::Tensor & mat_a, const at::Tensor & mat_b, "
        "const at::ITensorListRef & scale_a, at::IntArrayRef recipe_a"
    )
    header = run.diff.split("\n--- ", 1)[0]
    assert "# v2.14 appended to all_version" in header
    assert f"#     {scaled.declaration}" in header
    body = run.diff[len(header) :]
    assert body.count("\n-") == 2 and body.count("\n+") == 2  # the ---/+++ lines, then one line each


@pytest.mark.parametrize(("name", "release"), [("ba79f856", "2.13"), ("49c8366e", "2.14")])
def test_a_list_gated_for_the_release_gives_no_change(
    files: dict[str, str], tmp_path: Path, name: str, release: str
) -> None:
    run = gates_of(f"op-plugin={_write(tmp_path, files[name])}", release, None, load=_no_load)
    assert run.diff == "" and run.plan.text == files[name]


def test_everything_outside_the_edited_keys_is_kept_byte_for_byte(
    files: dict[str, str], tmp_path: Path
) -> None:
    """CRLF line ends and a byte-order mark survive: the result is ba79f856's file in the same form."""
    crlf = files["before-ba79f856"].replace("\n", "\r\n")
    path = _write(tmp_path, "\ufeff" + crlf)
    run = gates_of(f"op-plugin={path}", "2.13", None, load=_no_load)
    assert run.plan.text == "\ufeff" + files["ba79f856"].replace("\n", "\r\n")


def test_each_gate_form_is_capped_in_its_own_spelling(tmp_path: Path) -> None:
    """A set keeps its quotes and loses the versions past the cap; a spaced range keeps its spacing; a
    block-style all_version gets an item in its style; comments stay where they are."""
    text = (
        "# op-plugin, abridged\n"
        "all_version:\n"
        "  - v2.1\n"
        "  - v2.12   # the last one\n"
        "official:\n"
        "  - func: cat.names(Tensor[] tensors, Dimname dim) -> Tensor\n"
        '    acl_op: "v2.1, v2.12, v2.13"  # a set\n'
        "    op_api: [ v2.6, newest ]\n"
        "    dvm: [v2.1, v2.12]\n"
        "  - func: abs(Tensor self) -> Tensor\n"
        "    op_api: all_version\n"
    )
    run = gates_of(f"op-plugin={_write(tmp_path, text)}", "2.13", None, load=_no_load)
    assert run.plan.text == (
        "# op-plugin, abridged\n"
        "all_version:\n"
        "  - v2.1\n"
        "  - v2.12\n"
        "  - v2.13   # the last one\n"
        "official:\n"
        "  - func: cat.names(Tensor[] tensors, Dimname dim) -> Tensor\n"
        '    acl_op: "v2.1, v2.12"  # a set\n'
        "    op_api: [ v2.6, v2.12 ]\n"
        "    dvm: [v2.1, v2.12]\n"
        "  - func: abs(Tensor self) -> Tensor\n"
        "    op_api: all_version\n"
    )
    # dvm's [v2.1, v2.12] never admitted 2.13: not a cap.
    assert {(c.key, c.after) for c in run.plan.caps} == {
        ("acl_op", '"v2.1, v2.12"'),
        ("op_api", "[ v2.6, v2.12 ]"),
    }


def test_write_applies_atomically_and_a_second_run_is_empty(
    opdrift: Opdrift, files: dict[str, str], tmp_path: Path
) -> None:
    path = _write(tmp_path, files["before-ba79f856"])
    first = opdrift("gates", "--backend", f"NPU:op-plugin={path}", "--torch-version", "2.13", "--write")
    assert first.code == 0, first.err
    assert first.out.startswith("# opdrift gates: ") and f"--- {path}\n" in first.out
    assert "gated" in first.err
    assert path.read_bytes() == files["ba79f856"].encode("utf-8")
    second = opdrift("gates", "--backend", f"NPU:op-plugin={path}", "--torch-version", "2.13", "--write")
    assert (second.code, second.out, second.err) == (0, "", "")
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # no temporary left


def test_a_killed_write_leaves_the_old_list(files: dict[str, str], tmp_path: Path) -> None:
    path = _write(tmp_path, files["before-ba79f856"])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTHON"))}
    env |= {"PYTHONPATH": str(ROOT)}
    argv = ["gates", "--backend", f"op-plugin={path}", "--torch-version", "2.13", "--write", "-o", os.devnull]
    harness = [sys.executable, str(ROOT / "tests" / "killpoint.py"), "snapshot-rename"]
    proc = subprocess.Popen([*harness, *argv], stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline() == "opdrift: paused at snapshot-rename\n"
    finally:
        proc.kill()
        proc.wait(timeout=60)
        if proc.stderr is not None:
            proc.stderr.close()
    assert path.read_bytes() == files["before-ba79f856"].encode("utf-8")


@pytest.mark.slow
def test_a_source_gives_the_release_newer_than_the_tables(
    opdrift: Opdrift, files: dict[str, str], tmp_path: Path
) -> None:
    """A SOURCE of X.Y (here the shipped 2.14.1 snapshot) stands for the tables' X.Y: same gates."""
    path = _write(tmp_path, files["before-49c8366e"])
    run = opdrift("gates", "--backend", f"op-plugin={path}", "--torch-version", "2.14", str(SHIPPED_2_14))
    assert run.code == 0, run.err
    tables = opdrift("gates", "--backend", f"op-plugin={path}", "--torch-version", "2.14")
    assert run.out.split("\n", 1)[1] == tables.out.split("\n", 1)[1]  # all but the line naming the source
    wrong = opdrift("gates", "--backend", f"op-plugin={path}", "--torch-version", "2.13", str(SHIPPED_2_14))
    assert wrong.code == 2 and "is torch 2.14.1, not 2.13" in wrong.err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--backend", "xla={path}", "--torch-version", "2.14"], "gates are op-plugin's"),
        (["--backend", "op-plugin={path}", "--torch-version", "2.16"], "newer than opdrift's release tables"),
        (["--backend", "op-plugin={path}", "--torch-version", "two"], "expected a release like 2.14"),
    ],
)
def test_a_wrong_request_is_one_line(
    opdrift: Opdrift, files: dict[str, str], tmp_path: Path, argv: list[str], message: str
) -> None:
    path = _write(tmp_path, files["before-49c8366e"])
    run = opdrift("gates", *(a.format(path=path) for a in argv))
    assert run.code == 2 and message in run.err and len(run.err.splitlines()) == 1
    assert run.err.startswith("opdrift: error: ")


def test_a_list_without_all_version_is_an_error_naming_it(opdrift: Opdrift, tmp_path: Path) -> None:
    path = _write(tmp_path, "official:\n  - func: abs(Tensor self) -> Tensor\n    op_api: all_version\n")
    run = opdrift("gates", "--backend", f"op-plugin={path}", "--torch-version", "2.13")
    assert run.code == 2 and "all_version" in run.err and str(path) in run.err


def _no_load(spec: str) -> Snapshot:
    raise AssertionError(f"no SOURCE was given, yet {spec} was loaded")


def test_the_release_tables_say_what_each_release_registered_and_grouped() -> None:
    """The tables the gates read, against the releases' own yaml: 2.13 dropped the Dimname overloads,
    and `_scaled_mm_v2` (a plain function in 2.13.0) has `structured_delegate: _scaled_mm_v2.out` in 2.14.1."""
    from opdrift.coverage import names, schema_history

    assert "cat.names" in names.registered_in("2.12.0") and "cat.names" not in names.registered_in("2.13.0")
    assert "cat.out" in names.registered_in("2.13.0")
    assert "cat.names" in schema_history.schemas_in(
        "2.12.0"
    ) and "cat.names" not in schema_history.schemas_in("2.13.0")
    assert schema_history.schemas_in("2.13.0")["_scaled_mm_v2"].startswith(
        "_scaled_mm_v2(Tensor self, Tensor mat2"
    )
    assert "_scaled_mm_v2" not in (schema_history.structured_in("2.13.0") or ())
    assert "_scaled_mm_v2" in (schema_history.structured_in("2.14.1") or ())
    assert "add.out" in (schema_history.structured_in("1.13.0") or ())  # structured since long before
    assert schema_history.structured_in("2.16.0") is None
