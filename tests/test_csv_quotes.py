"""Quotes and line ends in a hashed CSV: every line of the file is one row.

With CSV quoting, one quote that does not close on its line joins the lines up
to the next quote into one field: a 400,000-line list can come back as about
290,000 rows without a word. The reader does not read quotes as quoting: each
line is a row (kept, with the "not MD5" warning where its hash is damaged) or a
row of the wrong number of fields (skipped, with its warning), and a field
quoted whole loses its quotes. Each case is checked against the lines of the
file as pyarrow ends them (``\\n``, ``\\r\\n``, a lone ``\\r``; blank lines are no
rows), through ``read_hashed_csv``, block by block, and end to end from the
demo service into a frame and into a Parquet file.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
import re
import warnings
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest
from archives import make_zip

import stoplist_nb as sn
from stoplist_nb.demo import DemoService
from stoplist_nb.suppression.archive import HashedBatches, read_hashed_csv

N = 20_000
H = [hashlib.md5(f"user{i}@example.org".encode()).hexdigest() for i in range(N)]
A = "0cc175b9c0f1b6a831c399e269772661"
LINE_END = re.compile(r"\r\n|\r|\n")
BAD = re.compile(r"([\d,]+) of [\d,]+ rows have no valid MD5")
SKIPPED = re.compile(r"([\d,]+) rows with the wrong number of fields skipped")

Edit = Callable[[list[str], int], None]


def zip_list(text: str) -> bytes:
    return make_zip({"list.md5.csv": text.encode()})


def rows_of(text: str, header: bool) -> int:
    """The rows a file must give: its non-empty lines as pyarrow ends them, less the header."""
    return sum(1 for line in LINE_END.split(text) if line) - header


def read(data: bytes) -> tuple[pd.DataFrame, int, int]:
    """read_hashed_csv, and the rows its warning reports not MD5 and skipped."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        frame = read_hashed_csv(data)
    text = " ".join(str(w.message) for w in record)
    assert len(record) <= 1, text

    def count(pattern: re.Pattern[str]) -> int:
        found = pattern.search(text)
        return int(found[1].replace(",", "")) if found else 0

    return frame, count(BAD), count(SKIPPED)


def pair(lines: list[str], at: int) -> tuple[int, int]:
    """Two lines three apart around ``at``, within the file."""
    return (at, at + 3) if at + 3 < len(lines) else (at - 3, at)


def set_line(make: Callable[[str], str]) -> Edit:
    def edit(lines: list[str], at: int) -> None:
        lines[at] = make(lines[at])

    return edit


def span(first: Callable[[str], str], last: Callable[[str], str]) -> Edit:
    def edit(lines: list[str], at: int) -> None:
        a, b = pair(lines, at)
        lines[a], lines[b] = first(lines[a]), last(lines[b])

    return edit


def insert(line: str) -> Edit:
    def edit(lines: list[str], at: int) -> None:
        lines.insert(at, line)

    return edit


def every_seventh(lines: list[str], at: int) -> None:
    for i in range(at % 7, len(lines), 7):
        lines[i] = lines[i].replace(";", ';"')


def kind(line: str, new: str) -> str:
    return line.split(";")[0] + ";" + new


# The edit, then the rows it leaves without a valid MD5 and those of the wrong width.
VARIANTS: dict[str, tuple[Edit, int, int]] = {
    "quote opens the hash": (set_line(lambda s: '"' + s), 1, 0),
    "quote inside the hash": (set_line(lambda s: s[:9] + '"' + s[9:]), 1, 0),
    "quote closes the hash": (set_line(lambda s: s.replace(";", '";')), 1, 0),
    "quote opens the kind": (set_line(lambda s: kind(s, '"email')), 0, 0),
    "quote inside the kind": (set_line(lambda s: kind(s, 'em"ail')), 0, 0),
    "quote closes the kind": (set_line(lambda s: kind(s, 'email"')), 0, 0),
    "kind quoted across lines": (
        span(lambda s: kind(s, '"email'), lambda s: kind(s, 'email"')),
        0,
        0,
    ),
    "hash quoted across lines": (span(lambda s: '"' + s, lambda s: s.replace(";", '";')), 2, 0),
    "quoted value of two lines": (span(lambda s: '"' + s.split(";")[0], lambda s: s + '"'), 0, 1),
    "a lone quote line": (insert('"'), 0, 1),
    "a line of two quotes": (insert('""'), 0, 1),
    "stray CR in the hash": (set_line(lambda s: s[:16] + "\r" + s[16:]), 1, 1),
    "stray CR before the separator": (set_line(lambda s: s.replace(";", "\r;")), 1, 1),
    "stray CR in a quoted kind": (set_line(lambda s: kind(s, '"em\rail"')), 0, 1),
    "quote then CR": (set_line(lambda s: '"' + s + "\r"), 1, 0),
}


