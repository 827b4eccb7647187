"""Files every stage writes: the one atomic writer, kill-safe temporary names, the one disk-cache layout
and its one pruning policy.

- **Writing**: `replace_file` is the one atomic write (a temporary name beside the target, renamed over
  it: a reader sees the old file or the new one, never a torn one). `write_atomic` is its front for a
  user's output (a snapshot, a report, a gated list, init's files): streams written into, links kept,
  the target's permissions kept, errors as `WriteError`.
- **Temporary names** carry their writer's pid (`temp_prefix`): a process killed before its rename
  (SIGKILL, a cancelled CI job) cannot clean up, so the next writer removes the names whose writer is
  gone (`remove_leftovers`), never another live run's.
- **Caches**: `CacheFiles` is every on-disk cache's layout (``ROOT/ab/abcd…SUFFIX``, by a hex key):
  read whole and bounded, written atomically (a cache that cannot be written only costs the next run
  its work: the caller decides whether to say so), touched when read.
- **Pruning**: one policy, `prune`: past its bound, a cache loses its least recently used files
  (oldest mtime first; a read touches its file) until it holds at most 3/4 of the bound. Each file
  counts at least one block (BLOCK): what it takes on disk, so a bound in bytes is also a bound on
  the number of small entries. The quarter left free keeps a cache near its bound from being walked
  and pruned on every run.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from pathlib import Path

from opdrift.errors import WriteError

# What a small file takes on disk: the unit `prune` counts a file in, at least.
BLOCK = 4096


# --- the one atomic write ---------------------------------------------------------------------------


def temp_prefix(name: str) -> str:
    """The prefix of this process's temporary names for a target called NAME: ``.NAME.PID.``."""
    return f".{name}.{os.getpid()}."


