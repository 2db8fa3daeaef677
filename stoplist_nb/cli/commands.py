"""The ``profiles`` and ``export`` commands: a real service, configured from the environment.

Arguments arrive already checked by the parser (:mod:`stoplist_nb.cli.parser`), so
everything here may talk to the service.
"""

from __future__ import annotations

import argparse
import os
import tempfile

from stoplist_nb import errors
from stoplist_nb.cli.output import EXIT_USAGE, CliError, Ui, write_frame
from stoplist_nb.client import ENV_TOKEN, ENV_URL, Client
from stoplist_nb.profiles import read_profiles
from stoplist_nb.suppression.export import (
    download_export,
    read_export_files,
    start_suppression_export,
    wait_for_task,
)

__all__ = ["client_from_env", "run_export", "run_profiles"]

_KINDS = ("email", "phone", "domain")


def client_from_env(args: argparse.Namespace) -> Client:
    """Build the client from ``STOPLIST_NB_URL`` / ``STOPLIST_NB_TOKEN`` and the options.

    Raises:
        CliError: A variable is missing (exit 2, before anything is sent).
    """
    # Only the variables' names are ever printed, never their values.
    if not os.environ.get(ENV_URL, "").strip():
        raise CliError(
            f"{ENV_URL} is not set",
            code=EXIT_USAGE,
            hint=f"export {ENV_URL}=https://your-platform.example and {ENV_TOKEN}=<your token>",
        )
    if not os.environ.get(ENV_TOKEN, "").strip():
        raise CliError(
            f"{ENV_TOKEN} is not set",
            code=EXIT_USAGE,
            hint=f"export {ENV_TOKEN} with your API token (it is never printed)",
        )
    options: dict[str, object] = {}
    if args.retries is not None:
        options["retry"] = args.retries if args.retries > 0 else False
    if args.timeout is not None:
        options["timeout"] = args.timeout
    return Client.from_env(**options)


def run_profiles(args: argparse.Namespace, ui: Ui) -> int:
    """``stoplist-nb profiles``: read a database's profiles into a Parquet or CSV file."""
    with client_from_env(args) as client:
        frame = read_profiles(
            client,
            args.db_id,
            query=args.query,
            fields=args.fields,
            limit=args.limit,
            from_id=args.from_id,
            max_profiles=args.max_profiles,
            progress=ui.progress,
        )
    write_frame(frame, args.out)
    count = frame.attrs.get("profiles", 0)
    ui.say(
        f"wrote {len(frame)} rows ({count} profiles, {len(frame.columns)} columns) "
        f"of database {args.db_id} to {args.out}"
    )
    cursor = frame.attrs.get("next_from_id")
    if args.max_profiles is not None and count >= args.max_profiles and cursor:
        ui.say(f"stopped at --max-profiles {args.max_profiles}; --from-id {cursor} reads on")
    return 0


def _resume_hint(task_id: str) -> str:
    return f"the export task goes on at the service: add --task-id {task_id} to pick it up"


def run_export(args: argparse.Namespace, ui: Ui) -> int:
    """``stoplist-nb export``: export a suppression list into a ZIP, CSV or Parquet file."""
    with client_from_env(args) as client:
        task_id = args.task_id or start_suppression_export(client, args.list_id, type=args.type)
        ui.note(f"export task {task_id}")
        try:
            status = wait_for_task(
                client,
                task_id,
                poll_interval=args.poll_interval,
                timeout=args.task_timeout,
                progress=ui.progress,
            )
        except errors.TaskTimeout as exc:
            # The library's message shows the Python call that resumes; say the option instead.
            late = errors.TaskTimeout(
                f"export task {task_id!r} is still running after {args.task_timeout:g} s",
                task_id=task_id,
                progress=exc.progress,
            )
            late.hint = _resume_hint(task_id)
            raise late from None
        except errors.TaskFailed:
            raise
        except errors.StoplistError as exc:
            exc.hint = _resume_hint(task_id)
            raise
        what = f"suppression list {args.list_id}" if args.task_id is None else f"task {task_id}"
        if args.out.suffix.lower() == ".zip":
            files = status.require_files()
            if len(files) > 1:
                raise CliError(
                    f"the export has {len(files)} files, a .zip output holds one",
                    hint="write .csv or .parquet to read them all into one file",
                )
            path = download_export(client, files[0], args.out, progress=ui.progress)
            ui.say(f"wrote {path.stat().st_size} bytes of {what} to {path}")
            if status.total is not None:
                ui.say(f"the service counts {status.total} contacts in it")
            return 0
        with tempfile.TemporaryDirectory(prefix="stoplist_nb-") as tmp:
            frame, _ = read_export_files(client, status, tmp, progress=ui.progress, what=what)
    frame.attrs.update(task_id=task_id, total=status.total)
    if args.task_id is None:
        frame.attrs.update(list_id=args.list_id, type=args.type)
    write_frame(frame, args.out)
    ui.say(f"wrote {len(frame)} hashes of {what} to {args.out}")
    kinds = frame.attrs.get("kinds")
    if kinds:  # only a file with a kind column says what each row is
        ui.say("rows per kind: " + ", ".join(f"{n} {kind}" for kind, n in _by_kind(kinds)))
    return 0


def _by_kind(kinds: dict[str, int]) -> list[tuple[str, int]]:
    """The kinds of ``attrs["kinds"]``: e-mail, phone and domain first, then any other word."""
    first = [k for k in _KINDS if k in kinds]
    return [(k, kinds[k]) for k in first] + [(k, n) for k, n in kinds.items() if k not in first]