@pytest.mark.slow
@pytest.mark.parametrize("where", ["first", "middle", "last", "last, no newline"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_every_line_is_a_row_whatever_its_quotes(variant: str, where: str) -> None:
    edit, bad, skipped = VARIANTS[variant]
    lines = [f"{h};email" for h in H]
    at = {"first": 0, "middle": N // 2}.get(where, N - 1)
    edit(lines, at)
    text = "md5;type\n" + "\n".join(lines) + ("" if "no newline" in where else "\n")
    frame, got_bad, got_skipped = read(zip_list(text))
    assert (got_bad, got_skipped) == (bad, skipped)
    # Every line accounted for: a row of the frame, or one reported skipped.
    assert len(frame) + got_skipped == rows_of(text, header=True)
    original = {f"{h};email" for h in H}
    kept = [line[:32] for line in lines if line in original]
    keep = set(kept)
    assert [m for m in frame["md5"] if m in keep] == kept
    assert list(frame.columns) == ["md5", "type"]
    assert sum(frame.attrs["kinds"].values()) == len(frame)
    assert frame.attrs["kinds"]["email"] >= len(kept)
    # Small blocks: lines that straddle block ends give the same rows.
    with HashedBatches(zip_list(text), block_size=1 << 14) as reader:
        rows = [m for batch in reader for m in batch.column(0).to_pylist()]
    assert rows == [None if pd.isna(m) else m for m in frame["md5"]]


def test_quotes_on_every_seventh_line_stay_in_their_fields() -> None:
    lines = [f"{h};email" for h in H]
    every_seventh(lines, 0)
    frame, bad, skipped = read(zip_list("md5;type\n" + "\n".join(lines) + "\n"))
    assert (len(frame), bad, skipped) == (N, 0, 0)
    assert frame["md5"].tolist() == H
    assert frame.attrs["kinds"] == {"email": N - len(range(0, N, 7)), '"email': len(range(0, N, 7))}


@pytest.mark.parametrize(
    ("edit", "bad"),
    [
        (lambda s: '"' + s, 1),
        (lambda s: s + '"', 1),
        (lambda s: '"' + s + '"', 0),
        (lambda s: s[:5] + '"' + s[5:], 1),
        (lambda s: s + "\r", 0),
    ],
    ids=["opens", "closes", "quoted whole", "inside", "CR LF"],
)
@pytest.mark.parametrize("zipped", [True, False], ids=["zip", "bare-csv"])
def test_a_single_column_of_hashes(edit: Callable[[str], str], bad: int, zipped: bool) -> None:
    lines = list(H)
    lines[N // 3] = edit(lines[N // 3])
    text = "\n".join(lines) + "\n"
    frame, got_bad, skipped = read(zip_list(text) if zipped else text.encode())
    assert (len(frame), got_bad, skipped) == (N, bad, 0)
    assert frame["md5"].tolist()[N // 3 + 1 :] == H[N // 3 + 1 :]


def test_fields_quoted_on_one_line_are_read_without_their_quotes() -> None:
    text = "\n".join(
        [
            '"md5";"type";"note"',
            f'"{H[0]}";"email";"a ""quoted"" word"',
            f'"{H[1].upper()}";"";"x"',
            f'{H[2]};phone;"y"',
            f'"{H[3]}";"domain";""',
        ]
    )
    frame, bad, skipped = read(zip_list(text))
    assert (bad, skipped) == (0, 0)
    assert frame.columns.tolist() == ["md5", "type", "note"]
    assert frame["md5"].tolist() == H[:4]
    assert frame["type"].tolist() == ["email", pd.NA, "phone", "domain"]
    assert frame["note"].tolist() == ['a "quoted" word', "x", "y", pd.NA]
    assert frame.attrs["kinds"] == {"email": 1, "phone": 1, "domain": 1, "": 1}


def test_a_separator_inside_quotes_is_a_reported_row() -> None:
    # What quoting no longer hides: the row has one field too many, and says so.
    text = "md5;type\n" + f'{H[0]};email\n{H[1]};"a;b"\n{H[2]};phone\n'
    with pytest.warns(UserWarning, match="1 rows with the wrong number of fields skipped"):
        frame = read_hashed_csv(zip_list(text))
    assert frame["md5"].tolist() == [H[0], H[2]]


@pytest.mark.parametrize(
    "header",
    ['"md5;type', 'md5;type"', '"md5";"type', 'md5;"type"\r'],
    ids=["opens", "closes", "last opens", "CR LF"],
)
def test_a_header_with_stray_quotes_is_still_the_header(header: str) -> None:
    text = header + "\n" + "".join(f"{h};email\n" for h in H[:100])
    frame, bad, skipped = read(zip_list(text))
    assert (bad, skipped) == (0, 0)
    assert frame.columns.tolist() == ["md5", "type"]
    assert frame["md5"].tolist() == H[:100]
    assert frame.attrs["kinds"] == {"email": 100}


# --- from the demo service ---------------------------------------------------------


def big_list(edit: Edit) -> tuple[str, list[str]]:
    """The 400,000-line list of the report, edited; and its hashes."""
    hashes = [hashlib.md5(str(i).encode()).hexdigest() for i in range(400_000)]
    lines = [f"{h};email" for h in hashes]
    edit(lines, 123_457)
    return "md5;type\n" + "\n".join(lines) + "\n", hashes


def serve(demo: DemoService, body: bytes, total: int) -> None:
    """Make the next export end at once, reporting ``total``, and its download answer ``body``."""
    result = {"hashed_file": "suppress/x/list.md5.zip", "total": total}
    reply = {"error": 0, "data": {"status": "completed", "progress": 100, "result": result}}
    demo.plan_next_export(steps=0)
    demo.add_fault("tasks/status", "raw", text=json.dumps(reply))
    demo.add_fault("download", "raw", body=body, headers={"Content-Type": "application/zip"})


@pytest.mark.slow
@pytest.mark.parametrize(
    ("edit", "warning"),
    [
        (set_line(lambda s: f'"{A};email'), r"^1 of 400,000 rows have no valid MD5.*'\"0cc175"),
        (span(lambda s: kind(s, '"email'), lambda s: kind(s, 'email"')), None),
    ],
    ids=["unclosed quote before a hash", "kind quoted across lines"],
)
def test_a_served_list_loses_no_line(
    client: sn.Client,
    demo: DemoService,
    tmp_path: pathlib.Path,
    edit: Edit,
    warning: str | None,
) -> None:
    text, hashes = big_list(edit)
    body = zip_list(text)
    options: dict[str, Any] = {"poll_interval": 0.01, "progress": False}
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        serve(demo, body, 400_000)
        frame = sn.read_suppression_list(client, demo.suppress_id, **options)
        serve(demo, body, 400_000)
        done = sn.write_suppression_parquet(
            client, demo.suppress_id, tmp_path / "l.parquet", **options
        )
    messages = [str(w.message) for w in record]
    if warning is None:
        assert messages == []
    else:
        assert len(messages) == 2
        assert messages[0] == messages[1]
        assert re.search(warning, messages[0])
    assert len(frame) == done.rows == 400_000
    kept = [h for i, h in enumerate(hashes) if i not in (123_457, 123_460)]
    keep = set(kept)
    assert [m for m in frame["md5"] if m in keep] == kept
    back = pd.read_parquet(tmp_path / "l.parquet")
    pd.testing.assert_frame_equal(back, frame)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["l.parquet"]
