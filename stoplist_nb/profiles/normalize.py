"""Profiles from ``profiles/list`` as one flat DataFrame: one row per subscription.

A profile with no subscriptions is one row, its subscription columns null. The
columns are listed in ``docs/profiles.md``; a value that does not fit its column
(:func:`~stoplist_nb.profiles.columns.fit`) keeps its exact text in ``<column>__text``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from stoplist_nb._json import kinds
from stoplist_nb._json.mixed import from_values
from stoplist_nb._json.records import records_to_arrow
from stoplist_nb._lookahead import in_workers
from stoplist_nb.errors import InvalidInput
from stoplist_nb.profiles import columns as cols
from stoplist_nb.profiles import rows as fl
from stoplist_nb.profiles.columns import (
    COMMON_COLUMNS,
    DTYPES,
    PROFILE_COLUMNS,
    SUBSCRIPTION_COLUMNS,
)

__all__ = [
    "COMMON_COLUMNS", "DTYPES", "PROFILE_COLUMNS", "SUBSCRIPTION_COLUMNS", "ColumnRole", "Fitted",
    "FlatPage", "flatten_profiles", "frame_from_tables", "normalize_profiles", "split_channels",
    "table_from_tables"
]  # fmt: skip


class ColumnRole(NamedTuple):
    """A column of a flattened page: its group (:data:`~.columns.ROLES`) and source key."""

    name: str
    role: str
    source: str


@dataclass(frozen=True)
class FlatPage:
    """One page of profiles flattened by ``flatten_profiles``: its table, and each column's role."""

    table: pa.Table
    roles: tuple[ColumnRole, ...]
    _fitted: dict[str, Fitted] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if [r.name for r in self.roles] != self.table.column_names:
            raise InvalidInput("FlatPage roles must name the table's columns, in order")

    def fitted(self, name: str) -> Fitted:
        """Fixed column ``name`` fitted to its kind (:func:`~.columns.fit`), worked out once."""
        found = self._fitted.get(name)
        if found is None:
            kind = cols.KINDS[name]
            # The last column of a name wins, as when the pages are combined.
            at = max((i for i, r in enumerate(self.roles) if r.name == name), default=None)
            if at is None:
                found = Fitted(kind, (cols.nulls(kind, self.table.num_rows),), (None,))
            else:
                pairs = [cols.fit(kind, chunk) for chunk in self.table.column(at).chunks]
                found = Fitted(kind, tuple(v for v, _ in pairs), tuple(r for _, r in pairs))
            self._fitted[name] = found
        return found

    def fit_fixed(self, *, objects: bool) -> FlatPage:
        """Fit every fixed column now, in a worker; ``objects``: make their Python values too."""
        for name in cols.KINDS:
            fitted = self.fitted(name)
            if objects and cols.KIND_DTYPES[fitted.kind] is object:
                fitted.make_objects()
        return self

    @classmethod
    def from_table(cls, table: pa.Table) -> FlatPage:
        """Wrap a table built elsewhere, each column's role from its name (``role_of``)."""
        return cls(table, tuple(ColumnRole(n, cols.role_of(n), n) for n in table.column_names))


@dataclass(frozen=True)
class Fitted:
    """One page's fixed column in its kind: each chunk's values and rest (:func:`~.columns.fit`)."""

    kind: str
    values: tuple[pa.Array, ...]
    rests: tuple[pa.Array | None, ...]
    _made: list[np.ndarray] = field(default_factory=list, init=False, repr=False, compare=False)

    def make_objects(self) -> None:
        """Make the Python values now, for the next :meth:`objects`."""
        self._made.append(cols.object_values(self.values))

    def objects(self) -> np.ndarray:
        """The values as Python objects; those made ahead are handed out once, to one frame."""
        return self._made.pop() if self._made else cols.object_values(self.values)


def normalize_profiles(
    records: Sequence[Mapping[str, Any]] | pa.Array | pa.ChunkedArray,
) -> pd.DataFrame:
    """Flatten profiles into one row per subscription (the columns: see the module doc).

    Args:
        records: The ``data`` of ``profiles/list`` replies: profile dicts or a pyarrow array.

    Returns:
        The flat frame, with a RangeIndex.

    >>> df = normalize_profiles([{"id": "a1", "_fname": "Ann", "subscriptions": [
    ...     {"channel": "email", "email_data": {"email": "ann@example.org"}}]}])
    >>> df[["profile_id", "_fname", "channel", "email"]].to_dict("records")
    [{'profile_id': 'a1', '_fname': 'Ann', 'channel': 'email', 'email': 'ann@example.org'}]
    """
    if isinstance(records, pa.Array | pa.ChunkedArray):
        return frame_from_tables([flatten_profiles(records)])
    if isinstance(records, str | bytes) or not isinstance(records, Sequence):
        raise InvalidInput(
            "records must be a list of profile dicts or a pyarrow array, "
            f"not {type(records).__name__}"
        )
    for i, record in enumerate(records):
        if not isinstance(record, Mapping):
            raise InvalidInput(f"profile #{i} must be a dict, not {type(record).__name__}")
    return frame_from_tables([flatten_profiles(records_to_arrow(records), lambda: records)])


