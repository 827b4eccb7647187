"""`opdrift init`'s workflows: the shipped downstream examples, pinned and pointed at the new config.

The texts are the examples themselves (examples/downstream/*.yml, shipped as the package data of
``opdrift.examples``, included verbatim in docs/workflows.md), never a copy kept here: a fix to an example
reaches what init writes. Init changes four things, each on lines it can find exactly:

- the zero-sha pin ``OWNER/opdrift@000… # v0.1.0`` (watch.yml: ``repository: OWNER/opdrift`` and
  ``ref: 000… # v0.1.0``) becomes the installed opdrift's repository, commit and version
  (`installed_pin`), or ``--action``'s; init never writes a pin that cannot work (it stops first);
- ``pytorch/pytorch`` becomes ``--upstream``;
- the action's steps that publish (``mode: issue``, ``mode: manual-issue``) get ``config:``, so the
  subscription init writes is read (the examples pass none: a copied example has no config);
- a first line says where the file came from.
"""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from opdrift.errors import ConfigError
from opdrift.version import commit, version

CONFIG_PATH = ".github/opdrift.yml"


@dataclass(frozen=True)
class Workflow:
    """One workflow init can write: the flag that asks for it, the example it is, and where it goes."""

    flag: str  # "weekly", "watch", "manual"
    example: str  # the file name under examples/downstream/
    what: str


# THE table of workflows init writes. `manual` is written always (it runs only when dispatched by hand);
# the others when their flag is given. A row whose example this version does not ship is refused by
# name (`--watch` until examples/downstream/watch.yml exists), never written as a stub.
WORKFLOWS: tuple[Workflow, ...] = (
    Workflow("weekly", "weekly-drift.yml", "the weekly drift issue"),
    Workflow("watch", "watch.yml", "the hourly watch of open upstream pull requests"),
    Workflow("manual", "manual-drift.yml", "a manual run against any ref"),
)
ALWAYS = ("manual",)
# The action's modes that read `config:` (publishing modes: who to mention, the backend's gaps).
CONFIG_MODES = ("issue", "manual-issue", "watch")

_ZERO_PIN = re.compile(r"OWNER/opdrift@0{40} # v[0-9][0-9A-Za-z.+-]*")
# watch.yml checks opdrift out rather than `uses:` the action: the same pin, as repository and ref.
_ZERO_CHECKOUT = re.compile(
    r"(?P<i1>[ ]+)repository: OWNER/opdrift\n(?P<i2>[ ]+)ref: 0{40} # v[0-9][0-9A-Za-z.+-]*"
)
_MODE = re.compile(r"^(?P<indent>[ ]+)mode: (?P<mode>[a-z-]+)[ ]*$", re.MULTILINE)
_GITHUB_URL = re.compile(r"https://github\.com/(?P<slug>[A-Za-z0-9-]+/[A-Za-z0-9._-]+?)(?:\.git)?/?")
_SHA = re.compile(r"[0-9a-f]{40}")
_RELEASE = re.compile(r"[0-9]+(\.[0-9]+)*")  # a tagged release: no .devN, no +local
_ACTION = re.compile(r"(?P<slug>[A-Za-z0-9-]+/[A-Za-z0-9._-]+)@(?P<sha>[0-9a-f]{40})")


def _examples_root() -> Path:
    """The examples: the ``opdrift.examples`` package of an installed wheel, else examples/downstream/ of a
    checkout (as `opdrift.render.jinja.templates_root` finds the templates)."""
    try:
        root = importlib.resources.files("opdrift.examples")
        if root.joinpath("weekly-drift.yml").is_file():
            return Path(str(root))
    except ModuleNotFoundError:
        pass
    return Path(__file__).resolve().parent.parent.parent / "examples" / "downstream"


def available(flag: str) -> bool:
    row = next((w for w in WORKFLOWS if w.flag == flag), None)
    return row is not None and (_examples_root() / row.example).is_file()


def example_text(row: Workflow) -> str:
    path = _examples_root() / row.example
    if not path.is_file():
        raise ConfigError(f"--{row.flag}: {row.what} is not available in this version of opdrift")
    return path.read_text(encoding="utf-8")


