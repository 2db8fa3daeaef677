"""The fields of a database's profiles: what a query can filter on.

``databases/fields_get`` is read as its documented sibling ``resources/fields_get``;
when the service refuses it, the fields are inferred from a sample page, with a warning.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from stoplist_nb import errors
from stoplist_nb._checks import check_int
from stoplist_nb._json.kinds import BOOLEAN, INT, STRING, common_kind, json_kind
from stoplist_nb.client import Client
from stoplist_nb.profiles.columns import KIND_DTYPES

__all__ = ["FIELD_COLUMNS", "SUBSCRIPTION_FIELDS", "database_fields"]

#: The columns of :func:`database_fields`, in order.
FIELD_COLUMNS = ("name", "title", "type", "category", "required")

#: Paths inside ``subscriptions`` worth filtering on: (name, title, type).
SUBSCRIPTION_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("subscriptions.channel", "Subscription channel", STRING),
    ("subscriptions.status", "Subscription status", STRING),
    ("subscriptions.resource_id", "Subscription resource id", INT),
    ("subscriptions.priority", "Subscription priority", INT),
    ("subscriptions.is_delete", "Subscription deleted", BOOLEAN),
    ("subscriptions.reg_info.date", "Subscription date", STRING),
    ("subscriptions.email_data.email", "Subscription e-mail", STRING),
    ("subscriptions.email_data.domain", "Subscription e-mail domain", STRING),
    ("subscriptions.email_data.domain_group", "Subscription e-mail domain group", STRING),
    ("subscriptions.phone_data.phone", "Subscription phone", STRING),
    ("subscriptions.push_data.provider", "Subscription push provider", STRING),
    ("subscriptions.cats", "Subscription categories", "array"),
)


def database_fields(
    client: Client, db_id: int, *, subscriptions: bool = True, sample: int = 100
) -> pd.DataFrame:
    """List the profile fields of a database, for building queries.

    Args:
        client: The API client.
        db_id: The database id.
        subscriptions: Add the ``subscriptions.*`` paths (category
            ``"subscription"``), which ``query`` can filter on too.
        sample: How many profiles to look at when the fields must be inferred.

    Returns:
        One row per field: ``name``, ``title``, ``type`` (``int``, ``float``,
        ``string``, ``boolean``, ``array``, ``object``), ``category``
        (``system``, ``custom`` or ``subscription``) and ``required``.

    >>> fields = database_fields(client, 1)  # doctest: +SKIP
    >>> fields.loc[fields["category"] == "custom", ["name", "type"]]  # doctest: +SKIP
    """
    check_int("db_id", db_id)
    try:
        data = client.call("databases/fields_get", id=db_id).get("data")
        if not isinstance(data, list):
            raise errors.InvalidReply("databases/fields_get: data is not a list")
        rows = [_described(item) for item in data if isinstance(item, Mapping)]
    except (errors.APIError, errors.InvalidReply) as exc:
        if isinstance(exc, errors.AuthError | errors.RateLimited):
            raise
        page = client.call("profiles/list", db_id=db_id, limit=sample).get("data")
        rows = _inferred(page if isinstance(page, list) else [])
        warnings.warn(
            f"databases/fields_get failed ({exc}); the fields were inferred from "
            f"{len(page) if isinstance(page, list) else 0} sample profiles instead",
            stacklevel=2,
        )
    if subscriptions:
        known = {row["name"] for row in rows}
        rows += [_row(n, t, k, "subscription") for n, t, k in SUBSCRIPTION_FIELDS if n not in known]
    return _frame(rows)


def _row(
    name: str, title: str, type_: str, category: str = "", required: bool = False
) -> dict[str, Any]:
    category = category or ("system" if name.startswith("_") else "custom")
    return {"name": name, "title": title, "type": type_, "category": category, "required": required}


def _described(item: Mapping[str, Any]) -> dict[str, Any]:
    name = str(item.get("name") or "")
    title, type_ = str(item.get("title") or name), str(item.get("type") or "string")
    return _row(name, title, type_, str(item.get("category") or ""), bool(item.get("required")))


def _inferred(profiles: Iterable[Any]) -> list[dict[str, Any]]:
    """Name and JSON type of every top-level key seen, in first-seen order."""
    types: dict[str, set[str]] = {"_id": {"string"}}
    for profile in profiles:
        if not isinstance(profile, Mapping):
            continue
        for key, value in profile.items():
            if key in ("id", "_id", "subscriptions"):
                continue
            seen = types.setdefault(key, set())
            if value is not None:
                seen.add(json_kind(value) or STRING)
    # A null-only field says nothing: text is the safe guess, as for mixed types.
    return [_row(name, name, common_kind(seen) or STRING) for name, seen in types.items()]


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    text = KIND_DTYPES[STRING]
    frame = pd.DataFrame(rows, columns=list(FIELD_COLUMNS))
    return frame.astype(dict.fromkeys(FIELD_COLUMNS[:4], text) | {"required": "boolean"})