def flatten_profiles(
    data: pa.Array, records: Callable[[], Sequence[Any]] | None = None
) -> FlatPage:
    """Flatten one page of profiles (an Arrow array of structs), one row per subscription.

    Dynamic columns keep the types Arrow inferred. ``records`` gives the
    profiles as sent, asked for only where Arrow added keys to an object.
    """
    profiles = fl.as_struct_array(data)
    fields = fl.children(profiles)
    subs = next((a for name, a in fields if name == cols.SUBSCRIPTIONS), None)
    if subs is not None and not fl.is_object_list(subs.type):
        subs = None  # not a list of objects: kept below as a plain profile field
    rows = fl.explode(subs, len(profiles))
    exact = _Sent(records, len(profiles)) if records is not None else None
    fixed, dynamic = _subscription_leaves(rows.subs, exact)
    leaves = [*fixed.values(), *(a for _, _, a in dynamic)]
    sub_arrays = dict(
        zip([*fixed, *(n for n, _, _ in dynamic)], fl.expand(leaves, rows), strict=True)
    )
    _contacts_of_every_channel(sub_arrays, dynamic)

    ids = [cols.to_text(a) for key in cols.ID_KEYS for name, a in fields if name == key]
    if not ids:
        ids = [pa.nulls(len(profiles), cols.TEXT)]
    own = [
        (n, exact.profile(n) if exact is not None and _keys_vary(a) else a)
        for n, a in fields
        if n not in cols.ID_KEYS and a is not subs
    ]
    profile_id, *own_arrays = fl.take(
        [pc.coalesce(*ids) if len(ids) > 1 else ids[0], *(a for _, a in own)], rows.profile_take
    )
    columns: list[tuple[str, str, str, pa.Array]] = [("profile_id", "id", "profile_id", profile_id)]
    taken = set(sub_arrays) | set(cols.KINDS)
    for (name, _), array in zip(own, own_arrays, strict=True):
        columns.append((fl.unique(cols.profile_column(name), taken), "profile", name, array))

    def fixed_column(name: str) -> tuple[str, str, str, pa.Array]:
        array = sub_arrays[name] if name in sub_arrays else pa.nulls(rows.count)
        return (name, "cats" if name == cols.CATS else "fixed", name, array)

    columns.extend(fixed_column(name) for name in SUBSCRIPTION_COLUMNS)
    columns.extend((name, role, name, sub_arrays[name]) for name, role, _ in dynamic)
    columns.append(fixed_column(cols.CATS))
    table = pa.Table.from_arrays([c[3] for c in columns], names=[c[0] for c in columns])
    return FlatPage(table, tuple(ColumnRole(name, role, raw) for name, role, raw, _ in columns))


def _contacts_of_every_channel(
    arrays: dict[str, pa.Array], dynamic: list[tuple[str, str, pa.Array]]
) -> None:
    """``email`` and ``phone`` from ``cc_data`` too; one that differs stays in ``cc_data.*``."""
    for column in cols.CONTACTS:
        source = f"{cols.CONTACT_BLOCK}.{column}"
        at = next((i for i, (name, _, _) in enumerate(dynamic) if name == source), None)
        if at is None:
            continue
        extra = cols.to_text(arrays[source])
        own = cols.to_text(arrays.get(column, pa.nulls(len(extra))))
        arrays[column] = pc.coalesce(own, extra)
        clash = pc.and_(own.is_valid(), pc.not_equal(own, extra))
        if pc.any(clash).as_py():
            arrays[source] = pc.if_else(clash, extra, pa.scalar(None, cols.TEXT))
        else:
            del arrays[source], dynamic[at]


