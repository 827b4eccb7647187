"""`opdrift init` in a fresh, empty backend repository, against the fake GitHub API.

The backend is pytorch_dlprim's real `src/` tree (C++ `m.impl` registrations); upstream is a
PyTorch-shaped repository on tests/fake_github.py whose main holds the vendored 2.15.0 release files,
read as ``gh:pytorch/pytorch@main`` over real HTTP, as `opdrift coverage` and `opdrift snapshot` read it.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from clirun import Opdrift
from datafiles import release_text
from fake_github import FakeGitHub
from goldens import check_error_line, check_golden_entry, updating

from opdrift.app.init import InitRequest, config_text
from opdrift.app.init_workflows import (
    WORKFLOWS,
    available,
    pin_from_direct_url,
    pin_from_flag,
    pin_from_metadata,
    workflow_text,
)
from opdrift.cli.init_cmds import _complete
from opdrift.config.file import load_config, parse_config
from opdrift.model import DERIVATIVES_PATH, NATIVE_PATH, TAGS_PATH

UPSTREAM = "pytorch/pytorch"
TOKEN = "ghs_inittesttoken00000000000000000000"
NAMES = {NATIVE_PATH: "native_functions.yaml", TAGS_PATH: "tags.yaml", DERIVATIVES_PATH: "derivatives.yaml"}
ZERO = "0" * 40


@pytest.fixture
def fake(github_server: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> FakeGitHub:
    github_server.add_token(TOKEN, "maintainer")
    github_server.add_repo(UPSTREAM)
    files = {path: release_text("2.15.0", name).encode() for path, name in NAMES.items()}
    github_server.add_commit(UPSTREAM, files, refs=("main",), date="2026-06-01T10:00:00Z")
    monkeypatch.setenv("GITHUB_API_URL", github_server.api_url)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    return github_server


@pytest.fixture
def backend(tmp_path: Path, dlprim_src: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh `git init` holding only the backend's sources; the working directory of the test."""
    repo = tmp_path / "pytorch_dlprim"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    shutil.copytree(dlprim_src, repo / "src")
    monkeypatch.chdir(repo)
    return repo


WRITTEN = (
    ".github/opdrift.yml",
    ".github/workflows/weekly-drift.yml",
    ".github/workflows/manual-drift.yml",
    "snapshots/main.json",
)
PIN = "acme/opdrift@" + "ab" * 20
ARGS = ("init", "--backend", "dlprim:cpp=src", "--who", "@team", "--weekly", "--action", PIN)


def _tool(name: str) -> str:
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: it is a test dependency")
    return found


