"""The config file: strict validation with file:line, and who gets mentioned for which changes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from clirun import Opdrift
from driftcases import real_snapshot, realistic_pair
from goldens import check_error_line, check_golden_entry, updating

from opdrift.app.subscriptions import (
    backend_gaps,
    backend_specs,
    concerns,
    concerns_some,
    matches,
    mentions_for,
)
from opdrift.config.backend_specs import BackendSpec
from opdrift.config.file import (
    BotConfig,
    Subscription,
    WeeklyConfig,
    check_names,
    load_config,
    parse_config,
)
from opdrift.drift.changes import Change, compute_drift
from opdrift.errors import ConfigError, YamlError
from opdrift.render.context import BackendGap
from opdrift.taxonomy.scope import scope_of
from opdrift.text import did_you_mean
from opdrift.yamltext import read_yaml_document

ROOT = Path(__file__).resolve().parents[3]

DOC = Path(__file__).parents[3] / "docs" / "config.md"


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
        ("bot_login: 'github actions'\n", 1, "not a valid GitHub login"),
        ("bot_login: [me]\n", 1, "bot_login must be a string"),
        ("weekly:\n  title_format: 'Drift {week:d}'\n", 2, "write {week} plainly"),
        ("weekly:\n  title_format: 'Drift {week!x}'\n", 2, "title_format"),
        ("weekly:\n  title_format: 'Drift {week:>99999999999}'\n", 2, "write {week} plainly"),
        ("weekly:\n  chart: 0x1000\n", 2, "between 0 and 100"),
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
    # A date YAML cannot build is a plain ValueError inside PyYAML: still one line, with its place.
    with pytest.raises(YamlError, match=r"month must be in 1\.\.12") as err:
        parse_config("labels: [ok]\nweekly:\n  title_format: 2026-13-01\n", "opdrift.yml")
    assert (err.value.path, err.value.line) == ("opdrift.yml", 3)


@pytest.mark.parametrize(
    ("text", "line", "handle"),
    [
        ("subscriptions:\n  - who: @team\n    buckets: [core]\n", 2, "@team"),
        ('subscriptions:\n  - who: ["@a", @pytorch/xla-devs]\n    buckets: [core]\n', 2, "@pytorch/xla-devs"),
        ("labels: [x]\nsubscriptions:\n  - who:\n      - @alice\n    buckets: [core]\n", 4, "@alice"),
    ],
)
def test_an_unquoted_handle_is_told_to_be_quoted(text: str, line: int, handle: str) -> None:
    """`@` cannot start a plain YAML scalar: the parser's own words ("found character that cannot
    start any token") do not say why, the error does."""
    with pytest.raises(ConfigError) as err:
        parse_config(text, "opdrift.yml")
    assert str(err.value) == f'opdrift.yml:{line}: quote handles: "{handle}"'
    # quoted, the same file is valid YAML
    read_yaml_document(text.replace(handle, f'"{handle}"'), "opdrift.yml")


def test_an_unquoted_handle_from_the_cli_is_one_line(tmp_path: Path, opdrift: Opdrift) -> None:
    config = tmp_path / "opdrift.yml"
    config.write_text("subscriptions:\n  - who: @team\n    buckets: [core]\n", encoding="utf-8")
    snap = str(ROOT / "snapshots" / "v2.14.1.json")
    run = opdrift("comment", "--repo", "o/r", "--pr", "1", "--dry-run", "--config", str(config), snap, snap)
    assert (run.code, run.out) == (2, "")
    assert run.err == f'opdrift: error: {config}:2: quote handles: "@team"\n'


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
    assert matches(both, by_name["linalg_polar.out"])
    # linalg, and a kernel for functional and export backends (an eager one runs linalg_polar.out's)
    assert matches(both, by_name["linalg_polar"])
    assert not matches(both, by_name["cholesky"])  # linalg, but removed: nothing to write
    assert not matches(both, by_name["hardswish"])  # needs a kernel, but pointwise
    either = Subscription(who=("@a",), facets=("breaking", "now_decomposes"))
    assert {c.name for c in changes if matches(either, c)} == {
        "_cdist_backward",
        "cholesky",
        "cholesky.out",
        "logit",
        "std.names_dim",
        "tile.sym",
    }
    lost_core = Subscription(who=("@a",), tags=("core",))
    assert matches(lost_core, by_name["sum.dim_IntList"])  # the base side still had `core`


def test_no_changes_no_mentions() -> None:
    cfg = config_with(Subscription(who=("@a",), tags=("core",)))
    assert mentions_for(cfg, ()) == ()
    assert mentions_for(BotConfig(), realistic_changes()) == ()


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


# --- backend subscriptions -------------------------------------------------------------------------


