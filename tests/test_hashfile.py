"""read_hashed_csv: layouts, member choice, broken archives, zip bombs, sources."""

from __future__ import annotations

import doctest
import hashlib
import io
import struct
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from archives import make_zip

from stoplist_nb.errors import ArchiveTooLarge, BadArchive, InvalidInput
from stoplist_nb.suppression import archive
from stoplist_nb.suppression.archive import hashed_csv_members, read_hashed_csv

STR = pd.StringDtype("pyarrow")
H = [hashlib.md5(f"user{i}@example.org".encode()).hexdigest() for i in range(6)]


def read_quiet(source: object, **kwargs: object) -> pd.DataFrame:
    """read_hashed_csv, failing on any warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return read_hashed_csv(source, **kwargs)  # type: ignore[arg-type]


def lines(*rows: str, end: str = "\n") -> str:
    return "".join(row + end for row in rows)


def test_doctests() -> None:
    result = doctest.testmod(archive, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


@pytest.mark.parametrize(
    ("text", "delimiter", "header", "columns"),
    [
        (lines(*H[:3]), None, False, ["md5"]),
        (lines("md5", *H[:3]), None, True, ["md5"]),
        (lines("MD5 hash", *H[:3]), None, True, ["md5"]),
        (lines("md5;type", *(f"{h};email" for h in H[:3])), ";", True, ["md5", "type"]),
        (lines("type,md5", *(f"email,{h}" for h in H[:3])), ",", True, ["md5", "type"]),
        (lines(*(f"email,{h}" for h in H[:3])), ",", False, ["md5", "col0"]),
        (lines(*(f"{h}\temail\t1" for h in H[:3])), "\t", False, ["md5", "col1", "col2"]),
        (lines("kind\tvalue", *(f"email\t{h}" for h in H[:3])), "\t", True, ["md5", "kind"]),
        (lines('"type","md5"', *(f'"email","{h}"' for h in H[:3])), ",", True, ["md5", "type"]),
    ],
    ids=[
        "bare",
        "md5",
        "named",
        "semicolon",
        "md5-second",
        "no-header-2",
        "tab",
        "tab-hdr",
        "quoted",
    ],
)
def test_layouts(text: str, delimiter: str | None, header: bool, columns: list[str]) -> None:
    for variant in (text, text.replace("\n", "\r\n"), "\ufeff" + text):
        df = read_quiet(make_zip({"list.md5.csv": variant.encode()}))
        assert list(df.columns) == columns
        assert df["md5"].tolist() == H[:3]
        assert all(dtype == STR for dtype in df.dtypes)
        assert isinstance(df.index, pd.RangeIndex)
        assert df.attrs["members"] == ["list.md5.csv"]
        assert df.attrs["layout"]["delimiter"] == delimiter
        assert df.attrs["layout"]["header"] is header
    if "type" in columns:
        assert df["type"].tolist() == ["email"] * 3
    named = {"type", "kind"} & set(columns)
    assert df.attrs.get("kinds") == ({"email": 3} if named else None)


def test_kind_words_are_counted() -> None:
    words = ["Phones", "email", " SMS ", "", "domain", "list", "EMAILS", "domains", "list"]
    text = lines("md5;Type;n", *(f"{H[i % 6]};{w};1" for i, w in enumerate(words)))
    data = make_zip({"part1.csv": text, "part2.csv": lines("md5;Type;n", f"{H[0]};phone;1")})
    df = read_quiet(data)
    assert list(df.columns) == ["md5", "Type", "n"]
    assert df.attrs["kinds"] == {"email": 2, "phone": 3, "domain": 2, "": 1, "list": 2}
    assert list(df.attrs["kinds"])[:3] == ["email", "phone", "domain"]
    assert df["Type"].tolist()[:3] == ["Phones", "email", " SMS "]  # the column is kept as is


def test_other_columns_keep_values_and_empty_fields_are_na() -> None:
    df = read_quiet(make_zip({"a.csv": lines("type,md5,n", f"email,{H[0]},", f",{H[1]},7")}))
    assert list(df.columns) == ["md5", "type", "n"]
    assert df["type"].tolist() == ["email", pd.NA]
    assert df["n"].tolist() == [pd.NA, "7"]


def test_uppercase_is_lowered() -> None:
    text = lines(H[0].upper(), H[1], H[2][:16].upper() + H[2][16:])
    df = read_quiet(make_zip({"a.csv": text}))
    assert df["md5"].tolist() == H[:3]


def test_junk_members_are_ignored() -> None:
    data = make_zip(
        {
            "__MACOSX/._list.csv": b"\x00\x05\x16\x07",
            "readme.txt": "This is the export of list 1.\n",
            "nested/": "",
            ".hidden.csv": "junk\n",
            "nested/list.csv": lines(*H[:2]),
        }
    )
    assert hashed_csv_members(data) == ["nested/list.csv"]
    df = read_quiet(data)
    assert df["md5"].tolist() == H[:2]
    assert df.attrs["members"] == ["nested/list.csv"]


def test_txt_member_when_no_csv() -> None:
    data = make_zip({"notes/": "", "list.md5": lines(*H[:2]), "x.txt": lines(H[2])})
    assert hashed_csv_members(data) == ["list.md5", "x.txt"]
    assert read_quiet(data)["md5"].tolist() == H[:3]


def test_several_members_in_name_order() -> None:
    data = make_zip({"part2.csv": lines("md5", *H[3:]), "PART1.CSV": lines("md5", *H[:3])})
    df = read_quiet(data)
    assert df["md5"].tolist() == H
    assert df.attrs["members"] == ["PART1.CSV", "part2.csv"]


def test_members_with_other_columns_are_refused() -> None:
    data = make_zip({"a.csv": lines(*H[:2]), "b.csv": lines(*(f"email,{h}" for h in H[2:]))})
    with pytest.raises(BadArchive, match="other columns"):
        read_hashed_csv(data)


def test_no_csv_member_names_what_is_there() -> None:
    data = make_zip({"readme.pdf": b"%PDF", "img/": ""})
    with pytest.raises(BadArchive, match=r"no CSV file.*'readme.pdf'.*'img/'"):
        read_hashed_csv(data)
    with pytest.raises(BadArchive, match="holds nothing"):
        read_hashed_csv(make_zip({}))


def test_no_md5_column_is_refused() -> None:
    with pytest.raises(BadArchive, match="no column of 32-hex MD5"):
        read_hashed_csv(make_zip({"a.csv": lines("name,city", "Ann,Oslo", "Bo,Rome")}))


@pytest.fixture(scope="module")
def big_zip() -> bytes:
    """Two pyarrow blocks of hashes, deflated: room for damage in the middle."""
    rows = [hashlib.md5(str(i).encode()).hexdigest() for i in range(200_000)]
    return make_zip({"list.csv": lines(*rows)})


@pytest.mark.parametrize("keep", [0.05, 0.5, 0.9, 0.999])
def test_truncated_archive(big_zip: bytes, keep: float) -> None:
    with pytest.raises(BadArchive, match="truncated or corrupt") as info:
        read_hashed_csv(big_zip[: int(len(big_zip) * keep)])
    assert H[0] not in str(info.value)


@pytest.mark.parametrize("where", [0.3, 0.6])
def test_corrupt_deflate_data(big_zip: bytes, where: float) -> None:
    data = bytearray(big_zip)
    at = int(len(data) * where)
    data[at : at + 64] = bytes(64)
    with pytest.raises(BadArchive):
        read_hashed_csv(bytes(data))


def test_crc_mismatch_in_stored_member() -> None:
    data = bytearray(make_zip({"a.csv": lines(*H)}, method=zipfile.ZIP_STORED))
    at = data.index(H[2].encode())
    data[at] = ord("0") if data[at] != ord("0") else ord("1")
    with pytest.raises(BadArchive, match="CRC"):
        read_hashed_csv(bytes(data))


def test_binary_junk_that_is_not_a_zip() -> None:
    with pytest.raises(BadArchive):
        read_hashed_csv(bytes(range(256)) * 50)


def test_member_lying_about_its_size_is_cut_at_the_declared_size() -> None:
    data = bytearray(make_zip({"a.csv": lines(*H)}, method=zipfile.ZIP_STORED))
    real = len(lines(*H))
    # Declare 2 rows fewer in both headers: zipfile must stop there, and the CRC then fails.
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = data.index(signature) + offset
        assert struct.unpack_from("<I", data, at)[0] == real
        struct.pack_into("<I", data, at, real - 66)
    with pytest.raises(BadArchive, match="CRC"):
        read_hashed_csv(bytes(data))


def test_capped_stream_refuses_bytes_beyond_its_limit() -> None:
    capped = archive.Capped(io.BytesIO(b"x" * 100), 60, "a.csv")
    assert len(capped.read(50)) == 50
    with pytest.raises(ArchiveTooLarge, match="declared 60"):
        capped.read(50)


def stream_bomb(size: int, line: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf, zf.open("list.csv", "w") as out:
        block = line * ((1 << 20) // len(line))
        written = 0
        while written < size:
            out.write(block)
            written += len(block)
    return buf.getvalue()


@pytest.fixture(scope="module")
def bomb() -> bytes:
    """About 200 MB of one repeated line, deflated to a few hundred KB."""
    return stream_bomb(200_000_000, (H[0] + "\n").encode())


def test_zip_bomb_refused_by_ratio(bomb: bytes) -> None:
    info = zipfile.ZipFile(io.BytesIO(bomb)).infolist()[0]
    assert info.file_size >= 200_000_000
    assert info.file_size / info.compress_size > 200
    with pytest.raises(ArchiveTooLarge, match=r"max_ratio=200.*pass a larger max_ratio="):
        read_hashed_csv(bomb)


def test_zip_bomb_refused_by_size(bomb: bytes) -> None:
    with pytest.raises(ArchiveTooLarge, match=r"max_size=10,000,000.*larger max_size="):
        read_hashed_csv(bomb, max_size=10_000_000, max_ratio=10**9)


def test_raised_limits_let_a_compressible_archive_through() -> None:
    # 5 hashes over and over: packs beyond 200:1 (not a bomb's 1000:1), about 3 MB.
    data = make_zip({"list.csv": lines(*H[:5]) * 18_000})
    info = zipfile.ZipFile(io.BytesIO(data)).infolist()[0]
    assert info.file_size > 2**20
    assert 200 < info.file_size / info.compress_size < 1000
    with pytest.raises(ArchiveTooLarge, match="max_ratio"):
        read_hashed_csv(data)
    with pytest.raises(ArchiveTooLarge, match="max_size"):
        read_hashed_csv(data, max_size=2**20, max_ratio=1000)
    df = read_quiet(data, max_ratio=1000, max_size=2**22)
    assert len(df) == 90_000
    assert df["md5"].tolist()[:5] == H[:5]


def test_invalid_md5_rows_are_kept_and_reported() -> None:
    text = lines("md5", H[0], "not-a-hash", "", "  " + H[1].upper() + " ", H[2][:31], "ZZ" * 16)
    with pytest.warns(UserWarning, match=r"^3 of 5 rows have no valid MD5") as record:
        df = read_hashed_csv(make_zip({"a.csv": text}))
    assert df["md5"].tolist() == [H[0], "not-a-hash", H[1], H[2][:31], "zz" * 16]
    message = str(record[0].message)
    assert "'not-a-hash'" in message
    assert record[0].filename == __file__


def test_empty_md5_field_becomes_na_and_is_reported() -> None:
    with pytest.warns(UserWarning, match="1 of 3 rows"):
        df = read_hashed_csv(make_zip({"a.csv": lines("type,md5", f"a,{H[0]}", "b,", f"c,{H[1]}")}))
    assert df["md5"].tolist() == [H[0], pd.NA, H[1]]
    assert df["type"].tolist() == ["a", "b", "c"]


def test_bad_rows_in_a_large_member_only_touch_their_block() -> None:
    rows = [hashlib.md5(str(i).encode()).hexdigest() for i in range(200_000)]
    rows[150_000] = "oops"
    with pytest.warns(UserWarning, match="1 of 200,000 rows") as record:
        df = read_hashed_csv(make_zip({"list.csv": lines(*rows)}))
    assert len(record) == 1
    assert df["md5"].tolist() == rows
    assert df["md5"].array.__arrow_array__().num_chunks >= 2


def test_rows_with_the_wrong_number_of_fields_are_skipped_and_reported() -> None:
    text = lines("type,md5", f"a,{H[0]}", "b,c,d", f"e,{H[1]}")
    with pytest.warns(UserWarning, match="1 rows with the wrong number of fields skipped"):
        df = read_hashed_csv(make_zip({"a.csv": text}))
    assert df["md5"].tolist() == H[:2]


@pytest.mark.parametrize(
    ("text", "columns"),
    [("", ["md5"]), ("\n\n", ["md5"]), ("\ufeff", ["md5"]), ("type,md5\n", ["md5", "type"])],
)
def test_empty_member(text: str, columns: list[str]) -> None:
    df = read_quiet(make_zip({"a.csv": text.encode()}))
    assert list(df.columns) == columns
    assert len(df) == 0
    assert df["md5"].dtype == STR


def test_single_header_line_names_a_hash() -> None:
    assert len(read_quiet(make_zip({"a.csv": "md5\n"}))) == 0


class NoSeek(io.RawIOBase):
    def __init__(self, data: bytes) -> None:
        self._inner = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray) -> int:  # type: ignore[override]
        return self._inner.readinto(buffer)


def sources(data: bytes, tmp_path: Path) -> Iterator[object]:
    path = tmp_path / "list name.md5.zip"
    path.write_bytes(data)
    yield data
    yield bytearray(data)
    yield memoryview(data)
    yield str(path)
    yield path
    yield io.BytesIO(data)
    yield NoSeek(data)
    with open(path, "rb") as file:
        yield file
        assert not file.closed


@pytest.mark.parametrize("zipped", [True, False], ids=["zip", "bare-csv"])
def test_all_sources_give_equal_frames(zipped: bool, tmp_path: Path) -> None:
    text = lines("type;md5", *(f"email;{h.upper()}" for h in H)).encode()
    data = make_zip({"list.csv": text}) if zipped else text
    frames = [read_quiet(source) for source in sources(data, tmp_path)]
    for frame in frames:
        pd.testing.assert_frame_equal(frame, frames[0])
        assert frame.attrs == frames[0].attrs
    assert frames[0]["md5"].tolist() == H
    assert frames[0].attrs["members"] == (["list.csv"] if zipped else [])
    assert hashed_csv_members(data) == (["list.csv"] if zipped else [])


def test_bare_csv_in_a_big_file_object() -> None:
    rows = [hashlib.md5(str(i).encode()).hexdigest() for i in range(100_000)]
    df = read_quiet(io.BytesIO(lines(*rows).encode()))
    assert df["md5"].tolist() == rows


def test_file_object_read_from_its_position() -> None:
    buf = io.BytesIO(b"PREFIX" + make_zip({"a.csv": lines(*H)}))
    buf.seek(6)
    assert read_quiet(buf)["md5"].tolist() == H


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_size": 0}, "max_size"),
        ({"max_size": 1.5}, "max_size"),
        ({"max_size": True}, "max_size"),
        ({"max_ratio": -1}, "max_ratio"),
        ({"max_ratio": "200"}, "max_ratio"),
    ],
)
def test_bad_limits(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(InvalidInput, match=match):
        read_hashed_csv(make_zip({"a.csv": lines(*H)}), **kwargs)  # type: ignore[arg-type]


def test_bad_sources(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="binary file object"):
        read_hashed_csv(12)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="'rb'"):
        read_hashed_csv(io.StringIO(lines(*H)))  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError):
        read_hashed_csv(tmp_path / "missing.zip")


def test_not_utf8_text_is_refused() -> None:
    text = (lines(*H) + "caf\xe9\n").encode("latin-1")
    with pytest.raises(BadArchive, match="UTF-8") as info:
        read_hashed_csv(make_zip({"a.csv": text}))
    assert "caf" not in str(info.value)


@pytest.mark.parametrize("shift", range(4))
def test_sample_may_end_inside_a_multibyte_character(shift: int) -> None:
    rows = [f"{hashlib.md5(str(i).encode()).hexdigest()},ё" for i in range(3000)]
    text = lines("md5,type" + "x" * shift, *rows)
    df = read_quiet(make_zip({"a.csv": text}))
    assert len(df) == 3000
    assert df.columns.tolist() == ["md5", "type" + "x" * shift]
    assert set(df.iloc[:, 1]) == {"ё"}


@pytest.mark.parametrize("head", ["", "\n", "\r\n\r\n", "\n\n\n"])
def test_blank_lines_before_the_header(head: str) -> None:
    df = read_quiet(make_zip({"a.csv": head + lines("type,md5", f"a,{H[0]}", "", f"b,{H[1]}")}))
    assert df["md5"].tolist() == H[:2]
    assert df["type"].tolist() == ["a", "b"]


def test_short_lines_in_the_sample() -> None:
    text = lines(f"email,{H[0]},x", f"email,{H[1]},y", "lonely", f"phone,{H[2]},z")
    with pytest.warns(UserWarning, match="1 rows with the wrong number of fields skipped"):
        df = read_hashed_csv(make_zip({"a.csv": text}))
    assert df["md5"].tolist() == H[:3]
    assert df.columns.tolist() == ["md5", "col0", "col2"]


def test_unsupported_compression_is_refused() -> None:
    data = bytearray(make_zip({"a.csv": lines(*H)}, method=zipfile.ZIP_STORED))
    for signature, offset in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):
        struct.pack_into("<H", data, data.index(signature) + offset, 9)  # Deflate64
    with pytest.raises(BadArchive, match="cannot be read"):
        read_hashed_csv(bytes(data))
