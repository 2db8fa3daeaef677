"""The checkpoint of a dataset: what the pull is and how far it went, read and checked.

``_checkpoint.json`` holds the pull (service, database, query, fields,
dtypes), each committed file (its counts, size, SHA-256, the cursor after it,
the page cursors it added and the stream's schema where that changed) and the
cursors of the committed pages. It is replaced atomically, and checked, never
believed.
"""

from __future__ import annotations

import json
import pathlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stoplist_nb import errors
from stoplist_nb._atomic import Output
from stoplist_nb.profiles.schema import StreamSchema

#: The checkpoint's file name; a leading ``_`` keeps it out of the readers' sight.
CHECKPOINT = "_checkpoint.json"
#: The checkpoint's layout; a checkpoint of another is refused, never guessed at.
FORMAT = 2
SHA256 = re.compile(r"[0-9a-f]{64}")
START_OVER = "pass overwrite=True to start again"

_PULL = ("service", "db_id", "query", "fields", "dtypes")


def _table(text: str) -> dict[str, str]:
    return {key: kind for key, _, kind in (pair.partition(":") for pair in text.split())}


# Each key's kind (see _KINDS; "?": or null), in the order saved and checked.
_TOP = _table(
    "format:int service:text db_id:int query:object? fields:list? dtypes:object profiles:count "
    "rows:count next_from_id:text parts:list open:list cursors:list ended:flag complete:flag "
    "sealing:object?"
)
#: What the items of a list or the values of an object are.
_ITEMS = _table("fields:text dtypes:text cursors:text")
_ENTRY = _table(
    "name:text profiles:count rows:count bytes:count sha256:text next_from_id:text cursors:count"
)
_SEALING = _table("name:text bytes:count sha256:text")


@dataclass(frozen=True)
class DatasetSummary:
    """What a Parquet dataset of profiles holds, as its checkpoint says; ``len()`` is its rows.

    Attributes:
        path: The dataset's directory.
        parts: Part files written (``part-00000.parquet`` ...).
        profiles: Profiles saved, committed progress of the open part included.
        rows: Rows of those profiles.
        complete: Whether the pull reached the end and the dataset is sealed.
        next_from_id: The cursor after the last page saved (``""``: the start).
    """

    path: pathlib.Path
    parts: int
    profiles: int
    rows: int
    complete: bool
    next_from_id: str

    def __len__(self) -> int:
        return self.rows


@dataclass(frozen=True)
class Entry:
    """A committed file: a part, or a segment of the part being written."""

    name: str
    profiles: int
    rows: int
    bytes: int
    sha256: str
    next_from_id: str  # the cursor after its last page
    cursors: int  # the page cursors it added to the checkpoint's list
    schema: dict[str, Any]  # the stream's schema after its last page


