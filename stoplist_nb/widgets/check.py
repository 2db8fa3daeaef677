"""The query builder's document, and its check into a MongoDB filter (no widget library here).

The front end edits a *document*, a JSON tree of groups and rules as typed (its
shape, with an example: docs/query-builder.md). A group whose ``each`` is
``"subscriptions"`` matches within one subscription (``$elemMatch``). On a date
field a bare day (``2024-03-01``) stands for the whole day: ``equal`` is
``$gte`` it and ``$lt`` the next.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from stoplist_nb.errors import InvalidQuery
from stoplist_nb.query import Condition, F, parse_query
from stoplist_nb.widgets.catalog import FieldCatalog
from stoplist_nb.widgets.operators import (
    KIND_OPERATORS,
    OPERATORS,
    TEXT_OPERATORS,
    WHOLE_DAY_OPERATORS,
    iso_day,
    parse_number,
    parse_value,
)

MAX_PREVIEW_ROWS = 1000
DEFAULT_PREVIEW_ROWS = 10
#: The most values one rule's list holds: each is a chip in the browser.
MAX_LIST_VALUES = 10_000
#: The array a same-element group (``$elemMatch``) works on.
EACH = "subscriptions"
#: The MongoDB operator of each rule operator that writes its value as it is.
PLAIN = {
    "equal": "$eq", "not_equal": "$ne", "in": "$in", "not_in": "$nin",
    "less": "$lt", "less_or_equal": "$lte", "greater": "$gt", "greater_or_equal": "$gte",
}  # fmt: skip
#: The condition of each rule operator that takes no value.
FIXED = {
    "is_empty": ("$eq", ""), "is_not_empty": ("$ne", ""), "is_null": ("$eq", None),
    "is_not_null": ("$ne", None), "exists": ("$exists", True), "not_exists": ("$exists", False),
}  # fmt: skip


def new_rule(id_: str, field: str = "", operator: str = "equal", value: Any = "") -> dict[str, Any]:
    """A rule of a document; the default is a fresh one, where nothing is asked yet."""
    rule = {"id": id_, "type": "rule", "field": field, "operator": operator, "value": value}
    return {**rule, "ignore_case": False}


def new_group(id_: str, *, each: str | None = None) -> dict[str, Any]:
    """An empty AND group of a document (``each``: see :data:`EACH`)."""
    return {"id": id_, "type": "group", "join": "and", "not": False, "each": each, "items": []}


def empty_document(root: dict[str, Any] | None = None) -> dict[str, Any]:
    """A document of ``root``, by default one empty rule: the query ``{}``.

    >>> check(empty_document())["query"]
    {}
    """
    root = {**new_group("g1"), "items": [new_rule("r2")]} if root is None else root
    return {"rev": 0, "root": root, "fields": [], "preview_rows": str(DEFAULT_PREVIEW_ROWS)}


def canonical_json(query: Any) -> str:
    """The one text of a query (sorted keys, compact), to tell two queries apart.

    >>> canonical_json({"b": 1, "a": [True]})
    '{"a":[true],"b":1}'
    """
    return json.dumps(query, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class RuleProblem(Exception):
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
        self.ids: set[str] = set()

    def claim(self, id_: str) -> str:
        """``id_``, refused when another item has it (a group may have none)."""
        if id_ and id_ in self.ids:
            self.summary.append(f"Query: two items have the id {_said(id_)}")
        self.ids.add(id_)
        return id_

    def group(self, node: Any, within: str | None, depth: int) -> dict[str, Any] | None:
        if not isinstance(node, Mapping):
            self.summary.append(f"Query: a group must be an object, not {type(node).__name__}")
            return None
        each, join, negate = node.get("each"), node.get("join", "and"), node.get("not", False)
        items = node.get("items", [])
        id_ = self.claim(str(node.get("id", "")))
        odd = each not in (None, EACH)
        checks = (
            (odd, f"same-element groups work on {EACH!r} only, not {_said(each)}"),
            (each == EACH and within, "a same-subscription group cannot sit in another one"),
            (join not in ("and", "or"), f"join must be 'and' or 'or', not {_said(join)}"),
            (not isinstance(negate, bool), f"not must be true or false, not {_said(negate)}"),
            (not isinstance(items, list), "its items must be a list"),
            (depth > 20, "groups nest too deep"),
        )  # fmt: skip
        problems = [message for wrong, message in checks if wrong]
        each = EACH if each == EACH and not within else None
        # Items too deep are not read: a document nested thousands deep must not recurse.
        items = items if isinstance(items, list) and depth <= 20 else []
        parts = []
        for child in items:
            if isinstance(child, Mapping) and child.get("type") == "group":
                part = self.group(child, within or each, depth + 1)
            else:
                part = self.rule(child, within or each)
            if part is not None:
                parts.append(part)
        if problems and id_:
            self.items[id_] = _item(None, [{"part": "group", "message": p} for p in problems])
        self.summary.extend(f"Group: {p}" for p in problems)
        # NOT of a same-subscription group negates the whole $elemMatch, not its parts.
        body = join_parts(parts, join, negate=negate is True and not each)
        if body is None or not each:
            return body
        return join_parts([{EACH: {"$elemMatch": body}}], "and", negate=negate is True)

    def rule(self, node: Any, within: str | None) -> dict[str, Any] | None:
        number = self.rules = self.rules + 1
        if not isinstance(node, Mapping):
            self.summary.append(f"Row {number}: a rule must be an object")
            return None
        item = self.items[self.claim(str(node.get("id", f"row{number}")))] = _item(number, [])
        try:
            return self._rule(node, item, within)
        except RuleProblem as exc:
            item["errors"].append({"part": exc.part, "message": str(exc)})
            self.summary.append(f"Row {number}: {exc}")
            return None

    def _rule(
        self, node: Mapping[str, Any], item: dict[str, Any], within: str | None
    ) -> dict[str, Any] | None:
        text, op, raw = node.get("field") or "", node.get("operator") or "equal", node.get("value")
        if not isinstance(text, str):
            raise RuleProblem("field", "the field must be text")
        if not isinstance(op, str):
            raise RuleProblem("operator", f"the operator must be text, not {type(op).__name__}")
        if op not in OPERATORS:
            raise RuleProblem("operator", f"unknown operator {_said(op)}")
        if not all(map(_is_value, raw if isinstance(raw, list | tuple) else [raw])):
            raise RuleProblem("value", f"a value must be text or a list of texts, not {_said(raw)}")
        for tick in ("ignore_case", "whole_day"):
            if not isinstance(node.get(tick, False), bool):
                raise RuleProblem("value", f"{tick} must be true or false, not {_said(node[tick])}")
        if not text.strip():
            if _blank(raw):
                return None  # a fresh rule: nothing asked yet
            raise RuleProblem("field", "pick a field for this value")
        catalog = self.catalog.subscriptions() if within else self.catalog
        name = catalog.resolve(text)
        if within and name.startswith(f"{EACH}.") and name not in catalog.infos:
            name = name[len(EACH) + 1 :]
        try:
            F(name)
        except InvalidQuery as exc:
            raise RuleProblem("field", str(exc)) from None
        kind = item["kind"] = catalog.kind(name)
        item["field"] = name
        if name not in catalog.infos or name in catalog.guessed:
            where = "the subscription fields" if within else "the field list"
            message = f"unknown field {name!r}: it is not in {where}"
            item["warnings"].append({"part": "field", "message": message})
        value = rule_value(op, raw, kind, name)
        # The kinds offering between parse both values to numbers, or both to text.
        if op in ("between", "not_between") and value[0] > value[1]:
            message = f"{name}: the first value is above the second"
            item["warnings"].append({"part": "value", "message": message})
        return rule_query(name, op, value, kind, node)


def _item(number: int | None, errors: list[dict[str, Any]]) -> dict[str, Any]:
    return {"errors": errors, "warnings": [], "number": number, "field": None, "kind": None}


def rule_value(op: str, raw: Any, kind: str, name: str) -> Any:
    """What was typed for ``op`` on the field ``name``, parsed, or :class:`RuleProblem` saying why.

    >>> rule_value("between", ["1", "5"], "int", "age")
    [1, 5]
    """
    if op not in KIND_OPERATORS[kind]:
        label = OPERATORS[op][0]
        raise RuleProblem("operator", f"{name}: '{label}' does not apply to a {kind} field")
    arity = OPERATORS[op][1]
    scalar_kind = "string" if kind == "array" else kind
    try:
        if arity == 0:
            return None
        if arity == 1:
            return parse_value(scalar_kind, as_text(raw))
        if arity == 2:
            texts = list(map(as_text, raw if isinstance(raw, list | tuple) else [raw, ""]))
            if len(texts) != 2:
                raise ValueError("between takes two values")
            if not texts[0].strip() or not texts[1].strip():
                raise ValueError("between needs two values: type both")
            return [parse_value(scalar_kind, t) for t in texts]
        tags = list(raw) if isinstance(raw, list | tuple) else ([] if _blank(raw) else [raw])
        if not tags:
            raise ValueError("no values yet: type one and press Enter")
        if len(tags) > MAX_LIST_VALUES:
            raise ValueError(f"a list holds at most {MAX_LIST_VALUES:,} values, not {len(tags):,}")
        values = []
        for tag in tags:
            try:
                values.append(parse_value(scalar_kind, as_text(tag)))
            except ValueError as exc:
                raise ValueError(f"{as_text(tag)!r}: {exc}") from None
        return values
    except ValueError as exc:
        raise RuleProblem("value", f"{name}: {exc}") from None


def rule_query(name: str, op: str, value: Any, kind: str, row: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`rule_filter` with the rule's ticks, or :class:`RuleProblem` saying why not."""
    ignore_case = bool(row.get("ignore_case")) and op in TEXT_OPERATORS
    whole_day = row.get("whole_day", True) is not False
    try:
        return rule_filter(name, op, value, kind=kind, ignore_case=ignore_case, whole_day=whole_day)
    except InvalidQuery as exc:
        raise RuleProblem("value", f"{name}: {exc}") from None
    except re.error as exc:
        raise RuleProblem("value", f"{name}: not a valid regular expression: {exc}") from None


