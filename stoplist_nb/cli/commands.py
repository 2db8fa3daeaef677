"""The ``profiles`` and ``export`` commands: a real service, configured from the environment.

Arguments arrive already checked by the parser (:mod:`stoplist_nb.cli.parser`), so
everything here may talk to the service.
"""

from __future__ import annotations

import argparse
import contextlib
import pathlib
import re
import shlex
import sys
from collections.abc import Iterator

from stoplist_nb import errors
from stoplist_nb.cli.output import EXIT_USAGE, CliError, Ui, write_frame
from stoplist_nb.client import Client
from stoplist_nb.profiles.dataset import DatasetSummary
from stoplist_nb.profiles.files import FileSummary
from stoplist_nb.profiles.reading import ProfilesRequest, read_profiles, write_profiles_parquet
from stoplist_nb.suppression.export import (
    download_export,
    read_suppression_list,
    start_suppression_export,
    wait_for_task,
    write_suppression_parquet,
)
from stoplist_nb.suppression.kinds import add_counts
from stoplist_nb.suppression.tasks import resume_said_as

__all__ = ["client_from_env", "run_export", "run_profiles"]


def client_from_env(args: argparse.Namespace) -> Client:
    """Build the client from ``STOPLIST_NB_URL`` / ``STOPLIST_NB_TOKEN`` and the options.

    Raises:
        InvalidInput: A variable is missing (exit 2, before anything is sent), by
            the rule of :func:`~stoplist_nb.client.settings_from_env`.
    """
    options: dict[str, object] = {}
    if args.retries is not None:
        options["retry"] = args.retries if args.retries > 0 else False
    if args.timeout is not None:
        options["timeout"] = args.timeout
    return Client.from_env(**options)


def run_profiles(args: argparse.Namespace, ui: Ui) -> int:
    """``stoplist-nb profiles``: read a database's profiles into a file, or a Parquet dataset.

    Page by page: a file through ``ProfilesRequest.to_parquet`` or ``to_csv``
    (complete or not there at all), a directory through
    :func:`~stoplist_nb.profiles.reading.write_profiles_parquet`.
    """
    if args.out.dataset:
        if args.from_id is not None or args.max_profiles is not None:
            raise CliError(
                "--from-id and --max-profiles go with a file; a dataset directory "
                "carries on by itself (--resume)",
                code=EXIT_USAGE,
            )
        return _profiles_dataset(args, ui)
    if args.resume or args.overwrite:
        raise CliError(
            "--resume and --overwrite go with a dataset directory (--out DIR/)", code=EXIT_USAGE
        )
    path = args.out.path
    with client_from_env(args) as client:
        request = ProfilesRequest(
            client,
            args.db_id,
            query=args.query,
            fields=args.fields,
            limit=args.limit,
            from_id=args.from_id,
            max_profiles=args.max_profiles,
            progress=ui.progress,
        )
        try:
            done = (
                request.to_csv(path)
                if path.suffix.lower() == ".csv"
                else request.to_parquet(path, dataset=False)
            )
        except errors.StoplistError as exc:
            read = exc.partial.profiles if isinstance(exc.partial, FileSummary) else 0
            cursor = exc.resume_from
            if cursor and read:  # with nothing read, the same command is the way on
                again = (
                    f"{read} profiles were read before the failure (nothing was written); "
                    f"to read only the ones after them, add --from-id {shlex.quote(cursor)}"
                )
                exc.hint = f"{exc.hint}; {again}" if exc.hint else again
            exc.partial = None
            raise
        except OSError as exc:  # after StoplistError: some are OSErrors, none is the file's
            raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None
        assert isinstance(done, FileSummary)  # dataset=False
        count, cursor = done.profiles, done.next_from_id
        stopped = args.max_profiles is not None and count >= args.max_profiles and bool(cursor)
        more = stopped and _more_after(client, args, cursor)
    ui.say(
        f"wrote {done.rows} rows ({count} profiles, {len(done.columns)} columns) "
        f"of database {args.db_id} to {path}"
    )
    if more:
        ui.say(
            f"stopped at --max-profiles {args.max_profiles}; "
            f"--from-id {shlex.quote(cursor)} reads on"
        )
    elif stopped:
        ui.say(f"the read is complete: no profile follows the {count} read")
    return 0


def _profiles_dataset(args: argparse.Namespace, ui: Ui) -> int:
    """``profiles --out DIR/``: a Parquet dataset, resumed with ``--resume``."""
    where = args.out.path
    again = f"the same command with --resume carries on from the last part in {where}/"
    with client_from_env(args) as client:
        try:
            summary = write_profiles_parquet(
                client,
                args.db_id,
                where,
                query=args.query,
                fields=args.fields,
                limit=args.limit,
                resume=args.resume,
                overwrite=args.overwrite,
                progress=ui.progress,
            )
        except errors.DatasetMismatch as exc:
            if exc.hint:  # the library's advice, in the words of the command line
                words = {"resume=True": "--resume", "overwrite=True": "--overwrite"}
                exc.hint = re.sub("|".join(words), lambda m: words[m.group()], exc.hint)
            raise
        except errors.StoplistError as exc:
            if isinstance(exc.partial, DatasetSummary):
                exc.hint = f"{exc.partial.profiles} profiles are saved; {again}"
                exc.partial = None  # what it holds is said; the message keeps to the command
            raise
        except KeyboardInterrupt:
            print(f"stoplist-nb: {again}", file=sys.stderr)
            raise
    ui.say(
        f"{where}/ holds {summary.rows} rows ({summary.profiles} profiles, "
        f"{summary.parts} part files) of database {args.db_id}; it is complete"
    )
    return 0


