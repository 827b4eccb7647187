"""Where operator definitions come from: the only stage that reads files, wheels or git.

A SOURCE is one of:

- a PyTorch checkout DIR (its working tree);
- ``DIR@REV``: a git revision of that checkout, read from git objects without checking anything out;
- a torch wheel ``.whl``: its packaged yaml from 1.12 on, RegistrationDeclarations.h before that;
- a bare ``native_functions.yaml`` (with ``tags.yaml`` and ``derivatives.yaml`` beside it, if present);
- a stored snapshot ``.json`` (returned with metadata only; `opdrift.snapshot` loads it).

An existing path always wins over splitting on ``@``, so a file or directory whose name holds an ``@``
is read as itself.
"""

from __future__ import annotations

import lzma
import os
import re
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

from opdrift.errors import GitError, OpdriftError, SourceError
from opdrift.model import (
    DERIVATIVES_PATH,
    NATIVE_PATH,
    SIGNAL_PATHS,
    TAGS_PATH,
    VERSION_PATH,
    SourceFiles,
    SourceMeta,
    TextFile,
)
from opdrift.versions import version_in_text

if TYPE_CHECKING:
    import zipfile

# native_functions.yaml is under 1 MiB; anything this big is not one, and a zip member this big may be
# a zip bomb. Refuse it rather than fill the memory.
MAX_FILE_BYTES = 64 * 1024 * 1024

WHEEL_NATIVE = "torchgen/packaged/ATen/native/native_functions.yaml"
WHEEL_TAGS = "torchgen/packaged/ATen/native/tags.yaml"
WHEEL_DERIVATIVES = "torchgen/packaged/autograd/derivatives.yaml"
WHEEL_REGISTRATIONS = "torch/include/ATen/RegistrationDeclarations.h"

_RELEASE_TAG = re.compile(r"v(\d+\.\d+\.\d+)")
_METADATA = re.compile(r"[^/]+\.dist-info/METADATA")


def read_source(spec: str) -> SourceFiles:
    """Read the files of SOURCE `spec` (see the module docstring). Raises SourceError / GitError."""
    if not spec.strip():
        raise SourceError("empty SOURCE: give a checkout DIR, DIR@REV, a .whl, a .yaml or a .json")
    if "\0" in spec:
        raise SourceError("a SOURCE cannot hold a NUL character", path=spec.replace("\0", "\\0"))
    path = Path(spec)
    try:
        # is_dir() and is_file() raise for a path that cannot even be looked at (EACCES, too long)
        is_dir, is_file, exists = path.is_dir(), path.is_file(), path.exists()
    except OSError as err:
        raise SourceError(f"cannot read: {err.strerror or err}", path=spec) from None
    if is_dir:
        return read_checkout(spec)
    if is_file:
        return _read_file_source(spec)
    if exists:
        raise SourceError("not a regular file or directory", path=spec)
    split = _split_revision(spec)
    if split is not None:
        return read_revision(*split, spec=spec)
    raise SourceError("no such file or directory", path=spec)


def _split_revision(spec: str) -> tuple[str, str] | None:
    """(DIR, REV) for the first ``@`` whose left part is an existing directory (REV may hold ``@{1}``)."""
    start = 0
    while (at := spec.find("@", start)) != -1:
        directory, rev = spec[:at], spec[at + 1 :]
        if directory and Path(directory).is_dir():
            if not rev:
                raise SourceError("empty revision after '@'", path=spec)
            return directory, rev
        start = at + 1
    return None


def _read_file_source(spec: str) -> SourceFiles:
    name = spec.lower()
    if name.endswith(".json"):
        return SourceFiles(meta=SourceMeta(kind="snapshot", path=spec))
    if name.endswith(".whl"):
        return read_wheel(spec)
    if name.endswith((".yaml", ".yml")):
        return read_yaml(spec)
    raise SourceError(
        "unrecognised SOURCE file: expected a torch .whl, a native_functions.yaml or a snapshot .json",
        path=spec,
    )


# --- text ---------------------------------------------------------------------------------------


def decode(data: bytes, display: str) -> str:
    """UTF-8 text of a source file; bad bytes are an error naming the line, not a silent U+FFFD."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise SourceError(
            f"not UTF-8 text: byte 0x{data[err.start]:02x} at offset {err.start}", path=display, line=line
        ) from err
    # A byte-order mark is legal at the start of a YAML stream but would confuse line-based readers.
    return text.removeprefix("\ufeff")


def _too_big(size: int, display: str) -> SourceError:
    return SourceError(
        f"file is {size} bytes, over the {MAX_FILE_BYTES}-byte limit for one source file", path=display
    )


def read_capped(path: Path, display: str) -> bytes:
    """The bytes of a file of at most MAX_FILE_BYTES; a SourceError naming `display` otherwise."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise _too_big(size, display)
        with path.open("rb") as f:
            # Read one byte past the limit: a file that grew since stat() is caught as well.
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as err:
        raise SourceError(f"cannot read: {err.strerror or err}", path=display) from err
    if len(data) > MAX_FILE_BYTES:
        raise _too_big(len(data), display)
    return data


