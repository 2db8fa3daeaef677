"""A request of a database's profiles, checked once, and every way to read it."""

from __future__ import annotations

import os
import pathlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any

import pandas as pd
import pyarrow as pa

from stoplist_nb import errors
from stoplist_nb._atomic import check_target
from stoplist_nb._checks import check_flag, check_int, check_number
from stoplist_nb._http.addresses import origin
from stoplist_nb._json.frozen import thaw
from stoplist_nb._lookahead import check_threads, default_workers
from stoplist_nb._paging import DEFAULT_LOOKAHEAD
from stoplist_nb._stream import Owner, Stream
from stoplist_nb.client import Client, Page
from stoplist_nb.profiles import request
from stoplist_nb.profiles import stream as pagestream
from stoplist_nb.profiles.dataset import (
    DEFAULT_COMMIT_BYTES,
    DEFAULT_COMMIT_SECONDS,
    DEFAULT_PROFILES_PER_PART,
    DatasetSummary,
    write_dataset,
)
from stoplist_nb.profiles.files import FileSummary, write_file
from stoplist_nb.profiles.normalize import FlatPage, frame_from_tables, table_from_tables
from stoplist_nb.profiles.schema import StreamSchema
from stoplist_nb.profiles.stream import META_FROM, META_NEXT, META_PROFILES
from stoplist_nb.query import Query

__all__ = ["ProfilesRequest", "read_profiles"]


