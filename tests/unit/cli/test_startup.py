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

from bot.cli import options

ROOT = Path(__file__).resolve().parents[3]
HEAVY = ("jinja2", "github", "requests")
VERSION = "2.14.1"
OLDER = "2.13.0"

# Runs ARGV through bot.cli.main, as `python -m bot` does, then prints the loaded modules as JSON.
_PROBE = """
import json, sys
from bot.cli import main
code = main(sys.argv[1:])
print("MODULES " + json.dumps(sorted(sys.modules)), file=sys.stderr)
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
    assert sorted(modules & {"bot.sources.git", "subprocess", "tempfile", "zipfile", "difflib"}) == []


def test_building_the_parser_loads_no_stage() -> None:
    """--help builds every command's parser: only bot.cli itself and the shared leaves load."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTHON"))}
    env["PYTHONPATH"] = str(ROOT)
    probe = (
        "import json, sys\n"
        "from bot.cli import build_parser\n"
        "build_parser()\n"
        "print(json.dumps(sorted(m for m in sys.modules if m == 'bot' or m.startswith('bot.'))))\n"
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
    # the kind table (bot.coverage.kinds) imports nothing at run time: --backend's help lists its kinds
    # bot.version (and the bot/_version.py setuptools-scm writes) is a leaf: --version prints it
    allowed = {
        "bot",
        "bot.errors",
        "bot.text",
        "bot.coverage",
        "bot.coverage.kinds",
        "bot.version",
        "bot._version",
    }
    assert sorted(m for m in loaded if m not in allowed and not m.startswith("bot.cli")) == []
    assert "bot.cli.report_cmds" not in loaded and "bot.cli.publish_cmds" not in loaded


def test_the_parsers_choices_are_the_stages_own() -> None:
    """bot.cli.options spells out the stages' choices so that the parser need not import them."""
    from bot.drift import policy
    from bot.operators import kernels
    from bot.render import markers, stats

    assert options.REPORT_FORMATS == markers.FORMATS
    assert options.FAIL_ON == policy.FAIL_ON
    assert options.DEFAULT_FAIL_ON == policy.DEFAULT_FAIL_ON
    assert tuple(stats.RENDERERS) == options.STATS_FORMATS
    assert options.PROFILES == kernels.PROFILES


def test_every_runner_in_the_registry_exists() -> None:
    from bot.cli.registry import COMMANDS, load_runner

    assert len({c.name for c in COMMANDS}) == len(COMMANDS) == 23
    for command in COMMANDS:
        assert callable(load_runner(command.runner)), command.name
