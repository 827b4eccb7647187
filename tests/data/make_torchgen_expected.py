"""Write torchgen's registered-operator set per release as test data (tests/data/torchgen/<version>.tsv.xz).

Usage: python tests/data/make_torchgen_expected.py [--relax] TORCHGEN_PARENT RELEASES_DIR [VERSION ...]

TORCHGEN_PARENT is the directory that holds an unpacked ``torchgen/`` (from a torch wheel);
RELEASES_DIR holds ``<version>/native_functions.yaml`` and ``tags.yaml``. Each output line is
``name<TAB>schema<TAB>dispatch keys, sorted and comma-joined`` for one operator of
``parse_native_yaml(...).native_functions``, sorted by name, where the keys are those of every
backend index that holds the operator (torchgen's own view: a structured_delegate op lists only the
keys it names itself, and an op without a dispatch table lists CompositeImplicitAutograd).

torchgen from 2.13 on dropped ``Dimname`` from its BaseTy enum along with named tensors, so it
cannot read 1.12.0-2.12.0. For those files this script adds ``Dimname`` back as one more opaque
base type (the only change; it touches no code path except Type.parse) and says so on stderr.

``--relax`` runs a temporary copy of torchgen with two validation-only assertions switched off, for
release files that the newer torchgen rejects although nothing about the operator set is wrong:
``use_const_ref_for_mutable_tensors`` on an out= op (banned after 2.6, used by
``_conv_depthwise2d.out`` in 2.1-2.6) and the ``nondeterministic_seeded`` tag check on names
containing "rand" (2.15.0's ``_philox_randint_``), and the ban on Python keywords as argument
names (``can_cast(ScalarType from, ...)`` in 2.0-2.3), and the error for an op without tensor
returns that is missing from torchgen's hand-kept list (2.0.0's ``_nested_tensor_offsets``; such
an op gets no generated variant either way). None of these checks changes what is registered. The
copy is patched by exact text replacement and the script fails if a snippet is not found.
"""

from __future__ import annotations

import importlib
import lzma
import shutil
import sys
import tempfile
from pathlib import Path

_RELAX = (
    (
        "model.py",
        "        if use_const_ref_for_mutable_tensors:\n            if func.arguments.out:\n",
        "        if use_const_ref_for_mutable_tensors:\n            if False:\n",
    ),
    (
        "model.py",
        '            if "nondeterministic_seeded" not in self.tags:\n',
        "            if False:\n",
    ),
    (
        "native_function_generation.py",
        "                    not in FUNCTIONAL_OPS_THAT_CANNOT_GET_AN_OUT_VARIANT\n",
        "                    not in FUNCTIONAL_OPS_THAT_CANNOT_GET_AN_OUT_VARIANT and False\n",
    ),
    (
        "gen.py",
        "            if arg.name in PYTHON_RESERVED_KEYWORDS:\n",
        "            if False:\n",
    ),
)


def _relaxed_copy(parent: Path) -> Path:
    dest = Path(tempfile.mkdtemp(prefix="torchgen-relaxed-"))
    shutil.copytree(parent / "torchgen", dest / "torchgen")
    for file, old, new in _RELAX:
        path = dest / "torchgen" / file
        text = path.read_text()
        if text.count(old) != 1:
            raise SystemExit(f"--relax: snippet not found exactly once in {path}: {old!r}")
        path.write_text(text.replace(old, new))
    return dest


def _add_dimname(model: object) -> bool:
    base_ty = model.BaseTy  # type: ignore[attr-defined]
    if "Dimname" in base_ty.__members__:
        return False
    member = object.__new__(base_ty)
    member._name_ = "Dimname"
    member._value_ = max(m.value for m in base_ty) + 1
    base_ty._member_map_["Dimname"] = member
    base_ty._value2member_map_[member._value_] = member
    base_ty._member_names_.append("Dimname")
    return True


def expected_lines(releases: Path, version: str) -> list[str]:
    gen = importlib.import_module("torchgen.gen")

    native = releases / version / "native_functions.yaml"
    tags = releases / version / "tags.yaml"
    parsed = gen.parse_native_yaml(str(native), str(tags))
    keys: dict[str, set[str]] = {}
    for key, index in parsed.backend_indices.items():
        for op_name in index.index:
            keys.setdefault(str(op_name), set()).add(str(key))
    lines = []
    for f in parsed.native_functions:
        name = str(f.func.name)
        lines.append(f"{name}\t{f.func}\t{','.join(sorted(keys.get(name, ())))}")
    lines.sort()
    return lines


def main(argv: list[str]) -> int:
    relax = "--relax" in argv
    argv = [a for a in argv if a != "--relax"]
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    parent = Path(argv[0])
    sys.path.insert(0, str(_relaxed_copy(parent) if relax else parent))
    model = importlib.import_module("torchgen.model")

    releases = Path(argv[1])
    versions = argv[2:] or sorted(
        p.name for p in releases.iterdir() if (p / "native_functions.yaml").exists()
    )
    out_dir = Path(__file__).parent / "torchgen"
    out_dir.mkdir(exist_ok=True)
    if _add_dimname(model):
        print(
            "note: this torchgen has no Dimname type; added it back as an opaque base type", file=sys.stderr
        )
    failed = []
    for version in versions:
        try:
            lines = expected_lines(releases, version)
        except Exception as err:  # report every release torchgen cannot read, then go on
            print(f"{version}: torchgen failed: {type(err).__name__}: {str(err)[:300]}", file=sys.stderr)
            failed.append(version)
            continue
        data = ("\n".join(lines) + "\n").encode("utf-8")
        (out_dir / f"{version}.tsv.xz").write_bytes(lzma.compress(data, preset=9 | lzma.PRESET_EXTREME))
        print(f"{version}: {len(lines)} operators", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