def replace_file(target: Path, data: bytes, *, mode: int | None = None, durable: bool = True) -> None:
    """Replace TARGET with DATA atomically: DATA goes to ``.NAME.PID.XXXX.tmp`` in TARGET's directory
    (a rename is atomic only within one file system), is flushed (with `durable`, to disk: a cache
    file lost to a crash is only a miss, so caches skip the cost), given MODE and renamed over TARGET.
    On any failure TARGET stays as it was, the temporary file is removed and the error raised."""
    import tempfile  # here: only writing needs it, not the commands that merely read

    fd, tmp = tempfile.mkstemp(prefix=temp_prefix(target.name), suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if durable:
        fsync_directory(target.parent)


def write_atomic(path: str | os.PathLike[str], text: str | bytes) -> None:
    """Write a user's output PATH: replaced atomically (`replace_file`, keeping its permissions, or
    those of any new file), or written into when it is a stream (/dev/stdout, a FIFO, a device); a
    symbolic link keeps pointing where it did, at the new content. Errors are `WriteError`s."""
    if not os.fspath(path):
        # Path("") is ".": the rename would target the working directory and fail with a baffling
        # "Device or resource busy" under an empty file name (e.g. `-o ""` from an unset variable).
        raise WriteError("empty output file name")
    target = Path(path)
    # Before anything touches the disk: an encoding error writes nothing.
    data = text.encode("utf-8") if isinstance(text, str) else text
    try:
        in_place = _write_in_place(target)
        if not in_place and target.is_symlink():
            # Write where the link points, and keep the link: renaming over it would replace the link.
            target = Path(os.path.realpath(target))
        if in_place:
            _write_into(path, data)
            return
        mode = target.stat().st_mode & 0o7777 if target.exists() else _default_mode()
        remove_leftovers(target.parent, f".{target.name}.", (".tmp",))
        replace_file(target, data, mode=mode)
    except OSError as err:
        raise WriteError(f"cannot write: {err.strerror or err}", path=str(path)) from err


def _writer_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, but not ours to signal
        return True
    return True


def remove_leftovers(
    directory: Path, prefix: str, suffixes: tuple[str, ...], keep: str | None = None
) -> None:
    """Remove PREFIX + PID + ... + SUFFIX entries of DIRECTORY whose writing process has ended (but not
    the one named KEEP: what a link in use points at)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if not name.startswith(prefix) or not name.endswith(suffixes) or name == keep:
            continue
        pid = name[len(prefix) :].split(".", 1)[0]
        if not pid.isdigit() or _writer_alive(int(pid)):
            continue
        path = directory / name
        if path.is_dir() and not path.is_symlink():
            import shutil  # here: only a killed run's leftovers need it

            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                path.unlink()


def _write_into(path: str | os.PathLike[str], data: bytes) -> None:
    """Write into a stream. Our own stdout or stderr (``/dev/stdout``, even redirected to a file) is
    written through the descriptor already open, at its position: opening the path again would start
    a second position at 0 and overwrite what the shell writes next."""
    target = os.stat(path)
    for fd in (1, 2):
        try:
            same = os.path.samestat(target, os.fstat(fd))
        except OSError:
            continue
        if same:
            (sys.stdout if fd == 1 else sys.stderr).flush()
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            return
    with open(path, "ab") as f:  # a FIFO or a device: append never truncates
        f.write(data)


def _write_in_place(target: Path) -> bool:
    """True for what must be written into, not replaced: /dev/stdout (even when the shell redirected it
    to a file: renaming over that file would drop what the shell already wrote there), a FIFO, a device.
    A directory is an error."""
    try:
        mode = os.stat(target).st_mode  # follows links
    except FileNotFoundError:
        return False
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(21, "is a directory")
    if not stat.S_ISREG(mode):
        return True
    resolved = os.path.realpath(target)
    return str(target).startswith(("/dev/", "/proc/")) or resolved.startswith(("/dev/", "/proc/"))


def _default_mode() -> int:
    # mkstemp makes 0600 files; an output should get the permissions any new file would.
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def fsync_directory(directory: Path) -> None:
    # Makes the rename itself durable; not every platform lets a directory be opened for this.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# --- the one disk-cache layout and its pruning policy ----------------------------------------------


class CacheFiles:
    """One file per key under ROOT, sharded by the key's first two characters: ``ROOT/ab/abcd…SUFFIX``.

    KEY is a hex digest (a blob's sha, a digest of what the entry stands for): the caller checks what it
    reads back (a damaged file must be a miss, never a wrong answer) and decides what a failed write
    costs. Reads touch the file, so `prune` removes the least recently used first."""

    def __init__(self, root: Path, suffix: str = "") -> None:
        self.root = root
        self.suffix = suffix

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}{self.suffix}"

    def read(self, key: str, limit: int | None = None) -> bytes | None:
        """The file's bytes; None when there is none or it is over LIMIT bytes. Other errors raise."""
        path = self.path(key)
        try:
            with open(path, "rb") as fh:
                data = fh.read() if limit is None else fh.read(limit + 1)
        except FileNotFoundError:
            return None
        if limit is not None and len(data) > limit:
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: `prune` removes the oldest first
        return data

    def write(self, key: str, data: bytes) -> None:
        """Store DATA under KEY atomically (not durably: a cache file lost to a crash is a miss)."""
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(path, data, durable=False)

    def prune(self, limit: int) -> None:
        """The one policy: see the module's docstring."""
        prune(self.root, limit)


def prune(root: Path, limit: int) -> None:
    """Remove ROOT/*/* files, least recently used first, until they count at most 3/4 of LIMIT bytes
    (each at least one BLOCK); nothing when they count LIMIT or less. A killed writer's temporary file
    is one of them: never read, it is among the first to go."""
    try:
        entries = []
        for path in root.glob("*/*"):
            st = path.stat()
            entries.append((st.st_mtime_ns, max(st.st_size, BLOCK), path))
    except OSError:
        return
    total = sum(size for _, size, _ in entries)
    if total <= limit:
        return
    for _, size, path in sorted(entries):
        if total <= limit * 3 // 4:
            break
        try:
            path.unlink()
        except OSError:
            continue
        total -= size
