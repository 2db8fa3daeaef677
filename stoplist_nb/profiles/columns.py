"""The columns of the flat profile frame: their kinds, dtypes, sources and order.

:mod:`stoplist_nb.normalize` documents the columns for users and holds the code
that builds them; these are the tables that code reads: which columns are
fixed, the kind and dtype of each, which profile key each comes from, and the
order of the column roles. They are apart so that the shape of the frame is
stated once, away from how pages are flattened and merged, and so that
:mod:`stoplist_nb.fields` can take the dtypes from here.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from stoplist_nb import _coerce as co

_TEXT_BLOCKS = ["email", "email_md5", "email_domain", "email_domain_group", "phone", "phone_md5"]
#: Kind of each fixed column, in column order; the kind decides coercion and dtype.
KINDS: dict[str, str] = {
    **dict.fromkeys(["profile_id", "channel", "status", "hash_id"], "text"),
    **dict.fromkeys(["priority", "resource_id"], "int"),
    "is_delete": "bool",
    "reg_date": "time",
    **dict.fromkeys(["reg_ip", *_TEXT_BLOCKS, "push_provider", "push_subscription_id"], "text"),
    "cats": "list",
}
#: The pandas dtype of each kind: fixed columns and dynamic ones alike.
KIND_DTYPES: dict[str, Any] = {
    "text": pd.StringDtype("pyarrow"),
    "int": pd.Int64Dtype(),
    "float": pd.Float64Dtype(),
    "bool": pd.BooleanDtype(),
    "time": pd.DatetimeTZDtype("ms", "UTC"),
    "list": pd.ArrowDtype(co.TEXT_LIST),
    "object": object,
}
#: dtype of each fixed column.
DTYPES: dict[str, Any] = {name: KIND_DTYPES[kind] for name, kind in KINDS.items()}
PROFILE_COLUMNS: tuple[str, ...] = ("profile_id",)
SUBSCRIPTION_COLUMNS: tuple[str, ...] = tuple(n for n in KINDS if n not in {"profile_id", "cats"})
#: Subscription columns every channel has (``split_channels`` keeps them all).
COMMON_COLUMNS: tuple[str, ...] = (*SUBSCRIPTION_COLUMNS[:8], "cats")

SCALARS = frozenset(SUBSCRIPTION_COLUMNS[:6])
BLOCKS: dict[str, dict[str, str]] = {
    "reg_info": {"date": "reg_date", "ip": "reg_ip"},
    "email_data": {
        "email": "email",
        "md5": "email_md5",
        "domain": "email_domain",
        "domain_group": "email_domain_group",
    },
    "phone_data": {"phone": "phone", "md5": "phone_md5"},
    "push_data": {"provider": "push_provider", "subscription_id": "push_subscription_id"},
}
ID_KEYS = ("id", "_id")
SUBSCRIPTIONS, CUSTOM, CATS = "subscriptions", "custom_fields", "cats"
# Roles order the columns; the paging code hands tables back with them as metadata.
ROLES = ("id", "profile", "fixed", "block", "extra", "cf", "cats")


def role_of(name: str) -> str:
    """The role of a column from its name alone, for tables built without the layout."""
    if name == "profile_id":
        return "id"
    if name in KINDS:
        return "cats" if name == "cats" else "fixed"
    if name.startswith("cf."):
        return "cf"
    return "block" if "." in name and not name.startswith("profile.") else "profile"
