# Cyrillic letters are data here, not look-alikes of Latin ones.
# ruff: noqa: RUF001, RUF003
"""Deterministic generator of the demo profile data set, and the words it draws from.

Everything is drawn from one ``random.Random(seed)``: no global random state and no
clock, so a seed always gives the same profiles, byte for byte. Names, cities and
e-mail addresses mix Cyrillic, accented Latin and plain ASCII on purpose.
"""

from __future__ import annotations

import hashlib
import itertools
import random
import string
import unicodedata
from collections.abc import Callable
from datetime import date, datetime, timedelta, timezone
from typing import Any, NamedTuple, TypeVar

_T = TypeVar("_T")


class Locale(NamedTuple):
    """Names, places and phone format of one group of profiles."""

    weight: int
    male: tuple[str, ...]
    female: tuple[str, ...]
    last: tuple[tuple[str, str], ...]  # (male form, female form)
    cities: tuple[tuple[str, str], ...]  # (city, country)
    phone_prefix: str
    phone_digits: int
    domains: tuple[tuple[str, int], ...]  # (domain, weight)


def _last(*names: str) -> tuple[tuple[str, str], ...]:
    # (male, female) forms: surnames in -ов/-ев/-ин (-ov/-ev/-in) take -а (-a).
    female = {"ов": "а", "ев": "а", "ин": "а", "ov": "a", "ev": "a", "in": "a"}
    return tuple((name, name + female.get(name[-2:], "")) for name in names)


# The tables below are data: one row a line reads better than one value a line.
# fmt: off
_RU_DOMAINS = (("yandex.ru", 28), ("mail.ru", 22), ("gmail.com", 25), ("bk.ru", 5),
               ("ya.ru", 5), ("example.com", 15))
_INTL_DOMAINS = (("gmail.com", 40), ("outlook.com", 18), ("yahoo.com", 10), ("icloud.com", 10),
                 ("example.com", 22))

LOCALES: tuple[Locale, ...] = (
    Locale(35, ("Александр", "Дмитрий", "Сергей", "Иван", "Михаил", "Артём", "Алексей", "Тимур"),
           ("Анна", "Мария", "Елена", "Ольга", "Татьяна", "Наталья", "Юлия", "Софья"),
           _last("Иванов", "Смирнов", "Кузнецов", "Попов", "Соколов", "Лебедев", "Ерёмин",
                 "Шевченко", "Ким", "Гусейнов"),
           (("Москва", "Россия"), ("Санкт-Петербург", "Россия"), ("Казань", "Россия")),
           "+79", 9, _RU_DOMAINS),
    Locale(20, ("Aleksandr", "Dmitry", "Sergey", "Ivan", "Mikhail", "Nikita"),
           ("Anna", "Maria", "Elena", "Olga", "Tatiana", "Daria"),
           _last("Ivanov", "Smirnov", "Kuznetsov", "Popov", "Sokolov", "Volkov"),
           (("Moscow", "Russia"), ("Saint Petersburg", "Russia"), ("Kazan", "Russia"),
            ("Yekaterinburg", "Russia")),
           "+79", 9, _RU_DOMAINS),
    Locale(12, ("Jürgen", "Lukas", "Felix", "Jörg", "Max"),
           ("Sophie", "Lea", "Hanna", "Zoë", "Käthe"),
           _last("Müller", "Schmidt", "Schäfer", "Weiß", "Becker", "von Bülow"),
           (("Berlin", "Germany"), ("München", "Germany"), ("Köln", "Germany")),
           "+4915", 9, (*_INTL_DOMAINS, ("web.de", 20))),
    Locale(10, ("José", "Álvaro", "Javier", "Raúl"), ("María José", "Lucía", "Inés", "Sofía"),
           _last("García", "Fernández", "Núñez", "Martínez", "de la Cruz"),
           (("Madrid", "Spain"), ("Barcelona", "Spain"), ("A Coruña", "Spain")),
           "+346", 8, _INTL_DOMAINS),
    Locale(8, ("François", "Jean-Luc", "Loïc", "Théo"),
           ("Chloé", "Élodie", "Anaïs", "Marie-Claire"),
           _last("Lefèvre", "Dubois", "Dupont", "D'Angelo", "Bénard"),
           (("Paris", "France"), ("Lyon", "France"), ("Montréal", "Canada")),
           "+336", 8, _INTL_DOMAINS),
    Locale(15, ("John", "Michael", "David", "Liam"), ("Mary Ann", "Emily", "Olivia", "Grace"),
           _last("Smith", "O'Connor", "Johnson", "Williams", "O'Brien", "Van der Berg"),
           (("New York", "USA"), ("London", "United Kingdom"), ("San Francisco", "USA")),
           "+1", 10, _INTL_DOMAINS),
)

