"""The config file: strict validation with file:line, and who gets mentioned for which changes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from driftcases import pipeline_ready, real_snapshot, realistic_pair

from bot.config import BotConfig, Subscription, WeeklyConfig, load_config, mentions_for, parse_config
from bot.drift import Change, compute_drift
from bot.errors import ConfigError, YamlError

DOC = Path(__file__).parent.parent / "docs" / "config.md"


def doc_example() -> str:
    match = re.search(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert match is not None
    return match.group(1)


def realistic_changes() -> tuple[Change, ...]:
    return compute_drift(*realistic_pair()).changes


def test_the_documented_example_parses(tmp_path: Path) -> None:
    path = tmp_path / "cfg" / "opdrift.yml"
    path.parent.mkdir()
    path.write_text(doc_example(), encoding="utf-8")
    cfg = load_config(str(path))
    assert cfg.labels == ("operator-drift", "module: backends")
    assert cfg.allowlist == str(tmp_path / "cfg" / "opdrift-allowlist.yaml")
    assert cfg.overrides == str(tmp_path / "cfg" / "opdrift-overrides.yaml")
    assert cfg.weekly == WeeklyConfig(close_previous=True, link_previous=True)
    assert cfg.subscriptions[0] == Subscription(
        who=("@llvm/torch-mlir-maintainers", "@alice"), facets=("new_core", "needs_kernel"), line=4
    )
    assert cfg.subscriptions[1].buckets == ("primitive_pointwise", "composite_reduction", "linalg")
    assert cfg.weekly.title(week="2026-W48", base="abc1234", head="def5678") == (
        "Operator drift 2026-W48 (abc1234..def5678)"
    )


def test_empty_file_is_the_defaults() -> None:
    assert parse_config("", "c.yml") == BotConfig(path="c.yml")
    assert parse_config("# nothing yet\n", "c.yml").subscriptions == ()


def test_handles_are_normalised_with_one_at() -> None:
    cfg = parse_config(
        "subscriptions:\n  - who: [alice, pytorch/xla-team, '@bob']\n    tags: [core]\n", "c.yml"
    )
    assert cfg.subscriptions[0].who == ("@alice", "@pytorch/xla-team", "@bob")


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("subscription:\n  - who: ['@a']\n", 1, "unknown key 'subscription'"),
        ("labels: drift\n", 1, "labels must be a list"),
        ("labels: [ok, 12]\n", 1, "must be a string"),
        ("labels:\n  - ok\n  - " + "x" * 51 + "\n", 3, "at most 50 characters"),
        ("subscriptions:\n  - who: ['@a']\n    bucket: [linalg]\n", 3, "unknown key 'bucket'"),
        ("subscriptions:\n  - who: ['@a']\n    buckets: [linalg, lin_alg]\n", 3, "unknown bucket 'lin_alg'"),
        ("subscriptions:\n  - who: ['@a']\n    buckets: [no]\n", 3, "must be a string"),
        (
            "subscriptions:\n  - who: ['@a']\n    facets:\n      - needs-kernel\n",
            4,
            "unknown facet 'needs-kernel'",
        ),
        ("subscriptions:\n  - who: ['al ice']\n    tags: [core]\n", 2, "'al ice' is not a GitHub handle"),
        ("subscriptions:\n  - who: ['@-bad-']\n    tags: [core]\n", 2, "is not a GitHub handle"),
        ("subscriptions:\n  - who: '@a'\n    tags: [core]\n", 2, "who must be a list"),
        ("subscriptions:\n  - who: []\n    tags: [core]\n", 2, "`who:` is empty"),
        ("subscriptions:\n  - tags: [core]\n", 2, "has no `who:`"),
        ("subscriptions:\n  - who: ['@a']\n", 2, "matches nothing"),
        ("subscriptions:\n  - who: ['@a']\n    tags: []\n", 3, "`tags:` is empty"),
        ("subscriptions:\n  - who: ['@a']\n    dispatch_keys: [M P S]\n", 3, "not a valid dispatch key"),
        (
            "subscriptions:\n  - who: ['@a']\n    tags: [core]\n    tags: [pointwise]\n",
            4,
            "duplicate key 'tags'",
        ),
        ("subscriptions:\n  who: ['@a']\n", 2, "subscriptions must be a list"),
        ("weekly:\n  close_previous: 'yes'\n", 2, "must be true or false"),
        ("weekly:\n  title_format: 'Drift {week} {sha}'\n", 2, "unknown field {sha}"),
        ("weekly:\n  title_format: 'Drift {week'\n", 2, "title_format"),
        ("weekly: [close_previous]\n", 1, "weekly must be a mapping"),
        ("allowlist: [a.yaml]\n", 1, "allowlist must be a string"),
        ("- just a list\n", 1, "the config must be a mapping"),
        ("backend: [list.txt]\n", 1, "unknown key 'backend'"),
    ],
)
def test_malformed_config_names_file_and_line(text: str, line: int, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(text, "opdrift.yml")
    assert (err.value.path, err.value.line) == ("opdrift.yml", line)
    assert message in err.value.message
    assert "\n" not in str(err.value)


def test_yaml_syntax_error_names_the_line() -> None:
    with pytest.raises(YamlError) as err:
        parse_config("labels: [a\nsubscriptions:\n  - who: @alice\n", "opdrift.yml")
    assert err.value.path == "opdrift.yml"
    assert err.value.line is not None


def test_unreadable_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the config"):
        load_config(str(tmp_path / "missing.yml"))


# --- mentions --------------------------------------------------------------------------------------


def config_with(*subs: Subscription) -> BotConfig:
    return BotConfig(subscriptions=subs)


def test_mentions_only_for_matching_subscriptions() -> None:
    changes = realistic_changes()
    cfg = parse_config(
        "subscriptions:\n"
        "  - who: ['@llvm/torch-mlir']\n    facets: [new_core, needs_kernel]\n"  # hardswish
        "  - who: ['@opencl']\n    buckets: [linalg]\n    facets: [needs_kernel]\n"  # linalg_polar.out
        "  - who: ['@xpu-team']\n    dispatch_keys: [XPU]\n"  # abs, abs.out, _cdist_backward gain XPU
        "  - who: ['@conv-people']\n    buckets: [convolution]\n"  # conv2d did not change
        "  - who: ['@pointwise-decomp']\n    buckets: [linalg]\n    facets: [now_decomposes]\n"  # logit: not linalg
        "  - who: ['@core', '@LLVM/torch-mlir']\n    tags: [core]\n"  # sum.dim_IntList lost core
        "  - who: ['@nobody']\n    tags: [nondeterministic_seeded]\n",
        "c.yml",
    )
    assert mentions_for(cfg, changes) == ("@llvm/torch-mlir", "@opencl", "@xpu-team", "@core")


def test_matchers_and_across_kinds_or_within() -> None:
    changes = realistic_changes()
    by_name = {c.name: c for c in changes}
    both = Subscription(who=("@a",), buckets=("linalg",), facets=("needs_kernel",))
    assert both.matches(by_name["linalg_polar.out"])
    assert not both.matches(by_name["linalg_polar"])  # linalg, but no kernel needed
    assert not both.matches(by_name["hardswish"])  # needs a kernel, but pointwise
    either = Subscription(who=("@a",), facets=("breaking", "now_decomposes"))
    assert {c.name for c in changes if either.matches(c)} == {
        "_cdist_backward",
        "cholesky",
        "cholesky.out",
        "logit",
        "std.names_dim",
        "tile.sym",
    }
    lost_core = Subscription(who=("@a",), tags=("core",))
    assert lost_core.matches(by_name["sum.dim_IntList"])  # the base side still had `core`


def test_no_changes_no_mentions() -> None:
    cfg = config_with(Subscription(who=("@a",), tags=("core",)))
    assert mentions_for(cfg, ()) == ()
    assert mentions_for(BotConfig(), realistic_changes()) == ()


@pytest.mark.skipif(not pipeline_ready(), reason="the parse/classify stages are not in the tree yet")
def test_mentions_on_a_real_release_drift(tmp_path: Path) -> None:
    drift = compute_drift(real_snapshot("2.13.0", str(tmp_path)), real_snapshot("2.14.1", str(tmp_path)))
    changes = drift.changes
    assert any(c.needs_kernel for c in changes)
    cfg = parse_config(
        "subscriptions:\n"
        "  - who: ['@torch-mlir']\n    facets: [new_core, needs_kernel]\n"
        "  - who: ['@fft-only']\n    buckets: [fft]\n    facets: [now_decomposes]\n",
        "c.yml",
    )
    expected = ["@torch-mlir"]
    if any(c.now_decomposes and c.category == "fft" for c in changes):
        expected.append("@fft-only")
    assert list(mentions_for(cfg, changes)) == expected
