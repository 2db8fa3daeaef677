"""What the Preview of a query shows: which columns, how cells read, its HTML."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import pandas as pd

from stoplist_nb.profiles.columns import role_of
from stoplist_nb.query import Condition, Query, parse_query

__all__ = ["EMPTY", "preview_frame", "preview_html"]

#: What a Preview of no profile says, instead of an empty table.
EMPTY = "No profile matches this query."

_PREVIEW_PROFILE_COLUMNS = 6  # shown when no fields are chosen, besides the row's key
_CONTACT_WIDTH = 32  # a push token is ~150 characters: the preview shows its start


def _query_paths(query: Query) -> list[str]:
    paths: list[str] = []
    todo: list[Query] = [query]
    while todo:  # a loop: groups may nest up to MongoDB's depth
        item = todo.pop()
        if isinstance(item, Condition):
            paths.append(item.path)
        else:
            todo.extend(reversed(getattr(item, "items", ())))
    return list(dict.fromkeys(paths))


def preview_frame(frame: pd.DataFrame, fields: Sequence[str], paths: Sequence[str]) -> pd.DataFrame:
    """The columns a Preview shows, missing values as empty strings.

    Each row (one per subscription) starts with what tells it apart:
    ``profile_id``, ``channel``, ``status`` and ``contact`` (its ``email``, ``phone`` or the start
    of a push or messenger id), less those empty in every row; then the chosen ``fields`` or, with
    none chosen, the profile columns the query names and the first others.
    """
    columns = list(frame.columns)
    present = set(columns)
    data = {name: frame[name] for name in columns}
    subscription = ["channel", "status"]
    # A push or messenger subscription has no address: its id tells two apart.
    ids = [c for c in columns if role_of(c) == "block" and c.endswith(".id")]
    sources = [c for c in ("email", "phone", "push_subscription_id", *ids) if c in present]
    if sources and "contact" not in present:  # not a profile field of that name
        contact = pd.Series(pd.NA, index=frame.index, dtype=object)
        for name in sources:
            contact = contact.where(contact.notna(), frame[name].astype(object))
        text = contact.map(str, na_action="ignore")
        cut = text.str[: _CONTACT_WIDTH - 1] + "\N{HORIZONTAL ELLIPSIS}"
        data["contact"] = text.where(text.str.len() <= _CONTACT_WIDTH, cut)
        present.add("contact")
        subscription.append("contact")
    key = ["profile_id"] + [c for c in subscription if c in present and data[c].notna().any()]
    wanted = list(key)
    if fields:
        for name in [f for f in fields if f != "_id"]:
            if name == "subscriptions":
                wanted += ["channel", "status"]
            elif f"profile.{name}" in present:  # a profile field named like a subscription's
                wanted.append(f"profile.{name}")
            else:
                wanted.append(name)
                wanted += [c for c in columns if c.startswith(f"{name}.")]
        wanted = [c for c in wanted if c in key or c not in subscription]
    else:
        profile = [c for c in columns if role_of(c) == "profile" and c not in key]
        named = [c for p in paths for c in (p, f"profile.{p}") if c in profile]
        limit = max(_PREVIEW_PROFILE_COLUMNS, len(named))
        wanted += list(dict.fromkeys([*named, *profile]))[:limit]
    shown = list(dict.fromkeys(c for c in wanted if c in present))
    return pd.DataFrame(
        {c: data[c].astype(object).where(data[c].notna(), "") for c in shown}, index=frame.index
    )


def preview_html(frame: pd.DataFrame, params: dict[str, Any]) -> str:
    """The HTML of a Preview of ``frame``, read with ``params``: its row count and table.

    >>> EMPTY in preview_html(pd.DataFrame(), {"query": {}})
    True
    """
    if frame.empty:
        body = f'<div class="sn-preview-count sn-preview-empty">{html.escape(EMPTY)}</div>'
        return f'<div class="sn-preview-result">{body}</div>'
    fields = params.get("fields", [])
    paths = _query_paths(parse_query(params["query"])) if params.get("query") else []
    shown = preview_frame(frame, fields, paths)
    count = f"{len(frame)} rows"
    if "profile_id" in frame.columns:
        count += f" ({frame['profile_id'].nunique()} profiles)"
    of = f"{len(shown.columns)} of {len(frame.columns)}"
    if fields:
        count += f", columns of the chosen fields ({of})"
    elif len(shown.columns) < len(frame.columns):
        count += f", the first columns ({of}); choose Return fields for others"
    table = shown.to_html(index=False, border=0, classes="sn-preview-table")
    body = (
        f'<div class="sn-preview-count" style="margin:4px 0"><b>{html.escape(count)}</b></div>'
        # Cells on one line (a date does not break at its dashes); the box scrolls.
        f'<div style="max-width:100%;overflow-x:auto;white-space:nowrap">{table}</div>'
    )
    return f'<div class="sn-preview-result">{body}</div>'
