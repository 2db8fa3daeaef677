"""Contact values of any type as text, one scalar or a whole pandas Series at once.

Behind :mod:`stoplist_nb.suppression.hashing`: numbers are read as their digits (a phone
column with gaps arrives as float64) and ``None``, ``NaN`` and ``pd.NA`` are
missing, so the vectorized and scalar paths agree on what a value's text is.
"""

from __future__ import annotations

import contextlib
import math
import numbers
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa


def as_text(value: Any) -> str | None:
    """Return ``value`` as text, or ``None`` when it is missing."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, (bool, np.bool_)):
        return str(value)
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        number = float(value)
        if math.isnan(number):
            return None
        # A phone column with gaps arrives as float64: 79001234567.0 means its digits.
        return str(int(number)) if number.is_integer() else repr(number)
    if pd.api.types.is_scalar(value) and pd.isna(value):
        return None
    return str(value)


def _is_text(dtype: Any) -> bool:
    view = getattr(pa.types, "is_string_view", lambda _: False)
    return bool(pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or view(dtype))


def arrow_text(values: pd.Series) -> Any:
    """The values as a ``large_string`` ChunkedArray, null where missing."""
    arr: Any = None
    with contextlib.suppress(AttributeError, TypeError, NotImplementedError, pa.ArrowException):
        arr = values.array.__arrow_array__()
    if arr is None or not _is_text(arr.type):
        try:
            arr = pa.array(values.to_numpy(dtype=object), from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            arr = None
    if arr is None or not (_is_text(arr.type) or pa.types.is_null(arr.type)):
        arr = pa.array([as_text(v) for v in values], pa.large_string())
    if isinstance(arr, pa.Array):
        arr = pa.chunked_array([arr])
    return arr.cast(pa.large_string())
