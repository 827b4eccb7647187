"""`opdrift coverage` gives one answer in text, Markdown and JSON.

With `--base`, the Markdown led with "Schema alerts: **0** break your kernels" (it counted only the
alerts the base had not raised) while the text of the same run listed 3 such alerts and said no count,
and the JSON gave none. All three now count from one view (`opdrift.render.coverage.CoverageView.counts`).
Checked here with the real lists of six backends against the shipped snapshots, with and without a base.
"""

from __future__ import annotations

import json
import lzma
import re
from pathlib import Path
from typing import Any

import pytest
from clirun import Opdrift
from datafiles import DATA

ROOT = Path(__file__).parents[3]
REAL = DATA / "backends" / "real"
LISTS = {
    "op-plugin": "op-plugin.op_plugin_functions.yaml.xz",
    "xla": "pytorch-xla.xla_native_functions.yaml.xz",
    "torch-mlir": "torch-mlir.GeneratedTorchOps.td.xz",
    "xpu": "torch-xpu-ops.xpu_functions.yaml.xz",
    "torch-npu": "torch_npu.npu_native_functions.yaml.xz",
}
# (SOURCE, BASE): neighbouring shipped snapshots, and one without a base
RUNS = [("v2.13.0", "v2.12.0"), ("v2.14.1", "v2.13.0"), ("v2.15.0", "v2.14.1"), ("v2.15.0", None)]
GRADES = ("kernel", "symint", "caller", "cosmetic")

_TEXT = re.compile(
    r"schema alerts \((\d+)\): (\d+) break your kernels; (\d+) break nothing you build \((\d+) SymInt-form"
    r" only, (\d+) caller-only, (\d+) cosmetic\)(?:; (\d+) new since base)?:"
)
_MARKDOWN = re.compile(
    r"Schema alerts: \*\*(\d+)\*\* break your kernels; (\d+) break nothing you build \((\d+) SymInt-form"
    r" only, (\d+) caller-only, (\d+) cosmetic\)(?:; (\d+) of all (\d+) new since base)?\."
)


def _grade(a: dict[str, Any]) -> str:
    """An alert's grade from its JSON fields alone: what it does to the kernel, then to callers."""
    if a["kernel"] == "breaking":
        return "kernel"
    if a["breaking"]:
        return "caller"
    return "symint" if a["kernel"] == "symint" else "cosmetic"


@pytest.fixture(scope="module")
def backends(tmp_path_factory: pytest.TempPathFactory, dlprim_src: Path) -> list[str]:
    folder = tmp_path_factory.mktemp("lists")
    specs = []
    for kind, name in LISTS.items():
        path = folder / name.removesuffix(".xz")
        path.write_bytes(lzma.decompress((REAL / name).read_bytes()))
        specs.append(f"{kind}={path}")
    return [*specs, f"cpp={dlprim_src}"]


def _blocks(text: str, start: str) -> list[str]:
    """TEXT cut into one block per backend, each beginning at a line that starts with START."""
    parts = re.split(rf"(?m)^(?={re.escape(start)})", text)
    return [p for p in parts if p.startswith(start)]


