"""The zip-bomb limits over a whole archive, and fuzzing of the archive reader.

``max_ratio`` holds for the members together (against the archive's size) as
well as for each; ``max_size`` for the bytes actually unpacked; the number of
members and the size of the directory are bounded before zipfile parses it;
the export's download is held to ``max_size`` too. Refusals must come before
the unpacking they guard against, so each bomb here is refused by an
exception, not by a timer.
"""

from __future__ import annotations

import hashlib
import io
import pathlib
import struct
import warnings
import zipfile
import zlib
from typing import Any

import children
import pandas as pd
import pytest
from archives import make_zip
from hypothesis import given, settings
from hypothesis import strategies as st

import stoplist_nb as sn
from stoplist_nb.demo import DemoService
from stoplist_nb.errors import ArchiveTooLarge, BadArchive, StoplistError
from stoplist_nb.suppression import archive
from stoplist_nb.suppression.archive import hashed_csv_members, read_hashed_csv

LINE = (hashlib.md5(b"bomb").hexdigest() + "\n").encode()


def hashes(start: int, count: int) -> bytes:
    """``count`` distinct MD5 lines: how a real export packs (about 2:1)."""
    return b"".join(
        hashlib.md5(str(i).encode()).hexdigest().encode() + b"\n"
        for i in range(start, start + count)
    )


def declared(data: bytes) -> int:
    return sum(info.file_size for info in zipfile.ZipFile(io.BytesIO(data)).infolist())


def read_quiet(source: Any, **kwargs: Any) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return read_hashed_csv(source, **kwargs)