def _read_text_file(path: Path, display: str) -> TextFile:
    return TextFile(display=display, text=decode(read_capped(path, display), display))


def read_text(path: str, what: str, error: type[OpdriftError] = SourceError) -> str:
    """A user's own text file (config, allow-list, overrides, a backend's op list), read as every
    source file is: size-capped, strict UTF-8, and any problem one `error` naming the file and `what`."""
    if "\0" in path:  # open() would raise ValueError, not OSError
        raise error(
            f"cannot read the {what}: a file name cannot hold a NUL character", path=path.replace("\0", "\\0")
        )
    try:
        return _read_text_file(Path(path), path).text
    except SourceError as err:
        message = err.message.removeprefix("cannot read: ")
        raise error(f"cannot read the {what}: {message}", path=path, line=err.line) from None


def _is_file(path: Path, *, or_dir: bool = False) -> bool:
    """`path.is_file()` (or is_dir, with `or_dir`), but a directory on the way that may not be searched
    is an error to report, not a traceback: is_file lets PermissionError through."""
    try:
        return path.is_file() or (or_dir and path.is_dir())
    except OSError as err:
        raise SourceError(f"cannot read: {err.strerror or err}", path=str(path)) from None


def _optional_file(path: Path, display: str) -> TextFile | None:
    return _read_text_file(path, display) if _is_file(path) else None


# --- a checkout's working tree ----------------------------------------------------------------


def read_checkout(directory: str) -> SourceFiles:
    """The working tree of a PyTorch checkout; commit and date from git when DIR is a repository's top."""
    root = Path(directory)
    native = root / NATIVE_PATH
    if not _is_file(native):
        raise SourceError(f"no {NATIVE_PATH} in {directory}: not a PyTorch checkout", path=directory)
    commit = date = None
    if _is_file(root / ".git", or_dir=True):
        commit, date = _head_commit(directory)
    version_file = root / VERSION_PATH
    version_txt = _optional_file(version_file, str(version_file))
    torch_version = version_of(None, None if version_txt is None else version_txt.text)
    return SourceFiles(
        meta=SourceMeta(
            kind="checkout", path=directory, commit=commit, date=date, torch_version=torch_version
        ),
        native_functions=_read_text_file(native, os.path.join(directory, NATIVE_PATH)),
        tags=_optional_file(root / TAGS_PATH, os.path.join(directory, TAGS_PATH)),
        derivatives=_optional_file(root / DERIVATIVES_PATH, os.path.join(directory, DERIVATIVES_PATH)),
        python_side=tuple(
            (path, found)
            for path in SIGNAL_PATHS
            if (found := _optional_file(root / path, os.path.join(directory, path))) is not None
        ),
    )


def _head_commit(directory: str) -> tuple[str | None, str | None]:
    # The working tree is what gets read; HEAD only labels it, so a repository without commits
    # (or without git installed) still reads fine, just without a commit in the metadata.
    from opdrift.sources.git import (
        GitReader,  # here: subprocess and tempfile cost every other kind's start-up
    )

    try:
        with GitReader(directory) as git:
            sha = git.resolve("HEAD")
            return sha, git.commit_info(sha).date
    except GitError:
        return None, None


# --- DIR@REV ----------------------------------------------------------------------------------


def read_revision(directory: str, rev: str, *, spec: str | None = None) -> SourceFiles:
    """The files at revision REV of the repository in DIR, read from git objects (no checkout)."""
    from opdrift.sources.git import (
        GitReader,  # here: subprocess and tempfile cost every other kind's start-up
    )

    with GitReader(directory) as git:
        commit = git.resolve(rev)
        date = git.commit_info(commit).date

        def text_at(path: str) -> TextFile | None:
            display = f"{rev}:{path}"
            data = git.read(commit, path, max_size=MAX_FILE_BYTES)
            return None if data is None else TextFile(display=display, text=decode(data, display))

        native = text_at(NATIVE_PATH)
        if native is None:
            raise SourceError(f"no {NATIVE_PATH} at {rev}: not a PyTorch revision", path=directory)
        tags = text_at(TAGS_PATH)
        derivatives = text_at(DERIVATIVES_PATH)
        python_side = tuple((path, found) for path in SIGNAL_PATHS if (found := text_at(path)) is not None)
        version_txt = text_at(VERSION_PATH)
        torch_version = version_of(rev, None if version_txt is None else version_txt.text)
    meta = SourceMeta(
        kind="git",
        path=spec if spec is not None else f"{directory}@{rev}",
        revision=rev,
        commit=commit,
        date=date,
        torch_version=torch_version,
    )
    return SourceFiles(
        meta=meta, native_functions=native, tags=tags, derivatives=derivatives, python_side=python_side
    )


