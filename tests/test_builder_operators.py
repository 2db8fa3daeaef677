"""Every operator QueryBuilder offers, for every field type, against the demo service.

Each case builds one condition through the widget, sends ``builder.query`` to the
demo with :func:`~stoplist_nb.read_profiles` and compares the profile ids that
come back with those a plain-Python filter with MongoDB semantics selects over
``demo.profiles``:

* a missing or null field matches no ``$eq`` / comparison / ``$in`` / regex,
  but does match ``$ne`` and ``$nin``;
* ``$exists: true`` matches a present field even when it is null;
* on arrays (``phones``, and dotted paths through ``subscriptions``) the
  positive operators match if ANY element matches, ``$ne`` / ``$nin`` only if
  NO element does;
* values compare only within one type bracket (numbers, strings, booleans),
  strings by code point; ``contains`` / ``startswith`` are escaped regexes.
"""

from __future__ import annotations

import operator
import re
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import date
from typing import TYPE_CHECKING, Any

import ipywidgets as w
import pytest

import stoplist_nb as sn
from stoplist_nb.demo import serve
from stoplist_nb.demo._data import FIELDS as DEMO_FIELDS
from stoplist_nb.profiles.fields import SUBSCRIPTION_FIELDS
from stoplist_nb.widgets import QueryBuilder
from stoplist_nb.widgets.rows import OPERATORS, kind_of

if TYPE_CHECKING:
    from stoplist_nb.client import Client
    from stoplist_nb.demo import DemoService

Profile = dict[str, Any]

#: The demo's fields and the subscription paths, as ``database_fields`` lists them.
DEMO_TYPES: dict[str, str] = {name: type_ for name, _, type_, _ in DEMO_FIELDS} | {
    name: type_ for name, _, type_ in SUBSCRIPTION_FIELDS
}
#: Plus one object path of the data, so the ``object`` operators are covered too.
TYPES: dict[str, str] = DEMO_TYPES | {"subscriptions.reg_info": "object"}

FIELDS_UNDER_TEST = (
    "_city",
    "subscriptions.channel",
    "subscriptions.email_data.domain",
    "loyalty_level",
    "subscriptions.priority",
    "score",
    "vip",
    "subscriptions.is_delete",
    "phones",
    "subscriptions.cats",
    "_bdate",
    "subscriptions.reg_info.date",
    "subscriptions.reg_info",
)

_REGEX_OPS = frozenset({"contains", "startswith", "$regex"})
_ORDER: dict[str, Callable[[Any, Any], bool]] = {
    "$lt": operator.lt,
    "$lte": operator.le,
    "$gt": operator.gt,
    "$gte": operator.ge,
}