# --- the pin --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pin:
    """What `uses: OWNER/opdrift@SHA # vX.Y.Z` is filled with; `slug` and `sha` None when unknown."""

    version: str
    slug: str | None = None  # OWNER/NAME of the repository the installed opdrift came from
    sha: str | None = None

    @property
    def known(self) -> bool:
        return self.slug is not None and self.sha is not None

    def uses(self) -> str:
        return f"{self.slug}@{self.sha} # {self.label}" if self.known else ""

    @property
    def label(self) -> str:
        """The comment after the sha: the release's tag, or where the pin came from."""
        return f"v{self.version}" if _RELEASE.fullmatch(self.version) else "pinned with --action"


def installed_version() -> str:
    """The installed opdrift's version, from its git tag (opdrift.version)."""
    return version()


def pin_from_direct_url(text: str | None, version: str) -> Pin:
    """The pin from pip's direct_url.json (PEP 610): a ``pip install git+https://github.com/O/N@REV``
    records the repository and the commit it resolved REV to. Anything else (an index, a local
    directory, an editable checkout) records no commit: the pin stays unknown."""
    if not text:
        return Pin(version)
    try:
        data = json.loads(text)
    except ValueError:
        return Pin(version)
    if not isinstance(data, dict):
        return Pin(version)
    vcs, url = data.get("vcs_info"), data.get("url")
    if not isinstance(vcs, dict) or vcs.get("vcs") != "git" or not isinstance(url, str):
        return Pin(version)
    commit = vcs.get("commit_id")
    m = _GITHUB_URL.fullmatch(url.removeprefix("git+"))
    if m is None or not isinstance(commit, str) or _SHA.fullmatch(commit) is None:
        return Pin(version)
    return Pin(version, m.group("slug"), commit)


def pin_from_metadata(project_urls: Sequence[str], version: str, commit: str | None) -> Pin:
    """The pin of a release installed from an index: its repository from a ``Project-URL`` on
    github.com, and the commit its wheel was built from (`opdrift.version.commit`, the release tag's).
    Only a tagged release counts: a .devN build's commit is on no tag anyone reviewed."""
    if commit is None or _SHA.fullmatch(commit) is None or not _RELEASE.fullmatch(version):
        return Pin(version)
    for entry in project_urls:
        url = entry.split(",", 1)[-1].strip()
        m = _GITHUB_URL.fullmatch(url)
        if m is not None:
            return Pin(version, m.group("slug"), commit)
    return Pin(version)


def pin_from_flag(value: str, version: str) -> Pin:
    """``--action OWNER/NAME@SHA``: the full commit sha of the opdrift release the workflows use."""
    m = _ACTION.fullmatch(value.strip())
    if m is None:
        raise ConfigError(f"--action {value}: give OWNER/NAME@SHA, with the full 40-character commit sha")
    return Pin(version, m.group("slug"), m.group("sha"))


def installed_pin() -> Pin:
    """The installed opdrift's pin: a git install's commit (direct_url.json), else a release's
    Project-URL and build commit; unknown otherwise (`opdrift init` then needs --action)."""
    version = installed_version()
    try:
        dist = importlib.metadata.distribution("opdrift")
    except importlib.metadata.PackageNotFoundError:
        return Pin(version)
    pin = pin_from_direct_url(dist.read_text("direct_url.json"), version)
    if pin.known:
        return pin
    return pin_from_metadata(dist.metadata.get_all("Project-URL") or [], version, commit())


# --- the transformation ---------------------------------------------------------------------------


def workflow_text(row: Workflow, *, pin: Pin, upstream: str, version: str) -> str:
    text = example_text(row)
    if pin.known:
        text = _ZERO_PIN.sub(pin.uses(), text)
        text = _ZERO_CHECKOUT.sub(
            lambda m: f"{m['i1']}repository: {pin.slug}\n{m['i2']}ref: {pin.sha} # {pin.label}", text
        )
    if upstream != "pytorch/pytorch":
        text = text.replace("pytorch/pytorch", upstream)
    text = _with_config(text)
    return f"# Written by `opdrift init` (opdrift {version}) from examples/downstream/{row.example}.\n{text}"


def _with_config(text: str) -> str:
    """`config:` after each publishing `mode:` line of the action's `with:`, at its indentation."""

    def add(m: re.Match[str]) -> str:
        if m.group("mode") not in CONFIG_MODES:
            return m.group(0)
        return f"{m.group(0)}\n{m.group('indent')}config: {CONFIG_PATH}"

    return _MODE.sub(add, text)


def unpinned(text: str) -> bool:
    return _ZERO_PIN.search(text) is not None or _ZERO_CHECKOUT.search(text) is not None
