"""QueryBuilder as the browser drives it: documents set through the widget's state, messages sent.

The front end edits :attr:`QueryBuilder.document` and sends ``preview`` and
``import`` messages; :func:`edit` and :func:`send` hand the widget the same
comm payloads a browser would, so the kernel side runs the path it runs in
JupyterLab. Preview reads the real demo service.
"""

from __future__ import annotations

import ast
import copy
import doctest
import json
import pathlib
import subprocess
import sys
from collections import Counter
from contextlib import closing
from typing import Any

import pandas as pd
import pytest
from demo_fixtures import served_and_cleared

import stoplist_nb as sn
from stoplist_nb.demo import DemoService
from stoplist_nb.widgets import OPERATORS, QueryBuilder
from stoplist_nb.widgets import builder as builder_module
from stoplist_nb.widgets import catalog as catalog_module
from stoplist_nb.widgets import check as check_module
from stoplist_nb.widgets import load as load_module
from stoplist_nb.widgets import operators as operators_module
from stoplist_nb.widgets.catalog import CHANNELS, STATUSES
from stoplist_nb.widgets.preview import EMPTY

FIELDS = {
    "_city": "string",
    "loyalty_level": "int",
    "score": "float",
    "vip": "boolean",
    "phones": "array",
    "_bdate": "string",
    "meta": "object",
}


def builder(**kwargs: Any) -> QueryBuilder:
    return QueryBuilder(fields=FIELDS, **kwargs)


def rule(id_: str, field: str, op: str, value: Any = None, **more: Any) -> dict[str, Any]:
    return {"id": id_, "type": "rule", "field": field, "operator": op, "value": value,
            "ignore_case": False, **more}  # fmt: skip


def edit(qb: QueryBuilder, *items: dict[str, Any], **document: Any) -> dict[str, Any]:
    """Set the document as the browser does (a comm ``update``); return the report."""
    new = copy.deepcopy(qb.document)
    new["rev"] = new.get("rev", 0) + 1
    if items:
        new["root"] = {"id": "g1", "type": "group", "join": "and", "not": False, "each": None,
                       "items": list(items)}  # fmt: skip
    new.update(document)
    qb._handle_msg({"content": {"data": {"method": "update", "state": {"document": new}}}})
    assert qb.report["rev"] == new["rev"]
    return qb.report


def send(qb: QueryBuilder, content: dict[str, Any]) -> None:
    """A custom message from the browser (``model.send``)."""
    qb._handle_msg({"content": {"data": {"method": "custom", "content": content}}, "buffers": []})


def wire(qb: QueryBuilder) -> str:
    """Every synced trait as the browser gets it."""
    return json.dumps(qb.get_state(), default=str)


# -- traits ----------------------------------------------------------------------


def test_a_fresh_builder_syncs_catalog_document_report_preview_notices() -> None:
    qb = builder()
    state = qb.get_state()
    assert {"catalog", "document", "report", "preview", "notices"} <= set(state)
    assert "preview_state" not in state  # the browser's name for it is "preview"
    assert state["preview"] == {
        "state": "none", "html": "", "message": "", "query_json": None, "fields": None
    }  # fmt: skip
    assert qb.document == check_module.empty_document()
    assert qb.report["ok"]
    assert qb.query == {}
    assert qb.params == {"query": {}}
    assert qb.notices == []
    catalog = qb.catalog
    assert set(catalog) == {
        "fields", "operators", "text_operators", "whole_day_operators", "subscription_fields",
        "complete",
    }  # fmt: skip
    city = next(f for f in catalog["fields"] if f["name"] == "_city")
    assert city == {"name": "_city", "title": "", "label": "_city", "category": "",
                    "kind": "string", "suggestions": []}  # fmt: skip
    kinds = {f["name"]: f["kind"] for f in catalog["fields"]}
    assert kinds["_bdate"] == "date"
    assert kinds["vip"] == "boolean"
    assert kinds["meta"] == "object"
    assert catalog["operators"]["boolean"][0] == ["equal", "equal", 1]
    # The front end's only table of operators: none is written in builder.js.
    assert catalog["text_operators"] == list(operators_module.TEXT_OPERATORS)
    assert catalog["whole_day_operators"] == list(operators_module.WHOLE_DAY_OPERATORS)
    channel = next(f for f in catalog["subscription_fields"] if f["name"] == "channel")
    assert channel["suggestions"][: len(CHANNELS)] == list(CHANNELS)
    assert catalog["complete"] is True
    static = pathlib.Path(builder_module.__file__).parent / "static"
    assert state["_esm"] == (static / "builder.js").read_text(encoding="utf-8")
    assert state["_css"] == (static / "builder.css").read_text(encoding="utf-8")


