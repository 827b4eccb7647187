"""The catalogue and the model corpus: each operator's "used by N of M models" per path, the index's
models column, each backend's first work; and a column of each newer backend kind (executorch,
backend-stubs, python) read from real lists."""

from __future__ import annotations

import json
import lzma
import re
from pathlib import Path

import pytest
from clirun import Opdrift
from goldens import check_golden_entry, updating
from sitebuild import BACKEND_LIST, SNAPSHOTS

from opdrift.coverage.backends import read_backend, read_text_list
from opdrift.coverage.check import compute_coverage
from opdrift.coverage.kinds import BackendKind
from opdrift.coverage.names import first_registered
from opdrift.coverage.workitems import work_items
from opdrift.render.rank import work_item_rank_key
from opdrift.snapshot import load_snapshot
from opdrift.usage.models import PATHS, usage_for

REAL = Path(__file__).parents[2] / "data" / "backends" / "real"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from opdrift.cli import main

    root = tmp_path_factory.mktemp("site-models")
    backend = root / "list.txt"
    backend.write_text(BACKEND_LIST)
    out = root / "out"
    assert main(["site", "-o", str(out), "--backend", f"mine:text={backend}", *map(str, SNAPSHOTS[-3:])]) == 0
    return out


def _expected(base: str) -> dict[str, set[str]]:
    """Path → the models the shipped table says dispatch any overload of BASE (2.15.0's overloads)."""
    now = load_snapshot(SNAPSHOTS[-1])
    usage = usage_for("2.15.0").usage
    names = [n for n, r in now.operators.items() if r.base == base]
    return {p: {m for n in names for m in usage.used_by(n, p)} for p in PATHS}


def test_an_operator_says_how_many_models_use_it_per_path(
    built: Path, request: pytest.FixtureRequest
) -> None:
    usage = usage_for("2.15.0").usage
    assert usage.release == "2.14.1"  # 2.15.0 has no table of its own: the nearest answers, and says so
    for base in ("convolution_backward", "add", "lstm", "native_layer_norm"):
        data = json.loads((built / f"data/ops/{base}.json").read_text())["models"]
        expected = _expected(base)
        assert data["release"] == "2.14.1"
        for path in PATHS:
            row = data["paths"][path]
            assert set(row["models"]) == expected[path], (base, path)
            assert row["used_by"] == len(expected[path]) and row["of"] == len(usage.recorded(path))
        anywhere = set().union(*expected.values())
        assert data["used_by"] == len(anywhere) > 0
        page = (built / f"ops/{base}.html").read_text()
        assert f"Used by {len(anywhere)} of {data['of']} models of opdrift" in page
        (caveat,) = re.findall(r"[^,<>]*torch 2\.14\.1[^<>]*2\.15\.0[^<>)]*\)", page)
        check_golden_entry(
            "site.lines.html", "models: a table of an older release", caveat + "\n", updating(request)
        )
        for path in PATHS:
            n = len(expected[path])
            words = f"used by {n} of {len(usage.recorded(path))} models" if n else "used by none of"
            assert re.search(rf'<tr data-path="{path}"><td>[^<]*</td><td>{words}', page), (base, path)
    # convolution_backward is a backward: no inference graph holds it, training runs it
    conv = json.loads((built / "data/ops/convolution_backward.json").read_text())["models"]["paths"]
    assert conv["eager_inference"]["used_by"] == 0 < conv["eager_training"]["used_by"]


def test_an_operator_newer_than_the_table_has_no_model_data_yet(built: Path) -> None:
    # _philox_randint came in 2.15.0: the 2.14.1 corpus could not run it, which is not "unused"
    assert first_registered("_philox_randint") == "2.15.0"
    data = json.loads((built / "data/ops/_philox_randint.json").read_text())["models"]
    assert data["no_data_yet"] and all(p["no_data_yet"] for p in data["paths"].values())
    page = (built / "ops/_philox_randint.html").read_text()
    assert "No model data yet (newer than torch 2.14.1)" in page and "used by none" not in page
    # an old operator no model runs is "used by none", not "no data"
    old = json.loads((built / "data/ops/cholesky_inverse.json").read_text())["models"]
    assert old["used_by"] == 0 and not old["no_data_yet"]
    index = json.loads((built / "data/ops.json").read_text())
    rows = {op["n"]: op for op in index["ops"]}
    assert rows["_philox_randint"]["m"] is None and rows["cholesky_inverse"]["m"] == 0
    assert rows["add"]["m"] == len(set().union(*_expected("add").values()))
    assert index["models"] == {
        "release": "2.14.1",
        "caveat": "torch 2.15.0 has no table of its own",
        "models": 51,
    }
    # gone from 2.15.0: the table of 2.15.0's nearest release does not speak for it
    gone = [op for op in index["ops"] if op["g"] == 1]
    assert gone and all(op["m"] is None for op in gone)
    html = (built / "index.html").read_text()
    assert '<th class="models" data-sort="m" data-first="desc">' in html
    assert '<td class="num na" title="no model data yet (newer than torch 2.14.1)">new</td>' in html


