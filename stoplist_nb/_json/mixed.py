"""Leaves whose values change JSON kind (``2`` here, ``"2"`` there), kept as :data:`JSON` text."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pyarrow as pa


class JsonType(pa.ExtensionType):  # type: ignore[misc]
    """The Arrow type of a leaf of mixed JSON kinds: each value's JSON text."""

    def __init__(self) -> None:
        super().__init__(pa.large_string(), "stoplist_nb.json")

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> JsonType:
        return cls()

    def __arrow_ext_scalar_class__(self) -> type[pa.ExtensionScalar]:
        return _JsonScalar


class _JsonScalar(pa.ExtensionScalar):  # type: ignore[misc]
    def as_py(self, *args: Any, **kwargs: Any) -> Any:
        text = self.value
        return None if text is None else json.loads(text.as_py())


JSON = JsonType()
# Registered once per interpreter: a second import of this module (a reload) finds it there.
with contextlib.suppress(pa.ArrowKeyError):
    pa.register_extension_type(JSON)


def is_json(type_: pa.DataType) -> bool:
    return isinstance(type_, JsonType)


def json_array(texts: pa.Array) -> pa.ExtensionArray:
    """JSON texts (a string array, one JSON value each, or null) as a :data:`JSON` array."""
    return pa.ExtensionArray.from_storage(JSON, texts.cast(pa.large_string()))


def encode(value: Any) -> str:
    """The JSON text of one value, as a :data:`JSON` array holds it (strings quoted)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def from_values(values: list[Any]) -> pa.ExtensionArray:
    """Python values (``None`` for null) as a :data:`JSON` array that gives them back."""
    texts = [None if v is None else encode(v) for v in values]
    return json_array(pa.array(texts, pa.large_string()))


def values(array: pa.Array) -> list[Any]:
    """The values of a :data:`JSON` array, decoded (``None`` for null).

    >>> values(json_array(pa.array(['[true,1]', '"a"', None])))
    [[True, 1], 'a', None]
    """
    return [None if text is None else json.loads(text) for text in array.storage.to_pylist()]