@dataclass(frozen=True)
class ProfilesRequest:
    """A request of a database's profiles (``profiles/list``), checked once, read many ways.

    Every argument is checked before anything is sent; ``repr`` never shows the token.
    Streams stop their threads once closed, exhausted or left by an exception; a failed
    read keeps what it read (``exc.partial``) and says where to go on (``exc.resume_from``).

    Args:
        client: The API client.
        db_id: The database id.
        query: A MongoDB filter on profile fields, a dict or a :mod:`stoplist_nb.query` object.
        fields: Profile fields to return, e.g. ``["_fname", "subscriptions"]``.
        limit: Profiles per request.
        from_id: Start from this cursor (``next_from_id`` or ``exc.resume_from``).
        max_profiles: Stop after this many profiles, exactly where a later read resumes.
        lookahead: Replies that may wait beyond one per worker (``0``: none).
        progress: Show a progress bar counting profiles (not for :meth:`pages`).
        workers: Threads that parse pages (``None``: one per core, at most 8).

    The methods' ``dtypes``: ``{column: dtype}`` (pandas dtypes, their names or pyarrow
    types), each column there from the start, in that dtype.

    Raises:
        InvalidInput: An argument is wrong (nothing was sent).
        InvalidQuery: ``query`` is not a query MongoDB takes.

    >>> req = ProfilesRequest(client, 1, query={"_city": "Moscow"}, limit=500)  # doctest: +SKIP
    >>> req.to_parquet("moscow.parquet")  # doctest: +SKIP
    FileSummary(path=PosixPath('moscow.parquet'), rows=1834, profiles=1000, ...)
    """

    client: Client
    db_id: int
    _: KW_ONLY
    query: Mapping[str, Any] | Query | None = None
    fields: Sequence[str] | None = None
    limit: int = 1000
    from_id: str | None = None
    max_profiles: int | None = None
    lookahead: int = DEFAULT_LOOKAHEAD
    progress: bool = True
    workers: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.client, Client):
            raise errors.InvalidInput(
                f"client must be a stoplist_nb.Client, not {type(self.client)!r}"
            )
        check_int("db_id", self.db_id)
        check_int("limit", self.limit, minimum=1)
        if self.max_profiles is not None:
            check_int("max_profiles", self.max_profiles, minimum=1)
        request.check_from_id(self.from_id)
        check_threads(self.lookahead, self.workers)
        check_flag("progress", self.progress)
        object.__setattr__(self, "query", request.check_query(self.query))
        object.__setattr__(self, "fields", request.check_fields(self.fields))

    @property
    def params(self) -> dict[str, Any]:
        """The body of each request, without the cursor and the token: a fresh copy each time."""
        params: dict[str, Any] = {"db_id": self.db_id, "format": "json", "limit": self.limit}
        if self.query is not None:
            params["query"] = thaw(self.query)
        if self.fields is not None:
            params["fields"] = list(self.fields)
        return params

    def pages(self) -> Stream[Page]:
        """The raw pages (:class:`~stoplist_nb.client.Page`), one request each, as a stream.

        >>> with req.pages() as pages:  # doctest: +SKIP
        ...     print([len(page) for page in pages])
        """
        return self.client.pages(
            request.METHOD,
            self.params,
            from_id=self.from_id,
            max_rows=self.max_profiles,
            lookahead=self.lookahead,
            workers=self.workers,
        )

    def tables(
        self, *, dtypes: Mapping[str, Any] | None = None, schema: StreamSchema | None = None
    ) -> Stream[pa.Table]:
        """Each page as an Arrow table, all in one growing schema, as a stream.

        The columns of :meth:`to_frame`, settled page by page (``docs/profiles.md``);
        the metadata holds ``from_id``, ``next_from_id`` and ``profiles`` (read so
        far). ``schema``: go on with that of an earlier, interrupted read.

        >>> for table in req.tables():  # doctest: +SKIP
        ...     print(table.num_rows, table.schema.metadata[b"next_from_id"])
        """
        declared = request.check_dtypes(dtypes, None)
        if schema is None:
            schema = StreamSchema.from_dtypes(declared)
        elif not isinstance(schema, StreamSchema):
            raise errors.InvalidInput(f"schema must be a StreamSchema, not {type(schema).__name__}")
        return pagestream.tables(schema, declared, self._flat_pages())

    def frames(
        self, *, dtypes: Mapping[str, Any] | None = None, dtype_backend: str | None = None
    ) -> Stream[pd.DataFrame]:
        """Each page as a DataFrame, as a stream; ``attrs`` hold the metadata of :meth:`tables`.

        Same arguments as :meth:`to_frame`. For one CSV file, :meth:`to_csv`:
        frames appended to a file would leave later columns out of its header.

        >>> for frame in req.frames():  # doctest: +SKIP
        ...     per_channel.update(frame["channel"].dropna())
        """
        declared = request.check_dtypes(dtypes, dtype_backend)
        schema = StreamSchema.from_dtypes(declared)

        def make(tables: Stream[pa.Table], owner: Owner) -> Iterator[pd.DataFrame]:
            for table in tables:
                meta = table.schema.metadata
                kinds = {n: schema.kind(n) for n in table.column_names}
                frame = pagestream.frame_from_table(table, kinds, dtype_backend)
                frame = pagestream.cast_frame(frame, declared)
                frame.attrs.update(
                    from_id=meta[META_FROM].decode(),
                    next_from_id=meta[META_NEXT].decode(),
                    profiles=int(meta[META_PROFILES]),
                )
                yield frame

        # The tables keep the stream's types; the dtypes apply to each frame.
        return pagestream.tables(schema, {}, self._flat_pages()).then(make)

    def to_arrow(self, *, dtypes: Mapping[str, Any] | None = None) -> pa.Table:
        """Read every profile into one Arrow table (the columns of :meth:`to_frame`).

        Returns:
            The table; its metadata holds ``db_id``, ``next_from_id`` and ``profiles``.

        >>> table = req.to_arrow()  # doctest: +SKIP
        """
        declared = request.check_dtypes(dtypes, None)

        def table(pages: list[FlatPage], cursor: str, count: int) -> pa.Table:
            meta = {"db_id": str(self.db_id), "next_from_id": cursor, "profiles": str(count)}
            table = pagestream.cast_columns(table_from_tables(pages), declared)
            return table.replace_schema_metadata(meta)

        return pagestream.collect(self._flat_pages(fit="arrow"), self.from_id, table)

    def to_frame(
        self, *, dtypes: Mapping[str, Any] | None = None, dtype_backend: str | None = None
    ) -> pd.DataFrame:
        """Read every profile into one DataFrame, one row per subscription (``docs/profiles.md``).

        Args:
            dtypes: As in the class; a column named there and absent is added, all NA.
            dtype_backend: As in ``pandas.read_parquet``: ``"pyarrow"`` for
                ``pd.ArrowDtype`` columns only, else nullable dtypes.

        Returns:
            The frame; ``attrs["next_from_id"]`` is where a later read resumes.

        >>> df = req.to_frame(dtypes={"age": "Int16"})  # doctest: +SKIP
        """
        declared = request.check_dtypes(dtypes, dtype_backend)
        workers = default_workers() if self.workers is None else self.workers

        def frame(pages: list[FlatPage], cursor: str, count: int) -> pd.DataFrame:
            built = frame_from_tables(pages, dtype_backend=dtype_backend, workers=workers)
            df = pagestream.cast_frame(built, declared)
            df.attrs.update(db_id=self.db_id, next_from_id=cursor, profiles=count)
            return df

        fit: pagestream.Fit = "arrow" if dtype_backend == "pyarrow" else "python"
        return pagestream.collect(self._flat_pages(fit=fit), self.from_id, frame)

    def to_parquet(
        self,
        path: str | os.PathLike[str],
        *,
        dtypes: Mapping[str, Any] | None = None,
        overwrite: bool = False,
    ) -> FileSummary:
        """Write the profiles to one Parquet file, page by page, complete or not there at all.

        ``pd.read_parquet(path)`` gives the dtypes of :meth:`to_frame`; a file at ``path`` is kept.

        Args:
            path: The file; its directory must exist.
            overwrite: Replace a file already at ``path`` (else ``OutputExists``).

        Returns:
            The :class:`~stoplist_nb.profiles.files.FileSummary`.

        >>> req.to_parquet("profiles.parquet").rows  # doctest: +SKIP
        1834
        """
        return self._file(path, "parquet", dtypes, overwrite)

    def to_csv(
        self,
        path: str | os.PathLike[str],
        *,
        dtypes: Mapping[str, Any] | None = None,
        overwrite: bool = False,
    ) -> FileSummary:
        """Same as :meth:`to_parquet`, in CSV: UTF-8, every column named, lists and objects as JSON.

        >>> req.to_csv("profiles.csv").rows  # doctest: +SKIP
        1834
        """
        return self._file(path, "csv", dtypes, overwrite)

    def to_dataset(
        self,
        path: str | os.PathLike[str],
        *,
        dtypes: Mapping[str, Any] | None = None,
        resume: bool = True,
        overwrite: bool = False,
        profiles_per_part: int = DEFAULT_PROFILES_PER_PART,
        repair: bool = False,
        commit_seconds: float = DEFAULT_COMMIT_SECONDS,
        commit_bytes: int = DEFAULT_COMMIT_BYTES,
    ) -> DatasetSummary:
        """Write the profiles to a resumable Parquet dataset (a directory), a few pages in memory.

        A pull that stopped (an error, Ctrl-C, a killed process) leaves what it
        committed and a checkpoint; calling again carries on (``docs/profiles.md``).
        It takes neither ``from_id`` nor ``max_profiles``.

        Args:
            path: The directory, created if missing; nothing but the dataset
                may be in it (names starting with ``.`` or ``_`` aside).
            resume: Carry on from the checkpoint in ``path`` (``False``: refuse a dataset).
            overwrite: Remove the dataset in ``path`` first (never another file).
            profiles_per_part: Close a part once it holds this many profiles (whole pages).
            repair: Drop a damaged file and those after it and pull on, not raise.
            commit_seconds: Commit the open part's pages once they span this long (``0``: each).
            commit_bytes: Or once they hold this many bytes (as Arrow tables).

        Returns:
            The summary of the dataset; ``complete`` is true.

        Raises:
            DatasetMismatch: ``path`` holds another pull, another version's
                checkpoint, files not of a dataset, or a dataset to refuse.
            DatasetDamaged: A file the checkpoint lists is not what was written (``exc.part``).
            DatasetLocked: Another writer holds ``path`` (``exc.holder`` says who).

        >>> req.to_dataset("profiles/").complete  # doctest: +SKIP
        True
        """
        declared = request.check_dtypes(dtypes, None)
        check_int("profiles_per_part", profiles_per_part, minimum=1)
        check_flag("resume", resume)
        check_flag("overwrite", overwrite)
        check_flag("repair", repair)
        check_number("commit_seconds", commit_seconds, unit="seconds", zero=True)
        check_int("commit_bytes", commit_bytes, minimum=1)
        if self.from_id is not None or self.max_profiles is not None:
            raise errors.InvalidInput(
                "from_id and max_profiles go with a file; a dataset carries on from its "
                "checkpoint (resume=True)"
            )
        pull = {
            "service": origin(self.client.base_url),
            "db_id": self.db_id,
            "query": thaw(self.query),
            "fields": None if self.fields is None else list(self.fields),
            "dtypes": {name: str(dtype) for name, dtype in declared.items()},
        }
        return write_dataset(
            pathlib.Path(os.fspath(path)),
            pull,
            declared,
            self._flat_pages,
            resume=resume,
            overwrite=overwrite,
            repair=repair,
            per_part=profiles_per_part,
            commit_seconds=commit_seconds,
            commit_bytes=commit_bytes,
        )

    def _flat_pages(
        self, from_id: str | None = None, seen: Sequence[str] = (), fit: pagestream.Fit = None
    ) -> Stream[pagestream.PageRead]:
        return pagestream.flat_pages(self, self.from_id if from_id is None else from_id, seen, fit)

    def _file(
        self, path: str | os.PathLike[str], fmt: str, dtypes: Any, overwrite: bool
    ) -> FileSummary:
        declared = request.check_dtypes(dtypes, None)
        check_flag("overwrite", overwrite)
        out = check_target(path)
        schema = StreamSchema.from_dtypes(declared)
        pages = pagestream.tables(schema, declared, self._flat_pages())
        return write_file(out, fmt, schema, declared, pages, overwrite=overwrite)


def read_profiles(
    client: Client,
    db_id: int,
    *,
    query: Mapping[str, Any] | Query | None = None,
    fields: Sequence[str] | None = None,
    limit: int = 1000,
    from_id: str | None = None,
    max_profiles: int | None = None,
    dtype_backend: str | None = None,
    dtypes: Mapping[str, Any] | None = None,
    progress: bool = True,
    lookahead: int = DEFAULT_LOOKAHEAD,
    workers: int | None = None,
) -> pd.DataFrame:
    """Read a database's profiles into a DataFrame, one row per subscription.

    Same as ``ProfilesRequest(client, db_id, ...).to_frame(dtypes=..., dtype_backend=...)``.

    >>> df = read_profiles(client, 1, query={"_city": "Moscow"})  # doctest: +SKIP
    >>> df[["profile_id", "channel", "email"]].head()  # doctest: +SKIP
    """
    return ProfilesRequest(
        client,
        db_id,
        query=query,
        fields=fields,
        limit=limit,
        from_id=from_id,
        max_profiles=max_profiles,
        lookahead=lookahead,
        progress=progress,
        workers=workers,
    ).to_frame(dtypes=dtypes, dtype_backend=dtype_backend)