def _lint(repo: Path) -> None:
    """actionlint (with shellcheck) and zizmor, as .ci/run runs them, on what init wrote."""
    workflows = sorted(str(p) for p in (repo / ".github" / "workflows").glob("*.yml"))
    done = subprocess.run(
        [_tool("actionlint"), "-no-color", "-oneline", "-shellcheck", _tool("shellcheck"), *workflows],
        capture_output=True,
        text=True,
        check=False,
        cwd=repo,
    )
    assert (done.returncode, done.stdout + done.stderr) == (0, "")
    done = subprocess.run(
        [_tool("zizmor"), "--offline", "--no-progress", "--color", "never", *workflows],
        capture_output=True,
        text=True,
        check=False,
        cwd=repo,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No findings to report" in done.stdout + done.stderr


@pytest.mark.slow
def test_init_writes_a_config_workflows_and_the_snapshot_of_upstream_main(
    fake: FakeGitHub, backend: Path, opdrift: Opdrift, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    run = opdrift(*ARGS)
    assert run.code == 0, run.err
    written = {str(p.relative_to(backend)) for p in backend.rglob("*") if p.is_file()}
    assert {p for p in written if not p.startswith(("src/", ".git/"))} == set(WRITTEN)
    # The coverage summary, the files, the pin (--action's: an editable install knows none) and the steps.
    assert "dlprim:cpp=src against gh:pytorch/pytorch@main" in run.out
    (summary,) = [x for x in run.out.splitlines() if re.search(r"covered \d+ of \d+ operators; ", x)]
    covered, total, needs, stale = map(int, re.findall(r"\d+", summary.split("covered ", 1)[1])[:4])
    assert covered > 0 and covered + needs <= total and stale >= 0, summary
    check_golden_entry("cli-init.lines.txt", "the coverage summary", summary + "\n", updating(request))
    for path in WRITTEN:
        assert f"wrote {path}" in run.out
    assert f"pinned: uses: {PIN} # " in run.out
    for path in WRITTEN[1:3]:
        text = (backend / path).read_text(encoding="utf-8")
        assert f"uses: {PIN} # " in text and ZERO not in text
    assert "1. commit" in run.out and "2. push" in run.out and "3. enable issues" in run.out

    # The config, read back by the parser every command uses: one backend subscription.
    cfg = load_config(".github/opdrift.yml")
    (sub,) = cfg.subscriptions
    assert sub.who == ("@team",)
    assert sub.backend is not None and (sub.backend.kind, sub.backend.resolved) == ("cpp", "src")
    assert cfg.weekly.upstream == UPSTREAM

    # The snapshot is what `opdrift snapshot gh:...@main` gives.
    out = tmp_path / "main.json"
    assert opdrift("snapshot", f"gh:{UPSTREAM}@main", "-o", str(out)).code == 0
    assert (backend / "snapshots" / "main.json").read_bytes() == out.read_bytes()

    # The workflows lint clean, and the publishing steps read the config.
    _lint(backend)
    for name in ("weekly-drift.yml", "manual-drift.yml"):
        data = yaml.safe_load((backend / ".github" / "workflows" / name).read_text(encoding="utf-8"))
        steps = [s for job in data["jobs"].values() for s in job["steps"]]
        publishing = [s for s in steps if s.get("with", {}).get("mode") in ("issue", "manual-issue")]
        assert publishing and all(s["with"]["config"] == ".github/opdrift.yml" for s in publishing)


@pytest.mark.slow
def test_init_refuses_to_overwrite_and_writes_nothing_then_force_does(
    fake: FakeGitHub, backend: Path, opdrift: Opdrift
) -> None:
    assert opdrift(*ARGS).code == 0
    (backend / "snapshots" / "main.json").unlink()
    config = backend / ".github" / "opdrift.yml"
    config.write_text("# mine\n", encoding="utf-8")
    before = len(fake.requests)
    run = opdrift(*ARGS)
    assert (run.code, run.err) == (2, "opdrift: error: .github/opdrift.yml: exists (use --force)\n")
    assert not (backend / "snapshots" / "main.json").exists()  # nothing written, not even the free file
    assert config.read_text(encoding="utf-8") == "# mine\n"
    assert len(fake.requests) == before  # refused before reading upstream

    run = opdrift(*ARGS, "--force")
    assert run.code == 0, run.err
    assert "kind: cpp, path:" in config.read_text(encoding="utf-8")
    assert (backend / "snapshots" / "main.json").exists()


def test_init_without_a_terminal_needs_its_flags(fake: FakeGitHub, backend: Path, opdrift: Opdrift) -> None:
    run = opdrift("init", "--backend", "dlprim:cpp=src")
    assert run.code == 2
    assert run.err.count("\n") == 1 and "--who needed (no terminal to ask in" in run.err
    run = opdrift("init", "--backend", "dlprim:cpp=nowhere", "--who", "@team")
    assert run.code == 2 and "nowhere: no such file or directory" in run.err
    run = opdrift("init", "--backend", "dlprim:cpp=src", "--who", "not a handle!")
    assert run.code == 2 and "is not a GitHub handle" in run.err
    assert not (backend / ".github").exists()


def test_init_never_writes_a_pin_that_cannot_work(fake: FakeGitHub, backend: Path, opdrift: Opdrift) -> None:
    # This checkout's opdrift is an editable install: no commit, no release. Without --action, init used
    # to write `uses: OWNER/opdrift@000…` and exit 0; the first run then failed on GitHub.
    run = opdrift(*ARGS[:-2])
    assert run.code == 2
    assert run.err.count("\n") == 1 and "give --action OWNER/NAME@SHA" in run.err
    run = opdrift(*ARGS[:-1], "acme/opdrift@v0.2.0")
    assert run.code == 2 and "the full 40-character commit sha" in run.err
    assert not (backend / ".github").exists() and fake.requests == []  # refused before reading upstream


def test_a_release_installed_from_an_index_pins_its_repository_and_build_commit() -> None:
    sha = "cd" * 20
    urls = ["Documentation, https://acme.github.io/opdrift/", "Source, https://github.com/acme/opdrift"]
    assert pin_from_metadata(urls, "0.3.0", sha).uses() == f"acme/opdrift@{sha} # v0.3.0"
    assert not pin_from_metadata(urls, "0.3.1.dev4", sha).known  # between releases: no reviewed tag
    assert not pin_from_metadata(urls, "0.3.0", None).known  # a wheel built without git
    assert not pin_from_metadata(urls[:1], "0.3.0", sha).known
    assert (
        pin_from_flag(f"acme/opdrift@{sha}", "0.3.1.dev4").uses()
        == f"acme/opdrift@{sha} # pinned with --action"
    )


@pytest.mark.slow
def test_init_checks_flags_and_the_repository_before_reading_upstream(
    fake: FakeGitHub,
    backend: Path,
    opdrift: Opdrift,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    run = opdrift("init", "--backend", "dlprim:cpp=src", "--who", "not a handle!", "--action", PIN)
    assert run.code == 2 and "is not a GitHub handle" in run.err
    monkeypatch.chdir(backend / "src")
    run = opdrift(*ARGS)
    assert run.code == 2 and f"run it at the repository's root, {backend}" in run.err
    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    monkeypatch.chdir(outside)
    run = opdrift(*ARGS)
    assert run.code == 2 and "not inside a git repository" in run.err
    assert fake.requests == []
    # Offline (a host that does not resolve): one line, in seconds, not a minute of retries.
    monkeypatch.chdir(backend)
    monkeypatch.setenv("GITHUB_API_URL", "http://api.opdrift-offline.invalid/api/v3")
    started = time.monotonic()
    run = opdrift(*ARGS)
    assert time.monotonic() - started < 20  # a minute of retries fails this; a loaded machine does not
    assert run.code == 2, run.err
    (error,) = [line for line in run.err.splitlines() if not line.startswith("opdrift init: reading")]
    said = check_error_line("init: offline", error + "\n", updating(request))
    assert "api.opdrift-offline.invalid" in said and "GITHUB_API_URL" in said
    assert "HTTPConnectionPool" not in error and not (backend / ".github").exists()


def test_watch_is_written_reading_the_config_init_writes(
    fake: FakeGitHub, backend: Path, opdrift: Opdrift
) -> None:
    assert available("watch")
    run = opdrift(*ARGS, "--watch")
    assert run.code == 0, run.err
    watch = (backend / ".github" / "workflows" / "watch.yml").read_text(encoding="utf-8")
    assert "--config .github/opdrift.yml" in watch and (backend / ".github" / "opdrift.yml").is_file()
    _lint(backend)


def test_the_prompts_fill_what_the_flags_left_out() -> None:
    answers = iter(["dlprim:cpp=src", "@team @org/reviewers", "", "", "n"])
    asked: list[str] = []

    def ask(question: str) -> str:
        asked.append(question)
        return next(answers)

    args = argparse.Namespace(backend=None, who=None, upstream=None, weekly=False, watch=False)
    _complete(args, ask)
    assert (args.backend, args.who, args.upstream, args.weekly) == (
        "dlprim:cpp=src",
        ["@team", "@org/reviewers"],
        UPSTREAM,
        True,
    )
    # With every flag given, nothing is asked.
    given = argparse.Namespace(backend="x:cpp=src", who=["@a"], upstream=UPSTREAM, weekly=True, watch=False)
    _complete(given, lambda q: pytest.fail(f"asked {q!r}"))


def test_the_pin_comes_from_the_commit_pip_installed() -> None:
    url = '{"url": "https://github.com/acme/opdrift", "vcs_info": {"vcs": "git", "commit_id": "%s"}}'
    pin = pin_from_direct_url(url % ("ab" * 20), "0.2.0")
    assert pin.uses() == f"acme/opdrift@{'ab' * 20} # v0.2.0"
    weekly = next(w for w in WORKFLOWS if w.flag == "weekly")
    text = workflow_text(weekly, pin=pin, upstream="acme/pytorch", version="0.2.0")
    assert f"uses: acme/opdrift@{'ab' * 20} # v0.2.0" in text and ZERO not in text
    assert "repository: acme/pytorch" in text and "pytorch/pytorch" not in text
    # watch.yml checks opdrift out by repository and ref: the same pin
    watch = next(w for w in WORKFLOWS if w.flag == "watch")
    text = workflow_text(watch, pin=pin, upstream="pytorch/pytorch", version="0.2.0")
    assert f"repository: acme/opdrift\n          ref: {'ab' * 20} # v0.2.0" in text and ZERO not in text
    # An editable or index install records no commit: the pin stays unknown, never made up.
    assert not pin_from_direct_url('{"url": "file:///src", "dir_info": {"editable": true}}', "0.2.0").known
    assert not pin_from_direct_url(url % "main", "0.2.0").known
    assert not pin_from_direct_url(None, "0.2.0").known


def test_a_dispatch_key_backend_is_written_with_its_key() -> None:
    request = InitRequest("mps:dispatch=MPS", ("@mps-team",))
    cfg = parse_config(config_text(request, "mps", "dispatch", "MPS"), ".github/opdrift.yml")
    (sub,) = cfg.subscriptions
    assert sub.backend is not None and (sub.backend.kind, sub.backend.value) == ("dispatch", "MPS")


def test_a_newline_in_a_name_or_a_file_name_cannot_inject_yaml(tmp_path: Path) -> None:
    """A NAME (or a PATH's file name) with a newline would start a config line of its own."""
    from opdrift.app.init import check_request
    from opdrift.errors import ConfigError

    hostile = "xla\nweekly:\n  upstream: evil/pytorch\n# "
    (tmp_path / "list.yaml").write_text("backend: XLA\n")
    with pytest.raises(ConfigError, match="control character"):
        check_request(InitRequest(f"{hostile}:xla=list.yaml", ("@team",)), str(tmp_path))
    odd = "list\nextra: 1\n.yaml"
    (tmp_path / odd).write_text("backend: XLA\n")
    with pytest.raises(ConfigError, match="control character"):
        check_request(InitRequest(f"xla={odd}", ("@team",)), str(tmp_path))
    # what is written is one line per value, read back as given
    text = config_text(InitRequest("x: y # z:xla=list.yaml", ("@team",)), "x: y # z", "xla", "list.yaml")
    assert parse_config(text, "opdrift.yml", base_dir=str(tmp_path)).weekly.upstream == "pytorch/pytorch"
    assert '# "x: y # z": new upstream' in text


def test_init_never_writes_through_a_symlinked_github_directory(tmp_path: Path) -> None:
    from opdrift.app.init import check_request, write_files
    from opdrift.errors import ConfigError, OpdriftError

    repo, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    repo.mkdir()
    elsewhere.mkdir()
    (repo / "list.yaml").write_text("backend: XLA\n")
    (repo / ".github").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(ConfigError, match="link out of the repository"):
        check_request(InitRequest("xla=list.yaml", ("@team",)), str(repo))
    with pytest.raises(OpdriftError, match="link out of the repository"):
        write_files(str(repo), [(".github/opdrift.yml", "x: 1\n")], force=True)
    assert list(elsewhere.iterdir()) == []


def test_init_names_the_backend_it_subscribes(tmp_path: Path) -> None:
    """Every report calls a backend by its config name; init writes one (given, else derived)."""
    request = InitRequest("mps:dispatch=MPS", ("@mps-team",))
    (sub,) = parse_config(config_text(request, "mps", "dispatch", "MPS"), ".github/opdrift.yml").subscriptions
    assert sub.backend is not None and sub.backend.name == "mps"
    repo = tmp_path / "pytorch_dlprim"
    (repo / "src").mkdir(parents=True)
    text = config_text(InitRequest("cpp=src", ("@dl",)), None, "cpp", "src", str(repo))
    assert 'backend: {name: "pytorch_dlprim", kind: cpp, path: "../src"}' in text