def as_text(value: Any) -> str:
    """What was typed, as text (``None`` is empty)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else str(value)


def _is_value(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _said(value: Any) -> str:
    """``value`` as a message shows it: its repr, cut short (it may be anything)."""
    shown = repr(value) if _is_value(value) else type(value).__name__
    return shown if len(shown) <= 60 else shown[:45] + "..." + shown[-10:]


def _blank(value: Any) -> bool:
    if isinstance(value, list | tuple):
        return all(_blank(v) for v in value)
    return value is None or (isinstance(value, str) and not value.strip())


def rule_filter(
    path: str, op: str, value: Any, *, kind: str, ignore_case: bool = False, whole_day: bool = True
) -> dict[str, Any]:
    """The filter of one rule on ``path`` from its parsed value(s).

    ``whole_day`` false compares a bare day as text. Raises ``InvalidQuery``
    where the query model refuses the condition, ``re.error`` for a bad pattern.

    >>> rule_filter("_regdate", "less_or_equal", "2024-03-01", kind="date")
    {'_regdate': {'$lt': '2024-03-02'}}
    >>> rule_filter("_city", "not_begins_with", "Ka", kind="string", ignore_case=True)
    {'_city': {'$not': {'$regex': '^Ka', '$options': 'i'}}}
    """
    whole = kind == "date" and whole_day and op in WHOLE_DAY_OPERATORS
    after = iso_day(value, 1) if whole else None
    if after is not None and op in ("less_or_equal", "greater"):
        return Condition(path, "$lt" if op == "less_or_equal" else "$gte", after).to_mongo()
    if op in ("between", "not_between") or (after is not None and op in ("equal", "not_equal")):
        low, high = value if after is None else (value, None)
        high_after = after or (iso_day(high, 1) if whole else None)
        upper = ("$lte", high) if high_after is None else ("$lt", high_after)
        body: dict[str, Any] = {}
        for bound in (("$gte", low), upper):
            body.update(Condition(path, *bound).field_value())
        return {path: body} if op in ("between", "equal") else {"$nor": [{path: body}]}
    if op in TEXT_OPERATORS:
        base = op.removeprefix("not_")
        text = value if base == "matches" else re.escape(value)
        pattern = (
            "^" + text if base == "begins_with" else text + "$" if base == "ends_with" else text
        )
        re.compile(pattern)  # a typo is named on the row rather than sent
        cond = Condition(path, "$regex", pattern, options="i" if ignore_case else "")
        return (~cond if op.startswith("not_") else cond).to_mongo()
    if op in FIXED:
        return Condition(path, *FIXED[op]).to_mongo()
    return Condition(path, PLAIN[op], list(value) if op in ("in", "not_in") else value).to_mongo()


def join_parts(
    parts: Sequence[dict[str, Any]], join: str, *, negate: bool
) -> dict[str, Any] | None:
    """The filter of a group's parts: one dict when on different fields, else ``$and``/``$or``.

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
        body = {"$or": list(parts)}
    elif all(k is not None and not k.startswith("$") for k in keys) and len(set(keys)) == len(keys):
        body = {k: v for p in parts for k, v in p.items()}
    else:
        body = {"$and": list(parts)}
    if negate and list(body) == ["$or"]:
        return {"$nor": body["$or"]}  # NOT (a OR b) is $nor of both, as the model writes it
    return {"$nor": [body]} if negate else body