@pytest.fixture(scope="module")
def split_bomb() -> bytes:
    """250 members of 800 KiB of one line each: 195 MiB from well under 1 MB."""
    body = LINE * (800 * 1024 // len(LINE))
    return make_zip({f"part{i:03}.csv": body for i in range(250)}, level=9)


# ---------------------------------------------------------------- the ratio of the whole


def test_split_bomb_members_each_pass_the_member_check(split_bomb: bytes) -> None:
    infos = zipfile.ZipFile(io.BytesIO(split_bomb)).infolist()
    assert len(infos) == 250
    assert all(info.file_size < archive.RATIO_FLOOR for info in infos)
    assert declared(split_bomb) > 190 * 2**20 > 200 * len(split_bomb)


@pytest.mark.parametrize("kind", ["bytes", "path", "file"])
def test_split_bomb_is_refused_by_the_ratio_of_the_whole_archive(
    split_bomb: bytes, tmp_path: pathlib.Path, kind: str
) -> None:
    path = tmp_path / "bomb.zip"
    path.write_bytes(split_bomb)
    source: Any = {"bytes": split_bomb, "path": path, "file": io.BytesIO(split_bomb)}[kind]
    with pytest.raises(ArchiveTooLarge) as caught:
        read_hashed_csv(source)
    message = str(caught.value)
    assert "250 members" in message
    assert "195.3 MiB" in message  # what was found
    assert "max_ratio=200" in message  # the limit
    assert "pass a larger max_ratio= to read_hashed_csv" in message  # how to raise it


def test_the_ratio_of_the_whole_can_be_raised() -> None:
    # 8 members of 256 KiB, 5 hashes over and over: each under the floor, together 2 MiB.
    data = make_zip({f"p{i}.csv": hashes(0, 5) * 1589 for i in range(8)})
    assert 2**20 < declared(data) < 4 * 2**20
    assert declared(data) / len(data) > 200
    with pytest.raises(ArchiveTooLarge, match=r"8 members.*max_ratio=200"):
        read_hashed_csv(data)
    assert len(read_quiet(data, max_ratio=100_000)) == 8 * 5 * 1589


def test_tiny_archives_are_never_refused_for_their_ratio() -> None:
    # 1 MiB unpacked at most, however well it packs: it can do no harm.
    body = LINE * (2**20 // 16 // len(LINE))
    data = make_zip({f"p{i:02}.csv": body for i in range(16)}, level=9)
    assert declared(data) <= archive.RATIO_FLOOR
    assert declared(data) / len(data) > 100
    assert len(read_quiet(data, max_ratio=1)) == 16 * len(body) // len(LINE)


def test_a_legitimate_large_archive_is_accepted() -> None:
    parts = {f"list-{i}.csv": hashes(i * 75_000, 75_000) for i in range(4)}
    data = make_zip(parts)
    assert declared(data) > 9 * 2**20
    df = read_quiet(data)
    assert len(df) == 300_000
    assert df["md5"].iloc[-1] == hashlib.md5(b"299999").hexdigest()
    assert df.attrs["members"] == sorted(parts)


# ---------------------------------------------------------------- max_size on what is unpacked


def test_max_size_holds_exactly_for_members_read_more_than_once() -> None:
    # Each member is sampled, then parsed, and parsed again for a row of the wrong
    # width: the bytes unpacked count once per member, so max_size can be met exactly.
    rows = [line.rstrip(b"\n") + b",email\n" for line in hashes(0, 10_000).splitlines(True)]
    data = make_zip({"a.csv": b"".join(rows[:5000]), "b.csv": b"".join(rows[5000:]) + b"x,y,z\n"})
    with pytest.warns(UserWarning, match="1 rows with the wrong number of fields"):
        assert len(read_hashed_csv(data, max_size=declared(data))) == 10_000
    with pytest.raises(ArchiveTooLarge, match="max_size="):
        read_hashed_csv(data, max_size=declared(data) - 1)


def test_unpacked_bytes_are_counted_whatever_the_headers_declare(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # zipfile stops each member at its declared size, so only a failure of the
    # declared-size check could let more through: stand in for one by removing it.
    monkeypatch.setattr(archive, "check_bomb", lambda *args: None)
    data = make_zip({f"p{i}.csv": hashes(i * 10_000, 10_000) for i in range(3)})
    with pytest.raises(ArchiveTooLarge) as caught:
        read_hashed_csv(data, max_size=500_000)
    assert "unpacks to more than max_size=500,000 bytes" in str(caught.value)
    assert "pass a larger max_size= to read_hashed_csv" in str(caught.value)


def test_the_budget_counts_members_together_and_each_once() -> None:
    budget = archive.Capped(None, 150, "the archive")  # a budget: no stream of its own
    first = archive.Capped(io.BytesIO(b"x" * 100), 100, "a.csv", budget)
    first.read(100)
    again = archive.Capped(io.BytesIO(b"x" * 100), 100, "a.csv", budget)
    again.read(100)  # the same member read a second time
    assert budget.total == 100
    second = archive.Capped(io.BytesIO(b"y" * 100), 100, "b.csv", budget)
    second.read(50)
    with pytest.raises(ArchiveTooLarge, match="max_size=150"):
        second.read(1)


def rewrite_sizes(data: bytes, file_size: int, crc: int) -> bytes:
    """``data`` with every member's declared size and CRC replaced, in both headers."""
    out = bytearray(data)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        infos, pos = zf.infolist(), zf.start_dir
    for info in infos:
        struct.pack_into("<L", out, info.header_offset + 14, crc)
        struct.pack_into("<L", out, info.header_offset + 22, file_size)
        assert out[pos : pos + 4] == b"PK\x01\x02"
        struct.pack_into("<L", out, pos + 16, crc)
        struct.pack_into("<L", out, pos + 24, file_size)
        pos += 46 + sum(struct.unpack_from("<3H", out, pos + 28))
    return bytes(out)


def test_a_member_is_never_unpacked_beyond_what_it_declares() -> None:
    # 40 members of 4 MiB each, declared as 1,000 lines (their CRC matching): the
    # checks see 1.3 MB, and that is all that is unpacked.
    body = LINE * (4 * 2**20 // len(LINE))
    real = make_zip({f"p{i:02}.csv": body for i in range(40)}, level=9)
    data = rewrite_sizes(real, 1000 * len(LINE), zlib.crc32(LINE * 1000))
    assert declared(data) == 40 * 1000 * len(LINE)
    assert len(read_quiet(data)) == 40 * 1000


def test_a_member_declaring_more_than_it_holds_is_corrupt() -> None:
    data = rewrite_sizes(make_zip({"a.csv": hashes(0, 10)}), 10_000, 0)
    with pytest.raises(BadArchive, match="truncated or corrupt") as caught:
        read_hashed_csv(data)
    assert type(caught.value) is BadArchive


def test_declared_sizes_beyond_max_size_are_refused_before_reading() -> None:
    data = rewrite_sizes(make_zip({"a.csv": hashes(0, 10), "b.csv": b""}), 3 * 2**30, 0)
    with pytest.raises(ArchiveTooLarge, match=r"6,144\.0 MiB, above max_size=4,294,967,296"):
        read_hashed_csv(data)


# ---------------------------------------------------------------- how many members


def end_record(data: bytes | bytearray) -> int:
    at = data.rindex(b"PK\x05\x06")
    assert len(data) - at == 22  # no comment
    return at


def test_too_many_members_are_refused_before_they_are_read() -> None:
    data = make_zip({f"{i}.csv": b"" for i in range(archive.MAX_MEMBERS + 1)})
    for call in (read_hashed_csv, hashed_csv_members):
        with pytest.raises(ArchiveTooLarge) as caught:
            call(data)
        message = str(caught.value)
        assert "lists 10,001 members, beyond the 10,000 members" in message
        assert "if the archive is trusted, extract its CSV" in message


def test_members_that_are_not_csv_count_too_but_up_to_the_limit_pass() -> None:
    members = {f"{i}.bin": b"" for i in range(archive.MAX_MEMBERS - 1)}
    data = make_zip({**members, "list.csv": hashes(0, 3)})
    assert len(read_quiet(data)) == 3
    with pytest.raises(ArchiveTooLarge, match="10,001 members"):
        read_hashed_csv(make_zip({**members, "x.bin": b"", "list.csv": hashes(0, 3)}))


def test_a_member_count_understated_by_the_end_record_is_still_refused() -> None:
    data = bytearray(make_zip({f"{i}.csv": b"" for i in range(archive.MAX_MEMBERS + 1)}))
    struct.pack_into("<HH", data, end_record(data) + 8, 1, 1)
    with pytest.raises(ArchiveTooLarge, match="holds 10,001 members, beyond the 10,000"):
        read_hashed_csv(bytes(data))


def test_a_directory_too_large_to_parse_is_refused_whatever_the_count() -> None:
    # One member's directory entry 60,000 times over, announced as one entry:
    # zipfile would parse every one of them.
    one = make_zip({"a.csv": hashes(0, 1)})
    with zipfile.ZipFile(io.BytesIO(one)) as zf:
        start = zf.start_dir
    eocd = end_record(one)
    entry = one[start:eocd]
    directory = entry * 60_000
    tail = bytearray(one[eocd:])
    struct.pack_into("<HHL", tail, 8, 1, 1, len(directory))
    data = one[:start] + directory + bytes(tail)
    assert len(directory) > archive.MAX_DIRECTORY
    with pytest.raises(ArchiveTooLarge, match=r"has a directory of 2\.\d MiB, beyond"):
        read_hashed_csv(data)


def test_millions_of_members_announced_in_a_zip64_record_are_refused() -> None:
    one = make_zip({"a.csv": hashes(0, 1)})
    eocd = end_record(one)
    _, _, _, _, _, size, offset, _ = struct.unpack_from("<4s4H2LH", one, eocd)
    record = struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, 2**21, 2**21, size, offset)
    locator = struct.pack("<4sLQL", b"PK\x06\x07", 0, eocd, 1)
    tail = bytearray(one[eocd:])
    struct.pack_into("<HH", tail, 8, 0xFFFF, 0xFFFF)
    data = one[:eocd] + record + locator + bytes(tail)
    with pytest.raises(ArchiveTooLarge, match="lists 2,097,152 members"):
        read_hashed_csv(data)


# ---------------------------------------------------------------- end to end


def serve_archive(demo: DemoService, data: bytes) -> None:
    """Make the next export of ``demo`` serve ``data`` as its archive."""
    demo.plan_next_export(steps=1)
    demo.add_fault("download", "raw", body=data, headers={"Content-Type": "application/zip"})


def test_split_bomb_is_refused_end_to_end(
    client: sn.Client, demo: DemoService, split_bomb: bytes, tmp_path: pathlib.Path
) -> None:
    serve_archive(demo, split_bomb)
    with pytest.raises(ArchiveTooLarge, match=r"250 members.*max_ratio=200"):
        sn.read_suppression_list(
            client, demo.suppress_id, poll_interval=0.01, progress=False, dest=tmp_path
        )
    # The archive arrived whole (it is small): the refusal was the reader's.
    (kept,) = tmp_path.iterdir()
    assert kept.read_bytes() == split_bomb


def test_the_download_is_held_to_max_size(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path
) -> None:
    served = hashes(0, 30_000)  # stored: 990,000 bytes on the wire
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("list.csv", served)
    serve_archive(demo, data.getvalue())
    with pytest.raises(ArchiveTooLarge):
        sn.read_suppression_list(
            client,
            demo.suppress_id,
            poll_interval=0.01,
            progress=False,
            dest=tmp_path,
            max_size=500_000,
        )
    # Refused while downloading, not after: nothing was kept.
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- fuzzing

NAMES = st.tuples(
    st.text(max_size=8) | st.sampled_from(["\x00", "/", "a/", "__MACOSX/", "."]),
    st.sampled_from([".csv", ".CSV", ".txt", ".md5", ".bin", "/", ""]),
).map("".join)
CELLS = st.sampled_from(
    ["0cc175b9c0f1b6a831c399e269772661", "md5", "", '"', "x", "\u00e9", "\ufeff", " "]
)
TEXT = st.lists(
    st.lists(CELLS, max_size=4).flatmap(
        lambda cells: st.sampled_from([",", ";", "\t"]).map(lambda sep: sep.join(cells))
    ),
    max_size=6,
).flatmap(lambda rows: st.sampled_from(["\n", "\r\n"]).map(lambda end: end.join(rows)))
CONTENTS = st.one_of(st.binary(max_size=200), TEXT.map(lambda text: text.encode()))
METHODS = st.sampled_from(
    [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA]
)
EDITS = st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), max_size=4)


def read_or_refuse(data: bytes) -> None:
    """Read ``data``: only the package's own exceptions may come out."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            frame = read_hashed_csv(data)
        except StoplistError:
            return
    assert frame.columns[0] == "md5"
    assert isinstance(hashed_csv_members(data), list)


@settings(database=None)
@given(head=st.sampled_from([b"", b"PK\x03\x04", b"PK\x05\x06", b"\xef\xbb\xbf"]), body=st.binary())
def fuzz_bytes(head: bytes, body: bytes) -> None:
    read_or_refuse(head + body)


@settings(database=None)
@given(
    members=st.lists(st.tuples(NAMES, CONTENTS, METHODS), min_size=1, max_size=4),
    edits=EDITS,
    cut=st.none() | st.integers(min_value=0),
)
def fuzz_zips(
    members: list[tuple[str, bytes, int]], edits: list[tuple[int, int]], cut: int | None
) -> None:
    buf = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buf, "w") as zf:
        warnings.simplefilter("ignore")  # duplicate names are welcome
        for name, content, method in members:
            zf.writestr(zipfile.ZipInfo(name or "x"), content, compress_type=method)
    data = bytearray(buf.getvalue())
    for at, value in edits:
        data[at % len(data)] = value
    read_or_refuse(bytes(data if cut is None else data[: cut % (len(data) + 1)]))


def test_a_member_whose_name_is_empty_is_passed_over() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(zipfile.ZipInfo("\x00.csv"), b"junk")  # zipfile cuts the name at the NUL
        zf.writestr("list.csv", hashes(0, 2))
    assert hashed_csv_members(buf.getvalue()) == ["list.csv"]
    assert len(read_quiet(buf.getvalue())) == 2


@pytest.mark.slow
def test_fuzzed_archives_raise_only_the_package_s_own_errors() -> None:
    done = children.fuzz(__file__, "fuzz_bytes", "fuzz_zips", timeout=300)
    assert done.returncode >= 0, f"the reader crashed with signal {-done.returncode}"
    assert done.returncode == 0, done.stderr[-4000:]
