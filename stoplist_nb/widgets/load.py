"""A MongoDB filter loaded back into a query builder document (no widget library here)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping
from typing import Any

from stoplist_nb.errors import InvalidInput, InvalidQuery
from stoplist_nb.query import loads_query, parse_query, validate_query
from stoplist_nb.widgets.catalog import FieldCatalog
from stoplist_nb.widgets.check import (
    DEFAULT_PREVIEW_ROWS,
    EACH,
    FIXED,
    MAX_LIST_VALUES,
    PLAIN,
    RuleProblem,
    as_text,
    canonical_json,
    check,
    empty_document,
    new_group,
    new_rule,
    rule_query,
    rule_value,
)
from stoplist_nb.widgets.operators import TEXT_OPERATORS, guess_type, iso_day

__all__ = ["document_of", "guessed_types", "load_document"]

_NAMED = {op: name for name, op in PLAIN.items()}


def _is_operators(value: Any) -> bool:
    return isinstance(value, Mapping) and bool(value) and all(k.startswith("$") for k in value)


def _value_text(value: Any) -> str:
    if value is None or isinstance(value, Mapping | list):
        raise InvalidQuery(f"the builder cannot show the value {value!r}")
    return as_text(value)


def _candidates(kind: str, body: Any) -> Iterator[tuple[str, Any]]:
    """Rules (operator, value) that may write ``body``, one field's condition: each is tried."""
    ops: dict[str, Any] = dict(body) if _is_operators(body) else {"$eq": body}
    if len(ops) == 1 and set(ops) <= {*_NAMED, "$exists"}:
        ((op, value),) = ops.items()
        fixed = [name for name, cond in FIXED.items() if cond == (op, value)]
        if fixed:
            yield fixed[0], None
        elif op != "$exists":
            many = op in ("$in", "$nin")
            yield _NAMED[op], [_value_text(v) for v in value] if many else _value_text(value)
            before = iso_day(value, -1) if kind == "date" and op in ("$lt", "$gte") else None
            if before is not None:
                yield ("less_or_equal" if op == "$lt" else "greater"), before
    elif set(ops) in ({"$gte", "$lte"}, {"$gte", "$lt"}):
        low = ops["$gte"]
        if "$lte" in ops:
            yield "between", [_value_text(low), _value_text(ops["$lte"])]
        elif kind == "date" and (before := iso_day(ops["$lt"], -1)) is not None:
            if before == low:
                yield "equal", low
            yield "between", [_value_text(low), before]
    elif set(ops) <= {"$regex", "$options"} and isinstance(ops.get("$regex"), str):
        # Each literal reading of the pattern, unescaped: the rule written back tells if it was.
        pattern = ops["$regex"]
        for op, core in (("begins_with", pattern[1:]), ("ends_with", pattern[:-1])):
            yield op, re.sub(r"\\(.)", r"\1", core, flags=re.DOTALL)
        yield "contains", re.sub(r"\\(.)", r"\1", pattern, flags=re.DOTALL)
        yield "matches", pattern
    elif set(ops) == {"$not"} and isinstance(ops["$not"], Mapping):
        for op, text in _candidates(kind, ops["$not"]):
            if op in TEXT_OPERATORS and op != "matches":
                yield f"not_{op}", text


