"""database_fields: the service's field list, or one inferred from a sample."""

from __future__ import annotations

import pandas as pd
import pytest

import stoplist_nb as sn
from stoplist_nb.demo import DemoService
from stoplist_nb.profiles.fields import FIELD_COLUMNS, SUBSCRIPTION_FIELDS, database_fields


def test_fields_from_the_service(client: sn.Client, demo: DemoService) -> None:
    fields = database_fields(client, demo.db_id)
    assert tuple(fields.columns) == FIELD_COLUMNS
    assert fields["name"].is_unique
    by_name = fields.set_index("name")
    assert by_name.loc["loyalty_level", "type"] == "int"
    assert by_name.loc["vip", ["type", "category"]].tolist() == ["boolean", "custom"]
    assert by_name.loc["_fname", "category"] == "system"
    sub = fields[fields["category"] == "subscription"]
    assert list(sub["name"]) == [name for name, _, _ in SUBSCRIPTION_FIELDS]
    assert fields["required"].dtype == "boolean"
    assert [r.params["id"] for r in demo.requests] == [demo.db_id]


def test_without_subscription_paths(client: sn.Client, demo: DemoService) -> None:
    fields = database_fields(client, demo.db_id, subscriptions=False)
    assert not fields["name"].str.startswith("subscriptions.").any()


def test_fallback_infers_from_a_sample_and_warns(client: sn.Client, demo: DemoService) -> None:
    demo.add_fault("databases/fields_get", "api_error", code=404, text="unknown method")
    with pytest.warns(UserWarning, match="inferred from 30 sample profiles"):
        fields = database_fields(client, demo.db_id, sample=30)
    by_name = fields.set_index("name")["type"]
    expected = {
        "_id": "string",
        "loyalty_level": "int",
        "vip": "boolean",
        "score": "float",
        "phones": "array",
        "_fname": "string",
    }
    assert {k: by_name[k] for k in expected} == expected
    assert "subscriptions" not in by_name.index
    assert by_name["subscriptions.channel"] == "string"


def test_auth_error_is_not_hidden_by_the_fallback(demo: DemoService) -> None:
    client = sn.Client(demo.base_url, "wrong", retry=False)
    with pytest.raises(sn.AuthError):
        database_fields(client, demo.db_id)
    assert [r.method for r in demo.requests] == ["databases/fields_get"]


def test_bad_db_id_before_any_request(client: sn.Client, demo: DemoService) -> None:
    with pytest.raises(sn.InvalidInput):
        database_fields(client, "1")  # type: ignore[arg-type]
    assert demo.requests == []


def test_empty_field_list_keeps_columns() -> None:
    from stoplist_nb.profiles.fields import _frame

    frame = _frame([])
    assert tuple(frame.columns) == FIELD_COLUMNS
    assert frame["name"].dtype == pd.StringDtype("pyarrow")
