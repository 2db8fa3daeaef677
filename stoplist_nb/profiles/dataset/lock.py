"""One writer at a time: an OS lock on ``.lock`` in the dataset's directory.

A killed writer's lock dies with its process.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import os
import pathlib
import socket
import sys
import threading
from collections.abc import Iterator

from stoplist_nb import errors

if sys.platform == "win32":
    import msvcrt
else:
    import fcntl

#: The lock file of the writer; a leading ``.`` keeps it out of the readers' sight.
LOCK = ".lock"

#: The directories this process writes, and who it is: a lock the OS would grant a
#: second time to the same process (POSIX locks where flock is emulated, as on NFS).
_WRITING: dict[tuple[int, int], str] = {}
_WRITING_GUARD = threading.Lock()
#: Windows locks bytes, and a locked byte cannot be read: the lock is far past the text.
_WINDOWS_LOCK_AT = 1 << 30


@contextlib.contextmanager
def writer_lock(directory: pathlib.Path) -> Iterator[None]:
    """Hold the directory's lock, or raise :class:`~stoplist_nb.errors.DatasetLocked`."""
    key = _identity(os.stat(directory))
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    holder = f"host {socket.gethostname()}, process {os.getpid()}, started {started}"
    with _WRITING_GUARD:
        if key in _WRITING:
            raise _locked(directory, _WRITING[key])
        _WRITING[key] = holder
    try:
        try:
            fd = _lock(directory, exclusive=True)
        except _NoLocks as exc:
            raise errors.DatasetLocked(
                f"{directory / LOCK} cannot be locked: the filesystem refused ({exc}); "
                "one writer at a time cannot be ensured there, so nothing is written "
                "(a local disk locks)"
            ) from None
        assert fd is not None
        try:
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, f"{holder}\n".encode())
            yield
        finally:
            _unlock(directory / LOCK, fd)
    finally:
        with _WRITING_GUARD:
            del _WRITING[key]


def check_no_writer(directory: pathlib.Path) -> None:
    """Raise :class:`~stoplist_nb.errors.DatasetLocked` if a writer holds the directory now."""
    with _WRITING_GUARD:
        # This process writes it: opening the lock file here would end a POSIX lock.
        mine = _WRITING.get(_identity(os.stat(directory)))
    if mine is not None:
        raise _locked(directory, mine, summary=True)
    try:
        fd = _lock(directory, exclusive=False)
    except _NoLocks:
        return  # a filesystem that locks nothing: nothing to learn
    if fd is not None:
        os.close(fd)  # a reader holds nothing while it reads: a writer may start


class _NoLocks(Exception):
    """The filesystem refuses locks (an NFS mount without its lock service)."""


def _identity(stat: os.stat_result) -> tuple[int, int]:
    return (stat.st_dev, stat.st_ino)


def _lock(directory: pathlib.Path, *, exclusive: bool) -> int | None:
    """The descriptor of the locked lock file (``None``: no lock file, no writer)."""
    path = directory / LOCK
    if sys.platform == "win32" and not exclusive:
        return None  # Windows has no shared lock to try without blocking a writer
    for _ in range(100):
        try:
            if exclusive:
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            else:
                fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            got = _try_lock(fd, exclusive=exclusive)
        except OSError as exc:
            os.close(fd)
            raise _NoLocks(exc.strerror or str(exc)) from None
        if not got:
            holder = _holder(fd)
            os.close(fd)
            raise _locked(directory, holder, summary=not exclusive)
        # A writer that just ended removed the file it locked: lock the one at the path.
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)
    raise errors.DatasetLocked(f"{path} kept being replaced while it was being locked")


def _locked(directory: pathlib.Path, holder: str, *, summary: bool = False) -> errors.DatasetLocked:
    who = holder or "which has not written who it is yet"
    if summary:
        exc = errors.DatasetLocked(
            f"{directory} is being written by another writer ({who}): what it holds "
            "changes as it goes",
            holder=holder,
        )
        exc.hint = "ask again once that writer ends"
        return exc
    exc = errors.DatasetLocked(
        f"{directory} is being written by another writer ({who}); nothing was sent or changed",
        holder=holder,
    )
    exc.hint = (
        "one writer at a time: wait for that pull to end (or stop it), then call again; "
        "a writer that was killed holds no lock"
    )
    return exc


def _holder(fd: int) -> str:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        return os.read(fd, 1000).decode("utf-8", "replace").strip()
    except OSError:
        return ""


def _try_lock(fd: int, *, exclusive: bool) -> bool:
    if sys.platform == "win32":
        os.lseek(fd, _WINDOWS_LOCK_AT, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
    else:
        # flock, not lockf: a POSIX lock ends when the process closes any descriptor
        # of the file, and two threads of one process would both get it.
        try:
            fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            return False
    return True


def _unlock(path: pathlib.Path, fd: int) -> None:
    if sys.platform == "win32":
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.lseek(fd, _WINDOWS_LOCK_AT, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        os.close(fd)
    # Removed while still held on POSIX: a writer that opened it meanwhile finds it
    # gone once it gets the lock, and locks the file at the path instead. On
    # Windows another writer that has it open keeps it.
    with contextlib.suppress(OSError):
        path.unlink()
    if sys.platform != "win32":
        os.close(fd)