class _Loader:
    """One reading of a filter into groups and rules, numbering their ids in reading order."""

    def __init__(self, catalog: FieldCatalog) -> None:
        self.catalog = catalog
        self.count = itertools.count(1)

    def id(self, prefix: str) -> str:
        return f"{prefix}{next(self.count)}"

    def group(self, query: Mapping[str, Any], where: str, within: str | None) -> dict[str, Any]:
        group = new_group(self.id("g"))
        if len(query) == 1:
            ((key, value),) = query.items()
            if key == "$nor":
                if (rule := self.negated(value, within)) is not None:
                    return {**group, "items": [rule]}
                group["not"] = True
                inner = value[0]
                if len(value) == 1 and len(inner) == 1 and next(iter(inner)) in ("$and", "$or"):
                    shown = self.group(inner, f"{where}['$nor'][0]", within)
                    shown["id"], shown["not"] = group["id"], True
                    return shown
            if key in ("$or", "$and", "$nor"):
                # NOT of one part is NOT (AND of it); NOT of several is NOT (a OR b ...).
                single_nor = key == "$nor" and len(value) == 1
                group["join"] = "and" if key == "$and" or single_nor else "or"
                at = f"{where}[{key!r}]"
                group["items"] = [self.item(p, f"{at}[{i}]", within) for i, p in enumerate(value)]
                return group
        for key, value in query.items():
            group["items"].append(self.item({key: value}, where, within))
        return group

    def item(self, query: Any, where: str, within: str | None) -> dict[str, Any]:
        if not isinstance(query, Mapping):
            raise InvalidQuery(f"{where}: a part of the query must be an object")
        if len(query) == 1:
            ((key, value),) = query.items()
            if key == "$nor" and (rule := self.negated(value, within)) is not None:
                return rule
            if not key.startswith("$"):
                return self.field(key, value, f"{where}[{key!r}]", within)
            if key not in ("$and", "$or", "$nor"):
                raise InvalidQuery(f"{where}[{key!r}]: the builder cannot show {key}")
        return self.group(query, where, within)

    def field(self, path: str, body: Any, where: str, within: str | None) -> dict[str, Any]:
        if path == EACH and _is_operators(body) and "$elemMatch" in body:
            if within:
                raise InvalidQuery(f"{where}: the builder cannot show $elemMatch within $elemMatch")
            if len(body) > 1:
                other = min(set(body) - {"$elemMatch"})
                raise InvalidQuery(f"{where}: the builder cannot show {other} beside $elemMatch")
            inner = body["$elemMatch"]
            if not isinstance(inner, Mapping) or (
                _is_operators(inner) and not (set(inner) & {"$and", "$or", "$nor"})
            ):
                raise InvalidQuery(f"{where}: the builder shows $elemMatch of fields only")
            group = self.group(inner, f"{where}['$elemMatch']", EACH)
            if group["not"]:
                return {**new_group(self.id("g"), each=EACH), "items": [group]}
            return {**group, "each": EACH}
        if (rule := self.rule(path, body, within, negate=False)) is not None:
            return rule
        if _is_operators(body) and len(body) > 1:
            # Several operators on one field: one rule each, in a group of their own.
            group = new_group(self.id("g"))
            for op in [k for k in body if k != "$options"]:
                one = {k: body[k] for k in (op, "$options" if op == "$regex" else op) if k in body}
                rule = self.rule(path, one, within, negate=False)
                if rule is None:
                    raise self.refusal(path, one, f"{where}[{op!r}]", within)
                group["items"].append(rule)
            return group
        raise self.refusal(path, body, where, within)

    def refusal(self, path: str, body: Any, where: str, within: str | None) -> InvalidQuery:
        known = {*_NAMED, "$regex", "$options", "$not", "$exists"}
        if odd := [op for op in body if op not in known] if _is_operators(body) else []:
            return InvalidQuery(f"{where}: the builder cannot show {odd[0]}")
        kind = (self.catalog.subscriptions() if within else self.catalog).kind(path)
        shown = canonical_json(body)
        if len(shown) > 80:  # a message, not a copy of the query
            shown = shown[:60] + "..." + shown[-16:]
        return InvalidQuery(f"{where}: the builder cannot show {shown} on a {kind} field exactly")

    def negated(self, nor: Any, within: str | None) -> dict[str, Any] | None:
        """The rule that writes ``{"$nor": nor}`` exactly, if one does."""
        part = nor[0] if len(nor) == 1 else None
        if not isinstance(part, Mapping) or len(part) != 1 or next(iter(part)).startswith("$"):
            return None
        ((path, body),) = part.items()
        return self.rule(path, body, within, negate=True)

    def rule(
        self, path: str, body: Any, within: str | None, *, negate: bool
    ) -> dict[str, Any] | None:
        """The rule that writes ``{path: body}`` exactly (``$nor`` of it when ``negate``)."""
        catalog = self.catalog.subscriptions() if within else self.catalog
        kind = catalog.kind(path)
        if _is_operators(body) and set(body) == {"$eq"} and not isinstance(body["$eq"], Mapping):
            body = body["$eq"]  # {"$eq": v} is how {path: v} is written out in full
        wanted = canonical_json({"$nor": [{path: body}]} if negate else {path: body})
        try:
            candidates = list(_candidates(kind, body))
        except InvalidQuery:
            return None
        if negate:
            negations = {"between": "not_between", "equal": "not_equal"}
            candidates = [(negations[op], v) for op, v in candidates if op in negations]
        for op, value in candidates:
            # Without ticks, ignoring case, and a bare day compared as text as it was written.
            for ticks in ({}, {"ignore_case": True}, {"whole_day": False}):
                rule = {**new_rule("", catalog.label(path), op, value), **ticks}
                try:
                    written = rule_query(path, op, rule_value(op, value, kind, path), kind, rule)
                except RuleProblem:
                    continue
                if canonical_json(written) == wanted:
                    rule["id"] = self.id("r")
                    return rule
        return None


