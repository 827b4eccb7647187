"""`opdrift init`: a backend's repository from nothing to alerts.

Run in the backend's repository. It checks the backend's list with `coverage`'s reader against
upstream's current main (a ``gh:UPSTREAM@main`` SOURCE, loaded once through the caller's `load`: the
`snapshot` command's path, and that snapshot is the one seeded), and plans every file: the config with the backend subscription, the chosen
workflows from the shipped examples (`opdrift.app.init_workflows`), and the seeded snapshots/main.json.
Nothing is written until everything is planned and checked: `targets_taken` first (no file is replaced
without `force`), then `write_files`, one atomic write per file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from opdrift import snapshot as snapshots
from opdrift.app.coverage import coverage_of
from opdrift.app.init_workflows import ALWAYS, CONFIG_PATH, WORKFLOWS, Pin, unpinned, workflow_text
from opdrift.config.backend_names import default_name
from opdrift.config.file import parse_config
from opdrift.coverage import backends
from opdrift.coverage.check import Coverage
from opdrift.coverage.kinds import KIND_BY_ID
from opdrift.errors import ConfigError, OpdriftError
from opdrift.files import write_atomic
from opdrift.model import Snapshot

SNAPSHOT_PATH = "snapshots/main.json"
WORKFLOW_DIR = ".github/workflows"


@dataclass(frozen=True)
class InitRequest:
    backend: str  # NAME:KIND=PATH (NAME optional), as `coverage --backend` takes it
    who: tuple[str, ...]
    upstream: str = "pytorch/pytorch"
    workflows: tuple[str, ...] = ()  # flags of `init_workflows.WORKFLOWS` asked for (weekly, watch)

    @property
    def source(self) -> str:
        return f"gh:{self.upstream}@main"


@dataclass(frozen=True)
class InitPlan:
    files: tuple[tuple[str, str], ...]  # (path relative to the repository, text), in writing order
    coverage: Coverage
    head: Snapshot


def targets(request: InitRequest) -> tuple[str, ...]:
    """Every file init would write, known before anything is read."""
    chosen = [w for w in WORKFLOWS if w.flag in request.workflows or w.flag in ALWAYS]
    return (CONFIG_PATH, *(f"{WORKFLOW_DIR}/{w.example}" for w in chosen), SNAPSHOT_PATH)


def targets_taken(root: str, paths: Sequence[str]) -> str | None:
    """The first of `paths` that already exists under `root` (a dangling link counts), else None."""
    return next((p for p in paths if os.path.lexists(os.path.join(root, p))), None)


def target_outside(root: str, paths: Sequence[str]) -> str | None:
    """The first of `paths` whose directory resolves outside `root` (a symlinked ``.github`` or
    ``snapshots`` pointing elsewhere), else None: init writes into the repository only."""
    top = os.path.realpath(root)
    for path in paths:
        parent = os.path.realpath(os.path.dirname(os.path.join(root, path)))
        if os.path.commonpath([top, parent]) != top:
            return path
    return None


def _no_control(what: str, text: str) -> None:
    """A value init writes into YAML has no control character: a newline in a backend's NAME, or in
    a file name of its PATH, would start a line of YAML of the caller's making."""
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise ConfigError(f"{what} {text!r}: a control character (a newline?) cannot go into the config")


def check_backend(request: InitRequest, root: str) -> tuple[str | None, backends.BackendKind, str]:
    """NAME, KIND and PATH of --backend, its PATH inside the repository (the config names it relative
    to itself, and the workflows read it from the checkout)."""
    for what, text in (("--backend", request.backend), ("--upstream", request.upstream)):
        _no_control(what, text)
    for h in request.who:
        _no_control("--who", h)
    name, kind, value = backends.parse_named_backend_arg(request.backend)
    if KIND_BY_ID[kind].in_pytorch:
        return name, kind, value
    if os.path.isabs(value) or os.path.normpath(value).split(os.sep)[0] == "..":
        raise ConfigError(f"--backend {request.backend}: PATH must be inside this repository, relative to it")
    if not os.path.exists(os.path.join(root, value)):
        raise ConfigError(f"--backend {request.backend}: {value}: no such file or directory")
    return name, kind, value


