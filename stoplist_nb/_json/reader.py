"""The service's replies as Arrow: ``pyarrow.json`` parses the bytes (pure: no I/O).

Only a reply it cannot take exactly (too deep, or a float of 2**53 or more,
maybe a rounded integer) goes through ``json`` and ``records_to_arrow``.
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.json as pa_json

from stoplist_nb._json.nesting import MAX_DEPTH, depth_bound, text_depth
from stoplist_nb._json.records import exact_floats, records_to_arrow

# pyarrow.json crashes the interpreter on a bare `null`: it only sees bodies that open an object.
_OBJECT_START = re.compile(rb"(?:\xef\xbb\xbf)?[ \t\r\n]*\{")
_NOT_AN_OBJECT = "the reply is not a JSON object"


@dataclass(frozen=True)
class Reply:
    """One reply: ``envelope`` (every key but a ``data`` list) and ``data`` (Arrow, or ``None``)."""

    envelope: dict[str, Any]
    data: pa.Array | None


def read_reply(content: bytes) -> Reply:
    """A reply as envelope and ``data`` (``ValueError``: not UTF-8, not an object, too deep)."""
    if not isinstance(content, bytes | bytearray | memoryview):
        raise ValueError(_NOT_AN_OBJECT)
    # pyarrow.json does not check UTF-8: Arrow's validator does, over the bytes (no copy).
    offsets = pa.py_buffer(struct.pack("<qq", 0, len(content)))
    text = pa.Array.from_buffers(pa.large_string(), 1, [None, offsets, pa.py_buffer(content)])
    try:
        text.validate(full=True)
    except pa.ArrowInvalid:
        raise ValueError("the reply is not valid UTF-8, as JSON must be") from None
    if depth_bound(content) > MAX_DEPTH and (depth := text_depth(content)) > MAX_DEPTH:
        raise ValueError(
            f"the reply nests values more than {MAX_DEPTH} levels deep ({depth} or more); "
            "nothing of it was read (MongoDB itself stores at most 100 levels)"
        )
    table = _arrow_table(content)
    if table is not None:
        envelope: dict[str, Any] = {}
        data: pa.Array | None = None
        for name, column in zip(table.column_names, table.columns, strict=True):
            if name != "data":
                envelope[name] = column[0].as_py()
                continue
            cell = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
            if pa.types.is_null(cell.type) or cell.null_count:
                continue
            if pa.types.is_list(cell.type) or pa.types.is_large_list(cell.type):
                data = cell.flatten()
            else:
                envelope["data"] = cell[0].as_py()
        return Reply(envelope, data)
    try:
        document = json.loads(content)
    except (ValueError, TypeError, RecursionError):
        # The decoder's exception holds the whole body: never chain it.
        raise ValueError(_NOT_AN_OBJECT) from None
    if not isinstance(document, dict):
        raise ValueError(_NOT_AN_OBJECT)
    rows = document.get("data")
    if not isinstance(rows, list):
        return Reply({k: v for k, v in document.items() if k != "data" or v is not None}, None)
    del document["data"]
    return Reply(document, records_to_arrow(rows))


def _arrow_table(content: bytes | bytearray | memoryview) -> pa.Table | None:
    # The reply as a one-row table, or None when pyarrow cannot take it exactly.
    if not _OBJECT_START.match(content):
        return None
    try:
        table = _read_json(content, None)
        if table.num_rows != 1:
            return None
        # A null opening a list of objects or lists leaves offsets past the values: invalid.
        table.validate()
        table = _timestamps_as_text(content, table)
        table.validate()
    except pa.ArrowException:
        return None
    return table if all(exact_floats(column.chunk(0)) for column in table.columns) else None


def _read_json(content: bytes | bytearray | memoryview, schema: pa.Schema | None) -> pa.Table:
    # One block for the whole body: a single object must never straddle blocks.
    options = pa_json.ReadOptions(block_size=len(content) + 64, use_threads=False)
    parse = None
    if schema is not None:
        parse = pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    return pa_json.read_json(pa.BufferReader(content), read_options=options, parse_options=parse)


_TIMESTAMP = pa.timestamp("s").id


def _timestamps_as_text(content: bytes | bytearray | memoryview, table: pa.Table) -> pa.Table:
    # table with the text pyarrow made into timestamps read again as strings
    wanted = [pa.field(f.name, t) for f in table.schema if (t := _text_type(f.type)) is not None]
    if not wanted:
        return table
    text = _read_json(content, pa.schema(wanted))
    for name in text.column_names:
        i = table.schema.get_field_index(name)
        column = _with_text(table.column(i).chunk(0), text.column(name).chunk(0))
        table = table.set_column(i, name, column)
    return table


def _text_type(type_: pa.DataType) -> pa.DataType | None:
    # type_ cut down to its timestamp leaves, as strings; None when it has none
    if type_.id == _TIMESTAMP:
        return pa.string()
    if pa.types.is_struct(type_):
        kept = [(f, _text_type(f.type)) for f in type_]
        fields = [f.with_type(t) for f, t in kept if t is not None]
        return pa.struct(fields) if fields else None
    if pa.types.is_list(type_):
        value = _text_type(type_.value_type)
        return None if value is None else pa.list_(type_.value_field.with_type(value))
    return None


def _with_text(array: pa.Array, text: pa.Array) -> pa.Array:
    type_ = array.type
    if type_.id == _TIMESTAMP:
        return text
    if pa.types.is_struct(type_):
        names = {f.name for f in text.type}
        children = [
            _with_text(array.field(i), text.field(f.name)) if f.name in names else array.field(i)
            for i, f in enumerate(type_)
        ]
        fields = [f.with_type(c.type) for f, c in zip(type_, children, strict=True)]
        mask = array.is_null() if array.null_count else None
        return pa.StructArray.from_arrays(children, fields=fields, mask=mask)
    values, text_values = array.values, text.values
    if len(values) != len(text_values):
        raise pa.ArrowInvalid("the two parses disagree")
    values = _with_text(values, text_values)
    list_type = pa.list_(type_.value_field.with_type(values.type))
    return pa.Array.from_buffers(
        list_type, len(array), array.buffers()[:2], offset=array.offset, children=[values]
    )
