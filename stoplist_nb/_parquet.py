"""What a Parquet file of ours tells pandas about its dtypes: the same on every pandas.

pandas records a string dtype as ``"string"`` and reads it back in its default
storage (``python`` on pandas 2, ``pyarrow`` on 3); our files name ``string[pyarrow]``.
"""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa


def pandas_metadata(frame: pd.DataFrame) -> dict[bytes, bytes]:
    """The schema metadata of ``frame``'s file, without its index (``attrs`` too, as JSON)."""
    return _named(frame, pa.Schema.from_pandas(frame, preserve_index=False).metadata)


def to_table(frame: pd.DataFrame) -> pa.Table:
    """``frame`` as the Arrow table of its file, without its index (see :func:`pandas_metadata`)."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    # The table's own metadata, rather than a second pass of pyarrow's inference over the frame.
    return table.replace_schema_metadata(_named(frame, table.schema.metadata))


def _named(frame: pd.DataFrame, made: dict[bytes, bytes] | None) -> dict[bytes, bytes]:
    metadata = dict(made or {})
    if frame.attrs:
        metadata[b"PANDAS_ATTRS"] = json.dumps(frame.attrs).encode()
    info = json.loads(metadata[b"pandas"])
    # Without the index, pandas lists the frame's columns in their order.
    for dtype, column in zip(frame.dtypes, info["columns"], strict=True):
        if isinstance(dtype, pd.StringDtype) and column["numpy_type"] == "string":
            column["numpy_type"] = f"string[{dtype.storage}]"
    metadata[b"pandas"] = json.dumps(info).encode()
    return metadata
