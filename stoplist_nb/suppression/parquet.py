"""Hashed CSV exports streamed into one Parquet file, a row group per batch, whole or not at all."""

from __future__ import annotations

import contextlib
import os
import pathlib
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from stoplist_nb._atomic import Output
from stoplist_nb._parquet import pandas_metadata
from stoplist_nb.errors import BadArchive
from stoplist_nb.suppression.archive import HashedBatches, Source, text_schema
from stoplist_nb.suppression.contacts import add_counts

__all__ = ["BLOCK_SIZE", "HashedParquet"]

#: Bytes of CSV read at once and written as one row group: they set the memory taken (10 MiB).
BLOCK_SIZE = 1 << 20

_STR = pd.StringDtype("pyarrow")


def _pandas_metadata(names: list[str], attrs: dict[str, Any]) -> dict[bytes, bytes]:
    empty = pd.DataFrame({name: pd.array([], dtype=_STR) for name in names})
    empty.attrs.update(attrs)
    return pandas_metadata(empty)


class HashedParquet:
    """One Parquet file of the hashes of one or more archives, added in turn.

    In a ``with`` block, :meth:`add` streams an archive in and :meth:`finish`
    puts the file in place; leaving before, what was written goes. A file at
    ``path`` is refused (``OutputExists``) unless ``overwrite``.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp, HashedParquet(f"{tmp}/s.parquet") as sink:
    ...     sink.add(b"md5;type\\n0CC175B9C0F1B6A831C399E269772661;email\\n")
    ...     sink.finish({"list_id": 7})
    >>> sink.rows, sink.kinds
    (1, {'email': 1})
    """

    def __init__(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> None:
        self.path = pathlib.Path(path)
        self.output = Output(self.path, overwrite=overwrite)  # its temporaries go beside it
        self.rows = 0
        #: Rows per kind word over the archives that have a kind column, else ``None``.
        self.kinds: dict[str, int] | None = None
        self._names: list[str] | None = None
        self._first = ""
        self._writer: Any = None
        self._part: pathlib.Path | None = None

    def __enter__(self) -> HashedParquet:
        self.output.__enter__()
        try:
            self._part = self.output.temporary("part")
        except BaseException as exc:
            self.output.__exit__(type(exc), exc, exc.__traceback__)
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        writer, self._writer = self._writer, None
        # The file goes anyway; the error that got here is the one to tell.
        with contextlib.suppress(Exception):
            if writer is not None:
                writer.close()
        self.output.__exit__(*exc)

    def _open(self, names: list[str]) -> None:
        assert self._part is not None, "use HashedParquet in a with block"
        schema = text_schema(names).with_metadata(_pandas_metadata(names, {}))
        self._writer = pq.ParquetWriter(
            self._part,
            schema,
            # The attrs added at the end are read back only without the Arrow schema's own.
            store_schema=False,
            # MD5 values are all distinct: a dictionary of them is work for nothing.
            use_dictionary=[name for name in names if name != "md5"] or False,
        )

    def _columns(self, reader: HashedBatches, label: str) -> None:
        names = reader.schema.names
        if self._names is None:
            self._names, self._first = names, label
            self._open(names)
        elif names != self._names:
            raise BadArchive(
                f"{label} has other columns ({', '.join(names)}) than {self._first} "
                f"({', '.join(self._names)}): they cannot go in one Parquet file"
            )

    def add(
        self,
        source: Source,
        *,
        max_size: int = 4 * 2**30,
        max_ratio: float = 200,
        label: str = "the archive",
        stacklevel: int = 1,
    ) -> None:
        """Stream one archive (as :func:`read_hashed_csv` takes it, ``label`` naming it) in."""
        with HashedBatches(
            source, max_size=max_size, max_ratio=max_ratio, block_size=BLOCK_SIZE
        ) as reader:
            for batch in reader:
                self._columns(reader, label)
                self._writer.write_batch(batch)
                self.rows += batch.num_rows
        if reader.layout is not None:  # a header alone names columns too
            self._columns(reader, label)
        if reader.kinds is not None:
            self.kinds = add_counts([self.kinds or {}, reader.kinds])
        reader.warn(stacklevel=stacklevel + 1)

    def finish(self, attrs: dict[str, Any] | None = None) -> None:
        """Close the file with ``attrs`` (JSON) and ``kinds`` as its frame's; put it in place."""
        attrs = {**(attrs or {}), **({} if self.kinds is None else {"kinds": self.kinds})}
        names = self._names or ["md5"]
        if self._writer is None:
            self._open(names)
        self._writer.add_key_value_metadata(_pandas_metadata(names, attrs))
        writer, self._writer = self._writer, None
        writer.close()
        assert self._part is not None
        self.output.put(self._part)