def test_each_edit_is_checked_into_the_report() -> None:
    qb = builder()
    report = edit(qb, rule("r2", "_city", "in", ["Kazan", "Paris, TX"]),
                  rule("r3", "loyalty_level", "greater", "2"))  # fmt: skip
    assert report["ok"]
    assert qb.query == {"_city": {"$in": ["Kazan", "Paris, TX"]}, "loyalty_level": {"$gt": 2}}
    assert report["query_json"] == json.dumps(qb.query, sort_keys=True, separators=(",", ":"))
    assert json.loads(report["json"]) == qb.query
    assert report["items"]["r3"] == {"errors": [], "warnings": [], "number": 2,
                                     "field": "loyalty_level", "kind": "int"}  # fmt: skip
    assert qb.model == sn.F("_city").isin(["Kazan", "Paris, TX"]) & (sn.F("loyalty_level") > 2)


def test_while_a_row_is_wrong_query_model_and_params_raise_naming_it() -> None:
    qb = builder()
    edit(qb, rule("r2", "_city", "equal", "Kazan"))
    report = edit(
        qb, rule("r2", "_city", "equal", "Kazan"), rule("r3", "loyalty_level", "equal", "2.5")
    )
    assert not report["ok"]
    assert report["query"] is None
    assert report["params"] is None
    said = "Row 2: loyalty_level: value must be a whole number, not '2.5' (it is not rounded)"
    assert qb.errors == [said]
    assert qb.error == said
    for name in ("query", "model", "params"):
        with pytest.raises(sn.InvalidQuery, match=r"^Row 2: loyalty_level: value must be a whole"):
            getattr(qb, name)
    assert json.loads(report["json"]) == {"_city": "Kazan"}  # the last valid one, greyed
    assert report["items"]["r3"]["errors"] == [{"part": "value", "message": said[7:]}]
    send(qb, {"kind": "preview"})
    assert qb.preview_state["state"] == "error"
    assert qb.preview_state["message"] == f"fix the query first: {said}"


def test_params_holds_query_and_fields_and_no_limit() -> None:
    qb = builder()
    edit(qb, rule("r2", "vip", "equal", "true"), fields=["_city", "loyalty_level"])
    assert qb.params == {"query": {"vip": True}, "fields": ["_city", "loyalty_level"]}
    assert qb.fields == ["_city", "loyalty_level"]
    edit(qb, fields=[])
    assert qb.params == {"query": {"vip": True}}


def test_preview_rows_is_a_whole_number_up_to_1000() -> None:
    qb = builder(runner=lambda params: pd.DataFrame())
    assert qb.preview_rows == 10
    report = edit(qb, preview_rows="2.5")
    said = "rows to preview: value must be a whole number, not '2.5' (it is not rounded)"
    assert report["preview_rows"] == {"value": None, "error": said}
    assert qb.errors == ["R" + said[1:]]
    with pytest.raises(sn.InvalidInput, match="whole number"):
        _ = qb.preview_rows
    qb.preview()
    assert qb.preview_state["state"] == "error"
    assert said[1:] in qb.preview_state["message"]
    edit(qb, preview_rows="1000")
    assert qb.preview_rows == 1000
    edit(qb, preview_rows="1001")
    with pytest.raises(sn.InvalidInput, match="from 1 to 1000"):
        _ = qb.preview_rows


def test_warnings_name_the_row_and_keep_the_query_sendable() -> None:
    qb = builder()
    edit(qb, rule("r2", "_city", "exists"), rule("r3", "cyty", "equal", "Kazan"))
    assert qb.query == {"_city": {"$exists": True}, "cyty": "Kazan"}
    assert qb.warnings == ["Row 2: unknown field 'cyty': it is not in the field list"]
    assert qb.errors == []
    assert qb.error is None


# -- load, clear, import ---------------------------------------------------------------