def _more_after(client: Client, args: argparse.Namespace, cursor: str) -> bool:
    """Whether a profile follows ``cursor``: one request of one profile, to advise right.

    Stopped at exactly ``--max-profiles`` the service still hands out a cursor,
    even when nothing follows it; ``--from-id`` would then read nothing.
    """
    try:
        probe = read_profiles(
            client,
            args.db_id,
            query=args.query,
            fields=["_id"],
            limit=1,
            from_id=cursor,
            max_profiles=1,
            progress=False,
            lookahead=0,
        )
    except errors.StoplistError:
        return True  # unknown: the cursor is still the way on
    return bool(probe.attrs.get("profiles", 0))


def _resume_hint(task_id: str) -> str:
    return (
        "the export task goes on at the service: "
        f"add --task-id {shlex.quote(task_id)} to pick it up"
    )


# Errors after which the task may still run at the service, so --task-id picks it up;
# any other refusal (an unknown task id) would come back the same.
_PASSING = (errors.TransportError, errors.ServerError, errors.RateLimited)


def run_export(args: argparse.Namespace, ui: Ui) -> int:
    """``stoplist-nb export``: export a suppression list into a ZIP, CSV or Parquet file.

    The export is started here (or picked up with ``--task-id``) and its id
    printed first, so that an interrupted or timed-out wait can be resumed;
    a Parquet output is then streamed in by
    :func:`~stoplist_nb.suppression.export.write_suppression_parquet`, a
    CSV output goes through
    :func:`~stoplist_nb.suppression.export.read_suppression_list`, a ZIP output
    is only waited for and downloaded, unread.
    """
    with client_from_env(args) as client:
        task_id = args.task_id or start_suppression_export(client, args.list_id, type=args.type)
        ui.note(f"export task {task_id}")
        what = f"suppression list {args.list_id}" if args.task_id is None else f"task {task_id}"
        with _resumable(args, task_id), resume_said_as(_resume_hint):
            if args.out.suffix.lower() == ".zip":
                return _export_zip(client, args, ui, task_id, what)
            if args.out.suffix.lower() == ".parquet":
                # In bounded memory: the list is never held whole, whatever its size.
                done = write_suppression_parquet(
                    client,
                    args.list_id,
                    args.out,
                    task_id=task_id,
                    type=args.type if args.task_id is None else None,
                    progress=ui.progress,
                    poll_interval=args.poll_interval,
                    task_timeout=args.task_timeout,
                )
                _say_written(ui, done.rows, what, args.out, done.kinds)
                return 0
            frame = read_suppression_list(
                client,
                args.list_id,
                type=args.type,
                task_id=task_id,
                progress=ui.progress,
                poll_interval=args.poll_interval,
                task_timeout=args.task_timeout,
            )
    if args.task_id is None:
        frame.attrs["type"] = args.type
    write_frame(frame, args.out)
    _say_written(ui, len(frame), what, args.out, frame.attrs.get("kinds"))
    return 0


def _say_written(
    ui: Ui, rows: int, what: str, out: pathlib.Path, kinds: dict[str, int] | None
) -> None:
    ui.say(f"wrote {rows} hashes of {what} to {out}")
    if kinds:  # only a file with a kind column says what each row is
        per_kind = add_counts([kinds])  # e-mail, phone and domain first, then any other word
        ui.say("rows per kind: " + ", ".join(f"{n} {kind}" for kind, n in per_kind.items()))


def _export_zip(client: Client, args: argparse.Namespace, ui: Ui, task_id: str, what: str) -> int:
    status = wait_for_task(
        client,
        task_id,
        poll_interval=args.poll_interval,
        task_timeout=args.task_timeout,
        progress=ui.progress,
    )
    files = status.require_files()
    if len(files) > 1:
        raise CliError(
            f"the export has {len(files)} files, a .zip output holds one",
            hint="write .csv or .parquet to read them all into one file",
        )
    path = download_export(
        client,
        files[0],
        args.out,
        progress=ui.progress,
        task_id=task_id,
        task_timeout=args.task_timeout,
        poll_interval=args.poll_interval,
    )
    ui.say(f"wrote {path.stat().st_size} bytes of {what} to {path}")
    if status.total is not None:
        ui.say(f"the service counts {status.total} contacts in it")
    return 0


@contextlib.contextmanager
def _resumable(args: argparse.Namespace, task_id: str) -> Iterator[None]:
    """Say how to go on after a failure as the command line does: with ``--task-id``."""
    try:
        yield
    except errors.TaskFailed:
        raise
    except _PASSING as exc:
        exc.hint = _resume_hint(task_id)
        raise
    except errors.APIError as exc:
        if args.task_id is not None:
            exc.hint = (
                f"check --task-id {shlex.quote(task_id)}: it must be the id printed by "
                "an export started on this service with this token"
            )
        raise
