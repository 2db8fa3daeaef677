"""The query builder and the progress bars as a person sees them: JupyterLab in Chromium.

One JupyterLab server and one headless Chromium serve the whole module: a
notebook connects to the embedded demo service, reads profiles (a tqdm bar)
and shows a :class:`~stoplist_nb.widgets.QueryBuilder`; each test runs the
builder's cell again for a fresh builder and drives it with clicks and
keystrokes. Needs Debian's ``chromium`` (``apt-get install chromium``); without
it the module is skipped, except under CI (``CI`` set), where it fails.

Screenshots are the run's artifacts: they go to ``$STOPLIST_NB_SCREENSHOTS``
when set, else to ``build/screenshots/`` in the checkout (ignored by git, kept
after the run); a failed test prints the path of its own.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("playwright", reason="the browser tests need playwright (the test extra)")

from browser_harness import (
    INSTALL_HINT,
    LabServer,
    NotebookPage,
    WidgetArea,
    find_chromium,
    open_browser,
    write_notebook,
)
from playwright.sync_api import FloatRect, Locator, expect

from stoplist_nb.query import And, Condition, Nor, Or

pytestmark = [pytest.mark.slow, pytest.mark.browser]

NOTEBOOK = (
    "import stoplist_nb as sn\n\nclient = sn.connect(demo=True)\nDB_ID = 1",
    "df = sn.read_profiles(client, DB_ID)  # a progress bar while it reads\nlen(df)",
    "from stoplist_nb.widgets import QueryBuilder\n\nqb = QueryBuilder(client, DB_ID)\nqb",
)
PROGRESS_CELL, BUILDER_CELL = 1, 2


@pytest.fixture(scope="module")
def notebook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NotebookPage]:
    """The notebook open in JupyterLab with every cell run; all of it stopped afterwards."""
    chromium = find_chromium()
    if chromium is None:
        if os.environ.get("CI"):
            pytest.fail(INSTALL_HINT)
        pytest.skip(INSTALL_HINT)
    home = tmp_path_factory.mktemp("browser")
    checkout = Path(__file__).resolve().parent.parent
    shots = Path(os.environ.get("STOPLIST_NB_SCREENSHOTS") or checkout / "build" / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    root = home / "root"
    root.mkdir()
    write_notebook(root / "builder.ipynb", NOTEBOOK)
    server = LabServer(root, home)
    with contextlib.ExitStack() as stack:
        server.start()
        stack.callback(server.stop)
        context = stack.enter_context(open_browser(chromium, home / "chromium-profile"))
        page = NotebookPage(context.new_page(), shots)
        try:
            page.open(server.url("lab/tree/builder.ipynb?reset"))
            page.page.keyboard.press("Control+b")  # the file browser off: more room for outputs
            page.run_all()
        except Exception:
            print(f"screenshot: {page.shot('notebook-did-not-run')}; server log: {server.log_path}")
            raise
        yield page
    assert server.kernel_pids() == [], "a kernel outlived the server"


@pytest.fixture
def qb(notebook: NotebookPage, request: pytest.FixtureRequest) -> Iterator[WidgetArea]:
    """A fresh builder (its cell run again); a screenshot of its cell after the test."""
    notebook.run_cell(BUILDER_CELL)
    area = WidgetArea(notebook.output(BUILDER_CELL).locator(".sn-query-builder"), notebook.shots)
    expect(area.root).to_be_visible()
    failed = request.session.testsfailed
    yield area
    path = notebook.shot(re.sub(r"\W+", "-", request.node.name), notebook.cell(BUILDER_CELL))
    if request.session.testsfailed > failed:
        reporter = request.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"\n{request.node.nodeid}: screenshot {path}")


def _rows(area: WidgetArea, count: int) -> list[WidgetArea]:
    """The ``count`` rows in ``area``, once the page shows that many."""
    rows = area.by_class("sn-row")
    expect(rows).to_have_count(count)
    return [WidgetArea(rows.nth(i)) for i in range(count)]


def _new_row(area: WidgetArea) -> WidgetArea:
    """Press the group's "add condition" and return the row it adds."""
    rows = area.by_class("sn-row")
    before = rows.count()
    area.by_class("sn-add-row").first.click()
    return _rows(area, before + 1)[-1]


#: The value box each field of the demo gets from the builder (its CSS class).
VALUE_BOX = {"_city": "text", "vip": "bool", "score": "number", "loyalty_level": "number"}


