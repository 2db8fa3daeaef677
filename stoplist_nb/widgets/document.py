"""The query builder's document: its operators, its check, and a query loaded back into one.

Pure: no widget library is imported here. The front end of
:class:`~stoplist_nb.widgets.QueryBuilder` edits a *document* (a JSON tree of
groups and rules, each rule holding what was typed); :func:`check` reads it
into a MongoDB filter through the query model (:mod:`stoplist_nb.query`) and
reports every error and warning per item; :func:`document_of` turns a filter
back into a document whose check gives the same filter. The format::

    {"rev": 3,
     "root": {"id": "g1", "type": "group", "join": "and", "not": False, "each": None,
              "items": [{"id": "r2", "type": "rule", "field": "City (_city)",
                         "operator": "in", "value": ["Kazan"], "ignore_case": False}]},
     "fields": ["_fname"], "preview_rows": "10"}

A rule's value follows its operator's arity (:data:`OPERATORS`): a string for
1, two strings for 2, a list of strings for ``"list"``, ``None`` for 0. A
group whose ``each`` is ``"subscriptions"`` matches within one subscription
(``$elemMatch``); its rules name subscription fields (``"channel"``).

Dates are RFC 3339 strings compared as text. A date typed as a bare day
(``2024-03-01``) stands for the whole day: ``equal`` is ``$gte`` that day and
``$lt`` the next, ``less or equal`` is ``$lt`` the next day, ``greater`` is
``$gte`` the next day. That also holds for fields that store days only.

>>> from stoplist_nb.widgets.catalog import FieldCatalog, FieldInfo
>>> catalog = FieldCatalog([FieldInfo("_city", "City", "string")])
>>> doc = document_of({"_city": {"$in": ["Kazan", "Moscow"]}}, catalog)
>>> doc["root"]["items"][0]["field"], doc["root"]["items"][0]["value"]
('City (_city)', ['Kazan', 'Moscow'])
>>> check(doc, catalog)["query"]
{'_city': {'$in': ['Kazan', 'Moscow']}}
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import timedelta
from typing import Any

from stoplist_nb.errors import InvalidQuery
from stoplist_nb.query import Condition, F, parse_query, validate_query
from stoplist_nb.widgets.catalog import FieldCatalog
from stoplist_nb.widgets.operators import (
    KIND_OPERATORS,
    OPERATORS,
    TEXT_OPERATORS,
    guess_type,
    iso_day,
    next_day,
    parse_number,
    parse_value,
)

__all__ = [
    "DEFAULT_PREVIEW_ROWS",
    "MAX_PREVIEW_ROWS",
    "canonical_json",
    "check",
    "document_of",
    "empty_document",
    "guessed_types",
    "pretty_json",
]

#: The most rows a Preview reads.
MAX_PREVIEW_ROWS = 1000
DEFAULT_PREVIEW_ROWS = 10

_EACH = "subscriptions"


# --- the document ----------------------------------------------------------------------


def _rule(id_: str, field: str = "", operator: str = "equal", value: Any = "") -> dict[str, Any]:
    return {
        "id": id_,
        "type": "rule",
        "field": field,
        "operator": operator,
        "value": value,
        "ignore_case": False,
    }


def _group(id_: str, *, join: str = "and", each: str | None = None) -> dict[str, Any]:
    return {"id": id_, "type": "group", "join": join, "not": False, "each": each, "items": []}


def empty_document() -> dict[str, Any]:
    """A document of one empty rule: the query ``{}``.

    >>> check(empty_document())["query"]
    {}
    """
    root = _group("g1")
    root["items"].append(_rule("r2"))
    return {"rev": 0, "root": root, "fields": [], "preview_rows": str(DEFAULT_PREVIEW_ROWS)}


def canonical_json(query: Any) -> str:
    """The one text of a query (sorted keys, compact), to tell two queries apart.

    >>> canonical_json({"b": 1, "a": [True]})
    '{"a":[true],"b":1}'
    """
    return json.dumps(query, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def pretty_json(query: Any) -> str:
    """The query as shown: indented, keys in their order."""
    return json.dumps(query, indent=2, ensure_ascii=False)


def _catalog(catalog: FieldCatalog | None) -> FieldCatalog:
    return FieldCatalog([]) if catalog is None else catalog


class _Problem(Exception):
    """A refusal of one part of a rule: ``part`` is ``"field"``, ``"operator"`` or ``"value"``."""

    def __init__(self, part: str, message: str) -> None:
        super().__init__(message)
        self.part = part


class _Checker:
    """One walk of a document: the query of each group, the messages of each item."""

    def __init__(self, catalog: FieldCatalog) -> None:
        self.catalog = catalog
        self.items: dict[str, dict[str, Any]] = {}
        self.summary: list[str] = []
        self.rules = 0

    def entry(self, id_: str, **extra: Any) -> dict[str, Any]:
        item: dict[str, Any] = {
            "errors": [],
            "warnings": [],
            "number": None,
            "field": None,
            "kind": None,
        }
        item.update(extra)
        self.items[id_] = item
        return item

    def group(self, node: Any, *, within: str | None, depth: int) -> dict[str, Any] | None:
        """The group's filter, ``None`` when it holds no condition."""
        if not isinstance(node, Mapping):
            self.summary.append(f"Query: a group must be an object, not {type(node).__name__}")
            return None
        id_ = str(node.get("id", ""))
        item = self.entry(id_) if id_ else None
        each = node.get("each")
        problems: list[str] = []
        if each not in (None, _EACH):
            problems.append(f"same-element groups work on {_EACH!r} only, not {each!r}")
            each = None
        if each and within:
            problems.append("a same-subscription group cannot sit in another one")
            each = None
        if depth > 20:
            problems.append("groups nest too deep")
        join = node.get("join", "and")
        if join not in ("and", "or"):
            problems.append(f"join must be 'and' or 'or', not {join!r}")
        items = node.get("items", [])
        if not isinstance(items, list):
            problems.append("its items must be a list")
            items = []
        parts = []
        for child in items:
            kind = child.get("type") if isinstance(child, Mapping) else None
            if kind == "group":
                part = self.group(child, within=within or each, depth=depth + 1)
            else:
                part = self.rule(child, within=within or each)
            if part is not None:
                parts.append(part)
        if problems:
            where = "Group"
            if item is not None:
                item["errors"].extend({"part": "group", "message": p} for p in problems)
            self.summary.extend(f"{where}: {p}" for p in problems)
        body = join_parts(parts, "or" if join == "or" else "and", negate=bool(node.get("not")))
        if body is not None and each:
            inner = join_parts(parts, "or" if join == "or" else "and", negate=False)
            body = {_EACH: {"$elemMatch": inner}}
            if node.get("not"):
                body = {"$nor": [body]}
        if item is not None and not item["errors"] and not item["warnings"]:
            del self.items[id_]
        return body

    def rule(self, node: Any, *, within: str | None) -> dict[str, Any] | None:
        """The rule's filter, ``None`` when it is empty or wrong (then its errors are noted)."""
        self.rules += 1
        number = self.rules
        if not isinstance(node, Mapping):
            self.summary.append(f"Row {number}: a rule must be an object")
            return None
        id_ = str(node.get("id", f"row{number}"))
        item = self.entry(id_, number=number)
        try:
            return self._rule(node, item, within)
        except _Problem as exc:
            item["errors"].append({"part": exc.part, "message": str(exc)})
            self.summary.append(f"Row {number}: {exc}")
            return None

    def _rule(
        self, node: Mapping[str, Any], item: dict[str, Any], within: str | None
    ) -> dict[str, Any] | None:
        text = node.get("field") or ""
        if not isinstance(text, str):
            raise _Problem("field", "the field must be text")
        op = node.get("operator") or "equal"
        if op not in OPERATORS:
            raise _Problem("operator", f"unknown operator {op!r}")
        arity = OPERATORS[op][1]
        raw = node.get("value")
        if not text.strip():
            if _blank(raw):
                return None  # a fresh rule: nothing asked yet
            raise _Problem("field", "pick a field for this value")
        catalog = self.catalog.subscriptions() if within else self.catalog
        name = catalog.resolve(text)
        if within and name.startswith(f"{_EACH}.") and name not in catalog.infos:
            name = name[len(_EACH) + 1 :]
        try:
            F(name)
        except InvalidQuery as exc:
            raise _Problem("field", str(exc)) from None
        kind = catalog.kind(name)
        item["field"], item["kind"] = name, kind
        if name not in catalog.infos or name in catalog.guessed:
            where = "the subscription fields" if within else "the field list"
            item["warnings"].append(
                {"part": "field", "message": f"unknown field {name!r}: it is not in {where}"}
            )
        if op not in KIND_OPERATORS[kind]:
            label = OPERATORS[op][0]
            raise _Problem("operator", f"{name}: '{label}' does not apply to a {kind} field")
        value = self._values(raw, arity, kind, name)
        if op == "between" or op == "not_between":
            low, high = value
            if _comparable(low, high) and low > high:
                item["warnings"].append(
                    {"part": "value", "message": f"{name}: the first value is above the second"}
                )
        ignore_case = bool(node.get("ignore_case")) and op in TEXT_OPERATORS
        whole_day = node.get("whole_day", True) is not False
        try:
            return rule_filter(
                name, op, value, kind=kind, ignore_case=ignore_case, whole_day=whole_day
            )
        except InvalidQuery as exc:
            raise _Problem("value", f"{name}: {exc}") from None
        except re.error as exc:
            raise _Problem("value", f"{name}: not a valid regular expression: {exc}") from None

    @staticmethod
    def _values(raw: Any, arity: int | str, kind: str, name: str) -> Any:
        scalar_kind = "string" if kind == "array" else kind
        try:
            if arity == 0:
                return None
            if arity == 1:
                return parse_value(scalar_kind, _text(raw))
            if arity == 2:
                pair = list(raw) if isinstance(raw, list | tuple) else [raw, ""]
                if len(pair) != 2:
                    raise ValueError("between takes two values")
                texts = [_text(v) for v in pair]
                if not texts[0].strip() or not texts[1].strip():
                    raise ValueError("between needs two values: type both")
                return [parse_value(scalar_kind, t) for t in texts]
            tags = list(raw) if isinstance(raw, list | tuple) else ([] if _blank(raw) else [raw])
            if not tags:
                raise ValueError("no values yet: type one and press Enter")
            values = []
            for tag in tags:
                try:
                    values.append(parse_value(scalar_kind, _text(tag)))
                except ValueError as exc:
                    raise ValueError(f"{_text(tag)!r}: {exc}") from None
            return values
        except ValueError as exc:
            raise _Problem("value", f"{name}: {exc}") from None


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else str(value)


