"""The ``profiles`` and ``export`` commands: a real service, configured from the environment.

Arguments arrive checked by the parser. Every way a run can end early says
what was kept and gives the whole command that goes on from there.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pathlib
import re
import shlex
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from stoplist_nb import errors
from stoplist_nb._connect import ENV_TOKEN, ENV_URL, settings_from_env
from stoplist_nb._http.replies import what_to_check
from stoplist_nb.cli import output
from stoplist_nb.cli.output import PROG, CliError, Ui, plural
from stoplist_nb.client import Client
from stoplist_nb.profiles.dataset import DatasetSummary, dataset_summary
from stoplist_nb.profiles.files import FileSummary
from stoplist_nb.profiles.reading import ProfilesRequest, read_profiles
from stoplist_nb.suppression.contacts import add_counts
from stoplist_nb.suppression.download import download_export, start_suppression_export
from stoplist_nb.suppression.export import read_suppression_list, write_suppression_parquet
from stoplist_nb.suppression.tasks import resume_said_as, wait_for_task


def command_line(
    argv: Sequence[str], *, drop: Mapping[str, bool] = {}, add: Sequence[str] = ()
) -> str:
    """The command that was run, as one line to paste: less the options ``drop``, plus ``add``.

    ``drop`` maps an option to whether it takes a value; found whole, as ``--opt=v``, or short.

    >>> command_line(["export", "--list-id", "7", "--out", "s.zip"],
    ...              drop={"--list-id": True}, add=["--task-id", "exp-1"])
    'stoplist-nb export --out s.zip --task-id exp-1'
    """
    kept: list[str] = []
    tokens = iter(argv)
    for token in tokens:
        name, eq, _ = token.partition("=")
        option = next(
            (o for o in drop if name.startswith("--") and len(name) > 2 and o.startswith(name)),
            None,
        )
        if option is None:
            kept.append(token)
        elif drop[option] and not eq:
            next(tokens, None)  # its value
    return shlex.join([PROG, *kept, *add])


def client_from_env(args: argparse.Namespace) -> Client:
    """The client of ``STOPLIST_NB_URL`` and ``STOPLIST_NB_TOKEN``, or ``InvalidInput`` (exit 2)."""
    options: dict[str, Any] = {} if args.timeout is None else {"timeout": args.timeout}
    if args.retries is not None:
        options["retry"] = args.retries if args.retries > 0 else False
    try:
        settings = settings_from_env()
        if settings is None:
            raise errors.InvalidInput(f"{ENV_URL} and {ENV_TOKEN} are not set")
    except errors.InvalidInput as exc:
        # The library's hint speaks to a notebook (sn.connect(...)); here the
        # command line needs the variables, and the demo service runs apart.
        url = os.environ.get(ENV_URL, "").strip()
        token = os.environ.get(ENV_TOKEN, "").strip()
        if not url:
            also = f" and {ENV_TOKEN}=<your token>" if not token else " too"
            exc.hint = (
                f"export {ENV_URL}=https://your-platform.example (your Altcraft "
                f"platform's address){also}; to try it on the demo service, run python -m "
                "stoplist_nb.demo in another terminal and paste the export lines it prints"
            )
        elif not token:
            exc.hint = f"export {ENV_TOKEN}=<your token> too (it is never printed)"
        raise
    return Client(settings.url, settings.token, **options)


@contextlib.contextmanager
def _advising(client: Client) -> Iterator[None]:
    """Where no connection to the service opened, say to check ``STOPLIST_NB_URL`` first."""
    try:
        yield
    except errors.StoplistError as exc:
        check = what_to_check(exc, client.base_url, ENV_URL)
        if check:
            exc.hint = f"{check}; {exc.hint}" if exc.hint else check
        raise


_DATASET_OPTIONS = ("profiles_per_part", "commit_seconds", "commit_bytes")


def run_profiles(args: argparse.Namespace, ui: Ui) -> int:
    """``stoplist-nb profiles``: profiles into a file, or a dataset (``--out DIR/``)."""
    carry_on = [name for name in ("--resume", "--repair") if getattr(args, name[2:])]
    if carry_on and args.overwrite:
        raise CliError(
            f"{carry_on[0]} carries on the dataset at --out, --overwrite removes it: "
            "give one of them",
            code=output.EXIT_USAGE,
        )
    where, dataset = args.out
    more: dict[str, Any] = {"query": args.query, "fields": args.fields, "limit": args.limit}
    left = output.what_is_kept(where)

    def kept() -> tuple[str, str]:  # what is there now, and how to go on
        if not dataset:
            return left(), "the same command reads the profiles again"
        try:
            saved = dataset_summary(where, checksums=False)
        except errors.StoplistError:  # no checkpoint yet, or not one to carry on
            return f"nothing was saved in {where}/", "the same command starts again"
        drop = {"--overwrite": False, "--resume": False}
        return (
            f"{plural(saved.profiles, 'profile')} {'is' if saved.profiles == 1 else 'are'} "
            f"saved in {where}/",
            f"to carry on from there, run: {command_line(args.argv, drop=drop, add=['--resume'])}",
        )

    if dataset:
        if args.from_id is not None or args.max_profiles is not None:
            raise CliError(
                "--from-id and --max-profiles go with a file; a dataset directory "
                "carries on by itself (--resume)",
                code=output.EXIT_USAGE,
            )
    else:
        given = carry_on + [
            f"--{n.replace('_', '-')}" for n in _DATASET_OPTIONS if getattr(args, n) is not None
        ]
        if given:
            raise CliError(
                f"{' and '.join(given)} go{'es' if len(given) == 1 else ''} with a dataset "
                "directory (--out DIR/)",
                code=output.EXIT_USAGE,
            )
        output.refuse_existing([where], overwrite=args.overwrite)
        more |= {"from_id": args.from_id, "max_profiles": args.max_profiles}
    options = {n: getattr(args, n) for n in _DATASET_OPTIONS if getattr(args, n) is not None}
    with client_from_env(args) as client, _advising(client):
        request = ProfilesRequest(client, args.db_id, progress=ui.progress, **more)
        try:
            if dataset:
                summary = request.to_dataset(
                    where,
                    resume=args.resume or args.repair,
                    overwrite=args.overwrite,
                    repair=args.repair,
                    **options,
                )
            else:
                write = request.to_csv if where.suffix.lower() == ".csv" else request.to_parquet
                done = write(where, overwrite=args.overwrite)
        except KeyboardInterrupt as exc:
            saved, how = kept()
            output.said_on_interrupt(exc, saved, f"hint: {how}")
            raise
        except errors.StoplistError as exc:
            _say_how_on(exc, args, kept)
            raise
        except OSError as exc:  # after StoplistError: a ConnectError is an OSError too
            if not dataset:
                raise output.cannot_write(where, exc) from None
            error = output.cannot_write(f"{where}/", exc)
            error.hint = "; ".join(kept())
            raise error from None
        if dataset:
            ui.say(
                f"{where}/ holds {plural(summary.rows, 'row')} "
                f"({plural(summary.profiles, 'profile')}, {plural(summary.parts, 'part file')}) "
                f"of database {args.db_id}; it is complete"
            )
            return 0
        count, cursor = done.profiles, done.next_from_id
        stopped = args.max_profiles is not None and count >= args.max_profiles and bool(cursor)
        follows = stopped and _more_after(client, args, cursor)
    ui.say(
        f"wrote {plural(done.rows, 'row')} ({plural(count, 'profile')}, "
        f"{plural(len(done.columns), 'column')}) of database {args.db_id} to {where}"
    )
    if follows:
        # A file name beside the first for the profiles that follow: p.parquet, p-2.parquet.
        number = int(m.group(1)) + 1 if (m := re.search(r"-(\d+)$", where.stem)) else 2
        stem = re.sub(r"-(\d+)$", "", where.stem)
        after = str(where.with_name(f"{stem}-{number}{where.suffix}"))
        drop = dict.fromkeys(("--from-id", "--max-profiles", "--out"), True)
        again = command_line(args.argv, drop=drop, add=["--from-id", cursor, "--out", after])
        ui.say(
            f"stopped at --max-profiles {args.max_profiles}; --from-id {shlex.quote(cursor)} "
            f"reads on: {again}"
        )
    elif stopped:
        ui.say(f"the read is complete: no profile follows the {plural(count, 'profile')} read")
    return 0


def _say_how_on(
    exc: errors.StoplistError, args: argparse.Namespace, kept: Callable[[], tuple[str, str]]
) -> None:
    """Put the library's advice in the words of the command line, with the command to run."""
    if isinstance(exc, errors.DatasetMismatch):
        if exc.hint:
            hint = re.sub(r"pass (\w+)=True", r"add --\1", exc.hint)
            exc.hint = re.sub(r"\b(resume|overwrite|repair)=True", r"--\1", hint)
        if isinstance(exc, errors.DatasetDamaged) and not args.repair:
            drop = dict.fromkeys(("--overwrite", "--resume", "--repair"), False)
            repair = command_line(args.argv, drop=drop, add=["--repair"])
            exc.hint = f"{exc.hint}; to repair it, run: {repair}"
        return
    if args.out.dataset:
        if isinstance(exc.partial, DatasetSummary):
            exc.hint = "; ".join(kept())
            exc.partial = None  # what it holds is said; the message keeps to the command
        return
    read = exc.partial.profiles if isinstance(exc.partial, FileSummary) else 0
    if exc.resume_from and read:  # with nothing read, the same command is the way on
        rest = ["--from-id", exc.resume_from]
        if args.max_profiles is not None:  # only the ones still wanted
            rest += ["--max-profiles", str(max(1, args.max_profiles - read))]
        drop = {"--from-id": True, "--max-profiles": True}
        again = (
            f"{plural(read, 'profile')} {'was' if read == 1 else 'were'} read before "
            "the failure (nothing was written); to read only the ones after them, "
            f"run: {command_line(args.argv, drop=drop, add=rest)}"
        )
        exc.hint = f"{exc.hint}; {again}" if exc.hint else again
    exc.partial = None