def _fill_row(row: WidgetArea, field: str, op: str, value: str | None = None) -> None:
    """Type ``field``, pick ``op`` by its label, type ``value`` and leave the box.

    The builder swaps the value box when the field's kind or the operator needs
    another one; typing waits for the box that fits, so no keystroke goes into
    one about to be replaced.
    """
    field_input = row.by_class("sn-field").locator("input")
    if field_input.input_value() != field:  # retyped, it would pass through other kinds
        row.type_into(field_input, field)
        row.commit(field_input)
    row.by_class("sn-operator").locator("select").select_option(label=op)
    kind = "tags" if op in ("isin", "notin") else VALUE_BOX[field]
    box = row.by_class(f"sn-value-{kind}")
    expect(box).to_be_visible()
    if value is not None:
        typed = box.locator("input").first
        row.type_into(typed, value)
        row.commit(typed)
        expect(typed).to_have_value(value)


def _add_tag(box: WidgetArea, text: str) -> None:
    """Type ``text`` in a tag box and press Enter; wait, as a person would, for the tag."""
    entry = box.by_class("sn-tag-input").locator("input")
    box.type_into(entry, text, enter=True)
    expect(box.by_class("sn-tags")).to_contain_text(text)
    expect(entry).to_have_value("")


def test_the_notebook_draws_every_widget(notebook: NotebookPage) -> None:
    builder = notebook.output(BUILDER_CELL)
    expect(builder.locator(".sn-query-builder")).to_be_visible()
    assert builder.locator(".jupyter-widgets").count() > 20  # buttons, boxes, rows: all drawn
    assert notebook.widget_errors() == 0
    notebook.shot("notebook")


def test_reading_profiles_shows_a_progress_bar_widget(notebook: NotebookPage) -> None:
    bar = notebook.output(PROGRESS_CELL)
    expect(bar.locator(".widget-hprogress .progress-bar")).to_be_visible()
    expect(bar.locator(".widget-html").first).to_contain_text("profiles/list")
    text = bar.inner_text()
    assert re.search(r"\b2000\b", text), text  # the demo's 2000 profiles, read to the end
    assert notebook.widget_errors() == 0
    notebook.shot("progress-bar", bar)


def test_field_operator_and_value_make_the_query(qb: WidgetArea) -> None:
    row = _new_row(qb)
    _fill_row(row, "_city", "!=", "Kazan")
    assert qb.wait_json({"_city": {"$ne": "Kazan"}}) == {"_city": {"$ne": "Kazan"}}
    expect(qb.by_class("sn-json")).not_to_have_class(re.compile(r"\bsn-json-stale\b"))
    row.by_class("sn-operator").locator("select").select_option(label="startswith")
    assert qb.wait_json({"_city": {"$regex": "^Kazan"}}) == {"_city": {"$regex": "^Kazan"}}


def test_a_negated_or_group_beside_a_row(qb: WidgetArea) -> None:
    _fill_row(_new_row(qb), "_city", "==", "Kazan")
    qb.by_class("sn-root-group").locator(".sn-add-group").first.click()
    group = WidgetArea(qb.by_class("sn-subgroup"))
    inner = [_new_row(group), _new_row(group)]
    _fill_row(inner[0], "vip", "==")  # a checkbox, ticked: vip is true
    _fill_row(inner[1], "score", ">", "5")
    group.by_class("sn-join-mode").locator("button", has_text="OR").click()
    group.by_class("sn-not").click()
    expected = And(
        [
            Condition("_city", "$eq", "Kazan"),
            Nor([Or([Condition("vip", "$eq", True), Condition("score", "$gt", 5)])]),
        ]
    ).to_mongo()
    assert qb.wait_json(expected) == expected
    expect(inner[1].by_class("sn-join")).to_have_text("OR")


def test_preview_draws_a_table_with_its_row_count(qb: WidgetArea) -> None:
    _fill_row(_new_row(qb), "_city", "==", "Kazan")
    qb.wait_json({"_city": "Kazan"})
    qb.by_class("sn-preview").click()
    table = qb.root.locator(".sn-output table")
    expect(table).to_be_visible()
    count = qb.root.locator(".sn-output .sn-preview-count")
    expect(count).to_be_visible()
    rows = int(re.search(r"(\d+) rows", count.inner_text())[1])  # type: ignore[index]
    body = table.locator("tbody tr")
    assert body.count() == min(rows, 20) > 0
    headers = table.locator("thead th").all_inner_texts()
    city = [h.strip() for h in headers].index("_city")
    cities = {r.locator("td").nth(city).inner_text() for r in body.all()}
    assert cities == {"Kazan"}


def test_a_changed_query_marks_the_preview_out_of_date(qb: WidgetArea) -> None:
    row = _new_row(qb)
    _fill_row(row, "_city", "==", "Kazan")
    qb.wait_json({"_city": "Kazan"})
    qb.by_class("sn-preview").click()
    expect(qb.root.locator(".sn-output .sn-preview-count")).to_be_visible()
    expect(qb.root.locator(".sn-output .sn-preview-stale")).to_have_count(0)
    _fill_row(row, "_city", "==", "Moscow")
    expect(qb.root.locator(".sn-output .sn-preview-stale")).to_be_visible()
    qb.shot("preview-out-of-date")


