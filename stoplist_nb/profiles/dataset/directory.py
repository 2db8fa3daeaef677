"""A dataset's directory: written by one writer at a time, or carried on, or summed up.

The writer holds an OS lock on ``.lock`` in it, which dies with a killed writer.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import json
import os
import pathlib
import socket
import sys
from collections.abc import Iterator, Mapping
from typing import Any

from stoplist_nb import errors
from stoplist_nb._atomic import remove_debris
from stoplist_nb._checks import check_flag
from stoplist_nb.profiles.dataset.checkpoint import CHECKPOINT, Checkpoint, DatasetSummary, refused
from stoplist_nb.profiles.dataset.parts import COMMON_METADATA, PART, SEGMENT
from stoplist_nb.profiles.dataset.seal import checked_files, seal
from stoplist_nb.profiles.dataset.writer import PagesFrom, pull_parts, say_what_is_saved

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


def _locked(directory: pathlib.Path, holder: str, *, summary: bool = False) -> errors.DatasetLocked:
    who = holder or "which has not written who it is yet"
    said = f"{directory} is being written by another writer ({who})"
    if summary:
        exc = errors.DatasetLocked(f"{said}: what it holds changes as it goes", holder=holder)
        exc.hint = "ask again once that writer ends"
    else:
        exc = errors.DatasetLocked(f"{said}; nothing was sent or changed", holder=holder)
        exc.hint = (
            "one writer at a time: wait for that pull to end (or stop it), then call again; "
            "a writer that was killed holds no lock"
        )
    return exc


def write_dataset(
    directory: pathlib.Path,
    pull: dict[str, Any],
    declared: Mapping[str, Any],
    pages_from: PagesFrom,
    *,
    resume: bool,
    overwrite: bool,
    repair: bool,
    per_part: int,
    commit_seconds: float,
    commit_bytes: int,
) -> DatasetSummary:
    """Write (or carry on) the dataset of ``pull`` (what the checkpoint compares) in ``directory``.

    See :meth:`~stoplist_nb.profiles.reading.ProfilesRequest.to_dataset`.
    """
    if directory.exists() and not directory.is_dir():
        raise errors.InvalidInput(f"{directory} is a file, not a directory for a dataset")
    directory.mkdir(parents=True, exist_ok=True)
    # Held from the first look until sealed: a second writer would take our files for debris.
    with writer_lock(directory):
        state = _open(directory, pull, resume=resume, overwrite=overwrite, repair=repair)
        if state.complete:
            return state.summary(directory)
        if not state.ended:
            window = (per_part, commit_seconds, commit_bytes)
            state = pull_parts(directory, state, declared, pages_from, window)
        try:
            state = seal(directory, state)
        except BaseException as exc:
            say_what_is_saved(exc, directory, state)
            raise
    return state.summary(directory)


def dataset_summary(path: str | os.PathLike[str], *, checksums: bool = True) -> DatasetSummary:
    """Read and check the dataset in a directory, as a resumed ``to_dataset`` does; change nothing.

    Args:
        path: The dataset's directory.
        checksums: Check every file's SHA-256 (``False``: sizes and rows only, quicker).

    Returns:
        The :class:`DatasetSummary` of what the checkpoint records.

    Raises:
        InvalidInput: ``path`` is not a directory that holds a dataset.
        DatasetMismatch: The checkpoint is of another version's format.
        DatasetDamaged: The checkpoint or a file it lists is not what was written.
        DatasetLocked: A writer is writing the directory now.

    >>> dataset_summary("profiles/")  # doctest: +SKIP
    DatasetSummary(path=PosixPath('profiles'), parts=2, profiles=230000, rows=415000, ...)
    """
    directory = pathlib.Path(os.fspath(path))
    check_flag("checksums", checksums)
    if not (directory / CHECKPOINT).is_file():
        what = "not a directory" if not directory.is_dir() else f"holds no {CHECKPOINT}"
        raise errors.InvalidInput(f"{directory} is {what}: there is no dataset to sum up")
    # This process writes it: opening the lock file here would end a POSIX lock.
    mine = _WRITING.get(_identity(directory))
    if mine is not None:
        raise _locked(directory, mine, summary=True)
    fd = _lock(directory, exclusive=False)
    if fd is not None:
        os.close(fd)  # a reader holds nothing while it reads: a writer may start
    state = checked_files(directory, Checkpoint.read(directory), checksums=checksums)
    return state.summary(directory)


def _open(
    directory: pathlib.Path, pull: dict[str, Any], *, resume: bool, overwrite: bool, repair: bool
) -> Checkpoint:
    """The state to go on from: the checkpoint's, checked, or a new one (the directory ready)."""
    names = sorted(p.name for p in directory.iterdir())
    files = {n for n in names if PART.fullmatch(n) or SEGMENT.fullmatch(n)}
    foreign = [n for n in names if n not in files and not n.startswith((".", "_"))]
    if foreign:
        shown = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
        raise errors.DatasetMismatch(
            f"{directory} holds files that are not part of a dataset ({shown}): "
            "a dataset needs a directory of its own; nothing was removed"
        )
    state: Checkpoint | None = None
    if overwrite or (CHECKPOINT not in names and not any(PART.fullmatch(n) for n in files)):
        gone = [n for n in names if n in files or n in (CHECKPOINT, COMMON_METADATA)]
    else:
        if not resume:
            said = (
                "pass resume=True to carry on from its checkpoint, or overwrite=True to start again"
            )
            raise errors.DatasetMismatch(f"{directory} holds a dataset already", hint=said)
        if CHECKPOINT not in names:
            raise refused(f"{directory} holds part files without a checkpoint")
        state = Checkpoint.read(directory)
        # As JSON text: a query in another key order, or 1 for 1.0, is not provably the same pull.
        differ = [k for k in pull if json.dumps(state.pull.get(k)) != json.dumps(pull[k])]
        if differ:
            said = "; ".join(f"{k}: {state.pull.get(k)!r} there, {pull[k]!r} now" for k in differ)
            raise errors.DatasetMismatch(
                f"{directory} holds the checkpoint of another pull ({said}); it is not carried on",
                hint="use another directory, or pass overwrite=True to replace that dataset",
            )
        state = checked_files(directory, state, checksums=True, repair=repair)
        # A file renamed but not checkpointed: its pages come again.
        gone = [] if state.complete else sorted(files - {e.name for e in state.entries})
    # Under the lock, every temporary is an earlier pull's, and goes.
    remove_debris(directory, every=True)
    for name in gone:
        (directory / name).unlink(missing_ok=True)
    return Checkpoint(pull).save(directory) if state is None else state