def _blank(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, list | tuple):
        return all(_blank(v) for v in value)
    return False


def _comparable(a: Any, b: Any) -> bool:
    return type(a) is type(b) or (
        isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool)
    )


def _pattern(op: str, text: str) -> str:
    base = op.removeprefix("not_")
    if base == "begins_with":
        return "^" + re.escape(text)
    if base == "ends_with":
        return re.escape(text) + "$"
    if base == "contains":
        return re.escape(text)
    re.compile(text)  # a typo is named on the row rather than sent
    return text


def _range(path: str, *pairs: tuple[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for op, value in pairs:
        body.update(Condition(path, op, value).field_value())
    return {path: body}


def rule_filter(
    path: str,
    op: str,
    value: Any,
    *,
    kind: str,
    ignore_case: bool = False,
    whole_day: bool = True,
) -> dict[str, Any]:
    """The filter of one rule on ``path`` from its parsed value(s).

    On a date field, a bare day stands for the whole day unless ``whole_day``
    is false; then it is compared as the text it is (``{"$ne": "1985-02-22"}``).

    Raises:
        InvalidQuery: The query model refuses the condition (e.g. an int beyond 64 bits).
        re.error: ``matches`` got an invalid regular expression.

    >>> rule_filter("_regdate", "less_or_equal", "2024-03-01", kind="date")
    {'_regdate': {'$lt': '2024-03-02'}}
    >>> rule_filter("_city", "not_begins_with", "Ka", kind="string", ignore_case=True)
    {'_city': {'$not': {'$regex': '^Ka', '$options': 'i'}}}
    """
    whole = kind == "date" and whole_day
    day = iso_day(value) if whole and isinstance(value, str) else None
    if op == "equal":
        if day is not None:
            return _range(path, ("$gte", value), ("$lt", next_day(day)))
        return Condition(path, "$eq", value).to_mongo()
    if op == "not_equal":
        if day is not None:
            return {"$nor": [_range(path, ("$gte", value), ("$lt", next_day(day)))]}
        return Condition(path, "$ne", value).to_mongo()
    if op in ("in", "not_in"):
        return Condition(path, "$in" if op == "in" else "$nin", list(value)).to_mongo()
    if op == "less":
        return Condition(path, "$lt", value).to_mongo()
    if op == "less_or_equal":
        if day is not None:
            return Condition(path, "$lt", next_day(day)).to_mongo()
        return Condition(path, "$lte", value).to_mongo()
    if op == "greater":
        if day is not None:
            return Condition(path, "$gte", next_day(day)).to_mongo()
        return Condition(path, "$gt", value).to_mongo()
    if op == "greater_or_equal":
        return Condition(path, "$gte", value).to_mongo()
    if op in ("between", "not_between"):
        low, high = value
        high_day = iso_day(high) if whole and isinstance(high, str) else None
        upper = ("$lte", high) if high_day is None else ("$lt", next_day(high_day))
        body = _range(path, ("$gte", low), upper)
        return body if op == "between" else {"$nor": [body]}
    if op in TEXT_OPERATORS:
        cond = Condition(path, "$regex", _pattern(op, value), options="i" if ignore_case else "")
        return (~cond if op.startswith("not_") else cond).to_mongo()
    fixed = {
        "is_empty": ("$eq", ""),
        "is_not_empty": ("$ne", ""),
        "is_null": ("$eq", None),
        "is_not_null": ("$ne", None),
        "exists": ("$exists", True),
        "not_exists": ("$exists", False),
    }
    mongo_op, argument = fixed[op]
    return Condition(path, mongo_op, argument).to_mongo()


def join_parts(
    parts: Sequence[dict[str, Any]], join: str, *, negate: bool
) -> dict[str, Any] | None:
    """The filter of a group's parts: merged when they are fields apart, else ``$and``/``$or``.

    MongoDB's implicit AND holds conditions on different fields in one dict,
    as the query model writes them; NOT of a group is ``$nor``.

    >>> join_parts([{"a": 1}, {"b": 2}], "and", negate=False)
    {'a': 1, 'b': 2}
    >>> join_parts([{"a": 1}, {"b": 2}], "or", negate=True)
    {'$nor': [{'a': 1}, {'b': 2}]}
    """
    if not parts:
        return None
    keys = [next(iter(p)) if len(p) == 1 else None for p in parts]
    if len(parts) == 1:
        body = dict(parts[0])
    elif join == "or":
        if negate:
            return {"$nor": list(parts)}
        body = {"$or": list(parts)}
    elif all(k is not None and not k.startswith("$") for k in keys) and len(set(keys)) == len(keys):
        body = {k: v for p in parts for k, v in p.items()}
    else:
        body = {"$and": list(parts)}
    if negate and list(body) == ["$or"]:
        return {"$nor": body["$or"]}  # NOT (a OR b) is $nor of both, as the model writes it
    return {"$nor": [body]} if negate else body


def _preview_rows(raw: Any) -> tuple[int | None, str | None]:
    text = _text(raw).strip()
    try:
        rows = parse_number(text, whole=True)
    except ValueError as exc:
        return None, f"rows to preview: {exc}"
    if not 1 <= rows <= MAX_PREVIEW_ROWS:
        return None, f"rows to preview must be from 1 to {MAX_PREVIEW_ROWS}, not {text}"
    return int(rows), None


def _return_fields(raw: Any, catalog: FieldCatalog) -> tuple[list[str], list[dict[str, Any]]]:
    resolved: list[str] = []
    problems: list[dict[str, Any]] = []
    for index, text in enumerate(raw if isinstance(raw, list) else []):
        if not isinstance(text, str) or not text.strip():
            problems.append({"index": index, "message": "a field to return is empty"})
            continue
        name = catalog.resolve(text)
        try:
            F(name)
        except InvalidQuery as exc:
            problems.append({"index": index, "message": str(exc)})
            continue
        if name in resolved:
            problems.append({"index": index, "message": f"{name!r} is listed twice"})
        elif catalog.complete and name not in catalog.returnable:
            problems.append({"index": index, "message": f"unknown field {name!r}"})
        else:
            resolved.append(name)
    return resolved, problems


def check(
    document: Any, catalog: FieldCatalog | None = None, *, last_valid: Any = None
) -> dict[str, Any]:
    """Check a document: its query, params and every error and warning, per item.

    Never raises: whatever is wrong is in the report. Its keys: ``rev`` (the
    document's), ``ok`` (no error), ``query`` (``None`` while not ok),
    ``query_json`` (its canonical text), ``json`` (the query indented; while
    not ok ``last_valid``'s, else ``{}``), ``params`` (``query`` and
    ``fields`` when any), ``items`` (per rule id: ``errors``, ``warnings``,
    ``number``, the resolved ``field`` and its ``kind``), ``fields``
    (``resolved`` and ``problems`` of the fields to return), ``preview_rows``
    (``value`` and ``error``), ``summary`` (every error, ``"Row 2: ..."``)
    and ``import_error``.

    Args:
        document: The document (see the module's text).
        catalog: The fields known; unknown fields are warned about, not refused.
        last_valid: The query to show greyed while the document has an error.

    >>> report = check({"root": {"id": "g1", "type": "group", "join": "and", "items": [
    ...     {"id": "r2", "type": "rule", "field": "age", "operator": "less", "value": "x"}]}})
    >>> report["ok"], report["summary"]
    (False, ["Row 1: age: 'less' does not apply to a string field"])
    """
    checker = _Checker(_catalog(catalog))
    doc = document if isinstance(document, Mapping) else {}
    if not isinstance(document, Mapping):
        checker.summary.append(
            f"Query: the document must be an object, not {type(document).__name__}"
        )
    root = doc.get("root")
    query: dict[str, Any] | None = None
    if root is not None:
        query = checker.group(root, within=None, depth=0)
    query = {} if query is None else query
    try:
        query = validate_query(query)
        parse_query(query)
    except InvalidQuery as exc:
        checker.summary.append(f"Query: {exc}")
    resolved, problems = _return_fields(doc.get("fields", []), checker.catalog)
    for problem in problems:
        checker.summary.append(f"Return field {problem['index'] + 1}: {problem['message']}")
    rows, rows_error = _preview_rows(doc.get("preview_rows", str(DEFAULT_PREVIEW_ROWS)))
    ok = not checker.summary
    if rows_error is not None:
        checker.summary.append(rows_error[0].upper() + rows_error[1:])
    params: dict[str, Any] | None = None
    if ok:
        params = {"query": query}
        if resolved:
            params["fields"] = resolved
    shown = query if ok else (last_valid if isinstance(last_valid, Mapping) else {})
    return {
        "rev": doc.get("rev"),
        "ok": ok,
        "query": query if ok else None,
        "query_json": canonical_json(query) if ok else None,
        "json": pretty_json(shown),
        "params": params,
        "items": checker.items,
        "fields": {"resolved": resolved, "problems": problems},
        "preview_rows": {"value": rows, "error": rows_error},
        "summary": checker.summary,
        "import_error": None,
    }


# --- a query back into a document ------------------------------------------------------


class _Ids:
    def __init__(self) -> None:
        self.count = 0

    def next(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"


def _is_operators(value: Any) -> bool:
    return isinstance(value, Mapping) and bool(value) and all(k.startswith("$") for k in value)


def _value_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return value
    raise InvalidQuery(f"the builder cannot show the value {value!r}")


def _day_before(text: Any) -> str | None:
    day = iso_day(text) if isinstance(text, str) else None
    return None if day is None else (day - timedelta(days=1)).isoformat()


def _candidates(kind: str, body: Any) -> Iterator[tuple[str, Any]]:
    """Rules (operator, value) that may write ``body``, the condition of one field."""
    if not _is_operators(body):
        ops: dict[str, Any] = {"$eq": body}
    else:
        ops = dict(body)
    keys = set(ops)
    if keys == {"$eq"} or keys == {"$ne"}:
        positive = "$eq" in keys
        value = ops["$eq" if positive else "$ne"]
        if value is None:
            yield ("is_null" if positive else "is_not_null"), None
        elif value == "" and isinstance(value, str):
            yield ("is_empty" if positive else "is_not_empty"), None
        elif not isinstance(value, Mapping | list):
            yield ("equal" if positive else "not_equal"), _value_text(value)
    elif keys in ({"$in"}, {"$nin"}):
        values = next(iter(ops.values()))
        if (
            isinstance(values, list)
            and values
            and all(v is not None and not isinstance(v, Mapping | list) for v in values)
        ):
            yield ("in" if "$in" in keys else "not_in"), [_value_text(v) for v in values]
    elif keys == {"$exists"}:
        yield ("exists" if ops["$exists"] else "not_exists"), None
    elif len(keys) == 1 and keys < {"$lt", "$lte", "$gt", "$gte"}:
        ((op, value),) = ops.items()
        if not isinstance(value, Mapping | list):
            text = _value_text(value)
            named = {"$lt": "less", "$lte": "less_or_equal", "$gt": "greater"}
            yield named.get(op, "greater_or_equal"), text
            before = _day_before(value) if kind == "date" else None
            if before is not None and op == "$lt":
                yield "less_or_equal", before
            if before is not None and op == "$gte":
                yield "greater", before
    elif keys in ({"$gte", "$lte"}, {"$gte", "$lt"}):
        low, high = ops["$gte"], ops.get("$lte", ops.get("$lt"))
        if not isinstance(low, Mapping | list) and not isinstance(high, Mapping | list):
            if "$lte" in keys:
                yield "between", [_value_text(low), _value_text(high)]
            elif kind == "date" and (before := _day_before(high)) is not None:
                if before == low:
                    yield "equal", low
                yield "between", [_value_text(low), before]
    elif keys in ({"$regex"}, {"$regex", "$options"}):
        options = ops.get("$options", "")
        pattern = ops["$regex"]
        if isinstance(pattern, str) and options in ("", "i"):
            for op, text in _readings(pattern):
                yield op, text
    elif keys == {"$not"} and isinstance(ops["$not"], Mapping):
        inner = ops["$not"]
        if set(inner) in ({"$regex"}, {"$regex", "$options"}) and isinstance(inner["$regex"], str):
            for op, text in _readings(inner["$regex"]):
                if op != "matches":
                    yield f"not_{op}", text


def _readings(pattern: str) -> Iterator[tuple[str, str]]:
    """What a pattern may have been typed as: the literal text of begins/ends with, contains."""
    if pattern.startswith("^") and _literal(pattern[1:]) is not None:
        yield "begins_with", _literal(pattern[1:]) or ""
    if pattern.endswith("$") and _literal(pattern[:-1]) is not None:
        yield "ends_with", _literal(pattern[:-1]) or ""
    if _literal(pattern) is not None:
        yield "contains", _literal(pattern) or ""
    yield "matches", pattern


def _literal(pattern: str) -> str | None:
    text = re.sub(r"\\(.)", r"\1", pattern, flags=re.DOTALL)
    return text if text and re.escape(text) == pattern else None


class _Loader:
    def __init__(self, catalog: FieldCatalog) -> None:
        self.catalog = catalog
        self.ids = _Ids()

    def group(self, query: Mapping[str, Any], where: str, within: str | None) -> dict[str, Any]:
        """A group that writes ``query`` (or the same filter in other words)."""
        group = _group(self.ids.next("g"), each=None)
        if len(query) == 1:
            ((key, value),) = query.items()
            if key == "$or":
                group["join"] = "or"
                group["items"] = [
                    self.item(p, f"{where}['$or'][{i}]", within) for i, p in enumerate(value)
                ]
                return group
            if key == "$and":
                group["items"] = [
                    self.item(p, f"{where}['$and'][{i}]", within) for i, p in enumerate(value)
                ]
                return group
            if key == "$nor":
                if len(value) == 1 and _one_field(value[0]):
                    ((path, body),) = value[0].items()
                    rule = self.rule(path, body, f"{where}['$nor'][0]", within, negate=True)
                    if rule is not None:
                        group["items"] = [rule]
                        return group
                group["not"] = True
                if len(value) > 1:
                    group["join"] = "or"
                    group["items"] = [
                        self.item(p, f"{where}['$nor'][{i}]", within) for i, p in enumerate(value)
                    ]
                    return group
                inner = value[0]
                if len(inner) == 1 and next(iter(inner)) in ("$and", "$or"):
                    shown = self.group(inner, f"{where}['$nor'][0]", within)
                    shown["id"], shown["not"] = group["id"], True
                    return shown
                group["items"] = [self.item(inner, f"{where}['$nor'][0]", within)]
                return group
        for key, value in query.items():
            group["items"].append(self.item({key: value}, where, within))
        return group

    def item(self, query: Any, where: str, within: str | None) -> dict[str, Any]:
        """A rule when ``query`` is one rule's filter, else a group."""
        if not isinstance(query, Mapping):
            raise InvalidQuery(f"{where}: a part of the query must be an object")
        if len(query) == 1:
            ((key, value),) = query.items()
            if key == "$nor" and len(value) == 1 and _one_field(value[0]):
                ((path, body),) = value[0].items()
                rule = self.rule(path, body, where, within, negate=True)
                if rule is not None:
                    return rule
            if not key.startswith("$"):
                return self.field(key, value, f"{where}[{key!r}]", within)
            if key not in ("$and", "$or", "$nor"):
                raise InvalidQuery(f"{where}[{key!r}]: the builder cannot show {key}")
        return self.group(query, where, within)

    def field(self, path: str, body: Any, where: str, within: str | None) -> dict[str, Any]:
        if path == _EACH and _is_operators(body) and "$elemMatch" in body:
            if within:
                raise InvalidQuery(f"{where}: the builder cannot show $elemMatch within $elemMatch")
            if len(body) > 1:
                others = sorted(set(body) - {"$elemMatch"})
                raise InvalidQuery(
                    f"{where}: the builder cannot show {others[0]} beside $elemMatch"
                )
            inner = body["$elemMatch"]
            if not isinstance(inner, Mapping) or (
                _is_operators(inner) and not (set(inner) & {"$and", "$or", "$nor"})
            ):
                raise InvalidQuery(f"{where}: the builder shows $elemMatch of fields only")
            group = self.group(inner, f"{where}['$elemMatch']", _EACH)
            if group["not"]:
                outer = _group(self.ids.next("g"), each=_EACH)
                outer["items"] = [group]
                return outer
            group["each"] = _EACH
            return group
        rule = self.rule(path, body, where, within, negate=False)
        if rule is not None:
            return rule
        if _is_operators(body) and len(body) > 1:
            # Several operators on one field: one rule each, in a group of their own.
            group = _group(self.ids.next("g"))
            ops = [k for k in body if k != "$options"]
            for op in ops:
                one = {op: body[op]}
                if op == "$regex" and "$options" in body:
                    one["$options"] = body["$options"]
                rule = self.rule(path, one, f"{where}[{op!r}]", within, negate=False)
                if rule is None:
                    raise self.refusal(path, one, f"{where}[{op!r}]", within)
                group["items"].append(rule)
            return group
        raise self.refusal(path, body, where, within)

    def refusal(self, path: str, body: Any, where: str, within: str | None) -> InvalidQuery:
        if _is_operators(body):
            known = {"$eq", "$ne", "$in", "$nin", "$lt", "$lte", "$gt", "$gte", "$regex"}
            known |= {"$options", "$not", "$exists"}
            odd = [op for op in body if op not in known]
            if odd:
                return InvalidQuery(f"{where}: the builder cannot show {odd[0]}")
        kind = self.kind(path, within)
        return InvalidQuery(
            f"{where}: the builder cannot show {canonical_json(body)} on a {kind} field exactly"
        )

    def kind(self, path: str, within: str | None) -> str:
        catalog = self.catalog.subscriptions() if within else self.catalog
        return catalog.kind(path)

    def rule(
        self, path: str, body: Any, where: str, within: str | None, *, negate: bool
    ) -> dict[str, Any] | None:
        """The rule that writes ``{path: body}`` exactly (``$nor`` of it when ``negate``)."""
        catalog = self.catalog.subscriptions() if within else self.catalog
        kind = catalog.kind(path)
        if _is_operators(body) and set(body) == {"$eq"} and not isinstance(body["$eq"], Mapping):
            body = body["$eq"]  # {"$eq": v} is how {path: v} is written out in full
        wanted = {path: body}
        if negate:
            wanted = {"$nor": [wanted]}
        try:
            candidates = list(_candidates(kind, body))
        except InvalidQuery:
            return None
        for op, value in candidates:
            if negate:
                op = {"between": "not_between", "equal": "not_equal"}.get(op, "")
                if not op:
                    continue
            for ignore_case, whole_day in ((False, True), (True, True), (False, False)):
                rule = _rule("", catalog.label(path), op, value)
                rule["ignore_case"] = ignore_case
                if not whole_day:
                    rule["whole_day"] = False  # a bare day compared as text, as it was written
                written = _written(rule, catalog, kind, path)
                if written is not None and canonical_json(written) == canonical_json(wanted):
                    rule["id"] = self.ids.next("r")
                    return rule
        return None


def _written(rule: dict[str, Any], catalog: FieldCatalog, kind: str, path: str) -> Any:
    op = rule["operator"]
    if op not in KIND_OPERATORS[kind]:
        return None
    try:
        value = _Checker._values(rule["value"], OPERATORS[op][1], kind, path)
        ignore_case = rule["ignore_case"] and op in TEXT_OPERATORS
        if rule["ignore_case"] and not ignore_case:
            return None
        whole_day = rule.get("whole_day", True) is not False
        return rule_filter(path, op, value, kind=kind, ignore_case=ignore_case, whole_day=whole_day)
    except (_Problem, InvalidQuery, re.error):
        return None


def _one_field(query: Any) -> bool:
    return isinstance(query, Mapping) and len(query) == 1 and not next(iter(query)).startswith("$")


def _loaded(query: Any) -> dict[str, Any]:
    if isinstance(query, str | bytes):
        try:
            query = json.loads(query)
        except ValueError as exc:
            raise InvalidQuery(f"the text is not JSON: {exc}") from None
    if not isinstance(query, Mapping):
        raise InvalidQuery(f"a query must be a JSON object, not {type(query).__name__}")
    checked: dict[str, Any] = validate_query(query)
    parse_query(checked)  # what the model cannot hold ($comment, ...) is refused here
    return checked


def document_of(query: Any, catalog: FieldCatalog | None = None) -> dict[str, Any]:
    """A document whose :func:`check` gives ``query`` back: what the builder shows on load.

    A query the builder wrote comes back the same; another may come back as
    the same filter in other words (``{"$and": [{"a": 1}, {"b": 2}]}`` as
    ``{"a": 1, "b": 2}``). Ids are ``"g1"``, ``"r2"``, ... in reading order;
    fields are shown by their label. ``{}`` is one empty rule.

    Args:
        query: A MongoDB filter, as a dict or as JSON text.
        catalog: The fields known; for a field it lacks, see :func:`guessed_types`.

    Raises:
        InvalidQuery: The text is not JSON, the query is not valid, or a part
            of it cannot be shown exactly (``$size``, ``$elemMatch`` but on
            ``subscriptions``, ``$gt`` of a bare day on a date field, ...).

    >>> document_of('{"_city": null}')["root"]["items"][0]["operator"]
    'is_null'
    """
    known = _catalog(catalog)
    checked = _loaded(query)
    loader = _Loader(known)
    root = loader.group(checked, "query", None) if checked else _group(loader.ids.next("g"))
    if not root["items"]:
        root["items"].append(_rule(loader.ids.next("r")))
    if root["each"]:  # only a nested group can be a same-subscription one
        outer = _group("g0")
        outer["items"] = [root]
        root = outer
    document = {"rev": 0, "root": root, "fields": [], "preview_rows": str(DEFAULT_PREVIEW_ROWS)}
    got = check(document, known)
    if not got["ok"]:
        raise InvalidQuery("the builder cannot show this query: " + "; ".join(got["summary"]))
    return document


def guessed_types(query: Any, catalog: FieldCatalog | None = None) -> dict[str, str]:
    """Types for the fields of ``query`` that ``catalog`` lacks, from their values.

    Subscription fields inside ``$elemMatch`` come back with their full path.

    >>> guessed_types({"score": {"$gte": 2.5}, "subscriptions": {"$elemMatch": {"prio": 1}}})
    {'score': 'float', 'subscriptions.prio': 'int'}
    """
    known = _catalog(catalog)
    found: dict[str, str] = {}
    todo: list[tuple[Any, str]] = [(_loaded(query), "")]
    while todo:
        node, prefix = todo.pop(0)
        if isinstance(node, list):
            todo.extend((part, prefix) for part in node)
            continue
        if not isinstance(node, Mapping):
            continue
        for key, value in node.items():
            if key in ("$and", "$or", "$nor"):
                todo.append((value, prefix))
            elif not key.startswith("$"):
                if key == _EACH and _is_operators(value) and "$elemMatch" in value:
                    todo.append((value["$elemMatch"], f"{_EACH}."))
                    continue
                path = prefix + key
                if path in known.infos or path in found:
                    continue
                found[path] = guess_type(_sample(value))
    return found


def _sample(body: Any) -> Any:
    if not _is_operators(body):
        return body
    for op, value in body.items():
        if op in ("$regex", "$not"):
            return ""
        if op not in ("$exists", "$options"):
            return value
    return None
