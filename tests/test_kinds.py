"""stoplist_nb._json.kinds: the one table from values to field kinds, and its users."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from stoplist_nb._json.kinds import arrow_kind, common_kind, json_kind
from stoplist_nb.profiles.fields import _inferred
from stoplist_nb.widgets.operators import guess_type

SAMPLES: list[tuple[Any, str]] = [
    ("a", "string"),
    (2, "int"),
    (2.5, "float"),
    (True, "boolean"),
    ([1, 2], "array"),
    ({"a": 1}, "object"),
]


@pytest.mark.parametrize(("value", "kind"), SAMPLES)
def test_a_json_value_and_its_arrow_column_have_one_kind(value: Any, kind: str) -> None:
    assert json_kind(value) == kind
    assert arrow_kind(pa.array([value]).type) == kind
    if kind == "string":
        assert arrow_kind(pa.array([value]).dictionary_encode().type) == kind


def test_an_all_null_column_has_no_kind() -> None:
    assert arrow_kind(pa.array([None]).type) is None
    assert json_kind(None) is None


@pytest.mark.parametrize(
    ("seen", "kind"),
    [
        ({"int"}, "int"),
        ({"int", "float"}, "float"),
        ({"int", "string"}, "string"),
        ({"object", "array"}, "string"),
        ({"object", "int"}, "string"),
        ({None}, None),
        (set(), None),
    ],
)
def test_common_kind(seen: set[str | None], kind: str | None) -> None:
    assert common_kind(seen) == kind


def test_inferred_fields_follow_the_table() -> None:
    rows = _inferred(
        [
            {"id": "1", "n": 1, "x": 1, "o": {"a": 1}, "b": True, "z": None},
            {"id": "2", "n": 1.5, "x": "1", "o": {"b": 2}, "b": False},
        ]
    )
    types = {row["name"]: row["type"] for row in rows}
    assert types == {
        "_id": "string",
        "n": "float",
        "x": "string",
        "o": "object",
        "b": "boolean",
        "z": "string",
    }


@pytest.mark.parametrize(
    ("value", "kind"),
    [(1, "int"), (1.5, "float"), (False, "boolean"), ("a", "string"), ({"a": 1}, "string")],
)
def test_builder_guess_narrows_the_table_to_what_a_row_edits(value: Any, kind: str) -> None:
    assert guess_type(value) == kind
    assert guess_type([None, value]) == kind