DOMAIN_GROUPS = {"gmail.com": "gmail", "yandex.ru": "yandex", "ya.ru": "yandex",
                 "mail.ru": "mailru", "bk.ru": "mailru"}
STATUSES = (("subscribed", 70), ("unsubscribed", 10), ("unconfirmed", 6), ("hardbounced", 4),
            ("suspended", 4), ("complained", 3), ("invalid", 3))
# fmt: on

WORDS = ("sunny", "tiger", "pixel", "maple", "river", "nova", "echo", "orbit", "delta", "lynx")
SEGMENTS = ("new", "active", "loyal", "dormant", "churned")
CHANNELS = (("email", 45), ("sms", 25), ("push", 15), ("viber", 8), ("telegram_bot", 7))
PUSH_PROVIDERS = ("Firebase", "APNs", "WebPush")
CATEGORIES = ("news", "promo", "digest", "partners")
CUSTOM_FIELDS: dict[str, tuple[str, ...]] = {
    "_browser_name": ("Chrome", "Firefox", "Safari", "Яндекс Браузер", "Edge"),
    "_device_type": ("desktop", "mobile", "tablet"),
    "_os": ("Windows", "macOS", "Android", "iOS", "Linux"),
    "utm_source": ("google", "yandex", "newsletter", "vk", "partner_site"),
}

# Cyrillic to Latin for the local part of generated e-mail addresses.
TRANSLIT = dict(zip("абвгдеёзийклмнопрстуфыэ", "abvgdeeziyklmnoprstufye", strict=True)) | {
    "ж": "zh", "х": "kh", "ц": "ts", "ч": "ch", "ш": "sh", "щ": "shch", "ъ": "", "ь": "",
    "ю": "yu", "я": "ya", "ß": "ss"}  # fmt: skip

# (name, title, type, category) of every profile field the generator writes; the
# databases/fields_get endpoint answers from this table.
FIELDS: tuple[tuple[str, str, str, str], ...] = (
    ("_fname", "First name", "string", "system"), ("_lname", "Last name", "string", "system"),
    ("_city", "City", "string", "system"), ("_country", "Country", "string", "system"),
    ("_bdate", "Date of birth", "string", "system"), ("_sex", "Sex", "string", "system"),
    ("email", "Email", "string", "system"), ("phones", "Phones", "array", "system"),
    ("subscriptions", "Subscriptions", "array", "system"),
    ("loyalty_level", "Loyalty level", "int", "custom"), ("vip", "VIP", "boolean", "custom"),
    ("score", "Score", "float", "custom"), ("segment", "Segment", "string", "custom"),
)  # fmt: skip

_EPOCH = datetime(2022, 1, 1, tzinfo=timezone.utc)
_REG_SPAN = int((datetime(2026, 1, 1, tzinfo=timezone.utc) - _EPOCH).total_seconds())
_TOKEN_CHARS = string.ascii_letters + string.digits + "-_"


def _weighted(rng: random.Random, pairs: tuple[tuple[_T, int], ...]) -> _T:
    return rng.choices([value for value, _ in pairs], [weight for _, weight in pairs])[0]