def test_enter_adds_a_field_to_return_and_a_refused_one_says_why(qb: WidgetArea) -> None:
    fields = WidgetArea(qb.by_class("sn-fields"))
    entry = fields.by_class("sn-tag-input").locator("input")
    fields.type_into(entry, "_city", enter=True)
    expect(fields.by_class("sn-tags")).to_contain_text("_city")
    expect(entry).to_have_value("")
    fields.type_into(entry, "no_such_field", enter=True)
    expect(fields.by_class("sn-tag-error")).to_contain_text("no_such_field")
    expect(fields.by_class("sn-tags")).not_to_contain_text("no_such_field")
    qb.shot("refused-field")
    fields.type_into(entry, "_fname")
    fields.by_class("sn-tag-add").click()
    expect(fields.by_class("sn-tags")).to_contain_text("_fname")
    expect(fields.by_class("sn-tag-error")).to_have_text("")


def test_enter_adds_the_values_of_an_isin_condition(qb: WidgetArea) -> None:
    row = _new_row(qb)
    _fill_row(row, "_city", "isin")
    values = WidgetArea(row.by_class("sn-value"))
    for city in ("Kazan", "Moscow"):
        _add_tag(values, city)
    expected = {"_city": {"$in": ["Kazan", "Moscow"]}}
    assert qb.wait_json(expected) == expected


def test_a_bad_value_marks_its_row_and_turns_preview_off_until_fixed(qb: WidgetArea) -> None:
    row = _new_row(qb)
    error = re.compile(r"\bsn-row-error\b")
    columns = ("sn-field", "sn-operator", "sn-value-slot")
    widths = [_box(row.by_class(name))["width"] for name in columns]
    for bad in ("2.5", "many"):  # a fraction in a whole-number field; not a number at all
        _fill_row(row, "loyalty_level", ">", bad)
        expect(row.root).to_have_class(error)
        # the error text beside the row wraps; the columns keep their widths
        assert [_box(row.by_class(name))["width"] for name in columns] == widths
        expect(row.by_class("sn-row-message")).to_contain_text("loyalty_level")
        expect(qb.by_class("sn-errors")).to_contain_text("Row 1")
        expect(qb.by_class("sn-preview")).to_be_disabled()
        expect(qb.by_class("sn-json")).to_have_class(re.compile(r"\bsn-json-stale\b"))
        qb.shot(f"row-error-{bad}")
    _fill_row(row, "loyalty_level", ">", "3")
    expect(row.root).not_to_have_class(error)
    expect(row.by_class("sn-row-message")).to_have_text("")
    expect(qb.by_class("sn-errors")).to_have_text("")
    expect(qb.by_class("sn-preview")).to_be_enabled()
    assert qb.wait_json({"loyalty_level": {"$gt": 3}}) == {"loyalty_level": {"$gt": 3}}
    expect(qb.by_class("sn-json")).not_to_have_class(re.compile(r"\bsn-json-stale\b"))


def test_the_json_toggle_hides_and_shows_the_query(qb: WidgetArea) -> None:
    expect(qb.by_class("sn-json")).to_be_visible()
    qb.by_class("sn-json-toggle").click()
    expect(qb.by_class("sn-json")).to_be_hidden()
    qb.by_class("sn-json-toggle").click()
    expect(qb.by_class("sn-json")).to_be_visible()
    assert qb.json() == {}


def test_the_preview_table_stays_inside_the_output_area(
    qb: WidgetArea, notebook: NotebookPage
) -> None:
    area = notebook.output(BUILDER_CELL).locator(".jp-OutputArea-output").first
    right = _box(area)["x"] + _box(area)["width"]
    qb.by_class("sn-preview").click()  # every field: a wide table in a scrolling box
    table = qb.root.locator(".sn-output .sn-preview-table")
    expect(table).to_be_visible()
    shown = table.locator("xpath=..")
    assert _box(shown)["x"] + _box(shown)["width"] <= right + 1
    for name in ("_fname", "_city"):
        _add_tag(WidgetArea(qb.by_class("sn-fields")), name)
    qb.by_class("sn-preview").click()  # the chosen fields only: the table itself fits
    expect(qb.root.locator(".sn-output .sn-preview-count")).to_contain_text("chosen fields")
    expect(table.locator("thead th", has_text="_fname")).to_be_visible()
    assert table.locator("thead th", has_text="_sex").count() == 0
    assert _box(table)["x"] + _box(table)["width"] <= right + 1


def _box(locator: Locator) -> FloatRect:
    box = locator.bounding_box()
    assert box is not None, "not drawn"
    return box