@dataclass(frozen=True)
class Checkpoint:
    """What the pull is, and how far it went (the totals follow the files)."""

    pull: dict[str, Any]
    parts: tuple[Entry, ...] = ()
    open: tuple[Entry, ...] = ()  # the segments of the part being written
    cursors: tuple[str, ...] = ()  # of the committed pages, one a page (the first aside)
    ended: bool = False  # no request left to send: only the sealing may be missing
    complete: bool = False
    sealing: dict[str, Any] | None = None  # a part the sealing is replacing, and its new file

    @property
    def entries(self) -> tuple[Entry, ...]:
        return self.parts + self.open

    @property
    def profiles(self) -> int:
        return sum(e.profiles for e in self.entries)

    @property
    def rows(self) -> int:
        return sum(e.rows for e in self.entries)

    @property
    def next_from_id(self) -> str:
        return self.entries[-1].next_from_id if self.entries else ""

    def summary(self, directory: pathlib.Path) -> DatasetSummary:
        return DatasetSummary(
            directory, len(self.parts), self.profiles, self.rows, self.complete, self.next_from_id
        )

    @classmethod
    def read(cls, directory: pathlib.Path) -> Checkpoint:
        """The checkpoint in ``directory``, checked (its files are not looked at)."""
        path = directory / CHECKPOINT
        try:
            try:
                data = json.loads(path.read_bytes().decode("utf-8"))
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                raise NotWritten(f"it is not JSON text ({exc})") from None
            other = data.get("format") if isinstance(data, dict) else None
            if type(other) is int and other != FORMAT:
                version = "an earlier" if other < FORMAT else "a later"
                raise refused(
                    f"{path} was written by {version} version (format {other}); "
                    f"this one reads format {FORMAT} and does not carry that pull on"
                )
            _object(data, "the checkpoint", _TOP, "{!r}")
            for key, kind in _ITEMS.items():
                items = data[key] or ()
                for i, item in items.items() if type(items) is dict else enumerate(items):
                    _need(item, f"{key!r}[{i!r}]", kind)
            if "" in data["cursors"]:
                raise NotWritten(f"'cursors'[{data['cursors'].index('')}] is empty")
            schema: dict[str, Any] | None = None
            files: dict[str, list[Entry]] = {"parts": [], "open": []}
            for key, entries in files.items():
                for i, item in enumerate(data[key]):
                    where = f"{key}[{i}]"
                    _object(item, where, _ENTRY, f"{where}.{{}}", ("schema",))
                    if "schema" in item:
                        schema, at = item["schema"], f"{where}.schema"
                        kinds = dict.fromkeys(("columns", "sources", "declared"), "list")
                        _object(schema, at, kinds, at + ".{}")
                        try:  # what from_dict makes of anything else (a number for a name, ...)
                            same = StreamSchema.from_dict(schema).to_dict() == schema
                        except errors.InvalidInput as exc:
                            raise NotWritten(f"{at}: {exc}") from None
                        if not same:
                            raise NotWritten(f"{at} is not the schema of a stream")
                    elif schema is None:
                        raise NotWritten(f"{where} has no 'schema', and no file before it has one")
                    name = f".part-{len(files['parts']):05d}.parquet.seg-{i:05d}"
                    if key == "parts":
                        name = f"part-{i:05d}.parquet"
                    if item["name"] != name:
                        raise NotWritten(f"{where} is named {item['name']!r}, not {name}")
                    entries.append(Entry(**{k: item[k] for k in _ENTRY}, schema=schema))
            if data["sealing"] is not None:
                _object(data["sealing"], "'sealing'", _SEALING, "'sealing'.{}")
            state = cls(
                pull={k: data[k] for k in _PULL},
                parts=tuple(files["parts"]),
                open=tuple(files["open"]),
                cursors=tuple(data["cursors"]),
                ended=data["ended"],
                complete=data["complete"],
                sealing=data["sealing"],
            )
            _check_totals(state, data)
        except NotWritten as exc:
            raise errors.DatasetDamaged(
                f"{path} is not the checkpoint a pull wrote: {exc}; the dataset is not carried on",
                hint=f"it was changed after it was written; {START_OVER}",
            ) from None
        return state

    def save(self, directory: pathlib.Path) -> Checkpoint:
        """Replace the checkpoint in ``directory``, durably; return it."""
        files = []
        for k, entry in enumerate(self.entries):
            data: dict[str, Any] = {key: getattr(entry, key) for key in _ENTRY}
            if k == 0 or entry.schema != self.entries[k - 1].schema:  # mostly the one before's
                data["schema"] = entry.schema
            files.append(json.dumps(data, ensure_ascii=False))
        given = {"format": FORMAT, **self.pull, "parts": files[: len(self.parts)]}
        given["open"] = files[len(self.parts) :]
        # One line per key and per file: readable, and the schema's many short lists stay short.
        lines = []
        for key in _TOP:
            value = given[key] if key in given else getattr(self, key)
            text = json.dumps(value, ensure_ascii=False)
            if key in ("parts", "open") and value:
                text = "[\n  " + ",\n  ".join(value) + "\n ]"
            lines.append(f"{json.dumps(key)}: {text}")
        with Output(directory / CHECKPOINT, overwrite=True) as out:
            temp = out.temporary("json")
            temp.write_text("{\n " + ",\n ".join(lines) + "\n}\n", encoding="utf-8")
            out.put(temp)
        return self


class NotWritten(Exception):
    """A checkpoint that is not what a pull writes (the message says what is wrong)."""


def refused(message: str) -> errors.DatasetMismatch:
    return errors.DatasetMismatch(message, hint=START_OVER)


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


