"""The hand-written YAML files (config, overrides, allow-list) are read one way: composed once, their
nodes read with `opdrift.yamltext.NodeReader`, every error at the line of the node it is about."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from clirun import Opdrift
from goldens import check_golden_entry, updating

from opdrift import yamltext
from opdrift.drift.allowlist import parse_allowlist
from opdrift.errors import ConfigError
from opdrift.taxonomy.overrides import parse_overrides

# A nested `reason:` (line 4) written before the bad top-level one (line 5).
NESTED_THEN_TOP_REASON = (
    "overrides:\n  glu:\n    bucket: composite_pointwise\n    reason: halves\nreason: [not, a, string]\n"
)


def test_a_bad_top_level_reason_is_reported_at_its_own_line() -> None:
    """The line comes from the node, not from the first line that looks like `reason:`."""
    with pytest.raises(ConfigError) as info:
        parse_overrides(NESTED_THEN_TOP_REASON, "o.yaml")
    assert str(info.value) == "o.yaml:5: `reason:` must be a string"


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        # an override's own error is at its key or value, not at an earlier line spelling the same word
        ("reason: relu\noverrides:\n  relu: nope\n", 3, "relu: unknown bucket 'nope'"),
        ("overrides:\n  glu:\n    reason: x\n    bucket: nope\n", 4, "glu: unknown bucket 'nope'"),
        ("overrides:\n  glu:\n    bucket: misc\n    reason: 3\n", 4, "glu: `reason:` must be a string"),
        ("overrides:\n  glu:\n    bucket: misc\n    why: x\n", 4, "glu: unknown key 'why'"),
        ("# a comment\n- arccos\n", 2, "must be a mapping"),
        ("overrides:\n  1: misc\n", 2, "operator name must be a string, not 1"),
        ("overrides:\n  glu: 7\n", 2, "glu: unknown bucket 7"),
        ("overrides:\n  glu: [misc]\n", 2, r"glu: unknown bucket \['misc'\]"),
    ],
)
def test_overrides_errors_are_at_the_node_they_are_about(text: str, line: int, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        parse_overrides(text, "o.yaml")
    assert info.value.line == line


def test_an_unmatched_override_is_warned_about_at_its_own_line(request: pytest.FixtureRequest) -> None:
    overrides = parse_overrides("reason: relu\noverrides:\n  relu: misc\n  reason: misc\n", "o.yaml")
    assert overrides.lines == {"relu": 3, "reason": 4}
    (warning,) = overrides.unmatched(["relu"], "s")
    assert warning.startswith("o.yaml:4: ") and "'reason'" in warning
    check_golden_entry(
        "warnings.lines.txt", "overrides: an unmatched name", warning + "\n", updating(request)
    )


def _count_loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every YAML parse opdrift starts goes through `yamltext.Loader`: count them."""
    loads: list[str] = []

    class Counting(yamltext.Loader):  # type: ignore[misc,valid-type]
        def __init__(self, stream: str) -> None:
            loads.append(stream)
            super().__init__(stream)

    monkeypatch.setattr(yamltext, "Loader", Counting)
    return loads


ALLOWLIST = "- name: 'aten::cholesky*'\n  reason: r\n  expires: 2026-12-31\n"
OVERRIDES = "reason: ours\noverrides:\n  glu: {bucket: misc, reason: x}\n  arccos: alias\n"


@pytest.mark.parametrize(
    ("parse", "text"),
    [(parse_allowlist, ALLOWLIST), (parse_overrides, OVERRIDES)],
    ids=["allowlist", "overrides"],
)
def test_each_file_is_parsed_once(
    monkeypatch: pytest.MonkeyPatch, parse: Callable[[str, str], object], text: str
) -> None:
    loads = _count_loads(monkeypatch)
    parse(text, "f.yaml")
    assert loads == [text]


def test_the_allow_list_reads_dates_and_fingerprints_from_the_nodes() -> None:
    text = (
        "- fingerprint: 0123456789AB\n  reason: r\n  expires: 2026-12-31 10:00:00\n"
        "- name: x\n  fingerprint: ~\n  reason: r\n  expires: '2027-01-01'\n"
    )
    first, second = parse_allowlist(text, "a.yaml").entries
    assert (first.fingerprint, first.expires.isoformat(), first.line) == ("0123456789ab", "2026-12-31", 1)
    assert (second.name, second.fingerprint, second.line) == ("x", None, 4)
    with pytest.raises(
        ConfigError, match=r"expires must be a date YYYY-MM-DD, got '2026-02-30' \(day is"
    ) as e:
        parse_allowlist("- name: x\n  reason: r\n\n  expires: 2026-02-30\n", "a.yaml")
    assert e.value.line == 4


def test_the_node_reader_raises_the_files_own_error_at_the_node(request: pytest.FixtureRequest) -> None:
    root = yamltext.compose_yaml_document("a:\n  - 1\n", "f.yaml")
    assert isinstance(root, yaml.MappingNode)
    reader = yamltext.NodeReader("f.yaml", ConfigError)
    (item,) = reader.read(yamltext.SEQUENCE, root.value[0][1], "a", root)
    with pytest.raises(ConfigError) as info:
        reader.read(yamltext.NODE_STRING, item, "each item of a", item)
    said = str(info.value)
    assert said.startswith("f.yaml:2: each item of a ") and "string" in said
    check_golden_entry("errors.lines.txt", "yaml: an item not a string", said + "\n", updating(request))


# What each file gets wrong, the option that reads it, and the line of the mistake.
BAD_FILES = {
    "overrides": (NESTED_THEN_TOP_REASON, 5),
    "allowlist": ("- name: x\n  reason: r\n  expires: 2026-02-30\n", 3),
    "config": ("labels: [a]\nweekly:\n  chart: yes\n", 3),
}


@pytest.mark.parametrize("kind", sorted(BAD_FILES))
def test_every_file_fails_as_one_line_with_its_line(
    kind: str, tmp_path: Path, release_file: Callable[[str], Path], opdrift: Opdrift
) -> None:
    text, line = BAD_FILES[kind]
    bad = tmp_path / f"{kind}.yaml"
    bad.write_text(text, encoding="utf-8")
    native = str(release_file("2.14.1"))
    argv = {
        "overrides": ["stats", native, "--overrides", str(bad)],
        "allowlist": ["diff", native, native, "--allowlist", str(bad)],
        "config": [
            "comment",
            "--repo",
            "o/r",
            "--pr",
            "1",
            "--dry-run",
            "--config",
            str(bad),
            native,
            native,
        ],
    }[kind]
    run = opdrift(*argv)
    assert run.code == 2, run
    assert "Traceback" not in run.err
    assert run.err.startswith(f"opdrift: error: {bad}:{line}: ") and run.err.count("\n") == 1, run.err