@dataclass
class _Sent:
    """A page's values as sent, for the leaves Arrow cannot hold exactly."""

    records: Callable[[], Sequence[Any]]
    count: int

    @cached_property
    def _profiles(self) -> list[Mapping[str, Any]]:
        profiles = [r if isinstance(r, Mapping) else {} for r in self.records()]
        if len(profiles) != self.count:
            raise InvalidInput("the records are not the page's profiles")
        return profiles

    @cached_property
    def _subscriptions(self) -> list[Mapping[str, Any]]:
        # In the order Arrow lists them: each list of subscriptions, profile by profile.
        found = (p.get(cols.SUBSCRIPTIONS) for p in self._profiles)
        return [
            s if isinstance(s, Mapping) else {} for f in found if isinstance(f, list) for s in f
        ]

    def profile(self, key: str) -> pa.Array:
        return from_values([p.get(key) for p in self._profiles])

    def subscription(self, key: str, sub_key: str | None = None) -> pa.Array:
        values = [s.get(key) for s in self._subscriptions]
        if sub_key is not None:
            values = [v.get(sub_key) if isinstance(v, Mapping) else None for v in values]
        return from_values(values)


def _keys_vary(array: pa.Array) -> bool:
    """Whether Arrow may have added a key to an object in ``array``."""
    type_ = array.type
    if pa.types.is_struct(type_):
        return any(
            child.null_count > array.null_count or _keys_vary(child) for child in array.flatten()
        )
    if pa.types.is_list(type_) or pa.types.is_large_list(type_):
        return _keys_vary(array.flatten())
    return False


def _subscription_leaves(
    subs: pa.StructArray | None, exact: _Sent | None = None
) -> tuple[dict[str, pa.Array], list[tuple[str, str, pa.Array]]]:
    """Fixed leaves by column name, and dynamic ones as (name, role, array)."""
    fixed: dict[str, pa.Array] = {}
    dynamic: list[tuple[str, str, pa.Array]] = []
    taken = set(cols.KINDS)
    for key, array in fl.children(subs) if subs is not None else []:
        if pa.types.is_struct(array.type):
            known = cols.BLOCKS.get(key, {})
            for sub_key, leaf in fl.children(array):
                if sub_key in known:
                    fixed[known[sub_key]] = leaf
                elif not pa.types.is_null(leaf.type):
                    if exact is not None and _keys_vary(leaf):
                        leaf = exact.subscription(key, sub_key)
                    role = "cf" if key == cols.CUSTOM else "block"
                    dynamic.append((fl.unique(cols.block_column(key, sub_key), taken), role, leaf))
        elif key in cols.SCALARS or key == cols.CATS:
            fixed[key] = array
        elif not pa.types.is_null(array.type):
            if exact is not None and _keys_vary(array):
                array = exact.subscription(key)
            dynamic.append((fl.unique(cols.own_name(f"subscription.{key}"), taken), "extra", array))
    order = {role: i for i, role in enumerate(cols.ROLES)}
    dynamic.sort(key=lambda item: order[item[1]])
    return fixed, dynamic