#: Each kind of value: whether a value is one as JSON says it, and its name in a message.
_KINDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "count": (lambda v: type(v) is int and v >= 0, "a whole number of at least 0"),
    "int": (lambda v: type(v) is int, "a whole number"),
    "text": (lambda v: type(v) is str, "a string"),
    "flag": (lambda v: type(v) is bool, "true or false"),
    "object": (lambda v: type(v) is dict, "an object"),
    "list": (lambda v: type(v) is list, "a list"),
}


def _need(value: Any, where: str, kind: str) -> None:
    # As JSON says it: ``true`` is no number, ``1`` no flag.
    fits, said = _KINDS[kind.rstrip("?")]
    if not fits(value) and not (kind.endswith("?") and value is None):
        raise NotWritten(f"{where} is {_shown(value)}, not {said}")


def _object(
    data: Any, where: str, kinds: Mapping[str, str], label: str, optional: Sequence[str] = ()
) -> None:
    """Check that ``data`` holds ``kinds``' keys of their kinds (``label`` names one), no others."""
    _need(data, where, "object")
    missing = [k for k in kinds if k not in data]
    if missing:
        raise NotWritten(f"{where} has no {missing[0]!r}")
    unknown = [k for k in data if k not in kinds and k not in optional]
    if unknown:
        raise NotWritten(f"{where} has {unknown[0]!r}, which no pull writes")
    for key, kind in kinds.items():
        _need(data[key], label.format(key), kind)


def _check_totals(state: Checkpoint, data: Mapping[str, Any]) -> None:
    """Raise if the totals, cursors, names or flags say other than the files listed."""
    if data["profiles"] != state.profiles or data["rows"] != state.rows:
        raise NotWritten(
            f"it counts {_shown(data['profiles'])} profiles and {_shown(data['rows'])} rows, "
            f"its files {state.profiles} and {state.rows}"
        )
    entries = state.entries
    if data["next_from_id"] != state.next_from_id:
        last = entries[-1].name if entries else "no file"
        raise NotWritten(
            f"'next_from_id' is {_shown(data['next_from_id'])}, but the pull stopped after "
            f"{last} at {state.next_from_id!r}"
        )
    empty = len(entries) == 1 and state.parts and entries[0].profiles == 0 and state.ended
    offset = 0
    for k, entry in enumerate(entries):
        if not SHA256.fullmatch(entry.sha256):
            raise NotWritten(f"{entry.name}: {_shown(entry.sha256)} is not a SHA-256 in hex")
        if entry.rows < entry.profiles or (entry.profiles == 0 and not empty) or entry.bytes == 0:
            raise NotWritten(
                f"{entry.name}: {entry.profiles} profiles in {entry.rows} rows and "
                f"{entry.bytes} bytes is no file a pull writes"
            )
        if entry.cursors > max(entry.profiles, 0):
            raise NotWritten(
                f"{entry.name}: {entry.cursors} page cursors for {entry.profiles} profiles"
            )
        # A file's first page was asked with the cursor after the file before.
        before = entries[k - 1].next_from_id
        first = state.cursors[offset] if offset < len(state.cursors) else None
        if k > 0 and (entry.cursors == 0 or first != before):
            raise NotWritten(
                f"{entry.name} does not start at the cursor after {entries[k - 1].name} "
                f"({before!r}): 'cursors' says {first!r}"
            )
        offset += entry.cursors
    if offset != len(state.cursors):
        raise NotWritten(f"'cursors' holds {len(state.cursors)} cursors, its files added {offset}")
    if len(set(state.cursors)) != len(state.cursors):
        raise NotWritten("'cursors' holds a cursor twice: a pull never goes back to one")
    if entries and not state.ended and state.next_from_id in ("", *state.cursors):
        raise NotWritten(
            f"'next_from_id' {state.next_from_id!r} does not lead on from the pages saved: "
            "a pull carried on there would read them again"
        )
    if state.complete and not state.ended:
        raise NotWritten("'complete' is true, 'ended' false: a pull is complete only once it ended")
    if state.ended and (state.open or not state.parts):
        raise NotWritten("'ended' is true, but the last part is not closed")
    sealing = state.sealing
    if sealing is not None and (
        state.complete
        or not state.ended
        or sealing["name"] not in {e.name for e in state.parts}
        or not SHA256.fullmatch(sealing["sha256"])
    ):
        raise NotWritten(f"'sealing' is {_shown(sealing)}, which no sealing writes")
