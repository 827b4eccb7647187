"""Start-up: each command imports only what it uses.

The commands a user runs most (stats, snapshot, explain, diff --format json) never load the Jinja
renderer, PyGithub or requests, and building the parser loads no stage at all. Each case runs in a
fresh process on the vendored release files and reads that process's ``sys.modules`` at exit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from datafiles import write_release

from opdrift.cli import options

ROOT = Path(__file__).resolve().parents[3]
HEAVY = ("jinja2", "github", "requests")
VERSION = "2.14.1"
OLDER = "2.13.0"

# Runs ARGV through opdrift.cli.main, as `python -m opdrift` does, then prints the loaded modules as JSON
# (json imported only after they are listed, so that the list says whether the command loaded it).
_PROBE = """
import sys
from opdrift.cli import main
code = main(sys.argv[1:])
loaded = sorted(sys.modules)
import json
print("MODULES " + json.dumps(loaded), file=sys.stderr)
sys.exit(code)
"""


def loaded_modules(*argv: str) -> set[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTHON"))}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    line = next(ln for ln in done.stderr.splitlines() if ln.startswith("MODULES "))
    return set(json.loads(line.removeprefix("MODULES ")))


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    folder = tmp_path_factory.mktemp("releases")
    return str(write_release(OLDER, folder / OLDER)), str(write_release(VERSION, folder / VERSION))


@pytest.mark.parametrize(
    "command",
    [
        "stats",
        "snapshot",
        "explain",
        "diff-json",
    ],
)
@pytest.mark.slow
def test_common_commands_load_no_renderer_or_network_client(command: str, releases: tuple[str, str]) -> None:
    older, newer = releases
    argv = {
        "stats": ["stats", newer],
        "snapshot": ["snapshot", newer],
        "explain": ["explain", "add", newer],
        "diff-json": ["diff", older, newer, "--format", "json", "--fail-on", "never"],
    }[command]
    assert heavy(loaded_modules(*argv)) == []


def test_stats_on_a_yaml_loads_no_git_or_wheel_reader(releases: tuple[str, str]) -> None:
    """A bare yaml needs neither git (subprocess, tempfile) nor a wheel's zipfile, nor difflib's
    suggestions when every name is known."""
    modules = loaded_modules("stats", releases[1])
    assert sorted(modules & {"opdrift.sources.git", "subprocess", "tempfile", "zipfile", "difflib"}) == []


# What `stats` on a bare yaml (the whole-process benchmark, bench/bench_startup.py) does not use: the
# stored form and json (a .json SOURCE's, or --format json's), the Python-side reader and its ast walk
# (a checkout's or wheel's files), the overrides file's reader (--overrides), the use cases, and the
# stages of other commands. Each is a cost every run paid before it was imported where it is used.
STATS_NEVER_LOADS = (
    "json",
    "opdrift.snapshot",
    "opdrift.signals.pyside",
    "opdrift.taxonomy.overrides",
    "opdrift.app",
    "opdrift.app.overrides",
    "opdrift.drift",
    "opdrift.work",
    "opdrift.coverage.check",
    "opdrift.history",
    "opdrift.render.jinja",
    "opdrift.publish",
    # the kind table, which only coverage's arguments (--backend's help) use: only the command being
    # run gets its arguments
    "opdrift.coverage.kinds",
    # kernels' C++ signatures: the codegen's rules bind a kernel only for coverage and the drift
    "opdrift.schema.kernel",
    # PyYAML: the purpose-built readers read every release's native_functions.yaml and tags.yaml
    # (opdrift.yamlplain types their scalars); PyYAML reads only a file they decline
    "yaml",
    "opdrift.yamltext",
    "opdrift.operators.entries_yaml",
    # the release calendar: only reports that say when a change ships read it
    "opdrift.release_calendar",
    "datetime",
)


def test_stats_on_a_yaml_loads_only_what_it_uses(releases: tuple[str, str]) -> None:
    modules = loaded_modules("stats", releases[1])
    assert "opdrift.taxonomy.classify" in modules  # the probe did run the command
    assert sorted(modules.intersection(STATS_NEVER_LOADS)) == []


def test_stats_loads_what_an_option_needs_when_given(releases: tuple[str, str], tmp_path: Path) -> None:
    """The modules above are imported where they are used: --format json and --overrides still work."""
    overrides = tmp_path / "overrides.yaml"
    overrides.write_text("overrides:\n  conv2d: misc\n", encoding="utf-8")
    modules = loaded_modules("stats", releases[1], "--format", "json", "--overrides", str(overrides))
    assert {"json", "opdrift.app.overrides", "opdrift.taxonomy.overrides"} <= modules


def test_building_the_parser_loads_no_stage() -> None:
    """--help builds every command's parser: only opdrift.cli itself and the shared leaves load."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTHON"))}
    env["PYTHONPATH"] = str(ROOT)
    probe = (
        "import json, sys\n"
        "from opdrift.cli import build_parser\n"
        "build_parser()\n"
        "print(json.dumps(sorted(m for m in sys.modules if m == 'opdrift' or m.startswith('opdrift.'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
        check=True,
    )
    loaded = set(json.loads(done.stdout))
    # the kind table (opdrift.coverage.kinds) imports nothing at run time: --backend's help lists its kinds
    # opdrift.version (and the bot/_version.py setuptools-scm writes) is a leaf: --version prints it
    allowed = {
        "opdrift",
        "opdrift.errors",
        "opdrift.text",
        "opdrift.coverage",
        "opdrift.coverage.kinds",
        "opdrift.version",
        "opdrift._version",
    }
    assert sorted(m for m in loaded if m not in allowed and not m.startswith("opdrift.cli")) == []
    assert "opdrift.cli.report_cmds" not in loaded and "opdrift.cli.publish_cmds" not in loaded


def test_the_parsers_choices_are_the_stages_own() -> None:
    """opdrift.cli.options spells out the stages' choices so that the parser need not import them."""
    from opdrift.drift import policy
    from opdrift.operators import kernels
    from opdrift.render import markers, stats

    assert options.REPORT_FORMATS == markers.FORMATS
    assert options.FAIL_ON == policy.FAIL_ON
    assert options.DEFAULT_FAIL_ON == policy.DEFAULT_FAIL_ON
    assert tuple(stats.RENDERERS) == options.STATS_FORMATS
    assert options.PROFILES == kernels.PROFILES


def test_every_command_runs_its_own_runner() -> None:
    """Each command's runner is a typed function (mypy checks the lazy import and the call inside it):
    `stats` runs `run_stats`, directly or through the registry's `_run_stats`, which imports it."""
    from opdrift.cli.registry import COMMANDS

    assert len({c.name for c in COMMANDS}) == len(COMMANDS) == 23
    for command in COMMANDS:
        runner = "run_" + command.name.replace("-", "_")
        assert command.run.__name__.removeprefix("_") == runner, command.name
        if command.run.__module__ == "opdrift.cli.registry":
            assert runner in command.run.__code__.co_names, command.name