def frame_from_tables(
    pages: Sequence[FlatPage], *, dtype_backend: str | None = None, workers: int = 1
) -> pd.DataFrame:
    """Combine pages flattened by ``flatten_profiles`` into the final DataFrame.

    A dynamic column some value does not fit becomes text. ``dtype_backend``:
    as in ``to_frame``; ``workers``: the most threads (one per :data:`ROWS_PER_THREAD` rows).

    >>> page = flatten_profiles(pa.array([{"id": "a", "_fname": "Ann"}]))
    >>> frame_from_tables([page], workers=2)[["profile_id", "_fname"]]
      profile_id _fname
    0          a    Ann
    """
    columns, rows = _pieces(pages)
    python = dtype_backend != "pyarrow"

    def convert(column: _Column) -> list[tuple[str, Any]]:
        return [
            (name, cols.to_pandas(kind, chunks, dtype_backend, objects() if python else None))
            for name, kind, chunks, objects in _settle(*column)
        ]

    threads = max(1, min(workers, rows // ROWS_PER_THREAD))
    data = dict(item for settled in in_workers(convert, columns, threads) for item in settled)
    return pd.DataFrame(data, index=pd.RangeIndex(rows), copy=False)


#: Rows for each thread converting columns (2 cores: slower at 216,010 rows, faster at 1,080,000).
ROWS_PER_THREAD = 500_000


def table_from_tables(pages: Sequence[FlatPage]) -> pa.Table:
    """The columns of :func:`frame_from_tables` as one Arrow table (objects as JSON text)."""
    columns, _ = _pieces(pages)
    return pa.table(
        {
            name: pa.chunked_array(cols.arrow_chunks(kind, chunks), cols.arrow_type(kind))
            for column in columns
            for name, kind, chunks, _ in _settle(*column)
        }
    )


# Name and pieces: a dynamic column's chunks (a page without it: its length), or the pages.
_Column = tuple[str, list[pa.Array | int] | list[FlatPage]]


def _pieces(pages: Sequence[FlatPage]) -> tuple[list[_Column], int]:
    names: dict[str, dict[str, None]] = {role: {} for role in cols.ROLES}
    for page in pages:
        if not isinstance(page, FlatPage):
            raise InvalidInput(
                "frame_from_tables takes the pages flatten_profiles returns, not "
                f"{type(page).__name__} (wrap a table with FlatPage.from_table)"
            )
        for column, role, _ in page.roles:
            names[role].setdefault(column)
    names["id"], names["cats"] = {"profile_id": None}, {cols.CATS: None}
    names["fixed"] = dict.fromkeys(SUBSCRIPTION_COLUMNS)
    # The last column of a name wins, as in a dict.
    by_name = [dict(zip(p.table.column_names, p.table.columns, strict=True)) for p in pages]
    found: list[_Column] = []
    for role in cols.ROLES:
        for name in names[role]:
            if name in cols.KINDS:
                found.append((name, list(pages)))
                continue
            pieces: list[pa.Array | int] = []
            for page, columns in zip(pages, by_name, strict=True):
                if name in columns:
                    pieces.extend(columns[name].chunks)
                else:
                    pieces.append(page.table.num_rows)
            found.append((name, pieces))
    return found, sum(p.table.num_rows for p in pages)


# Name, kind, chunks, and a call for the Python values made ahead (only a frame asks).
_Settled = tuple[str, str, list[pa.Array], Callable[[], list[np.ndarray] | None]]


def _settle(name: str, pieces: list[pa.Array | int] | list[FlatPage]) -> list[_Settled]:
    """The column's kind and chunks, and its text twin's where values do not fit the kind."""
    if name not in cols.KINDS:
        kind, chunks = cols.unify(cast(list[pa.Array | int], pieces))
        return [(name, kind, chunks, lambda: None)]
    fitted = [page.fitted(name) for page in cast(list[FlatPage], pieces)]
    kind = cols.KINDS[name]
    chunks = [value for f in fitted for value in f.values]
    rests = [rest for f in fitted for rest in f.rests]

    def objects() -> list[np.ndarray] | None:
        return [f.objects() for f in fitted] if cols.KIND_DTYPES[kind] is object else None

    settled: list[_Settled] = [(name, kind, chunks, objects)]
    if any(rest is not None for rest in rests):
        twin = [
            cols.nulls(kinds.STRING, len(v)) if r is None else r
            for v, r in zip(chunks, rests, strict=True)
        ]
        settled.append((name + cols.TWIN_SUFFIX, kinds.STRING, twin, lambda: None))
    return settled


def split_channels(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Split a flat profile frame (``normalize_profiles``) into one frame per channel.

    Rows without a channel are left out; each frame keeps the profile and
    common columns, and the others that have a value for that channel.

    Returns:
        Frames keyed by channel, in the order the channels first appear.

    >>> df = normalize_profiles([{"id": "a1", "subscriptions": [
    ...     {"channel": "email", "email_data": {"email": "a@example.org"}},
    ...     {"channel": "sms", "phone_data": {"phone": "+79001234567"}}]}])
    >>> {ch: list(f.columns[-3:]) for ch, f in split_channels(df).items()}
    {'email': ['reg_ip', 'email', 'cats'], 'sms': ['reg_ip', 'phone', 'cats']}
    """
    if not isinstance(df, pd.DataFrame) or "channel" not in df.columns:
        raise InvalidInput("split_channels needs a frame with a 'channel' column")
    where = df.columns.get_loc("channel")
    if not isinstance(where, int):
        raise InvalidInput("split_channels needs exactly one 'channel' column")
    profile = set(df.columns[:where])
    common = set(COMMON_COLUMNS)
    others = [c for c in df.columns[where:] if c not in common]
    codes, channels = pd.factorize(df["channel"], sort=False)
    frames: dict[str, pd.DataFrame] = {}
    for code, channel in enumerate(channels):
        part = df.iloc[(codes == code).nonzero()[0]]
        filled = {c for c in others if part[c].notna().any()}
        keep = [c for c in df.columns if c in common or c in filled or c in profile]
        frames[str(channel)] = part[keep].reset_index(drop=True)
    return frames
