"""Shared fixtures: the CLI runners, the vendored release files, the fake GitHub API.

Helper modules (act_support, clirun, datafiles, driftcases, fake_github, package_copy, pytorch_history,
releasesnap, ...) sit beside this file and are imported by name; test modules never import each other
(test_layout checks), so anything two of them share lives here or in one of those helpers.
"""

from __future__ import annotations

import itertools
import os
import sys
import tarfile
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# The helper modules sit beside the tests; make them importable whatever the rootdir.
sys.path.insert(0, str(Path(__file__).parent))

import act_support
import fake_github
from clirun import Opdrift, Run
from datafiles import write_release
from fake_github import FakeGitHub
from openapi_session import pytest_sessionfinish, pytest_testnodedown  # noqa: F401 (the session's check)
from package_copy import PackageCopy, copy_package
from watch_upstream import cfg, upstream  # noqa: F401 (the watch tests' fixtures, shared)

# Every fake GitHub of the session records what it was asked and answered (a set and a few samples
# per request shape); at the end of the session every request and answer of every process is checked
# against GitHub's description (tests/openapi_session.py), and a violation fails the session.
fake_github.RECORDER = fake_github.Recorder()


def pytest_addoption(parser: pytest.Parser) -> None:
    # Golden files (tests/golden) are rewritten from the current output instead of compared.
    parser.addoption(
        "--update-golden", action="store_true", help="refresh tests/golden/* (or OPDRIFT_UPDATE_GOLDEN=1)"
    )


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # `--hypothesis-profile=dev` is loaded by Hypothesis's plugin right after this hook; the profiles
    # must exist by then. Without the option they are registered when a property test imports them.
    if config.getoption("hypothesis_profile", None):
        import hypothesis_profiles  # noqa: F401


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # The order pytest-xdist (--dist loadfile --no-loadscope-reorder) hands modules out in, longest
    # first, so that no long module starts late and runs alone at the end: the modules that run act
    # (the longest, a few act runs each), then those with other slow tests, then the rest, each tier
    # by its number of tests (xdist's own default order, which would put a module of five act runs
    # behind every module of six quick tests). Each module's tests stay together and in order, so its
    # module fixtures are built once.
    per_module = Counter(item.path for item in items)
    act_modules = {item.path for item in items if "act_wheelhouse" in getattr(item, "fixturenames", ())}
    slow_modules = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(
        key=lambda item: (
            item.path not in act_modules,
            item.path not in slow_modules,
            -per_module[item.path],
            str(item.path),
        )
    )


_cache_homes = itertools.count()


@pytest.fixture(autouse=True)
def _private_cache_home(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Every test gets its own, not yet created, $XDG_CACHE_HOME: nothing writes the user's
    ~/.cache, and no test sees blobs another test (or another xdist worker) cached."""
    base = tmp_path_factory.getbasetemp() / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(base / str(next(_cache_homes))))


@pytest.fixture
def opdrift(capsys: pytest.CaptureFixture[str]) -> Opdrift:
    """`opdrift(*argv)`: the CLI in-process; argparse's usage errors leave through SystemExit, caught."""
    from opdrift.cli import main

    def run(*argv: str) -> Run:
        capsys.readouterr()  # what earlier steps of the test printed is not this run's
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return run


@pytest.fixture
def package_copy(tmp_path: Path) -> PackageCopy:
    """A copy of this checkout's package (bot/, templates/, pyproject.toml) to change one table of and
    run in a separate process (tests/package_copy.py)."""
    return copy_package(tmp_path / "package-copy")


@pytest.fixture(scope="session")
def release_file(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """`release_file("2.14.1")`: that release's native_functions.yaml (with tags.yaml and
    derivatives.yaml beside it) written once per session, as a bare-yaml SOURCE."""
    root = tmp_path_factory.mktemp("releases")
    written: dict[str, Path] = {}

    def get(version: str) -> Path:
        if version not in written:
            written[version] = write_release(version, root / version)
        return written[version]

    return get


@pytest.fixture
def github_server() -> Iterator[FakeGitHub]:
    """A fake GitHub REST API on a local port, over real HTTP; add tokens and repositories to it."""
    with FakeGitHub() as server:
        yield server


@pytest.fixture
def github_for_step(
    github_server: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> Callable[[str, str], FakeGitHub]:
    """The fake GitHub as a workflow's step sees it: `serve(token, repo)` adds the bot's token (login
    opdrift-bot) and the repository, and sets GITHUB_TOKEN and GITHUB_API_URL (no step summary)."""

    def serve(token: str, repo: str) -> FakeGitHub:
        github_server.add_token(token, "opdrift-bot")
        github_server.add_repo(repo)
        monkeypatch.setenv("GITHUB_TOKEN", token)
        monkeypatch.setenv("GITHUB_API_URL", github_server.api_url)
        monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
        return github_server

    return serve


@pytest.fixture(scope="session")
def dlprim_src(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pytorch_dlprim's real `src/` tree (tests/data/backends/real, see SOURCES.md), unpacked once;
    tests read it and never write into it."""
    folder = tmp_path_factory.mktemp("dlprim")
    with tarfile.open(
        Path(__file__).parent / "data" / "backends" / "real" / "pytorch_dlprim.src.tar.xz"
    ) as tar:
        tar.extractall(folder, filter="data")
    return folder / "src"


# --- act: the example workflows in a real workflow engine (tests/act/test_act.py says how to use these) ---


@pytest.fixture(scope="session")
def act_wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """requirements/workflow.txt's wheels, downloaded once per session with their hashes; every act
    job installs from them offline (act_support.download_wheelhouse)."""
    own = tmp_path_factory.getbasetemp()
    # Under xdist each worker's basetemp is a directory of the session's one: share the download.
    return act_support.download_wheelhouse(own.parent if os.environ.get("PYTEST_XDIST_WORKER") else own)


@pytest.fixture(scope="session")
def act_release(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """This checkout as one commit of a local repository (its directory and sha): the opdrift release
    the PyTorch examples pin and check out. Read-only; each site clones it."""
    dest = tmp_path_factory.mktemp("act-release") / "opdrift"
    return dest, act_support.release_of_this_checkout(dest)


@pytest.fixture
def act_site(github_server: FakeGitHub, tmp_path: Path, act_wheelhouse: Path) -> act_support.Site:
    """A backend's repository with the downstream examples, its origin and PyTorch's (act_support.build_site)."""
    return act_support.build_site(github_server, tmp_path, act_wheelhouse)


@pytest.fixture
def act_pytorch_site(
    act_site: act_support.Site,
    github_server: FakeGitHub,
    tmp_path: Path,
    act_release: tuple[Path, str],
) -> act_support.PyTorchSite:
    """A PyTorch-shaped repository with PR 1 and the PR pair of examples (act_support.build_pytorch_site)."""
    return act_support.build_pytorch_site(act_site, github_server, tmp_path, act_release)
