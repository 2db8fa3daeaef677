"""Every file the package writes is put in place whole, by :class:`Output` (docs/profiles.md)."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import pathlib
import re
import secrets
import shutil
import socket
import tempfile
from collections.abc import Iterator

from stoplist_nb import errors

_TAG = "stoplist_nb"
_LABEL = re.compile(r"[a-z0-9]+")
#: ``.<name>.stoplist_nb-<host>-<pid>-<nonce>.<label>``, or without ``<name>.``.
_TEMPORARY = re.compile(
    rf"\.(?:.*\.)?{_TAG}-(?P<writer>(?P<host>[0-9a-f]{{8}})-(?P<pid>[1-9][0-9]{{0,9}})-"
    r"[0-9a-f]{8})\.[a-z0-9]+",
    re.DOTALL,
)
#: The writers (``<host>-<pid>-<nonce>``) of this process not over; its others are over.
_WRITING: set[str] = set()
# Hashed: a host name may hold characters that do not belong in a file name.
_HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]
# link() errors that say the file system has no hard links (FAT, some network disks).
_NO_LINKS = frozenset(
    {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.EXDEV, errno.EMLINK}
)


def _alive(pid: int) -> bool:
    try:
        if os.name == "posix":  # on Windows, os.kill would end the process
            os.kill(pid, 0)
    except (OSError, OverflowError) as exc:  # another user's process (EPERM) is alive too
        return not isinstance(exc, ProcessLookupError)
    return True


def remove_debris(directory: str | os.PathLike[str], *, every: bool = False) -> list[pathlib.Path]:
    """Remove the temporaries whose writer is over (``every``: of any other write); return them."""
    gone: list[pathlib.Path] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return gone
    for entry in entries:
        found = _TEMPORARY.fullmatch(entry.name)
        if found is None or found["writer"] in _WRITING:
            continue
        pid = int(found["pid"])
        # Of this process, only writes that are over are not in _WRITING.
        if not every and (found["host"] != _HOST or (pid != os.getpid() and _alive(pid))):
            continue
        path = pathlib.Path(entry.path)
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(path)
            else:
                path.unlink()
            gone.append(path)
    return gone


def check_target(path: object) -> pathlib.Path:
    """``path`` as a :class:`~pathlib.Path` of a file that can be written, else ``InvalidInput``."""
    if not isinstance(path, str | os.PathLike) or isinstance(path, bytes):
        raise errors.InvalidInput(f"path must be a file name (str or os.PathLike), not {path!r}")
    out = pathlib.Path(path)
    if out.is_dir() or not out.name:
        raise errors.InvalidInput(f"path {str(path)!r} names a directory, not a file")
    if not out.parent.is_dir():
        raise errors.InvalidInput(f"path {str(path)!r}: no directory {str(out.parent)!r}")
    return out


def refuse_existing(path: pathlib.Path, overwrite: bool) -> None:
    """Raise ``OutputExists`` if anything (a broken link too) is at ``path``, unless overwriting."""
    if not overwrite and (path.exists() or path.is_symlink()):
        raise errors.OutputExists(
            f"{str(path)!r} exists; nothing was written (overwrite=True replaces it)", path=path
        )


class Output:
    """One file, written under hidden temporaries, its name given by :meth:`put`."""

    def __init__(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> None:
        self.path = pathlib.Path(path)
        self.overwrite = overwrite
        self._writer = f"{_HOST}-{os.getpid()}-{secrets.token_hex(4)}"
        self._stem = f".{self.path.name}.{_TAG}-{self._writer}"
        self._made: list[pathlib.Path] = []

    def __enter__(self) -> Output:
        refuse_existing(self.path, self.overwrite)
        remove_debris(self.path.parent)
        _WRITING.add(self._writer)
        return self

    def __exit__(self, kind: object, exc: BaseException | None, traceback: object) -> None:
        # First: if Ctrl-C stops the cleanup, the next write clears what is left.
        _WRITING.discard(self._writer)
        self.discard()
        # This write's system error only: another file's is its own, ours (ConnectError) are clean.
        if isinstance(exc, OSError) and not isinstance(exc, errors.StoplistError) and exc.errno:
            named = exc.filename
            if named is None or str(named) == str(self.path) or self._stem in str(named):
                # OSError(errno, ...) is of the errno's kind: PermissionError, ...
                raise OSError(exc.errno, os.strerror(exc.errno), str(self.path)) from exc

    def temporary(self, label: str, *, directory: bool = False) -> pathlib.Path:
        """A new empty hidden file (or ``directory``) beside the target, removed unless put."""
        if not _LABEL.fullmatch(label):
            raise ValueError(f"a temporary's label is lower-case letters and digits, not {label!r}")
        path = self.path.with_name(f"{self._stem}.{label}")
        if path in self._made:
            raise ValueError(f"this output already has a temporary {label!r}")
        # Listed first: a Ctrl-C between any two steps must find it on the list to go.
        self._made.append(path)
        try:
            if directory:
                path.mkdir(0o777)
            else:  # created here, new, with the umask's mode (not mkstemp's 0600)
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except OSError:
            self._made.remove(path)  # not made: what may be there is not ours
            raise
        return path

    def put(self, temporary: pathlib.Path) -> pathlib.Path:
        """Make ``temporary`` durable and give it the name (``OutputExists`` if one appeared)."""
        with open(temporary, "rb+") as file:
            os.fsync(file.fileno())
        (os.replace if self.overwrite else _link)(temporary, self.path)
        self._made.remove(temporary)
        # Windows cannot open a directory, and need not.
        with contextlib.suppress(OSError):
            fd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        return self.path

    def discard(self) -> None:
        """Remove every temporary still there; a Ctrl-C meanwhile is raised after."""
        interrupted: KeyboardInterrupt | None = None
        while self._made:
            try:
                path = self._made[-1]
                # The error that got here, if any, is the one to tell.
                with contextlib.suppress(OSError):
                    if path.is_dir() and not path.is_symlink():
                        shutil.rmtree(path)
                    else:
                        path.unlink(missing_ok=True)
                self._made.pop()
            except KeyboardInterrupt as exc:
                interrupted = exc
        if interrupted is not None:
            raise interrupted


def _link(temporary: pathlib.Path, target: pathlib.Path) -> None:
    try:
        try:
            os.link(temporary, target)
        except OSError as exc:
            if exc.errno not in _NO_LINKS:
                raise
            # No hard links here: claim the name, then fill it.
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            try:
                os.replace(temporary, target)
            except BaseException:
                with contextlib.suppress(OSError):  # the empty file that claimed the name
                    target.unlink()
                raise
    except FileExistsError:
        raise errors.OutputExists(
            f"{str(target)!r} appeared while it was being written; it was left as it is and "
            "nothing was written (overwrite=True replaces it)",
            path=target,
        ) from None
    with contextlib.suppress(OSError):  # left over, it goes with the other temporaries
        temporary.unlink()


@contextlib.contextmanager
def scratch_directory(label: str) -> Iterator[pathlib.Path]:
    """A hidden directory of this scheme in the system's temporary one, removed after."""
    writer = f"{_HOST}-{os.getpid()}-{secrets.token_hex(4)}"
    path = pathlib.Path(tempfile.gettempdir(), f".{_TAG}-{writer}.{label}")
    remove_debris(path.parent)
    _WRITING.add(writer)
    try:
        path.mkdir(0o777)
        yield path
    finally:
        _WRITING.discard(writer)
        shutil.rmtree(path, ignore_errors=True)
