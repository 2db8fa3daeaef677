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
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
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
_FILES = ("parts", "open", "cursors", "ended", "complete", "sealing")
_KEYS = ("format", *_PULL, "profiles", "rows", "next_from_id", *_FILES)
# The kind of each value (see _KINDS), in the order they are checked.
_TOP = {"service": "text", "profiles": "count", "rows": "count", "next_from_id": "text"}
_ENTRY = {
    "name": "text",
    "profiles": "count",
    "rows": "count",
    "bytes": "count",
    "sha256": "text",
    "next_from_id": "text",
    "cursors": "count",
}
_SEALING = {"name": "text", "bytes": "count", "sha256": "text"}


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

    @property
    def schema(self) -> dict[str, Any] | None:
        return self.entries[-1].schema if self.entries else None

    def summary(self, directory: pathlib.Path) -> DatasetSummary:
        return DatasetSummary(
            directory, len(self.parts), self.profiles, self.rows, self.complete, self.next_from_id
        )

    @classmethod
    def from_dict(cls, data: Any) -> Checkpoint:
        """The checkpoint :meth:`save` wrote, its values checked (``NotWritten`` if not)."""
        _keys(data, "the checkpoint", _KEYS)
        # A format of another number was refused by read().
        for key, kind in (*_TOP.items(), ("db_id", "int"), ("format", "int")):
            _need(data[key], repr(key), kind)
        if data["query"] is not None:
            _need(data["query"], "'query'", "object")
        if data["fields"] is not None:
            for i, name in enumerate(_need(data["fields"], "'fields'", "list")):
                _need(name, f"'fields'[{i}]", "text")
        for name, dtype in _need(data["dtypes"], "'dtypes'", "object").items():
            _need(dtype, f"'dtypes'[{name!r}]", "text")
        schema: dict[str, Any] | None = None
        files: dict[str, list[Entry]] = {"parts": [], "open": []}
        for key in files:
            for i, item in enumerate(_need(data[key], f"{key!r}", "list")):
                where = f"{key}[{i}]"
                _keys(item, where, _ENTRY, ("schema",))
                if "schema" in item:
                    schema = _checked_schema(item["schema"], f"{where}.schema")
                elif schema is None:
                    raise NotWritten(f"{where} has no 'schema', and no file before it has one")
                values = {k: _need(item[k], f"{where}.{k}", kind) for k, kind in _ENTRY.items()}
                files[key].append(Entry(**values, schema=schema))
        cursors = _need(data["cursors"], "'cursors'", "list")
        for i, cursor in enumerate(cursors):
            if not _need(cursor, f"'cursors'[{i}]", "text"):
                raise NotWritten(f"'cursors'[{i}] is empty")
        sealing = data["sealing"]
        if sealing is not None:
            _keys(sealing, "'sealing'", tuple(_SEALING))
            for key, kind in _SEALING.items():
                _need(sealing[key], f"'sealing'.{key}", kind)
        state = cls(
            pull={k: data[k] for k in _PULL},
            parts=tuple(files["parts"]),
            open=tuple(files["open"]),
            cursors=tuple(cursors),
            ended=_need(data["ended"], "'ended'", "flag"),
            complete=_need(data["complete"], "'complete'", "flag"),
            sealing=sealing,
        )
        for problem in _problems(state, data):
            raise NotWritten(problem)
        return state

    @classmethod
    def read(cls, directory: pathlib.Path) -> Checkpoint:
        """The checkpoint in ``directory``, checked (its files are not looked at)."""
        path = directory / CHECKPOINT
        try:
            data = json.loads(path.read_bytes().decode("utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise _damaged(path, f"it is not JSON text ({exc})") from None
        other = data.get("format") if isinstance(data, dict) else None
        if type(other) is int and other != FORMAT:
            version = "an earlier" if other < FORMAT else "a later"
            raise refused(
                f"{path} was written by {version} version (format {other}); "
                f"this one reads format {FORMAT} and does not carry that pull on"
            )
        try:
            return cls.from_dict(data)
        except NotWritten as exc:
            raise _damaged(path, str(exc)) from None

    def save(self, directory: pathlib.Path) -> Checkpoint:
        """Replace the checkpoint in ``directory``, durably; return it."""
        before: dict[str, Any] | None = None
        files: dict[str, list[str]] = {"parts": [], "open": []}
        for key, entries in (("parts", self.parts), ("open", self.open)):
            for entry in entries:
                data: dict[str, Any] = {k: getattr(entry, k) for k in _ENTRY}
                if entry.schema != before:  # most parts share the schema of the one before
                    data["schema"] = entry.schema
                files[key].append(json.dumps(data, ensure_ascii=False))
                before = entry.schema
        saved = {
            "format": FORMAT,
            **self.pull,
            "profiles": self.profiles,
            "rows": self.rows,
            "next_from_id": self.next_from_id,
            "parts": [],
            "open": [],
            "cursors": list(self.cursors),
            "ended": self.ended,
            "complete": self.complete,
            "sealing": self.sealing,
        }
        # One line per key and per file: readable, and the schema's many short lists stay short.
        lines = []
        for key, value in saved.items():
            text = json.dumps(value, ensure_ascii=False)
            if files.get(key):
                text = "[\n  " + ",\n  ".join(files[key]) + "\n ]"
            lines.append(f"{json.dumps(key)}: {text}")
        text = "{\n " + ",\n ".join(lines) + "\n}\n"
        with Output(directory / CHECKPOINT, overwrite=True) as out:
            temp = out.temporary("json")
            temp.write_text(text, encoding="utf-8")
            out.put(temp)
        return self


class NotWritten(Exception):
    """A checkpoint that is not what a pull writes (the message says what is wrong)."""


def refused(message: str) -> errors.DatasetMismatch:
    exc = errors.DatasetMismatch(message)
    exc.hint = START_OVER
    return exc


def _damaged(path: pathlib.Path, problem: str) -> errors.DatasetDamaged:
    exc = errors.DatasetDamaged(
        f"{path} is not the checkpoint a pull wrote: {problem}; the dataset is not carried on"
    )
    exc.hint = f"it was changed after it was written; {START_OVER}"
    return exc


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


def _need(value: Any, where: str, kind: str) -> Any:
    # As JSON says it: ``true`` is no number, ``1`` no flag.
    fits, said = _KINDS[kind]
    if not fits(value):
        raise NotWritten(f"{where} is {_shown(value)}, not {said}")
    return value


def _keys(data: Any, where: str, required: Collection[str], optional: Sequence[str] = ()) -> None:
    _need(data, where, "object")
    missing = [k for k in required if k not in data]
    if missing:
        raise NotWritten(f"{where} has no {missing[0]!r}")
    unknown = [k for k in data if k not in required and k not in optional]
    if unknown:
        raise NotWritten(f"{where} has {unknown[0]!r}, which no pull writes")


def _checked_schema(value: Any, where: str) -> dict[str, Any]:
    _keys(value, where, ("columns", "sources", "declared"))
    for key in ("columns", "sources", "declared"):
        _need(value[key], f"{where}.{key}", "list")
    try:  # what from_dict makes of anything else (a number for a name, ...) is not it
        same = StreamSchema.from_dict(value).to_dict() == value
    except errors.InvalidInput as exc:
        raise NotWritten(f"{where}: {exc}") from None
    if not same:
        raise NotWritten(f"{where} is not the schema of a stream")
    schema: dict[str, Any] = value
    return schema


def _problems(state: Checkpoint, data: Mapping[str, Any]) -> Iterator[str]:
    """What the totals, cursors, names and flags say against the files listed, first first."""
    if data["profiles"] != state.profiles or data["rows"] != state.rows:
        yield (
            f"it counts {_shown(data['profiles'])} profiles and {_shown(data['rows'])} rows, "
            f"its files {state.profiles} and {state.rows}"
        )
    entries = state.entries
    if data["next_from_id"] != state.next_from_id:
        last = entries[-1].name if entries else "no file"
        yield (
            f"'next_from_id' is {_shown(data['next_from_id'])}, but the pull stopped after "
            f"{last} at {state.next_from_id!r}"
        )
    segment = f".part-{len(state.parts):05d}.parquet.seg-"
    names = [f"part-{i:05d}.parquet" for i in range(len(state.parts))]
    names += [f"{segment}{i:05d}" for i in range(len(state.open))]
    for i, (entry, name) in enumerate(zip(entries, names, strict=True)):
        if entry.name != name:
            where = f"parts[{i}]" if i < len(state.parts) else f"open[{i - len(state.parts)}]"
            yield f"{where} is named {entry.name!r}, not {name}"
    empty = len(entries) == 1 and state.parts and entries[0].profiles == 0 and state.ended
    offset = 0
    for k, entry in enumerate(entries):
        if not SHA256.fullmatch(entry.sha256):
            yield f"{entry.name}: {_shown(entry.sha256)} is not a SHA-256 in hex"
        if entry.rows < entry.profiles or (entry.profiles == 0 and not empty) or entry.bytes == 0:
            yield (
                f"{entry.name}: {entry.profiles} profiles in {entry.rows} rows and "
                f"{entry.bytes} bytes is no file a pull writes"
            )
        if entry.cursors > max(entry.profiles, 0):
            yield f"{entry.name}: {entry.cursors} page cursors for {entry.profiles} profiles"
        # A file's first page was asked with the cursor after the file before.
        before = entries[k - 1].next_from_id
        first = state.cursors[offset] if offset < len(state.cursors) else None
        if k > 0 and (entry.cursors == 0 or first != before):
            yield (
                f"{entry.name} does not start at the cursor after {entries[k - 1].name} "
                f"({before!r}): 'cursors' says {first!r}"
            )
        offset += entry.cursors
    if offset != len(state.cursors):
        yield f"'cursors' holds {len(state.cursors)} cursors, its files added {offset}"
    if len(set(state.cursors)) != len(state.cursors):
        yield "'cursors' holds a cursor twice: a pull never goes back to one"
    if entries and not state.ended and state.next_from_id in ("", *state.cursors):
        yield (
            f"'next_from_id' {state.next_from_id!r} does not lead on from the pages saved: "
            "a pull carried on there would read them again"
        )
    if state.complete and not state.ended:
        yield "'complete' is true, 'ended' false: a pull is complete only once it ended"
    if state.ended and (state.open or not state.parts):
        yield "'ended' is true, but the last part is not closed"
    sealing = state.sealing
    if sealing is not None and (
        state.complete
        or not state.ended
        or sealing["name"] not in {e.name for e in state.parts}
        or not SHA256.fullmatch(sealing["sha256"])
    ):
        yield f"'sealing' is {_shown(sealing)}, which no sealing writes"