def _expect_operator(row: WidgetArea, label: str) -> None:
    """Wait until the row's operator drop-down shows ``label``."""
    chosen = row.by_class("sn-operator").locator("select option:checked")
    expect(chosen).to_have_text(label)


def test_retyping_a_field_keeps_its_operator_and_value(qb: WidgetArea) -> None:
    row = _new_row(qb)
    _fill_row(row, "score", ">", "5")
    assert qb.wait_json({"score": {"$gt": 5}}) == {"score": {"$gt": 5}}
    field = row.by_class("sn-field").locator("input")
    # Every keystroke reaches the kernel: "s" ... "scor" are text fields, whose
    # operators lack ">", and their replies come back after the last keystroke.
    row.type_into(field, "score")
    row.commit(field)
    expect(qb.by_class("sn-json")).to_have_text(re.compile(r'\{"score":\{"\$gt":5\}\}'))
    _expect_operator(row, ">")
    expect(row.by_class("sn-value-number").locator("input")).to_have_value("5")
    row.type_into(field, "loyalty_level")  # another kind that holds ">": it stays
    row.commit(field)
    expect(row.by_class("sn-field").locator("input")).to_have_value("loyalty_level")
    _expect_operator(row, ">")
    expect(row.by_class("sn-value-number").locator("input")).to_have_value("")
    row.type_into(field, "vip")  # a boolean has no ">": back to "=="
    row.commit(field)
    expect(row.by_class("sn-value-bool")).to_be_visible()
    _expect_operator(row, "==")
    assert qb.wait_json({"vip": True}) == {"vip": True}


def test_missing_values_show_as_empty_cells(qb: WidgetArea) -> None:
    _fill_row(_new_row(qb), "_city", "==", "Kazan")
    qb.wait_json({"_city": "Kazan"})
    for name in ("_bdate", "_sex", "subscriptions"):  # some Kazan rows lack each
        _add_tag(WidgetArea(qb.by_class("sn-fields")), name)
    qb.by_class("sn-preview").click()
    cells = qb.root.locator(".sn-output .sn-preview-table tbody td")
    expect(cells.first).to_be_visible()
    texts = [t.strip() for t in cells.all_inner_texts()]
    assert not {"<NA>", "NaT", "nan", "None"} & set(texts)
    assert "" in texts  # there were missing values to show


def test_an_empty_tag_list_draws_no_box(qb: WidgetArea) -> None:
    fields = WidgetArea(qb.by_class("sn-fields"))
    expect(fields.by_class("sn-tags")).to_be_hidden()
    expect(fields.by_class("sn-tags-empty")).to_have_text("all fields")
    _add_tag(fields, "_city")
    expect(fields.by_class("sn-tags")).to_be_visible()
    expect(fields.by_class("sn-tags-empty")).to_be_hidden()
    fields.by_class("sn-tags").locator(".jupyter-widget-tag", has_text="_city").locator(
        "i"
    ).click()  # the tag's own x
    expect(fields.by_class("sn-tags")).to_be_hidden()
    expect(fields.by_class("sn-tags-empty")).to_be_visible()
    row = _new_row(qb)
    _fill_row(row, "_city", "isin")
    expect(row.by_class("sn-value-tags").locator(".sn-tags")).to_be_hidden()
    qb.shot("empty-tag-lists")


def test_each_preview_row_names_its_subscription(qb: WidgetArea, notebook: NotebookPage) -> None:
    area = notebook.output(BUILDER_CELL).locator(".jp-OutputArea-output").first
    right = _box(area)["x"] + _box(area)["width"]
    _fill_row(_new_row(qb), "_city", "==", "Kazan")
    qb.wait_json({"_city": "Kazan"})
    qb.by_class("sn-preview").click()
    table = qb.root.locator(".sn-output .sn-preview-table")
    expect(table).to_be_visible()
    heads = [h.strip() for h in table.locator("thead th").all_inner_texts()]
    assert heads[:4] == ["profile_id", "channel", "status", "contact"], heads
    assert "_city" in heads, heads
    assert len(heads) <= 12, heads
    rows = [tuple(r.locator("td").all_inner_texts()[:4]) for r in table.locator("tbody tr").all()]
    assert len(set(rows)) == len(rows) > 1  # no two rows look alike
    assert _box(table.locator("xpath=.."))["x"] + _box(table.locator("xpath=.."))["width"] <= (
        right + 1
    )
    qb.shot("preview-subscription-rows")
    for name in ("_fname", "subscriptions"):
        _add_tag(WidgetArea(qb.by_class("sn-fields")), name)
    qb.by_class("sn-preview").click()
    expect(qb.root.locator(".sn-output .sn-preview-count")).to_contain_text("chosen fields")
    heads = [h.strip() for h in table.locator("thead th").all_inner_texts()]
    assert heads == ["profile_id", "channel", "status", "contact", "_fname"], heads
