"""The checks of a ``profiles/list`` request, run once when it is built, before anything is sent."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import pyarrow as pa

from stoplist_nb import errors
from stoplist_nb._json import kinds
from stoplist_nb._json.frozen import FrozenDict, freeze
from stoplist_nb.profiles import columns as cols
from stoplist_nb.query import Query, validate_query

__all__ = ["METHOD", "check_dtypes", "check_fields", "check_from_id", "check_query", "dtype_kind"]

METHOD = "profiles/list"


def check_query(query: object) -> FrozenDict | None:
    """The query as sent, checked by ``validate_query`` and frozen: what was checked is sent."""
    if isinstance(query, Query):
        query = query.to_mongo()
    return None if query is None else freeze(validate_query(query))


def check_fields(fields: object) -> tuple[str, ...] | None:
    if fields is None:
        return None
    if (
        isinstance(fields, str)
        or not isinstance(fields, Sequence)
        or not all(isinstance(f, str) and f for f in fields)
    ):
        raise errors.InvalidInput(
            f"fields must be a list of field names like ['_fname', '_city'], not {fields!r}"
        )
    return tuple(fields)


def check_from_id(from_id: object) -> str | None:
    if from_id is not None and not isinstance(from_id, str):
        raise errors.InvalidInput(f"from_id must be a string (a next_from_id), not {from_id!r}")
    return from_id


def check_dtypes(dtypes: Any, dtype_backend: Any) -> dict[str, Any]:
    """``dtypes`` as ``{column: pandas dtype}``; ``dtype_backend`` checked too."""
    if dtype_backend not in cols.DTYPE_BACKENDS:
        raise errors.InvalidInput(
            f"dtype_backend must be one of {cols.DTYPE_BACKENDS}, not {dtype_backend!r}"
        )
    if dtypes is None:
        return {}
    if not isinstance(dtypes, Mapping):
        raise errors.InvalidInput(f"dtypes must be a dict of column: dtype, not {dtypes!r}")
    checked = {}
    for name, dtype in dtypes.items():
        if not isinstance(name, str) or not name:
            raise errors.InvalidInput(f"dtypes: a column name must be a string, not {name!r}")
        try:
            arrow = isinstance(dtype, pa.DataType)
            checked[name] = pd.ArrowDtype(dtype) if arrow else pd.api.types.pandas_dtype(dtype)
        except (TypeError, ValueError):
            raise errors.InvalidInput(f"dtypes: {dtype!r} for {name!r} is not a dtype") from None
    return checked


def arrow_type(dtype: Any) -> pa.DataType:
    """The Arrow type of a column of pandas ``dtype``."""
    if isinstance(dtype, pd.ArrowDtype):
        return dtype.pyarrow_dtype
    return pa.Schema.from_pandas(pd.DataFrame({"x": pd.Series([], dtype=dtype)}))[0].type


def dtype_kind(dtype: Any) -> str:
    """The column kind that holds values of a pandas dtype (text when nothing closer)."""
    try:
        type_ = arrow_type(dtype)
    except (pa.ArrowException, TypeError, ValueError):
        return kinds.STRING
    if pa.types.is_integer(type_):
        return kinds.INT
    if pa.types.is_floating(type_):
        return kinds.FLOAT
    if pa.types.is_boolean(type_):
        return kinds.BOOLEAN
    if pa.types.is_timestamp(type_) or pa.types.is_date(type_):
        return kinds.DATE
    return kinds.ARRAY if pa.types.is_list(type_) or pa.types.is_large_list(type_) else kinds.STRING