def version_of(rev: str | None, version_txt: str | None) -> str | None:
    """The torch version of revision REV (None: a working tree): its release tag's, else the one its
    version.txt (TEXT) names, if any. Every SOURCE with a version.txt takes its version here: a
    checkout, DIR@REV, a history walk's commits and gh:OWNER/NAME@REF (`opdrift.github.ghsource`)."""
    # PyTorch tags its releases v2.14.1; refs/tags/v2.14.1 and tags/v2.14.1 name the same tag.
    m = None if rev is None else _RELEASE_TAG.fullmatch(rev.removeprefix("refs/").removeprefix("tags/"))
    if m:
        return m.group(1)
    return version_in_text(version_txt)


# --- wheels -----------------------------------------------------------------------------------


def read_wheel(wheel: str) -> SourceFiles:
    """A torch wheel: packaged yaml (1.12 and later) or RegistrationDeclarations.h (earlier)."""
    import zipfile  # here: zipfile (and the threading it loads) costs every other kind's start-up

    try:
        with zipfile.ZipFile(wheel) as z:
            names = set(z.namelist())

            def member(name: str) -> TextFile | None:
                return _read_member(z, name, wheel) if name in names else None

            version = _wheel_version(z, names, wheel)
            meta = SourceMeta(kind="wheel", path=wheel, torch_version=version)
            native = member(WHEEL_NATIVE)
            # A wheel packages the Python side under the same in-tree paths (but not the .cpp).
            python_side = tuple((path, found) for path in SIGNAL_PATHS if (found := member(path)) is not None)
            if native is not None:
                return SourceFiles(
                    meta=meta,
                    native_functions=native,
                    tags=member(WHEEL_TAGS),
                    derivatives=member(WHEEL_DERIVATIVES),
                    python_side=python_side,
                )
            registrations = member(WHEEL_REGISTRATIONS)
            if registrations is not None:
                return SourceFiles(
                    meta=meta, registration_declarations=registrations, python_side=python_side
                )
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        zlib.error,
        lzma.LZMAError,
        EOFError,
        NotImplementedError,
        UnicodeDecodeError,  # a member name flagged UTF-8 that is not
    ) as err:
        raise SourceError(f"not a readable wheel (zip): {err}", path=wheel) from err
    except OSError as err:
        raise SourceError(f"cannot read: {err.strerror or err}", path=wheel) from err
    raise SourceError(
        f"wheel holds neither {WHEEL_NATIVE} nor {WHEEL_REGISTRATIONS}: not a torch wheel", path=wheel
    )


def _read_member(z: zipfile.ZipFile, name: str, wheel: str) -> TextFile:
    display = f"{wheel}:{name}"
    info = z.getinfo(name)
    if info.file_size > MAX_FILE_BYTES:
        raise _too_big(info.file_size, display)
    try:
        with z.open(info) as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except RuntimeError as err:  # zipfile's word for an encrypted member
        raise SourceError(f"cannot read {name}: {err}", path=wheel) from None
    if len(data) > MAX_FILE_BYTES:
        raise _too_big(len(data), display)
    return TextFile(display=display, text=decode(data, display))


def _wheel_version(z: zipfile.ZipFile, names: set[str], wheel: str) -> str | None:
    for name in sorted(names):
        if _METADATA.fullmatch(name):
            # Imported here: the email package costs every other SOURCE kind's start-up, and only a
            # wheel's METADATA needs it.
            from email.parser import HeaderParser

            metadata = _read_member(z, name, wheel).text
            version = HeaderParser().parsestr(metadata).get("Version")
            if version:
                return str(version).strip()
    # The wheel file name is name-version-...; the version never contains a dash.
    parts = Path(wheel).name.split("-")
    return parts[1] if len(parts) >= 3 else None


# --- a bare yaml --------------------------------------------------------------------------------


def read_yaml(path: str) -> SourceFiles:
    """A native_functions.yaml file, plus tags.yaml and derivatives.yaml from the same directory."""
    native = Path(path)
    beside = native.parent
    return SourceFiles(
        meta=SourceMeta(kind="yaml", path=path),
        native_functions=_read_text_file(native, path),
        tags=_optional_file(beside / "tags.yaml", os.path.join(os.path.dirname(path), "tags.yaml")),
        derivatives=_optional_file(
            beside / "derivatives.yaml", os.path.join(os.path.dirname(path), "derivatives.yaml")
        ),
    )