def test_load_a_dict_json_text_and_null() -> None:
    qb = builder()
    qb.load({"_city": {"$in": ["Kazan", "Moscow"]}, "loyalty_level": {"$gte": 2}})
    assert qb.query == {"_city": {"$in": ["Kazan", "Moscow"]}, "loyalty_level": {"$gte": 2}}
    assert qb.document["rev"] == 1
    assert [i["id"] for i in qb.document["root"]["items"]] == ["r2", "r3"]
    qb.load('{"_city": null}')
    assert qb.query == {"_city": None}
    (item,) = qb.document["root"]["items"]
    assert (item["operator"], item["value"]) == ("is_null", None)
    assert qb.document["rev"] == 2


def test_load_refuses_what_it_cannot_show_and_leaves_the_builder_as_it_was() -> None:
    qb = builder()
    qb.load({"_city": "Kazan"}, fields=["vip"])
    before, report = copy.deepcopy(qb.document), copy.deepcopy(qb.report)
    for bad in ({"phones": {"$size": 2}}, '{"_city": ', "[1]", {"loyalty_level": "x"}):
        with pytest.raises(sn.InvalidQuery):
            qb.load(bad)  # type: ignore[arg-type]
        assert qb.document == before
        assert qb.report == report
    with pytest.raises(sn.InvalidInput, match="unknown field 'nope'"):
        qb.load({"vip": True}, fields=["nope"])
    assert qb.document == before


def test_load_keeps_fields_and_rows_unless_given_and_clear_keeps_them_too() -> None:
    qb = builder()
    edit(qb, rule("r2", "vip", "equal", "false"), fields=["_city"], preview_rows="3")
    qb.load({"loyalty_level": 1})
    assert qb.params == {"query": {"loyalty_level": 1}, "fields": ["_city"]}
    assert qb.preview_rows == 3
    qb.load({"loyalty_level": 1}, fields=["vip"])
    assert qb.fields == ["vip"]
    qb.clear()
    assert qb.query == {}
    assert qb.fields == ["vip"]
    assert qb.preview_rows == 3
    assert [i["field"] for i in qb.document["root"]["items"]] == [""]


def test_load_of_an_unknown_field_guesses_its_type_from_the_value() -> None:
    qb = builder()
    qb.load({"tier": {"$gte": 2}, "vip": True})
    assert qb.query == {"tier": {"$gte": 2}, "vip": True}
    assert qb.warnings == ["Row 1: unknown field 'tier': it is not in the field list"]
    assert {f["name"]: f["kind"] for f in qb.catalog["fields"]}["tier"] == "int"


def test_import_message_loads_or_says_why() -> None:
    qb = builder()
    send(qb, {"kind": "import", "text": '{"vip": false}'})
    assert qb.query == {"vip": False}
    assert qb.report["import_error"] is None
    before = copy.deepcopy(qb.document)
    send(qb, {"kind": "import", "text": "{vip: false}"})
    assert qb.report["import_error"].startswith("the text is not valid JSON: ")
    assert qb.document == before
    assert qb.query == {"vip": False}
    send(qb, {"kind": "import", "text": '{"phones": {"$size": 1}}'})
    assert "$size" in qb.report["import_error"]
    send(qb, {"kind": "import", "text": '{"vip": true}'})
    assert qb.report["import_error"] is None


# -- Preview against the demo service --------------------------------------------------


def test_preview_reads_the_first_rows_of_the_query(client: sn.Client, demo: DemoService) -> None:
    qb = QueryBuilder(client, demo.db_id, sample=0)
    qb.load({"vip": True}, fields=["_city", "vip"])
    edit(qb, preview_rows="4")
    demo.requests.clear()
    send(qb, {"kind": "preview"})
    preview = qb.preview_state
    assert preview["state"] == "done", preview
    assert preview["query_json"] == qb.report["query_json"] == '{"vip":true}'
    assert qb.result is not None
    assert qb.result["profile_id"].nunique() == 4
    vip = [p["id"] for p in demo.profiles if p.get("vip") is True][:4]
    assert list(pd.unique(qb.result["profile_id"])) == vip
    assert "sn-preview-table" in preview["html"]
    assert EMPTY not in preview["html"]
    sent = [r.params for r in demo.requests if r.method == "profiles/list"]
    assert sent
    assert sent[0]["limit"] == 4
    assert sent[0]["query"] == {"vip": True}
    assert sent[0]["fields"] == ["_city", "vip"]


