"""The allow-list: parsing with file:line errors, matching by name glob and fingerprint, expiry."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from driftcases import realistic_pair
from goldens import check_golden_entry, updating

from opdrift.drift.allowlist import AllowList, acknowledge, load_allowlist, parse_allowlist
from opdrift.drift.changes import Drift, compute_drift
from opdrift.errors import ConfigError

TODAY = dt.date(2026, 6, 1)


def drift_and_fp(name: str) -> tuple[Drift, str]:
    drift = compute_drift(*realistic_pair())
    return drift, next(c.fingerprint for c in drift.changes if c.name == name)


def test_parse_entries_with_lines() -> None:
    text = (
        "# acknowledged operator changes\n"
        '- name: "aten::cholesky*"\n'
        "  reason: removed after deprecation\n"
        "  expires: 2026-12-31\n"
        "\n"
        "- fingerprint: 0123456789ab\n"
        '  name: "tile*"\n'
        "  reason: 'overload renamed'\n"
        '  expires: "2027-01-01"\n'
    )
    allow = parse_allowlist(text, "allow.yaml")
    first, second = allow.entries
    assert (first.name, first.fingerprint, first.line, first.expires) == (
        "cholesky*",
        None,
        2,
        dt.date(2026, 12, 31),
    )
    # An all-digit fingerprint with a leading zero stays text (YAML would read it as an octal number).
    assert (second.name, second.fingerprint, second.line) == ("tile*", "0123456789ab", 6)
    assert parse_allowlist("", "empty.yaml") == AllowList((), "empty.yaml")


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("name: x\n", 1, "a YAML list"),
        ("- just a string\n", 1, "a mapping"),
        ("- reason: r\n  expires: 2026-01-01\n", 1, "name pattern or a fingerprint"),
        ("- name: x\n  expires: 2026-01-01\n", 1, "needs a reason"),
        ("- name: x\n  reason: r\n", 1, "expiry date"),
        ("- name: x\n  reason: r\n  expires: someday\n", 3, "YYYY-MM-DD"),
        ("- name: x\n  reason: r\n  expires: 2026-02-30\n", 3, "day is out of range"),
        ("- name: x\n  reason: r\n  expires: 2026-01-01\n  owner: me\n", 4, "unknown key 'owner'"),
        ("- fingerprint: xyz\n  reason: r\n  expires: 2026-01-01\n", 1, "12 hex digits"),
        ("- name: x\n  reason: r\n  expires: 2026-01-01\n- name: [\n", 5, "invalid YAML"),
        ("- name: ''\n  reason: r\n  expires: 2026-01-01\n", 1, "non-empty string"),
    ],
)
def test_malformed_files_name_the_line(text: str, line: int, words: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_allowlist(text, "allow.yaml")
    err = info.value
    assert (err.path, err.line) == ("allow.yaml", line), str(err)
    assert words in err.message
    assert str(err).startswith(f"allow.yaml:{line}: ")


def test_match_by_glob_fingerprint_and_both() -> None:
    drift, fp = drift_and_fp("_cdist_backward")
    allow = parse_allowlist(
        "- name: 'aten::cholesky*'\n  reason: a\n  expires: 2030-01-01\n"
        f"- fingerprint: {fp}\n  reason: b\n  expires: 2030-01-01\n"
        f"- fingerprint: {fp}\n  name: 'nothing_like_it'\n  reason: c\n  expires: 2030-01-01\n"
        "- name: tile\n  reason: d\n  expires: 2030-01-01\n",
        "allow.yaml",
    )
    acks = acknowledge(drift, allow, today=TODAY)
    reasons = {c.name: a.reason for c in drift.changes if (a := acks.get(c)) is not None}
    # "tile" matches the rename tile -> tile.sym by its old name.
    assert reasons == {"cholesky": "a", "cholesky.out": "a", "_cdist_backward": "b", "tile.sym": "d"}
    assert acks.warnings == ()


def test_expired_entries_are_ignored_with_a_warning(request: pytest.FixtureRequest) -> None:
    drift, _ = drift_and_fp("cholesky")
    allow = parse_allowlist(
        "- name: cholesky\n  reason: a\n  expires: 2026-05-31\n- name: cholesky.out\n  reason: b\n  expires: 2026-06-01\n",
        "allow.yaml",
    )
    acks = acknowledge(drift, allow, today=TODAY)
    assert {c.name for c in drift.changes if c in acks} == {"cholesky.out"}
    (warning,) = acks.warnings
    assert warning.startswith("allow.yaml:1: ") and "'cholesky'" in warning and "2026-05-31" in warning
    check_golden_entry("warnings.lines.txt", "allow-list: expired entry", warning + "\n", updating(request))


def test_load_allowlist_reads_files(tmp_path: Path) -> None:
    path = tmp_path / "allow.yaml"
    path.write_text("- name: x\n  reason: r\n  expires: 2026-01-01\n", encoding="utf-8")
    assert load_allowlist(str(path)).entries[0].name == "x"
    with pytest.raises(ConfigError, match="cannot read"):
        load_allowlist(str(tmp_path / "missing.yaml"))


def test_a_repeated_key_in_an_entry_is_refused() -> None:
    """YAML keeps the last value: a second `expires:` would quietly extend an acknowledgement."""
    text = '- name: "_philox*"\n  name: "other"\n  reason: r\n  expires: 2027-01-01\n'
    with pytest.raises(ConfigError, match="duplicate key 'name' \\(first at line 1\\)") as err:
        parse_allowlist(text, "a.yml")
    assert err.value.line == 2
    tab = '- name: "x"\n  reason: r\n  expires: 2027-01-01\t\n'
    assert len(parse_allowlist(tab, "a.yml").entries) == 1
