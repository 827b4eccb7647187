"""The session's check of the fake GitHub against GitHub's OpenAPI description, as pytest hooks
(tests/conftest.py imports them): every request and every kept answer of every fake of the session
(`fake_github.RECORDER`), in every process, checked once at the end (tests/github_openapi.py); a
violation is listed and fails the session.

Under pytest-xdist each worker records only what its own tests asked: at its end it hands its
records to the controller in its ``workeroutput`` (xdist's channel from workers to the controller),
which merges them as each worker goes down and checks them all once the last is done. Cheap: a set
of (method, path) and at most `Recorder.SAMPLES` answers per request shape, and jsonschema is loaded
only when a fake answered.
"""

from __future__ import annotations

from typing import Any

import fake_github
import pytest

KEY = "opdrift_openapi_records"


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """Under xdist, in the controller: a worker's records join the session's."""
    text = getattr(node, "workeroutput", {}).get(KEY)
    if text and fake_github.RECORDER is not None:
        fake_github.RECORDER.merge(text)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    recorder = fake_github.RECORDER
    if recorder is None:
        return
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: the controller checks everything at its end
        workeroutput[KEY] = recorder.to_json()
        return
    if not recorder.requests:
        return
    import github_openapi  # jsonschema and the description, only when a fake answered

    problems = github_openapi.problems(recorder)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write("\n")
        reporter.write_line(
            f"GitHub's OpenAPI description: {len(recorder.requests)} requests and "
            f"{sum(map(len, recorder.answers.values()))} answers of the fakes checked, "
            f"{len(problems)} problem(s)",
            red=bool(problems),
        )
        for problem in problems[:40]:
            reporter.write_line(f"  {problem}", red=True)
    if problems:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
