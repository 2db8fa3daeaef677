"""A dataset directory's one writer: an OS lock on ``.lock``, which dies with a killed writer."""

from __future__ import annotations

import contextlib
import datetime
import errno
import os
import pathlib
import socket
import sys
from collections.abc import Iterator

from stoplist_nb import errors

if sys.platform == "win32":
    import msvcrt
else:
    import fcntl

#: The lock file of the writer; a leading ``.`` keeps it out of the readers' sight.
LOCK = ".lock"

#: The directories this process writes, and who it is: the OS may lock one twice for a
#: process (flock emulated by POSIX locks, as on NFS); setdefault is atomic across threads.
_WRITING: dict[tuple[int, int], str] = {}
#: Windows locks bytes, and a locked byte cannot be read: the lock is far past the text.
_WINDOWS_LOCK_AT = 1 << 30
#: flock's errors that say another holds the lock.
_HELD = (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)


@contextlib.contextmanager
def writer_lock(directory: pathlib.Path) -> Iterator[None]:
    """Hold the directory's lock, or raise :class:`~stoplist_nb.errors.DatasetLocked`."""
    key = _identity(directory)
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    holder = f"host {socket.gethostname()}, process {os.getpid()}, started {started}"
    found = _WRITING.setdefault(key, holder)
    if found is not holder:
        raise _locked(directory, found)
    try:
        fd = _lock(directory, exclusive=True)
        assert fd is not None
        try:
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, f"{holder}\n".encode())
            yield
        finally:
            if sys.platform == "win32":
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, 0)
                    os.lseek(fd, _WINDOWS_LOCK_AT, os.SEEK_SET)
                    msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
                os.close(fd)
            # Unlinked while held (not on Windows): a writer that opened it meanwhile retries.
            with contextlib.suppress(OSError):
                (directory / LOCK).unlink()
            if sys.platform != "win32":
                os.close(fd)
    finally:
        del _WRITING[key]


def _identity(directory: pathlib.Path) -> tuple[int, int]:
    stat = os.stat(directory)
    return (stat.st_dev, stat.st_ino)


def _lock(directory: pathlib.Path, *, exclusive: bool) -> int | None:
    """The descriptor of the locked lock file (``None``: no writer, or no locks to learn from)."""
    path = directory / LOCK
    if sys.platform == "win32" and not exclusive:
        return None  # Windows has no shared lock to try without blocking a writer
    for _ in range(100):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT if exclusive else os.O_RDONLY, 0o644)
        except FileNotFoundError:
            return None
        try:
            if sys.platform == "win32":
                os.lseek(fd, _WINDOWS_LOCK_AT, os.SEEK_SET)
                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            else:
                # Not lockf: POSIX locks end at any close of the file, and threads share them.
                fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
        except OSError as exc:
            if sys.platform != "win32" and exc.errno not in _HELD:
                os.close(fd)
                if not exclusive:
                    return None  # a filesystem that locks nothing: nothing to learn
                raise errors.DatasetLocked(
                    f"{path} cannot be locked: the filesystem refused ({exc.strerror or exc}); "
                    "one writer at a time cannot be ensured there, so nothing is written "
                    "(a local disk locks)"
                ) from None
            holder = ""
            with contextlib.suppress(OSError):
                os.lseek(fd, 0, os.SEEK_SET)
                holder = os.read(fd, 1000).decode("utf-8", "replace").strip()
            os.close(fd)
            raise _locked(directory, holder, summary=not exclusive) from None
        # A writer that just ended removed the file it locked: lock the one at the path.
        with contextlib.suppress(FileNotFoundError):
            if os.path.samestat(os.fstat(fd), os.stat(path)):
                return fd
        os.close(fd)
    raise errors.DatasetLocked(f"{path} kept being replaced while it was being locked")


def check_no_writer(directory: pathlib.Path) -> None:
    """Raise :class:`~stoplist_nb.errors.DatasetLocked` if a writer holds ``directory`` now."""
    # This process writes it: opening the lock file here would end a POSIX lock.
    if (mine := _WRITING.get(_identity(directory))) is not None:
        raise _locked(directory, mine, summary=True)
    if (fd := _lock(directory, exclusive=False)) is not None:
        os.close(fd)  # a reader holds nothing while it reads: a writer may start


def _locked(directory: pathlib.Path, holder: str, *, summary: bool = False) -> errors.DatasetLocked:
    who = holder or "which has not written who it is yet"
    said = f"{directory} is being written by another writer ({who})"
    if summary:
        said, hint = f"{said}: what it holds changes as it goes", "ask again once that writer ends"
        return errors.DatasetLocked(said, holder=holder, hint=hint)
    return errors.DatasetLocked(
        f"{said}; nothing was sent or changed",
        holder=holder,
        hint="one writer at a time: wait for that pull to end (or stop it), then call again; "
        "a writer that was killed holds no lock",
    )