def test_preview_of_no_profile_says_so_without_a_table(
    client: sn.Client, demo: DemoService
) -> None:
    qb = QueryBuilder(client, demo.db_id, sample=0)
    qb.load({"_city": "Atlantis"})
    qb.preview()
    assert qb.preview_state["state"] == "done"
    assert EMPTY in qb.preview_state["html"]
    assert "<table" not in qb.preview_state["html"]
    assert qb.result is not None
    assert qb.result.empty


def test_a_failed_preview_keeps_the_last_result_marked_out_of_date(
    client: sn.Client, demo: DemoService
) -> None:
    qb = QueryBuilder(client, demo.db_id, sample=0)
    qb.load({"vip": True})
    qb.preview()
    good = qb.preview_state
    assert good["state"] == "done"
    qb.load({"vip": False})
    demo.add_fault("profiles/list", "api_error", code=3, text="busy")
    qb.preview()
    failed = qb.preview_state
    assert failed["state"] == "error"
    assert failed["message"].startswith("Preview failed: APIError: ")
    assert "busy" in failed["message"]
    assert "from_id" not in failed["message"]  # advice for code, not for the builder
    assert failed["html"] == good["html"]
    assert "sn-preview-table" in failed["html"]
    # what the table shows, for the browser to tell what changed since
    assert failed["query_json"] == good["query_json"] != qb.report["query_json"]
    assert failed["fields"] == good["fields"] == []
    assert qb.result is not None
    assert bool(qb.result["vip"].all())


def test_preview_without_client_or_runner_says_what_it_needs() -> None:
    qb = builder()
    qb.preview()
    assert qb.preview_state["state"] == "error"
    assert qb.preview_state["message"] == (
        "Preview failed: InvalidInput: Preview needs a client and db_id, or a runner"
    )


def test_a_runner_gets_params_and_preview_shows_the_first_profiles() -> None:
    calls: list[dict[str, Any]] = []

    def runner(params: dict[str, Any]) -> pd.DataFrame:
        calls.append(params)
        return pd.DataFrame({"profile_id": ["a", "a", "b", "c"], "_city": ["x", "x", "y", "z"]})

    qb = builder(runner=runner)
    edit(qb, rule("r2", "_city", "exists"), preview_rows="2")
    qb.preview()
    assert calls == [{"query": {"_city": {"$exists": True}}}]
    assert qb.result is not None
    assert list(qb.result["profile_id"]) == ["a", "a", "b"]
    assert "3 rows (2 profiles)" in qb.preview_state["html"]


SECRET = "tok3n-S3CR3T-4e5f6a7b8c"
secret_svc, secret_demo = served_and_cleared("secret_svc", profiles=20, seed=5, token=SECRET)


def test_the_token_never_reaches_a_trait(secret_demo: DemoService) -> None:
    with sn.Client(secret_demo.base_url, SECRET, retry=False) as client:
        # the field list fails (it is inferred from a sample), then the sample page fails
        secret_demo.add_fault("databases/fields_get", "api_error", code=5, text=f"bad {SECRET}")
        secret_demo.add_fault(
            "profiles/list", "api_error", code=5, text=f"echo {SECRET} here", after=1
        )
        with pytest.warns(UserWarning, match="inferred from") as caught:
            qb = QueryBuilder(client, secret_demo.db_id, sample=5)
        assert all(SECRET not in str(w.message) for w in caught)
        assert "bad ***" in str(caught[0].message)
        assert qb.notices == [
            "could not read a sample page for value suggestions: APIError: "
            + qb.notices[0].split("APIError: ", 1)[1]
        ]
        assert "echo *** here" in qb.notices[0]
        qb.load({"_city": "Kazan"})
        secret_demo.add_fault("profiles/list", "api_error", code=5, text=f"again {SECRET} x")
        send(qb, {"kind": "preview"})
        assert qb.preview_state["state"] == "error"
        assert "again *** x" in qb.preview_state["message"]
        send(qb, {"kind": "import", "text": '{"_city": ' + json.dumps(SECRET) + "x"})
        assert qb.report["import_error"].startswith("the text is not valid JSON")
        assert SECRET not in wire(qb)


# -- the field list, titles and suggestions ------------------------------------------------