def test_backend_subscription_parses_with_paths_relative_to_the_config(tmp_path: Path) -> None:
    path = tmp_path / "cfg" / "opdrift.yml"
    path.parent.mkdir()
    path.write_text(
        "subscriptions:\n"
        "  - who: ['@xla']\n"
        "    backend: {kind: xla, path: lists/xla_native_functions.yaml}\n"
        "  - who: ['@mps']\n"
        "    backend:\n      kind: dispatch\n      key: MPS\n"
        "    buckets: [linalg]\n",
        encoding="utf-8",
    )
    cfg = load_config(str(path))
    xla, mps = cfg.subscriptions
    assert xla.backend == BackendSpec(
        "xla",
        "lists/xla_native_functions.yaml",
        str(tmp_path / "cfg" / "lists" / "xla_native_functions.yaml"),
        line=3,
    )
    assert xla.backend is not None and xla.backend.line == 3
    assert (xla.buckets, xla.facets) == ((), ())  # a backend alone is a matcher
    assert mps.backend == BackendSpec("dispatch", "MPS", "MPS", line=5)
    assert mps.buckets == ("linalg",)
    assert backend_specs(cfg) == (xla.backend, mps.backend)


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("backend: {kind: xla}\n", 3, "kind xla needs `path:`"),
        ("backend: {path: x.yaml}\n", 3, "has no `kind:`"),
        (
            "backend: {kind: XLA, path: x.yaml}\n",
            3,
            "unknown backend kind 'XLA' (expected one of: torch-mlir",
        ),
        ("backend: {kind: xla, path: x.yaml, key: MPS}\n", 3, "`key:` is only for kind dispatch"),
        ("backend: {kind: dispatch, path: MPS}\n", 3, "kind dispatch takes `key:`"),
        ("backend: {kind: dispatch}\n", 3, "kind dispatch needs `key:`"),
        ("backend: {kind: dispatch, key: 'M P S'}\n", 3, "not a valid dispatch key"),
        ("backend: {kind: xla, path: x.yaml, when: always}\n", 3, "unknown key 'when'"),
        ("backend: xla=x.yaml\n", 3, "backend must be a mapping"),
        ("backend:\n      kind: text\n      path: ''\n", 5, "path must not be empty"),
        ("backend:\n      kind: [xla]\n      path: x\n", 4, "kind must be a string"),
    ],
)
def test_malformed_backend_subscription_names_file_and_line(text: str, line: int, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config("subscriptions:\n  - who: ['@a']\n    " + text, "opdrift.yml")
    assert (err.value.path, err.value.line) == ("opdrift.yml", line)
    assert message in err.value.message


def test_bot_login() -> None:
    assert parse_config("bot_login: github-actions[bot]\n", "c.yml").bot_login == "github-actions[bot]"
    assert parse_config("bot_login: '@opdrift-bot'\n", "c.yml").bot_login == "opdrift-bot"
    assert parse_config("labels: [a]\n", "c.yml").bot_login is None


def test_weekly_upstream_and_chart() -> None:
    cfg = parse_config("weekly:\n  upstream: my-org/pytorch\n  chart: 30\n", "c.yml")
    assert (cfg.weekly.upstream, cfg.weekly.chart) == ("my-org/pytorch", 30)
    assert parse_config("weekly:\n  chart: 0x10\n", "c.yml").weekly.chart == 16  # YAML's own int forms
    assert (WeeklyConfig().upstream, WeeklyConfig().chart) == ("pytorch/pytorch", 0)
    for bad, message in (
        ("upstream: pytorch", "not a valid repository"),
        ("chart: many", "must be a number of points"),
        ("chart: 1000", "between 0 and 100"),
    ):
        with pytest.raises(ConfigError, match=message):
            parse_config(f"weekly:\n  {bad}\n", "c.yml")


@pytest.mark.slow
def test_a_backend_path_that_is_not_there_says_what_it_was_resolved_against(
    tmp_path: Path, opdrift: Opdrift, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    # As docs/workflows.md used to write it: a path from the repository's root, in .github/opdrift.yml.
    repo = tmp_path / "backend"
    (repo / ".github").mkdir(parents=True)
    (repo / "codegen").mkdir()
    (repo / "codegen" / "xla_native_functions.yaml").write_text("backend: XLA\nsupported:\n- add.Tensor\n")
    (repo / ".github" / "opdrift.yml").write_text(
        "subscriptions:\n  - who: ['@xla']\n    backend: {kind: xla, path: codegen/xla_native_functions.yaml}\n"
    )
    monkeypatch.chdir(repo)
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    snaps = Path(__file__).resolve().parents[3] / "snapshots"
    argv = ["issue", "--repo", "o/r", "--config", ".github/opdrift.yml", str(snaps / "v2.13.0.json")]
    run = opdrift(*argv, str(snaps / "v2.14.1.json"), "--week", "2026-W48")
    assert run.code == 2
    # at the config's line, naming the path it tried and the one to write (golden: the wording)
    said = check_error_line(
        "config: a backend list beside the config's directory",
        run.err,
        updating(request),
        file=".github/opdrift.yml",
        line=3,
    )
    assert ".github/codegen/xla_native_functions.yaml" in said
    assert said.endswith(" ../codegen/xla_native_functions.yaml")
    # Written so, it is read.
    text = (repo / ".github" / "opdrift.yml").read_text().replace("path: codegen/", "path: ../codegen/")
    (repo / ".github" / "opdrift.yml").write_text(text)
    run = opdrift(*argv, str(snaps / "v2.14.1.json"), "--week", "2026-W48")
    assert run.code == 0, run.err


def test_backend_subscribers_are_mentioned_only_for_ops_their_backend_lacks(tmp_path: Path) -> None:
    """2.13.0 → 2.14.1: one backend lists the new ops that need a kernel, one lists none of them."""
    from opdrift.coverage.backends import read_backend
    from opdrift.coverage.check import compute_coverage

    base, head = real_snapshot("2.13.0", str(tmp_path)), real_snapshot("2.14.1", str(tmp_path))
    changes = compute_drift(base, head).changes
    nothing = compute_coverage(head, read_backend("text", _write(tmp_path / "none.txt", "add.Tensor\n")))
    uncovered = {o.name for o in nothing.uncovered}
    plain = BackendSpec("text", "none.txt", "none.txt")
    new_lacking = sorted(c.name for c in changes if concerns(plain, c) and c.name in uncovered)
    assert new_lacking  # the release adds ops that need a kernel
    _write(tmp_path / "all.txt", "".join(f"{n}\n" for n in new_lacking))
    _write(tmp_path / "some.txt", "".join(f"{n}\n" for n in new_lacking[1:]))
    cfg = load_config(
        _write(
            tmp_path / "opdrift.yml",
            "subscriptions:\n"
            "  - who: ['@has-all']\n    backend: {kind: text, path: all.txt}\n"
            "  - who: ['@lacks-one']\n    backend: {kind: text, path: some.txt}\n"
            "  - who: ['@lacks-one-linalg']\n    backend: {kind: text, path: some.txt}\n    buckets: [linalg]\n",
        )
    )
    lacking = {
        spec: frozenset(
            o.name for o in compute_coverage(head, read_backend(spec.kind, spec.resolved)).uncovered
        )
        for spec in backend_specs(cfg)
    }
    assert len(lacking) == 2  # two subscriptions share some.txt: read once
    expected = ["@lacks-one"]
    if next(c for c in changes if c.name == new_lacking[0]).category == "linalg":
        expected.append("@lacks-one-linalg")
    assert list(mentions_for(cfg, changes, lacking)) == expected
    gaps = backend_gaps(cfg, changes, lacking)
    # the new ops only some backends need (CUDA-only...), which both lists lack: every gap lists them
    # apart, and they alone warn no one (@has-all's gap is only them)
    some = tuple(sorted(c.name for c in changes if concerns_some(plain, c) and c.name in uncovered))
    assert some and all(g.some_need == some for g in gaps)
    assert [g.who for g in gaps if not g.warns()] == [("@has-all",)]
    warned = [g for g in gaps if g.warns()]
    assert warned[0] == BackendGap(
        ("@lacks-one",), "text", "some.txt", (new_lacking[0],), some_need=some, name="some"
    )
    assert [g.who for g in warned] == [(h,) for h in expected]
    with pytest.raises(ValueError, match="no coverage given"):
        mentions_for(cfg, changes)


def test_backend_concerns_new_and_changed_ops_not_removals() -> None:
    changes = realistic_changes()
    xla = BackendSpec("xla", "x.yaml", "x.yaml")
    xpu = BackendSpec("dispatch", "XPU", "XPU")
    assert not any(concerns(xla, c) for c in changes if c.kind == "removed")
    # new ops, kernel-signature changes and lost default kernels; not a tag or bucket change, nor an
    # op only some backends need
    concerned = {c.name for c in changes if concerns(xla, c)}
    assert concerned == {
        c.name
        for c in changes
        if c.kind != "removed"
        and not c.kernels_only
        and scope_of(c.record).generic
        and (c.kind in ("added", "renamed") or c.kernel == "breaking" or c.needs_kernel)
    }
    assert "hardswish" in concerned and "_philox_key_fold_in.Tensor" in concerned
    assert not any(
        concerns(xla, c)
        for c in changes
        if c.details and all(d.code in ("tag_added", "tag_removed") for d in c.details)
    )
    # abs, abs.out, _cdist_backward only gained XPU kernels: news for XPU, not for XLA.
    kernels_only = [c for c in changes if c.kernels_only]
    assert kernels_only
    assert not any(concerns(xla, c) for c in kernels_only)
    assert all(concerns(xpu, c) for c in kernels_only if any(d.subject == "XPU" for d in c.details))


# --- names only the snapshots can check ------------------------------------------------------------

TYPO_CONFIG = (
    "subscriptions:\n"
    "  - who: ['@fine']\n    dispatch_keys: [XPU, MPS]\n    tags: [core, pt2_compliant_tag]\n"  # 2-4
    "  - who: ['@mps']\n    backend:\n      kind: dispatch\n      key: {key}\n"  # 5-8
    "  - who: ['@typos']\n    dispatch_keys:\n      - CPU\n      - {dispatch}\n"  # 9-12
    "    tags:\n      - pointwise\n      - {tag}\n"  # 13-15
)


@pytest.mark.parametrize(
    ("key", "dispatch", "tag", "line", "message"),
    [
        ("MPS", "XPU", "core", None, ""),
        ("mps", "XPU", "core", 8, "dispatch key 'mps'; did you mean MPS?"),
        ("MPS", "xpu", "core", 12, "dispatch key 'xpu'; did you mean XPU?"),
        ("MPS", "XPU", "coer", 15, "unknown tag 'coer': neither BASE nor HEAD knows it; did you mean core?"),
        ("MPS", "NoSuchBackend", "core", 12, "dispatch key 'NoSuchBackend'"),
        ("mps", "xpu", "coer", 8, "backend: no operator of BASE or HEAD"),  # the first, by line
    ],
)
@pytest.mark.slow
def test_typos_in_dispatch_keys_and_tags_name_their_line(
    tmp_path: Path, key: str, dispatch: str, tag: str, line: int | None, message: str
) -> None:
    """Well-formed names that neither real release knows would match nothing, ever: an error, not silence."""
    base, head = real_snapshot("2.13.0", str(tmp_path)), real_snapshot("2.14.1", str(tmp_path))
    keys = {k for snap in (base, head) for r in snap.operators.values() for k in r.facets.dispatch}
    tags = {t for snap in (base, head) for r in snap.operators.values() for t in r.facets.tags}
    tags.add("pt2_compliant_tag")  # defined in tags.yaml, used by no operator: the caller adds those
    cfg = parse_config(TYPO_CONFIG.format(key=key, dispatch=dispatch, tag=tag), "opdrift.yml")
    if line is None:
        check_names(cfg, dispatch_keys=keys, tags=tags)
        return
    with pytest.raises(ConfigError) as err:
        check_names(cfg, dispatch_keys=keys, tags=tags)
    assert (err.value.path, err.value.line) == ("opdrift.yml", line)
    assert message in err.value.message
    if "NoSuchBackend" in message:
        assert "did you mean" not in err.value.message  # nothing close: no guess


def test_did_you_mean_ignores_case_and_stays_quiet_when_nothing_is_close() -> None:
    keys = ("CPU", "CUDA", "MPS", "SparseMPS", "XPU")
    assert did_you_mean("mps", keys) == "; did you mean MPS?"
    assert did_you_mean("Cuda", keys) == "; did you mean CUDA?"
    assert did_you_mean("QuantizedVulkan", keys) == ""


def _write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_tab_after_a_value_reads_as_the_first_pass_read_it() -> None:
    """The file was composed a second time with the pure-Python loader, which refuses a tab that
    libyaml accepts: an uncaught ScannerError, exit 1."""
    assert parse_config("labels: [x]\t# note\n", "c.yml").labels == ("x",)


def test_the_weekly_issue_links_the_operator_catalogue(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """`weekly.site_url` (the site `opdrift site` builds, on GitHub Pages) is linked from the issue; a
    URL that is not https or could leave its Markdown link is refused with its line."""
    from opdrift.render.context import ReportContext
    from opdrift.render.report import render

    cfg = load_config(
        _write(tmp_path / "opdrift.yml", "weekly:\n  site_url: https://acme.github.io/opdrift/\n")
    )
    assert cfg.weekly.site_url == "https://acme.github.io/opdrift/"
    drift = compute_drift(*realistic_pair())
    body = render(drift, "weekly-issue", context=ReportContext(site_url=cfg.weekly.site_url).linked(drift))
    (line,) = [x for x in body.splitlines() if "](https://acme.github.io/opdrift/)" in x]
    assert line.startswith("📚 ")
    check_golden_entry("weekly.lines.md", "the site's link", line + "\n", updating(request))
    for bad in (
        "http://acme.github.io/",
        "https://x.io/a)(javascript:alert(1)",
        "https://x.io/<b>",
        "https://x.io/index.html?x=1",  # a query `link` would not link: refused, not silently unlinked
    ):
        with pytest.raises(ConfigError) as err:
            load_config(_write(tmp_path / "bad.yml", f"weekly:\n  site_url: '{bad}'\n"))
        assert err.value.line == 2 and "is not a valid https:// URL" in str(err.value)