def typed_in(value: Any) -> Any:
    """What a user types for ``value``: a number as its text (number boxes are Text)."""
    return repr(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


def _variants(kind: str, op: str) -> tuple[Any, ...]:
    """The second parameter of a case: ignore-case, the $exists flag or a boolean value."""
    if op in _REGEX_OPS or op == "$exists" or kind == "boolean":
        return (False, True)
    return (None,)


CASES = [
    pytest.param(
        field,
        op,
        variant,
        id=f"{field}-{op}" + ("" if variant is None else f"-{variant}"),
    )
    for field in FIELDS_UNDER_TEST
    for kind in [kind_of(field, TYPES[field])]
    for _, op in OPERATORS[kind]
    for variant in _variants(kind, op)
]


# -- MongoDB semantics in plain Python ------------------------------------------------


def _leaves(node: Any, parts: list[str]) -> list[Any]:
    """The values a dotted path reaches, through arrays of documents; [] if missing."""
    if not parts:
        return [node]
    if isinstance(node, dict):
        return _leaves(node[parts[0]], parts[1:]) if parts[0] in node else []
    if isinstance(node, list):
        return [leaf for item in node if isinstance(item, dict) for leaf in _leaves(item, parts)]
    return []


def _candidates(profile: Profile, path: str) -> list[Any]:
    """What a condition on ``path`` is tried on: every array element and the array itself."""
    out: list[Any] = []
    for leaf in _leaves(profile, path.split(".")):
        if isinstance(leaf, list):
            out.extend(leaf)
        out.append(leaf)
    return out


def _bracket(value: Any) -> str | None:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "string" if isinstance(value, str) else None


def _comparable(a: Any, b: Any) -> bool:
    return _bracket(a) is not None and _bracket(a) == _bracket(b)


def _same(a: Any, b: Any) -> bool:
    return _comparable(a, b) and bool(a == b)


def _pattern(op: str, value: str) -> str:
    if op == "contains":
        return re.escape(value)
    if op == "startswith":
        return "^" + re.escape(value)
    return value


def matches(profile: Profile, path: str, op: str, value: Any, ignore_case: bool = False) -> bool:
    """Whether MongoDB's ``{path: <op> value}`` selects ``profile``."""
    found = _candidates(profile, path)
    if op == "$exists":
        return bool(_leaves(profile, path.split("."))) is bool(value)
    if op == "$eq":
        return any(_same(c, value) for c in found)
    if op == "$ne":
        return not matches(profile, path, "$eq", value)
    if op == "$in":
        return any(_same(c, v) for c in found for v in value)
    if op == "$nin":
        return not matches(profile, path, "$in", value)
    if op in _ORDER:
        return any(_comparable(c, value) and _ORDER[op](c, value) for c in found)
    if op in _REGEX_OPS:
        pattern, flags = _pattern(op, value), re.IGNORECASE if ignore_case else 0
        return any(isinstance(c, str) and re.search(pattern, c, flags) for c in found)
    raise AssertionError(f"no predicate for {op}")


def test_predicates_follow_mongodb_semantics() -> None:
    prof: Profile = {
        "a": None,
        "tags": ["x", "y"],
        "subs": [{"c": "email", "n": 1}, {"c": "sms"}],
        "n": 2,
    }
    assert matches(prof, "a", "$exists", True)
    assert not matches(prof, "a", "$eq", "x")
    assert matches(prof, "a", "$ne", "x")
    assert matches(prof, "zz", "$nin", ["x"])
    assert matches(prof, "zz", "$exists", False)
    assert not matches(prof, "zz", "$lt", "z")
    assert matches(prof, "tags", "$eq", "y")
    assert not matches(prof, "tags", "$ne", "y")
    assert not matches(prof, "tags", "$nin", ["q", "x"])
    assert matches(prof, "subs.c", "$eq", "sms")
    assert matches(prof, "subs.n", "$exists", True)
    assert not matches(prof, "subs.c", "$ne", "sms")
    assert matches(prof, "subs.zz", "$exists", False)
    assert matches(prof, "n", "$eq", 2.0)
    assert not matches(prof, "n", "$gt", "1")  # no comparison across type brackets
    assert matches(prof, "subs.c", "contains", "M", ignore_case=True)
    assert not matches(prof, "subs.c", "contains", "m.")
    assert not matches({"b": True}, "b", "$eq", 1)


# -- values picked from the data ------------------------------------------------------


def _data_values(profiles: list[Profile], path: str) -> list[Any]:
    """Every non-null scalar the path holds, array elements included, with repeats."""
    return [
        c
        for p in profiles
        for c in _candidates(p, path)
        if c is not None and not isinstance(c, list | dict)
    ]


def _substring(text: str) -> str:
    """Three characters of ``text``, around a regex metacharacter when it has one."""
    special = next((i for i, ch in enumerate(text) if re.escape(ch) != ch), None)
    start = 1 if special is None else max(special - 1, 0)
    return text[start : start + 3]


def pick(profiles: list[Profile], path: str, kind: str, op: str, variant: Any) -> Any:
    """A value for ``{path: <op> value}`` taken from the data, so the result is not trivial."""
    if op == "$exists" or kind == "boolean":
        return variant
    values = _data_values(profiles, path)
    common = [v for v, _ in Counter(values).most_common(2)]
    if op in ("$in", "$nin"):
        return common
    if kind in ("int", "float", "date"):
        distinct = sorted(set(values))  # not the median: most priorities are 0
        return distinct[len(distinct) // 2]
    top = common[0]
    text = {
        "contains": _substring(top),
        "startswith": top[:2],
        "$regex": f"^{re.escape(top[:1])}.*{re.escape(top[-1:])}$",
    }.get(op, top)
    return text.swapcase() if variant else text


def _always_present(profiles: list[Profile], path: str) -> bool:
    return all(_leaves(p, path.split(".")) for p in profiles)


@pytest.mark.slow
@pytest.mark.parametrize(("field", "op", "variant"), CASES)
def test_operator_selects_what_mongodb_would(
    demo: DemoService, client: Client, field: str, op: str, variant: Any
) -> None:
    kind = kind_of(field, TYPES[field])
    value = pick(demo.profiles, field, kind, op, variant)
    ignore_case = op in _REGEX_OPS and bool(variant)

    builder = QueryBuilder(fields=TYPES)
    row = builder.root_group.add_row()
    row.field.value = field
    row.op.value = op
    if op in _REGEX_OPS:
        row.case.value = ignore_case
    if kind == "date" and op == "$eq" and len(value) > 10:
        # a picked date never equals a date-time: load it, the row keeps it as text
        builder.load({field: value})
        row = builder.root_group.rows[0]
        assert isinstance(row.value, w.Text)
    elif isinstance(row.value, w.DatePicker):
        day = date.fromisoformat(value[:10])
        row.value.value = day
        value = day.isoformat()
    else:
        row.value.value = [str(v) for v in value] if op in ("$in", "$nin") else typed_in(value)
    assert builder.error is None
    assert list(builder.query) == [field]

    expected = {
        p["id"] for p in demo.profiles if matches(p, field, op, value, ignore_case=ignore_case)
    }
    if op != "$exists" or not _always_present(demo.profiles, field):
        assert 0 < len(expected) < len(demo.profiles), (builder.query, len(expected))

    df = sn.read_profiles(client, demo.db_id, query=builder.query, limit=50, progress=False)
    got = set(df["profile_id"].unique()) if "profile_id" in df.columns else set()
    assert got == expected, (builder.query, sorted(got - expected), sorted(expected - got))


def test_cases_cover_every_operator_of_every_kind() -> None:
    pairs = [(str(c.values[0]), str(c.values[1])) for c in CASES]
    covered = {(kind_of(field, TYPES[field]), op) for field, op in pairs}
    offered = {(kind, op) for kind, ops in OPERATORS.items() for _, op in ops}
    assert covered == offered
    assert {"_city", "subscriptions.channel", "subscriptions.email_data.domain"} <= {
        field for field, _ in pairs
    }


def test_types_match_the_demo_field_list(demo: DemoService, client: Client) -> None:
    frame = sn.database_fields(client, demo.db_id)
    assert dict(zip(frame["name"], frame["type"], strict=True)) == DEMO_TYPES


# -- edge cases the generated data may lack: null, empty array, missing array ------


def _pid(n: int) -> str:
    return f"{n:024x}"


EDGE_PROFILES: list[Profile] = [
    {
        "id": _pid(1),
        "_city": None,
        "phones": [],
        "score": 1,
        "subscriptions": [
            {"channel": "email", "email_data": {"domain": "x.com"}},
            {"channel": "sms"},
        ],
    },
    {"id": _pid(2), "phones": ["+10"], "score": 2.5, "subscriptions": []},
    {
        "id": _pid(3),
        "_city": "Omsk",
        "phones": ["+10", "+20"],
        "score": 3.0,
        "subscriptions": [{"channel": "sms"}],
    },
    {"id": _pid(4), "_city": "omsk", "score": None},
]

EDGE_TYPES = {
    "_city": "string",
    "phones": "array",
    "score": "float",
    "subscriptions.channel": "string",
    "subscriptions.email_data.domain": "string",
}

EDGE_CASES = [
    pytest.param("_city", "$exists", True, False, {1, 3, 4}, id="null-exists"),
    pytest.param("_city", "$exists", False, False, {2}, id="missing-not-exists"),
    pytest.param("_city", "$eq", "Omsk", False, {3}, id="null-eq"),
    pytest.param("_city", "$ne", "Omsk", False, {1, 2, 4}, id="null-missing-ne"),
    pytest.param("_city", "$nin", ["Omsk"], False, {1, 2, 4}, id="null-missing-nin"),
    pytest.param("_city", "$in", ["Omsk"], False, {3}, id="null-missing-in"),
    pytest.param("_city", "contains", "MSK", True, {3, 4}, id="contains-ignore-case"),
    pytest.param("_city", "startswith", "O", False, {3}, id="startswith-case"),
    pytest.param("score", "$eq", 3.0, False, {3}, id="float-eq-int-and-float"),
    pytest.param("score", "$gte", 1.0, False, {1, 2, 3}, id="number-gte-skips-null"),
    pytest.param("score", "$ne", 1.0, False, {2, 3, 4}, id="number-ne-null"),
    pytest.param("phones", "$eq", "+10", False, {2, 3}, id="array-has"),
    pytest.param("phones", "$nin", ["+20"], False, {1, 2, 4}, id="array-nin"),
    pytest.param("phones", "$exists", True, False, {1, 2, 3}, id="empty-array-exists"),
    pytest.param("phones", "$exists", False, False, {4}, id="no-array-not-exists"),
    pytest.param("subscriptions.channel", "$eq", "sms", False, {1, 3}, id="sub-eq"),
    pytest.param("subscriptions.channel", "$ne", "sms", False, {2, 4}, id="sub-ne"),
    pytest.param("subscriptions.channel", "$exists", False, False, {2, 4}, id="sub-none"),
    pytest.param(
        "subscriptions.email_data.domain", "$exists", True, False, {1}, id="sub-some-exists"
    ),
    pytest.param(
        "subscriptions.email_data.domain",
        "$exists",
        False,
        False,
        {2, 3, 4},
        id="sub-some-not-exists",  # MongoDB: any subscription having it rules it out
    ),
]


@pytest.fixture(scope="module")
def edge_client() -> Iterator[tuple[DemoService, Client]]:
    with serve(profiles=EDGE_PROFILES) as service, service.client() as c:
        yield service, c


@pytest.mark.parametrize(("field", "op", "value", "ignore_case", "want"), EDGE_CASES)
def test_edge_values(
    edge_client: tuple[DemoService, Client],
    field: str,
    op: str,
    value: Any,
    ignore_case: bool,
    want: set[int],
) -> None:
    service, c = edge_client
    builder = QueryBuilder(fields=EDGE_TYPES)
    row = builder.root_group.add_row()
    row.field.value = field
    row.op.value = op
    if op in _REGEX_OPS:
        row.case.value = ignore_case
    row.value.value = typed_in(value)
    assert builder.error is None
    expected = {_pid(n) for n in want}
    assert {
        p["id"] for p in service.profiles if matches(p, field, op, value, ignore_case=ignore_case)
    } == expected
    df = sn.read_profiles(c, service.db_id, query=builder.query, limit=50, progress=False)
    got = set(df["profile_id"].unique()) if "profile_id" in df.columns else set()
    assert got == expected, builder.query