def unique(make: Callable[[], str], taken: set[str]) -> str:
    """A value from ``make()`` not yet in ``taken``, which it joins."""
    while (value := make()) in taken:
        pass
    taken.add(value)
    return value


def _ascii(text: str) -> str:
    # Lower-case ASCII letters and digits, Cyrillic transliterated.
    text = "".join(TRANSLIT.get(ch, ch) for ch in text.lower())
    text = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in text if ch.isascii() and ch.isalnum())


class _Generator:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.emails: set[str] = set()
        self.phones: set[str] = set()
        self.hash_ids: set[str] = set()
        rng = self.rng
        # ObjectId layout: 4-byte time, 5-byte "machine", 3-byte counter. A time that
        # only grows makes string order equal generation order.
        self.oid_time = int(_EPOCH.timestamp())
        self.oid_machine = rng.getrandbits(40)
        self.oid_counter = rng.getrandbits(23)

    def object_id(self) -> str:
        self.oid_time += self.rng.randint(1, 900)
        self.oid_counter = (self.oid_counter + 1) % (1 << 24)
        return f"{self.oid_time:08x}{self.oid_machine:010x}{self.oid_counter:06x}"

    def email(self, locale: Locale, first: str, last: str) -> str:
        rng = self.rng
        f, l_ = _ascii(first), _ascii(last)
        style = rng.randrange(5)
        if style == 0 or not (f and l_):
            local = f"{rng.choice(WORDS)}{rng.randint(1, 999)}"
        elif style == 3:
            local = f"{f}_{l_}{rng.randint(70, 99)}"
        else:
            local = {1: f"{f}.{l_}", 2: f"{f[0]}.{l_}", 4: f"{f}{l_}"}[style]
        domain = _weighted(rng, locale.domains)
        # The first of local@, local2@, local3@... not taken yet.
        numbered = (f"{local}{n if n > 1 else ''}@{domain}" for n in itertools.count(1))
        return unique(numbered.__next__, self.emails)

    def phone(self, locale: Locale) -> str:
        def draw() -> str:
            digits = "".join(str(self.rng.randrange(10)) for _ in range(locale.phone_digits))
            if locale.phone_prefix == "+1":
                digits = str(self.rng.randint(2, 9)) + digits[1:]
            return locale.phone_prefix + digits

        return unique(draw, self.phones)

    def token(self, length: int) -> str:
        return "".join(self.rng.choice(_TOKEN_CHARS) for _ in range(length))

    def reg_info(self) -> dict[str, str]:
        rng = self.rng
        moment = _EPOCH + timedelta(seconds=rng.randrange(_REG_SPAN))
        stamp = f"{moment:%Y-%m-%dT%H:%M:%S}.{rng.randrange(1000):03d}Z"
        ip = f"{rng.randint(5, 223)}.{rng.randrange(256)}.{rng.randrange(256)}"
        return {"date": stamp, "ip": f"{ip}.{rng.randint(1, 254)}"}

    def channel_block(self, channel: str, ctx: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        rng = self.rng
        if channel == "email":
            address = ctx["emails"].pop(0) if ctx["emails"] else self.email(*ctx["who"])
            domain = address.rsplit("@", 1)[1]
            md5 = hashlib.md5(address.encode()).hexdigest()
            group = DOMAIN_GROUPS.get(domain, "other")
            block = {"domain": domain, "domain_group": group, "email": address, "md5": md5}
            return "email_data", block
        if channel in ("sms", "viber"):
            phone = ctx["phones"].pop(0) if ctx["phones"] else self.phone(ctx["who"][0])
            return "phone_data", {"phone": phone, "md5": hashlib.md5(phone.encode()).hexdigest()}
        if channel == "push":
            provider = rng.choice(PUSH_PROVIDERS)
            if provider == "APNs":
                sub_id = f"{rng.getrandbits(256):064x}"
            else:
                web = "https://fcm.googleapis.com/fcm/send/" if provider == "WebPush" else ""
                sub_id = f"{web}{self.token(22)}:APA91b{self.token(30 if web else 40)}"
            return "push_data", {"provider": provider, "subscription_id": sub_id}
        return "cc_data", {"id": str(rng.randint(10**8, 7 * 10**9))}

    def subscription(self, ctx: dict[str, Any]) -> dict[str, Any]:
        rng = self.rng
        channel = _weighted(rng, CHANNELS)
        sub: dict[str, Any] = {
            "channel": channel,
            "hash_id": unique(lambda: f"{rng.getrandbits(64):016x}", self.hash_ids),
            "is_delete": rng.random() < 0.05,
            "priority": _weighted(rng, ((0, 60), (1, 20), (2, 12), (3, 8))),
            "resource_id": rng.randint(1, 3),
            "status": _weighted(rng, STATUSES),
            "reg_info": self.reg_info(),
        }
        block, value = self.channel_block(channel, ctx)
        sub[block] = value
        if rng.random() < 0.3:
            keys = rng.sample(sorted(CUSTOM_FIELDS), rng.randint(1, 3))
            sub["custom_fields"] = {key: rng.choice(CUSTOM_FIELDS[key]) for key in sorted(keys)}
        if rng.random() < 0.3:
            sub["cats"] = rng.sample(CATEGORIES, rng.randint(1, 3))
        return sub

    def profile(self) -> dict[str, Any]:
        rng = self.rng
        locale = _weighted(rng, tuple((loc, loc.weight) for loc in LOCALES))
        female = rng.random() < 0.5
        first = rng.choice(locale.female if female else locale.male)
        last = rng.choice(locale.last)[1 if female else 0]
        prof: dict[str, Any] = {"id": self.object_id(), "_fname": first, "_lname": last}
        roll = rng.random()
        if roll >= 0.07:
            prof["_city"], prof["_country"] = rng.choice(locale.cities)
        elif roll >= 0.04:
            prof["_city"] = None  # known but empty, unlike the absent key below
        if rng.random() >= 0.12:
            born = date(1950, 1, 1) + timedelta(days=rng.randrange(57 * 365))
            prof["_bdate"] = born.isoformat()
        if rng.random() >= 0.1:
            prof["_sex"] = "female" if female else "male"
        emails = [self.email(locale, first, last)] if rng.random() < 0.88 else []
        if emails:
            prof["email"] = emails[0]
        count = _weighted(rng, ((0, 20), (1, 65), (2, 15)))
        prof["phones"] = [self.phone(locale) for _ in range(count)]
        prof["loyalty_level"] = rng.randint(0, 5)
        prof["vip"] = rng.random() < 0.1
        prof["score"] = round(rng.uniform(0, 100), 2)
        prof["segment"] = rng.choice(SEGMENTS)
        ctx = {"who": (locale, first, last), "emails": emails, "phones": list(prof["phones"])}
        n_subs = _weighted(rng, ((0, 10), (1, 40), (2, 28), (3, 14), (4, 8)))
        prof["subscriptions"] = [self.subscription(ctx) for _ in range(n_subs)]
        return prof


def generate_profiles(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """Generate ``n`` realistic, reproducible profiles.

    Ids look like MongoDB ObjectIds and increase in generation order. Some profiles lack
    a city, a birth date, an e-mail or any subscription; e-mail addresses, phone numbers
    and subscription ``hash_id`` values never repeat within one data set.

    Args:
        n: Number of profiles, 0 or more (else ``ValueError``).
        seed: Seed of the private random generator; the same seed gives the same data.

    Returns:
        The profiles as ``profiles/list`` returns them without ``fields``.

    >>> profiles = generate_profiles(3, seed=1)
    >>> [len(p["id"]) for p in profiles]
    [24, 24, 24]
    >>> profiles == generate_profiles(3, seed=1)
    True
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    gen = _Generator(seed)
    return [gen.profile() for _ in range(n)]
