"""Messenger subscriptions keep their contact in ``cc_data``: it is still a phone (or an e-mail).

End to end on the demo service: profiles whose WhatsApp, Viber and Notify
subscriptions carry the number in ``cc_data.phone`` are read by every reader,
and ``flag_suppressed(phone="phone")`` checks those numbers against a listed
export like any SMS number.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

import stoplist_nb as sn
from stoplist_nb.demo import DemoService, serve

LISTED = "+79001112233"


def sub(channel: str, **blocks: Any) -> dict[str, Any]:
    return {"channel": channel, "status": "subscribed", **blocks}


PROFILES = [
    {"id": "p1", "subscriptions": [sub("whatsapp", cc_data={"phone": LISTED})]},
    {"id": "p2", "subscriptions": [sub("viber", cc_data={"phone": "+79005550000"})]},
    {"id": "p3", "subscriptions": [sub("notify", cc_data={"phone": LISTED, "id": 7})]},
    {"id": "p4", "subscriptions": [sub("sms", phone_data={"phone": LISTED})]},
    # Both blocks, two numbers: phone_data's is the phone, cc_data's is kept beside it.
    {
        "id": "p5",
        "subscriptions": [
            sub("viber", phone_data={"phone": "+79005550001"}, cc_data={"phone": LISTED})
        ],
    },
    {"id": "p6", "subscriptions": [sub("telegram_bot", cc_data={"id": 123456789})]},
    {"id": "p7", "subscriptions": [sub("email", cc_data={"email": "Ann@Corp.Example"})]},
]
PHONES = [LISTED, "+79005550000", LISTED, LISTED, "+79005550001", None, None]


@pytest.fixture(scope="module")
def service() -> Iterator[DemoService]:
    with serve(profiles=PROFILES, suppressed={"phones": [LISTED], "emails": []}) as svc:
        yield svc


@pytest.fixture
def client(service: DemoService) -> Iterator[sn.Client]:
    with service.client() as c:
        yield c


def every_reader(client: sn.Client, db_id: int, tmp: Path) -> dict[str, pd.DataFrame]:
    kw: dict[str, Any] = {"limit": 2, "progress": False}
    sn.ProfilesRequest(client, db_id, **kw).to_dataset(tmp / "ds")
    return {
        "read_profiles": sn.read_profiles(client, db_id, **kw),
        "to_arrow": sn.ProfilesRequest(client, db_id, **kw).to_arrow().to_pandas(),
        "frames": pd.concat(
            list(sn.ProfilesRequest(client, db_id, **kw).frames()), ignore_index=True
        ),
        "tables": pa.concat_tables(
            list(sn.ProfilesRequest(client, db_id, **kw).tables()), promote_options="default"
        ).to_pandas(),
        "dataset": pd.read_parquet(tmp / "ds"),
    }


def test_every_reader_puts_a_messenger_number_in_phone(
    client: sn.Client, service: DemoService, tmp_path: Path
) -> None:
    for name, df in every_reader(client, service.db_id, tmp_path).items():
        got = [None if pd.isna(v) else v for v in df["phone"]]
        assert got == PHONES, name
        # The second number of p5 is not lost; nobody else has one there.
        beside = [None if pd.isna(v) else v for v in df["cc_data.phone"]]
        assert beside == [None, None, None, None, LISTED, None, None], name
        assert df.loc[6, "email"] == "Ann@Corp.Example", name
        assert df.loc[5, "cc_data.id"] in (123456789, "123456789"), name
        assert df.loc[2, "cc_data.id"] in (7, "7"), name


@pytest.mark.slow
def test_flag_suppressed_checks_messenger_numbers(client: sn.Client, service: DemoService) -> None:
    df = sn.read_profiles(client, service.db_id, progress=False)
    stop = sn.read_suppression_list(client, service.suppress_id, progress=False)
    flagged = sn.flag_suppressed(df, stop, phone="phone", email="email")
    got = dict(zip(flagged["profile_id"], flagged["suppressed"].tolist(), strict=True))
    # p1 WhatsApp and p3 Notify by cc_data.phone, p4 SMS by phone_data.phone; p5's phone is
    # phone_data's, the listed number beside it is not its phone.
    assert {k: got[k] for k in ("p1", "p2", "p3", "p4", "p5")} == {
        "p1": True,
        "p2": False,
        "p3": True,
        "p4": True,
        "p5": False,
    }
    assert flagged.loc[flagged["profile_id"] == "p1", "suppressed_by"].item() == "phone"