def test_fields_come_by_title_and_resolve_from_a_title_or_label(
    client: sn.Client, demo: DemoService
) -> None:
    qb = QueryBuilder(client, demo.db_id, sample=0)
    fields = qb.catalog["fields"]
    labels = [f["label"] for f in fields]
    assert "City (_city)" in labels
    assert "Loyalty level (loyalty_level)" in labels
    categories = [f["category"] for f in fields]
    assert categories == sorted(categories, key=["system", "custom", "subscription"].index)
    edit(qb, rule("r2", "city", "equal", "Kazan"), rule("r3", "Loyalty level (loyalty_level)",
                                                           "less", "3"))  # fmt: skip
    assert qb.query == {"_city": "Kazan", "loyalty_level": {"$lt": 3}}
    qb.load({"_city": "Kazan"})
    assert qb.document["root"]["items"][0]["field"] == "City (_city)"
    assert {f["name"] for f in qb.catalog["subscription_fields"]} >= {"channel", "status"}


def test_an_inferred_field_list_warns_at_the_callers_line(
    client: sn.Client, demo: DemoService
) -> None:
    demo.add_fault("databases/fields_get", "api_error", code=404, text="unknown method")
    with pytest.warns(UserWarning, match="inferred from") as caught:
        qb = QueryBuilder(client, demo.db_id, sample=0)
    assert [r.filename for r in caught] == [__file__]
    assert qb.catalog["complete"] is False
    edit(qb, rule("r2", "_city", "exists"), fields=["_id", "subscriptions"])
    qb.preview()
    assert qb.result is not None, qb.preview_state
    assert {"profile_id", "channel"} <= set(qb.result.columns)


def test_an_unreadable_field_list_is_a_notice_and_names_still_work(
    client: sn.Client, demo: DemoService
) -> None:
    demo.add_fault("databases/fields_get", "status", status=500, times=None)
    demo.add_fault("profiles/list", "status", status=500, times=None)
    qb = QueryBuilder(client, demo.db_id)
    assert len(qb.notices) == 1
    assert qb.notices[0].startswith("could not read the field list: ")
    edit(qb, rule("r2", "vip", "equal", "x"))
    assert qb.query == {"vip": "x"}  # an unknown field is text
    assert qb.warnings == ["Row 1: unknown field 'vip': it is not in the field list"]


def test_channels_statuses_and_sampled_values_are_suggested(
    client: sn.Client, demo: DemoService
) -> None:
    qb = QueryBuilder(client, demo.db_id, sample=40)
    fields = {f["name"]: f for f in qb.catalog["fields"]}
    assert fields["subscriptions.channel"]["suggestions"][: len(CHANNELS)] == list(CHANNELS)
    assert fields["subscriptions.status"]["suggestions"][: len(STATUSES)] == list(STATUSES)
    seen = {p["_city"] for p in demo.profiles[:40] if p.get("_city")}
    assert set(fields["_city"]["suggestions"]) == seen
    edit(qb, rule("r2", "_city", "equal", "Atlantis"))  # not among them: still a value
    assert qb.query == {"_city": "Atlantis"}


def test_the_sample_page_is_read_through_the_profiles_reader(
    client: sn.Client, demo: DemoService
) -> None:
    qb = QueryBuilder(client, demo.db_id, sample=500)
    assert [r.method for r in demo.requests] == ["databases/fields_get", "profiles/list"]
    sent = demo.requests[1].params
    demo.requests.clear()
    pages = sn.ProfilesRequest(client, demo.db_id, limit=500, max_profiles=500, lookahead=0).pages()
    with closing(pages):
        first = next(pages)
    assert sent == demo.requests[0].params == {"db_id": demo.db_id, "format": "json", "limit": 500}
    assert qb.notices == []
    cities = Counter(p["_city"] for p in first.records if p.get("_city"))
    city = next(f for f in qb.catalog["fields"] if f["name"] == "_city")
    assert city["suggestions"] == [c for c, _ in cities.most_common(50)]


def test_a_sample_page_that_fails_is_a_notice(client: sn.Client, demo: DemoService) -> None:
    demo.add_fault("profiles/list", "api_error", code=3, text="busy")
    qb = QueryBuilder(client, demo.db_id)
    assert qb.notices == [
        "could not read a sample page for value suggestions: APIError: "
        + qb.notices[0].split("APIError: ", 1)[1]
    ]
    assert "busy" in qb.notices[0]
    fixed = QueryBuilder(client, demo.db_id, suggestions={"_city": ["Omsk"]})
    assert next(f for f in fixed.catalog["fields"] if f["name"] == "_city")["suggestions"] == [
        "Omsk"
    ]


