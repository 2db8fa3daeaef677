"""Synthetic ``profiles/list`` reply pages for the benchmarks (deterministic, seeded).

1000 profiles per page by default, ~0.7 KiB of JSON per profile: 24-hex ``id``,
non-ASCII names and cities, ``age`` on 30% and ``vip`` on 10% of the profiles
(and ``_bdate`` on half with ``dates=True``); 0-4 subscriptions each, channels
email / sms / push / viber / telegram_bot with their blocks, ``reg_info`` with
millisecond ISO dates, ``custom_fields`` with varying keys, ``cats``.
"""

from __future__ import annotations

import io
import json
import random
from collections.abc import Callable
from typing import Any

FIRST = ["Анна", "Иван", "Мария", "Пётр", "Olga", "José", "Zoë", "Łukasz", "Sören", "Ayşe"]
LAST = ["Иванова", "Петров", "Smith", "Müller", "García", "Nowak", "Öztürk", "Dupont", "Соколов"]
CITIES = ["Москва", "Санкт-Петербург", "Berlin", "São Paulo", "Kraków", "İstanbul", None]
DOMAINS = [("gmail.com", "gmail"), ("mail.ru", "mailru"), ("yandex.ru", "yandex"), ("ex.org", "")]
STATUSES = ["subscribed"] * 6 + ["unsubscribed", "complained", "hardbounced", "unconfirmed"]
CATS = ["news", "promo", "digest", "акции", "events"]
CF_KEYS = ["_browser_name", "_device_type", "source", "utm_campaign", "score", "optin"]
CHANNELS = ("email", "sms", "push", "telegram_bot", "viber")
PROFILE_FIELDS = ["id", "_fname", "_lname", "_city", "age", "vip", "_bdate"]


def _subscription(rng: random.Random, i: int, j: int) -> dict[str, Any]:
    channel = rng.choice(CHANNELS)
    r = rng.getrandbits
    sub: dict[str, Any] = {
        "channel": channel,
        "hash_id": f"{r(128):032x}",
        "is_delete": rng.random() < 0.05,
        "priority": rng.randint(0, 5),
        "resource_id": rng.randint(1, 20),
        "status": rng.choice(STATUSES),
        "reg_info": {
            "date": f"2023-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
            f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}."
            f"{rng.randint(0, 999):03d}Z",
            "ip": f"{rng.randint(1, 254)}.{r(8)}.{r(8)}.{rng.randint(1, 254)}",
        },
    }
    if channel == "email":
        domain, group = rng.choice(DOMAINS)
        sub["email_data"] = {
            "domain": domain,
            "domain_group": group,
            "email": f"user{i}.{j}@{domain}",
            "md5": f"{r(128):032x}",
        }
    elif channel in ("sms", "viber"):
        sub["phone_data"] = {"phone": f"+7{r(33):010d}", "md5": f"{r(128):032x}"}
    elif channel == "push":
        provider = rng.choice(("fcm", "apns", "webpush"))
        sub["push_data"] = {"provider": provider, "subscription_id": f"{r(256):064x}"}
    else:
        sub["cc_data"] = {"id": r(40)}
    if rng.random() < 0.4:
        keys = rng.sample(CF_KEYS, rng.randint(1, 3))
        sub["custom_fields"] = {
            k: rng.randint(0, 100)
            if k == "score"
            else rng.random() < 0.5
            if k == "optin"
            else f"v{rng.randint(0, 50)}"
            for k in keys
        }
    if rng.random() < 0.3:
        sub["cats"] = rng.sample(CATS, rng.randint(0, 3))
    return sub


def make_pages(
    profiles: int, page: int, seed: int = 1, dates: bool = False
) -> list[tuple[str, bytes]]:
    """Deterministic reply pages of ``page`` profiles each, with the cursor that asks for each."""
    rng = random.Random(seed)
    pages = []
    cursor = ""
    for start in range(0, profiles, page):
        data = []
        for i in range(start, min(start + page, profiles)):
            record: dict[str, Any] = {
                "id": f"{(i * 0x9E3779B97F4A7C15) % (1 << 96):024x}",
                "_fname": rng.choice(FIRST),
                "_lname": rng.choice(LAST),
                "_city": rng.choice(CITIES),
            }
            if rng.random() < 0.3:
                record["age"] = rng.randint(16, 90)
            if rng.random() < 0.1:
                record["vip"] = rng.random() < 0.5
            if dates and rng.random() < 0.5:
                record["_bdate"] = f"{rng.randint(1940, 2010)}-{rng.randint(1, 12):02d}-01"
            subs = [_subscription(rng, i, j) for j in range(rng.randint(0, 4))]
            roll = rng.random()
            if roll >= 0.03:
                record["subscriptions"] = subs
            elif roll >= 0.01:
                record["subscriptions"] = None  # and below 0.01: no key at all
            data.append(record)
        body = {
            "data": data,
            "error": 0,
            "error_text": "Successful operation",
            "next_from_id": f"{start + page:024x}",
        }
        content = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        pages.append((cursor, content))
        cursor = body["next_from_id"]
    return pages


#: The reply that ends paging: no rows.
EMPTY = b'{"data":[],"error":0,"error_text":"Successful operation","next_from_id":""}'


def replay_client(reply: Callable[[str], bytes]) -> Any:
    """A Client whose ``profiles/list`` requests get ``reply(from_id)``, from memory.

    No network: a requests transport adapter builds each response, so the
    figures include building and reading HTTP requests and responses.
    """
    import requests
    from requests.adapters import BaseAdapter

    import stoplist_nb as sn

    class Replay(BaseAdapter):  # type: ignore[misc]
        def send(self, request: Any, **kwargs: Any) -> requests.Response:
            response = requests.Response()
            response.status_code = 200
            response.headers["Content-Type"] = "application/json"
            response.raw = io.BytesIO(reply(json.loads(request.body).get("from_id", "")))
            response.url, response.request = request.url, request
            return response

        def close(self) -> None:
            pass

    client = sn.Client("http://replay.invalid", "not-a-token")
    client.session.mount("http://replay.invalid/api/v1.1/profiles/list", Replay())
    return client