@pytest.mark.slow
@pytest.mark.parametrize(("source", "base"), RUNS)
def test_text_markdown_and_json_count_the_same_alerts(
    opdrift: Opdrift, backends: list[str], source: str, base: str | None
) -> None:
    args = [a for spec in backends for a in ("--backend", spec)]
    args += [str(ROOT / "snapshots" / f"{source}.json")]
    if base is not None:
        args += ["--base", str(ROOT / "snapshots" / f"{base}.json")]
    out = {}
    for fmt in ("json", "text", "markdown"):
        run = opdrift("coverage", *args, "--format", fmt)
        assert run.code == 0, run.err
        out[fmt] = run.out
    reports = json.loads(out["json"])["backends"]
    markdown = _blocks(out["markdown"], "## Coverage of ")
    # a text block starts at its one unindented line, the backend's heading
    text = [b for b in re.split(r"(?m)^(?=\S)", out["text"]) if b.strip()]
    assert len(reports) == len(markdown) == len(text) == len(backends)
    for report, md, txt in zip(reports, markdown, text, strict=True):
        where = f"{report['backend']['kind']} {source} base {base}"
        alerts = report["schema_alerts"]
        grades = [_grade(a) for a in alerts]
        expected = {g: grades.count(g) for g in GRADES}
        new = None if base is None else len(report["since_base"]["new_alerts"])
        counts = report["schema_alert_counts"]
        assert counts == {**expected, "total": len(alerts), "new": new}, where
        if not alerts:
            assert _TEXT.search(txt) is None and _MARKDOWN.search(md) is None, where
            continue
        t = _TEXT.search(txt)
        assert t is not None, where
        quiet = len(alerts) - expected["kernel"]
        assert [int(x) for x in t.groups()[:6]] == [
            len(alerts),
            expected["kernel"],
            quiet,
            expected["symint"],
            expected["caller"],
            expected["cosmetic"],
        ], where
        assert (None if t.group(7) is None else int(t.group(7))) == new, where
        assert txt.count(": you implement ") == len(alerts), where  # the text lists every alert
        m = _MARKDOWN.search(md)
        assert m is not None, where
        assert [int(x) for x in m.groups()[:5]] == [
            expected["kernel"],
            quiet,
            expected["symint"],
            expected["caller"],
            expected["cosmetic"],
        ], where
        if base is None:
            assert m.group(6) is None, where
        else:
            assert (int(m.group(6)), int(m.group(7))) == (new, len(alerts)), where
        # the Markdown expands the kernel-breaking alerts it lists: all, or with a base the new ones
        listed = (
            alerts if base is None else [a for a in alerts if a["name"] in report["since_base"]["new_alerts"]]
        )
        assert md.count("- you implement ") == min(50, sum(_grade(a) == "kernel" for a in listed)), where


@pytest.mark.slow
def test_the_brief_case_counts_op_plugins_breaking_kernels_with_a_base(
    opdrift: Opdrift, tmp_path: Path
) -> None:
    """op-plugin against 2.14.1 with base 2.13.0. Its list before 49c8366e: five kernels break (the
    rrelu_with_noise family, and the two `_scaled_*_v2` ops that joined structured groups in 2.14.0,
    which are new since the base), and every format says five. Today's list (b8d8c479): three, since
    its torchnpugen binds the two `_scaled_*_v2` kernels as 2.14.0 does (`FORCED_ILISTREF`)."""
    import tarfile

    with tarfile.open(REAL / "op-plugin.gates.tar.xz") as tar:
        tar.extractall(tmp_path, filter="data")
    today = tmp_path / "op_plugin_functions.yaml"
    today.write_bytes(lzma.decompress((REAL / LISTS["op-plugin"]).read_bytes()))
    scaled = {"_scaled_mm_v2", "_scaled_grouped_mm_v2"}
    for path, broken in ((tmp_path / "op-plugin-gates" / "before-49c8366e.yaml", 5), (today, 3)):
        args = ["coverage", "--backend", f"op-plugin={path}", str(ROOT / "snapshots" / "v2.14.1.json")]
        args += ["--base", str(ROOT / "snapshots" / "v2.13.0.json")]
        (report,) = json.loads(opdrift(*args, "--format", "json").out)["backends"]
        assert report["schema_alert_counts"]["kernel"] == broken, path.name
        new = scaled & set(report["since_base"]["new_alerts"])
        assert new == (scaled if broken == 5 else set()), path.name
        assert (
            f"Schema alerts: **{broken}** break your kernels;" in opdrift(*args, "--format", "markdown").out
        )
        assert f": {broken} break your kernels;" in opdrift(*args, "--format", "text").out