def _loaded(query: Any) -> dict[str, Any]:
    if isinstance(query, str | bytes):
        checked = loads_query(query, "the text")
    elif isinstance(query, Mapping):
        checked = validate_query(query)
    else:
        raise InvalidQuery(f"a query must be a JSON object, not {type(query).__name__}")
    _check_lists(checked)
    parse_query(checked)  # what the model cannot hold ($comment, ...) is refused here
    return checked


def _check_lists(query: Any) -> None:
    """Refuse a list of values longer than a rule holds, before any slower reading of it."""
    todo = [(query, "query")]
    while todo:
        node, here = todo.pop()
        if isinstance(node, list) and len(node) > MAX_LIST_VALUES:
            raise InvalidQuery(
                f"{here}: the builder holds at most {MAX_LIST_VALUES:,} values in one list,"
                f" not {len(node):,}; read_profiles takes this query as it is"
            )
        pairs = node.items() if isinstance(node, dict) else enumerate(node)
        todo.extend((v, f"{here}[{k!r}]") for k, v in pairs if isinstance(v, dict | list))


def document_of(query: Any, catalog: FieldCatalog | None = None) -> dict[str, Any]:
    """A document whose :func:`check` gives ``query`` (a dict or JSON text) back.

    Ids are ``"g1"``, ``"r2"``, ... in reading order. ``InvalidQuery`` is
    raised for a query that is not valid or has a part that cannot be shown
    exactly (``$size``, a list of more than :data:`MAX_LIST_VALUES` values, ...).

    >>> document_of('{"_city": null}')["root"]["items"][0]["operator"]
    'is_null'
    """
    known, rows = FieldCatalog([]) if catalog is None else catalog, str(DEFAULT_PREVIEW_ROWS)
    return load_document(query, known, fields=[], preview_rows=rows, guess=False)[0]


def load_document(
    query: Any, catalog: FieldCatalog, *, fields: list[str], preview_rows: Any, guess: bool = True
) -> tuple[dict[str, Any], FieldCatalog, dict[str, Any]]:
    """:func:`document_of` with these ``fields`` and ``preview_rows``, the query read once.

    Returns the document, ``catalog`` with :func:`guessed_types` added when ``guess``,
    and its :func:`check`; ``InvalidInput`` for fields to return that are not known names.
    """
    checked = _loaded(query)
    catalog = catalog.with_types(_guessed(checked, catalog.infos) if guess else {})
    document = _document(checked, catalog)
    document["fields"], document["preview_rows"] = fields, preview_rows
    report = check(document, catalog)
    if problems := report["fields"]["problems"]:
        raise InvalidInput("; ".join(p["message"] for p in problems))
    if not report["ok"]:
        raise InvalidQuery("the builder cannot show this query: " + "; ".join(report["summary"]))
    return document, catalog, report


def _document(checked: dict[str, Any], catalog: FieldCatalog) -> dict[str, Any]:
    loader = _Loader(catalog)
    root = loader.group(checked, "query", None) if checked else new_group(loader.id("g"))
    if not root["items"]:
        root["items"].append(new_rule(loader.id("r")))
    if root["each"]:  # only a nested group can be a same-subscription one
        root = {**new_group("g0"), "items": [root]}
    return empty_document(root)


def guessed_types(query: Any, catalog: FieldCatalog | None = None) -> dict[str, str]:
    """Types for the fields of ``query`` that ``catalog`` lacks, from their values.

    >>> guessed_types({"score": {"$gte": 2.5}, "subscriptions": {"$elemMatch": {"prio": 1}}})
    {'score': 'float', 'subscriptions.prio': 'int'}
    """
    return _guessed(_loaded(query), {} if catalog is None else catalog.infos)


def _guessed(query: dict[str, Any], known: Mapping[str, Any]) -> dict[str, str]:
    found: dict[str, str] = {}
    todo: list[tuple[Any, str]] = [(query, "")]
    while todo:
        node, prefix = todo.pop(0)
        if isinstance(node, list):
            todo.extend((part, prefix) for part in node)
            continue
        if not isinstance(node, Mapping):
            continue
        for key, value in node.items():
            path = prefix + key
            if key in ("$and", "$or", "$nor"):
                todo.append((value, prefix))
            elif key == EACH and _is_operators(value) and "$elemMatch" in value:
                todo.append((value["$elemMatch"], f"{EACH}."))
            elif not key.startswith("$") and path not in known and path not in found:
                if _is_operators(value):  # the value of its first operator that holds one
                    ops = [(op, v) for op, v in value.items() if op not in ("$exists", "$options")]
                    value = next(("" if op in ("$regex", "$not") else v for op, v in ops), None)
                found[path] = guess_type(value)
    return found