def config_text(
    request: InitRequest, name: str | None, kind: backends.BackendKind, value: str, root: str = ""
) -> str:
    """The config: one backend subscription, named (NAME, else `default_name` of the list in the
    repository at ROOT: every report calls the backend so), and the upstream. Values are written as
    JSON strings, which YAML reads as they are (a handle's `@`, a path with spaces)."""
    label = (name or default_name(kind, value, os.path.join(os.path.abspath(root), value) if root else ""))[
        :50
    ]
    if KIND_BY_ID[kind].in_pytorch:
        backend = f"{{name: {json.dumps(label)}, kind: {kind}, key: {json.dumps(value)}}}"
    else:
        # The config's paths are relative to the config file (docs/config.md).
        relative = os.path.relpath(value, os.path.dirname(CONFIG_PATH)).replace(os.sep, "/")
        backend = f"{{name: {json.dumps(label)}, kind: {kind}, path: {json.dumps(relative)}}}"
    who = ", ".join(json.dumps(h) for h in request.who)
    return (
        "# opdrift's config (docs/config.md), written by `opdrift init`.\n"
        "subscriptions:\n"
        f"  # {json.dumps(label)}: new upstream operators (or ones that now need a kernel) this backend lacks, kernels of it that no longer\n"
        "  # build, removed operators it still lists, and the other changes to its ops (docs/config.md, What a backend\n"
        "  # subscription is told)\n"
        f"  - who: [{who}]\n"
        f"    backend: {backend}\n"
        "weekly:\n"
        f"  upstream: {request.upstream}\n"
    )


def check_request(request: InitRequest, root: str) -> str:
    """The config init would write, checked against the repository, before anything is read upstream:
    --backend's path, and the config read back by the parser every command uses (a handle it refuses,
    a path it cannot resolve stops init here)."""
    outside = target_outside(root, targets(request))
    if outside is not None:
        raise ConfigError(
            f"{outside}: its directory is a link out of the repository; init writes inside it only"
        )
    name, kind, value = check_backend(request, root)
    text = config_text(request, name, kind, value, root)
    parse_config(text, CONFIG_PATH, base_dir=os.path.join(root, os.path.dirname(CONFIG_PATH)))
    return text


def plan_init(
    request: InitRequest,
    root: str,
    *,
    load: Callable[[str], Snapshot],
    pin: Pin,
    version: str,
    warn: Callable[[str], None],
) -> InitPlan:
    text = check_request(request, root)
    # `root` is the working directory (the command line passes "."), where coverage reads PATH from.
    run = coverage_of(
        request.source,
        [request.backend],
        base_source=None,
        profile=None,
        torch_version=None,
        load=load,
        warn=warn,
    )
    ((cov, _),) = run.results
    files: list[tuple[str, str]] = [(CONFIG_PATH, text)]
    for row in WORKFLOWS:
        if row.flag in request.workflows or row.flag in ALWAYS:
            path = f"{WORKFLOW_DIR}/{row.example}"
            body = workflow_text(row, pin=pin, upstream=request.upstream, version=version)
            files.append((path, body))
            if unpinned(body):
                # A zero sha fails on GitHub at the first run: never written (the CLI stops before).
                raise ConfigError(f"{path}: no opdrift release to pin; give --action OWNER/NAME@SHA")
    files.append((SNAPSHOT_PATH, snapshots.to_json(run.head)))
    return InitPlan(tuple(files), cov, run.head)


def write_files(root: str, files: Sequence[tuple[str, str]], *, force: bool) -> None:
    """Every file, each written atomically; none when one exists and not `force` (checked again here:
    the upstream read took a while)."""
    outside = target_outside(root, [p for p, _ in files])
    if outside is not None:
        raise OpdriftError("its directory is a link out of the repository: nothing written", path=outside)
    if not force:
        taken = targets_taken(root, [p for p, _ in files])
        if taken is not None:
            raise OpdriftError("exists (use --force)", path=taken)
    for path, text in files:
        target = os.path.join(root, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        write_atomic(target, text)
