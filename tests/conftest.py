"""Shared fixtures: the CLI runners, the vendored release files, the fake GitHub API.

Helper modules (clirun, datafiles, driftcases, fake_github, pytorch_history, releasesnap) sit beside
the tests and are imported by name; test modules never import each other (test_layout checks), so
anything two of them share lives here or in one of those helpers.
"""

from __future__ import annotations

import itertools
import sys
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# The helper modules sit beside the tests; make them importable whatever the rootdir.
sys.path.insert(0, str(Path(__file__).parent))

from clirun import Opdrift, Run
from datafiles import write_release
from fake_github import FakeGitHub


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
    # The modules with slow tests first: pytest-xdist (--dist loadfile) hands modules out in this order,
    # so the long ones start while the short ones can still fill the other worker, instead of one long
    # module running alone at the end. Each module's tests stay together and in order, so its module
    # fixtures are built once.
    slow_modules = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.path not in slow_modules)


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
    from bot.cli import main

    def run(*argv: str) -> Run:
        capsys.readouterr()  # what earlier steps of the test printed is not this run's
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return run


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
    server = FakeGitHub()
    server.start()
    try:
        yield server
    finally:
        server.stop()


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
