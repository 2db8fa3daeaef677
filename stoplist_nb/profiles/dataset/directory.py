"""A dataset's directory: written by one writer at a time (:mod:`.lock`), carried on, summed up."""

from __future__ import annotations

import json
import os
import pathlib
from collections.abc import Mapping
from typing import Any

from stoplist_nb import errors
from stoplist_nb._atomic import remove_debris
from stoplist_nb._checks import check_flag
from stoplist_nb.profiles.dataset.checkpoint import CHECKPOINT, Checkpoint, DatasetSummary, refused
from stoplist_nb.profiles.dataset.lock import check_no_writer, writer_lock
from stoplist_nb.profiles.dataset.parts import COMMON_METADATA, PART, SEGMENT
from stoplist_nb.profiles.dataset.seal import checked_files, seal
from stoplist_nb.profiles.dataset.writer import PagesFrom, pull_parts, say_what_is_saved


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
    check_no_writer(directory)
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