def test_the_coverage_page_lists_each_backends_first_work_by_models(built: Path) -> None:
    now = load_snapshot(SNAPSHOTS[-1])
    cov = compute_coverage(now, read_text_list(BACKEND_LIST, "list.txt"))
    ranked = [i for i in sorted(work_items(cov, now), key=work_item_rank_key) if i.scope.generic]
    page = (built / "coverage.html").read_text()
    listed = re.search(r'<ol class="work" data-backend="mine">(.*?)</ol>', page)
    assert listed is not None
    items = re.findall(r"<li>(.*?)</li>", listed.group(1))
    names = [re.search(r"<code>(.*?)</code>", li) for li in items]
    assert [m.group(1) if m else None for m in names] == [i.name for i in ranked[:10]]
    for li, item in zip(items, ranked, strict=False):
        assert f'<div class="reach">{item.models_words}</div>' in li
    assert f"The first 10 of {len(ranked)} work items; models on eager inference, eager training" in page
    # the ranking puts what breaks the most models first: a text list of five ops leaves mul's and
    # conv's kernels to write, which every model of the corpus dispatches
    assert ranked[0].models is not None and ranked[0].models.breaks == ranked[0].models.of == 51


def _unxz(name: str, dest: Path, as_name: str) -> Path:
    path = dest / as_name
    path.write_bytes(lzma.decompress((REAL / name).read_bytes()))
    return path


def test_a_column_of_each_new_kind_reads_its_real_list(tmp_path: Path, opdrift: Opdrift) -> None:
    """executorch (export, edge dialect), backend-stubs (OpenReg's yaml, eager) and python (torchax's
    registrations, eager): each a column with its kind and profile, the counts of `opdrift coverage`,
    its cells on the operator pages and its first work."""
    lists: dict[str, tuple[BackendKind, Path]] = {
        "et": ("executorch", _unxz("executorch.optimized.yaml.xz", tmp_path, "optimized.yaml")),
        "openreg": (
            "backend-stubs",
            _unxz("openreg.openreg_native_functions.yaml.xz", tmp_path, "openreg_native_functions.yaml"),
        ),
        "torchax": ("python", _unxz("torchax.jaten.py.xz", tmp_path, "jaten.py")),
    }
    out = tmp_path / "out"
    args = [a for name, (kind, path) in lists.items() for a in ("--backend", f"{name}:{kind}={path}")]
    run = opdrift("site", "-o", str(out), *args, str(SNAPSHOTS[-1]))
    assert run.code == 0, run.err
    index = json.loads((out / "data/ops.json").read_text())
    assert index["backends"] == [
        {"name": "et", "kind": "executorch", "list": "optimized.yaml", "profile": "export"},
        {
            "name": "openreg",
            "kind": "backend-stubs",
            "list": "openreg_native_functions.yaml",
            "profile": "eager",
        },
        {"name": "torchax", "kind": "python", "list": "jaten.py", "profile": "eager"},
    ]
    now = load_snapshot(SNAPSHOTS[-1])
    page = (out / "coverage.html").read_text()
    total = re.search(r'<tr class="total" data-bucket="all">(.*?)</tr>', page)
    assert total is not None
    for name, (kind, path) in lists.items():
        cov = compute_coverage(now, read_backend(kind, str(path)))
        # neither training-only ops nor those ExecuTorch's verifier refuses count (as coverage's)
        served = len(cov.ops) - len(cov.training_only) - len(cov.rejected)
        assert served == len(cov.covered) + len(cov.uncovered)
        assert (len(cov.rejected) > 0) == (kind == "executorch")
        assert f'data-backend="{name}">{len(cov.uncovered)} of {served}<' in total.group(1), name
        assert f"<th>{name} ({kind}, {cov.profile})</th>" in page
        rows = {op["n"]: op["v"][name] for op in index["ops"] if op["g"] == 0}
        assert sum(t for _, t in rows.values()) == served
        assert sum(c for c, _ in rows.values()) == served - len(cov.uncovered)
        ranked = [i for i in sorted(work_items(cov, now), key=work_item_rank_key) if i.scope.generic]
        listed = re.search(rf'<ol class="work" data-backend="{name}">(.*?)</ol>', page)
        assert listed is not None and len(ranked) > 0
        first = re.search(r"<code>(.*?)</code>", listed.group(1))
        assert first is not None and first.group(1) == ranked[0].name
    # the op pages say what each listed: OpenReg's one structured op, torchax's Python kernel
    maximum = json.loads((out / "data/ops/maximum.json").read_text())
    cells = {o["name"]: o["coverage"] for o in maximum["overloads"]}
    assert (
        cells["maximum.out"]["openreg"]["covered"]
        and cells["maximum"]["openreg"]["rule"] == "structured_delegate"
    )
    assert cells["maximum"]["torchax"]["covered"]
    assert "✓ listed" in (out / "ops/maximum.html").read_text()


def test_the_coverage_page_shows_the_same_first_work_as_opdrift_coverage(
    built: Path, opdrift: Opdrift
) -> None:
    """The greedy set (`opdrift.coverage.firstwork`) on the site is coverage's, step by step."""
    list_file = built.parent / "list.txt"
    report = json.loads(
        opdrift("coverage", "--backend", f"mine:text={list_file}", str(SNAPSHOTS[-1]), "--format", "json").out
    )
    steps = report["backends"][0]["first_work"]["steps"]
    assert steps, "a text list of five ops leaves models blocked"
    page = (built / "coverage.html").read_text()
    shown = re.search(r'<ol class="first-work" data-backend="mine">(.*?)</ol>', page)
    assert shown is not None
    lis = re.findall(r"<li>(.*?)</li>", shown.group(1))
    assert 0 < len(lis) <= len(steps)
    for li, step in zip(lis, steps, strict=False):
        assert re.findall(r"<code>(.*?)</code>", li) == list(step["items"])
        assert f": {step['runs']} of {report['backends'][0]['first_work']['models']} models" in li