def _preview_rows(raw: Any) -> tuple[int | None, str | None]:
    text = as_text(raw).strip()
    try:
        rows = parse_number(text, whole=True)
    except ValueError as exc:
        return None, f"rows to preview: {exc}"
    if not 1 <= rows <= MAX_PREVIEW_ROWS:
        return None, f"rows to preview must be from 1 to {MAX_PREVIEW_ROWS}, not {text}"
    return int(rows), None


def _return_fields(
    raw: Any, catalog: FieldCatalog, summary: list[str]
) -> tuple[list[str], list[dict[str, Any]]]:
    if not isinstance(raw, list):
        message = f"the fields to return must be a list of names, not {_said(raw)}"
        summary.append(f"Return fields: {message}")
        return [], [{"index": None, "message": message}]
    resolved: list[str] = []
    problems: list[dict[str, Any]] = []
    for index, text in enumerate(raw):
        try:
            if not isinstance(text, str) or not text.strip():
                raise InvalidQuery("a field to return is empty")
            name = catalog.resolve(text)
            F(name)
            if name in resolved:
                raise InvalidQuery(f"{name!r} is listed twice")
            if catalog.complete and name not in catalog.returnable:
                raise InvalidQuery(f"unknown field {name!r}")
        except InvalidQuery as exc:
            problems.append({"index": index, "message": str(exc)})
            summary.append(f"Return field {index + 1}: {exc}")
        else:
            resolved.append(name)
    return resolved, problems