def _more_after(client: Client, args: argparse.Namespace, cursor: str) -> bool:
    """Whether a profile follows ``cursor``, which the service hands out even when none does."""
    one: dict[str, Any] = {"limit": 1, "max_profiles": 1, "progress": False, "lookahead": 0}
    try:
        probe = read_profiles(
            client, args.db_id, query=args.query, fields=["_id"], from_id=cursor, **one
        )
    except errors.StoplistError:
        return True  # unknown: the cursor is still the way on
    return bool(probe.attrs.get("profiles", 0))


# Errors after which the task may still run at the service, so --task-id picks it up;
# any other refusal (an unknown task id) would come back the same.
_PASSING = (errors.TransportError, errors.ServerError, errors.RateLimited)


def run_export(args: argparse.Namespace, ui: Ui) -> int:
    """``stoplist-nb export``: a suppression list into a ZIP (downloaded unread), CSV or Parquet."""
    try:
        return _export(args, ui)
    except errors.StoplistError:
        raise
    except OSError as exc:  # after StoplistError: a ConnectError is an OSError too
        raise output.cannot_write(args.out, exc) from None


def _export(args: argparse.Namespace, ui: Ui) -> int:
    out: pathlib.Path = args.out
    output.refuse_existing([out], overwrite=args.overwrite)
    kept = output.what_is_kept(out)
    with client_from_env(args) as client, _advising(client):
        task_id = args.task_id or start_suppression_export(client, args.list_id, type=args.type)
        ui.note(f"export task {task_id}")
        what = f"suppression list {args.list_id}" if args.task_id is None else f"task {task_id}"

        def say(task: str) -> str:
            # --type goes with a new export: the task was started with one already.
            drop = {"--list-id": True, "--task-id": True, "--type": True}
            again = command_line(args.argv, drop=drop, add=["--task-id", task])
            return f"the export task goes on at the service; to pick it up, run: {again}"

        waiting: dict[str, Any] = {"task_id": task_id, "progress": ui.progress}
        waiting |= {"poll_interval": args.poll_interval, "task_timeout": args.task_timeout}
        try:
            with resume_said_as(say):
                if out.suffix.lower() == ".zip":
                    status = wait_for_task(client, **waiting)
                    files = status.require_files()
                    if len(files) > 1:
                        raise CliError(
                            f"the export has {len(files)} files, a .zip output holds one",
                            hint="write .csv or .parquet to read them all into one file",
                        )
                    path = download_export(
                        client, files[0], out, overwrite=args.overwrite, **waiting
                    )
                    ui.say(f"wrote {plural(path.stat().st_size, 'byte')} of {what} to {path}")
                    if status.total is not None:
                        ui.say(f"the service counts {plural(status.total, 'contact')} in it")
                    return 0
                if out.suffix.lower() == ".parquet":
                    # In bounded memory: the list is never held whole, whatever its size.
                    type_ = args.type if args.task_id is None else None
                    done = write_suppression_parquet(
                        client, args.list_id, out, type=type_, overwrite=args.overwrite, **waiting
                    )
                    _say_written(ui, done.rows, what, out, done.kinds)
                    return 0
                frame = read_suppression_list(client, args.list_id, type=args.type, **waiting)
        except errors.TaskFailed:
            raise
        except _PASSING as exc:
            exc.hint = say(task_id)
            raise
        except errors.APIError as exc:
            if args.task_id is not None:
                exc.hint = (
                    f"check --task-id {shlex.quote(task_id)}: it must be the id printed by "
                    "an export started on this service with this token"
                )
            raise
        except KeyboardInterrupt as exc:
            hint = say(task_id)
            # wait_for_task prints how to pick the task up itself, and notes it (3.11+).
            told = any(hint in note for note in getattr(exc, "__notes__", ()))
            output.said_on_interrupt(exc, kept(), *([] if told else [f"hint: {hint}"]))
            raise
    if args.task_id is None:
        frame.attrs["type"] = args.type
    output.write_frame(frame, out, overwrite=args.overwrite)
    _say_written(ui, len(frame), what, out, frame.attrs.get("kinds"))
    return 0


def _say_written(
    ui: Ui, rows: int, what: str, out: pathlib.Path, kinds: dict[str, int] | None
) -> None:
    ui.say(f"wrote {plural(rows, 'hash', 'hashes')} of {what} to {out}")
    if kinds:  # only a file with a kind column says what each row is
        per_kind = add_counts([kinds])  # e-mail, phone and domain first, then any other word
        ui.say("rows per kind: " + ", ".join(f"{kind} {n}" for kind, n in per_kind.items()))