def test_fields_as_names_a_frame_or_a_dict_and_nothing_else() -> None:
    names = QueryBuilder(fields=["_city", "loyalty_level"])
    assert {f["name"]: f["kind"] for f in names.catalog["fields"]} == {
        "_id": "string", "subscriptions": "array", "_city": "string", "loyalty_level": "string"
    }  # fmt: skip
    frame = pd.DataFrame({"name": ["vip"], "type": ["BOOL"], "title": ["VIP"]})
    by_frame = QueryBuilder(fields=frame)
    assert {f["name"]: f["kind"] for f in by_frame.catalog["fields"]}["vip"] == "boolean"
    edit(by_frame, rule("r2", "vip", "equal", "TRUE"))
    assert by_frame.query == {"vip": True}
    with pytest.raises(sn.InvalidInput, match="fields must be"):
        QueryBuilder(fields=3)


# -- the package ----------------------------------------------------------------------


def test_doctests_of_the_widget_modules() -> None:
    for module in (builder_module, check_module, load_module):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.attempted > 0, module.__name__
        assert result.failed == 0, module.__name__


def test_the_package_only_re_exports_the_builder() -> None:
    import stoplist_nb.widgets as package

    assert package.QueryBuilder is QueryBuilder is builder_module.QueryBuilder
    assert QueryBuilder.__module__ == "stoplist_nb.widgets.builder"
    assert package.OPERATORS is OPERATORS is operators_module.OPERATORS
    assert package.__all__ == ["OPERATORS", "QueryBuilder"]


def test_check_load_and_catalog_import_no_widget_library() -> None:
    for module in (check_module, load_module, catalog_module):
        tree = ast.parse(pathlib.Path(module.__file__ or "").read_text(encoding="utf-8"))
        imported = {
            name.split(".")[0]
            for node in ast.walk(tree)
            for name in (
                [a.name for a in node.names] if isinstance(node, ast.Import)
                else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            )
        }  # fmt: skip
        assert not imported & {"ipywidgets", "anywidget", "traitlets"}, module.__name__


@pytest.mark.slow
def test_import_pulls_no_optional_packages() -> None:
    code = (
        "import sys, stoplist_nb;"
        "bad = [m for m in ('ipywidgets', 'anywidget', 'stoplist_nb.widgets') if m in sys.modules];"
        "print(bad); sys.exit(bool(bad))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


# -- what arrives from the browser or from load() raises only the documented error --------


@pytest.mark.parametrize(
    "text",
    [
        '{"$and": [' * 5000 + '{"vip": true}' + "]}" * 5000,
        '{"vip": true, "vip": false}',
        '{"a.$b": 1}',
    ],
)
def test_the_import_box_shows_why_a_hostile_text_cannot_load(text: str) -> None:
    qb = builder()
    qb.load({"vip": False})
    before = copy.deepcopy(qb.document)
    send(qb, {"kind": "import", "text": text})
    assert qb.report["import_error"]
    assert qb.document == before
    with pytest.raises(sn.InvalidQuery):
        qb.load(text)


@pytest.mark.parametrize("text", [None, 7, ["{}"], {"a": 1}])
def test_an_import_message_without_text_is_told_in_the_import_box(text: Any) -> None:
    qb = builder()
    send(qb, {"kind": "import", "text": text})
    assert qb.report["import_error"].startswith("the text to load must be text, not ")


@pytest.mark.parametrize(
    ("part", "wrong"),
    [("operator", ["in"]), ("operator", {"x": 1}), ("value", {"a": 1}), ("ignore_case", [1])],
)
def test_a_document_with_an_unhashable_part_is_reported_not_raised(part: str, wrong: Any) -> None:
    qb = builder()
    bad = rule("r2", "_city", "in", ["Kazan"])
    bad[part] = wrong
    qb.document = {"rev": 5, "root": {"id": "g1", "type": "group", "items": [bad]}}
    assert qb.report["ok"] is False
    assert qb.report["items"]["r2"]["errors"]
    with pytest.raises(sn.InvalidQuery, match="Row 1: "):
        _ = qb.params


def test_a_document_with_fields_as_a_string_keeps_no_fields_on_load_or_clear() -> None:
    qb = builder()
    qb.document = {**qb.document, "fields": "_city"}
    assert qb.report["ok"] is False
    qb.load({"vip": True})
    assert qb.fields == []
    assert qb.document["fields"] == []
    qb.document = {**qb.document, "fields": "_city"}
    qb.clear()
    assert qb.document["fields"] == []