def check(
    document: Any, catalog: FieldCatalog | None = None, *, last_valid: Any = None
) -> dict[str, Any]:
    """Check a document into its query, params and every error and warning, per item.

    Never raises: the report holds ``ok``, ``query``, ``query_json`` and ``params``
    (``None`` while not ok), ``json`` (``last_valid`` while not ok), ``items`` (per rule id:
    ``errors``, ``warnings``, ``number``, ``field``, ``kind``), ``fields``, ``preview_rows``
    and ``summary`` (every error).

    >>> report = check({"root": {"id": "g1", "type": "group", "join": "and", "items": [
    ...     {"id": "r2", "type": "rule", "field": "age", "operator": "less", "value": "x"}]}})
    >>> report["ok"], report["summary"]
    (False, ["Row 1: age: 'less' does not apply to a string field"])
    """
    checker = _Checker(FieldCatalog([]) if catalog is None else catalog)
    doc = document if isinstance(document, Mapping) else {}
    if not isinstance(document, Mapping):
        checker.summary.append(
            f"Query: the document must be an object, not {type(document).__name__}"
        )
    root = doc.get("root")
    query = (None if root is None else checker.group(root, None, 0)) or {}
    try:
        parse_query(query)  # it validates the query first
    except InvalidQuery as exc:
        checker.summary.append(f"Query: {exc}")
    resolved, problems = _return_fields(doc.get("fields", []), checker.catalog, checker.summary)
    rows, rows_error = _preview_rows(doc.get("preview_rows", str(DEFAULT_PREVIEW_ROWS)))
    ok = not checker.summary
    if rows_error is not None:
        checker.summary.append(rows_error[0].upper() + rows_error[1:])
    shown = query if ok else (last_valid if isinstance(last_valid, Mapping) else {})
    return {
        "rev": doc.get("rev"),
        "ok": ok,
        "query": query if ok else None,
        "query_json": canonical_json(query) if ok else None,
        "json": json.dumps(shown, indent=2, ensure_ascii=False),
        "params": {"query": query, **({"fields": resolved} if resolved else {})} if ok else None,
        "items": checker.items,
        "fields": {"resolved": resolved, "problems": problems},
        "preview_rows": {"value": rows, "error": rows_error},
        "summary": checker.summary,
        "import_error": None,
    }
