"""Write each release wheel's registered operator names as test data (tests/data/wheels/<version>/operators.txt.xz).

Usage: python tests/data/make_wheel_expected.py WHEEL [WHEEL ...]

Each WHEEL is a torch wheel from PyPI; its version is read from the file name. The names come from
its ``torch/include/ATen/RegistrationDeclarations.h``, one line per operator the release's own
codegen registered, each ending in a JSON comment whose ``schema`` starts ``aten::NAME.OVERLOAD(``.
The output is those names, ``name.overload`` (the bare name for the default overload), sorted, one
a line, xz-compressed. The names are read with json alone, not with opdrift, so the data does not
depend on the code it checks. For tests/data/wheels/README.md the script prints the wheel's file
name and the sha256 of the header.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import re
import sys
import zipfile
from pathlib import Path

MEMBER = "torch/include/ATen/RegistrationDeclarations.h"
_NAME = re.compile(r"aten::([^(]+)\(")


def operator_names(header: str) -> list[str]:
    names = set()
    for number, line in enumerate(header.splitlines(), start=1):
        at = line.find("// {")
        if at == -1:
            continue
        schema = json.loads(line[at + 3 :])["schema"]
        m = _NAME.match(schema)
        if m is None:
            raise SystemExit(f"{MEMBER}:{number}: schema without aten::NAME(: {schema[:80]!r}")
        if m.group(1) in names:
            raise SystemExit(f"{MEMBER}:{number}: {m.group(1)} registered twice")
        names.add(m.group(1))
    return sorted(names)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    out_root = Path(__file__).parent / "wheels"
    for wheel in map(Path, argv):
        version = wheel.name.split("-")[1]
        with zipfile.ZipFile(wheel) as z:
            data = z.read(MEMBER)
        names = operator_names(data.decode("utf-8"))
        out = out_root / version / "operators.txt.xz"
        out.parent.mkdir(parents=True, exist_ok=True)
        text = "".join(f"{n}\n" for n in names).encode("utf-8")
        out.write_bytes(lzma.compress(text, preset=9 | lzma.PRESET_EXTREME))
        print(f"| {version} | `{wheel.name}` | {len(names)} | `{hashlib.sha256(data).hexdigest()}` |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
