# Cyrillic letters are data here, not look-alikes of Latin ones.
# ruff: noqa: RUF001, RUF003
"""Word lists the demo data generator draws from.

Kept apart from the generator so the generator's logic stays readable. The lists mix
Cyrillic, accented Latin and plain ASCII on purpose: the client has to survive all of
them in names, cities and e-mail addresses.
"""

from __future__ import annotations

from typing import NamedTuple


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


def _ru_last(*names: str) -> tuple[tuple[str, str], ...]:
    # Russian surnames ending in -ов/-ев/-ин take -а in the female form; others do not.
    return tuple(
        (name, name + "а" if name.endswith(("ов", "ев", "ин")) else name) for name in names
    )


def _ru_lat_last(*names: str) -> tuple[tuple[str, str], ...]:
    return tuple(
        (name, name + "a" if name.endswith(("ov", "ev", "in")) else name) for name in names
    )


def _same(*names: str) -> tuple[tuple[str, str], ...]:
    return tuple((name, name) for name in names)


_RU_DOMAINS = (
    ("yandex.ru", 28),
    ("mail.ru", 22),
    ("gmail.com", 25),
    ("bk.ru", 5),
    ("ya.ru", 5),
    ("example.com", 15),
)
_INTL_DOMAINS = (
    ("gmail.com", 40),
    ("outlook.com", 18),
    ("yahoo.com", 10),
    ("icloud.com", 10),
    ("example.com", 22),
)

LOCALES: tuple[Locale, ...] = (
    Locale(
        35,
        ("Александр", "Дмитрий", "Сергей", "Иван", "Михаил", "Артём", "Алексей", "Тимур"),
        ("Анна", "Мария", "Елена", "Ольга", "Татьяна", "Наталья", "Юлия", "Софья"),
        _ru_last("Иванов", "Смирнов", "Кузнецов", "Попов", "Соколов", "Лебедев", "Ерёмин")
        + _ru_last("Шевченко", "Ким", "Гусейнов"),
        (("Москва", "Россия"), ("Санкт-Петербург", "Россия"), ("Казань", "Россия")),
        "+79",
        9,
        _RU_DOMAINS,
    ),
    Locale(
        20,
        ("Aleksandr", "Dmitry", "Sergey", "Ivan", "Mikhail", "Nikita"),
        ("Anna", "Maria", "Elena", "Olga", "Tatiana", "Daria"),
        _ru_lat_last("Ivanov", "Smirnov", "Kuznetsov", "Popov", "Sokolov", "Volkov"),
        (
            ("Moscow", "Russia"),
            ("Saint Petersburg", "Russia"),
            ("Kazan", "Russia"),
            ("Yekaterinburg", "Russia"),
        ),
        "+79",
        9,
        _RU_DOMAINS,
    ),
    Locale(
        12,
        ("Jürgen", "Lukas", "Felix", "Jörg", "Max"),
        ("Sophie", "Lea", "Hanna", "Zoë", "Käthe"),
        _same("Müller", "Schmidt", "Schäfer", "Weiß", "Becker", "von Bülow"),
        (("Berlin", "Germany"), ("München", "Germany"), ("Köln", "Germany")),
        "+4915",
        9,
        (*_INTL_DOMAINS, ("web.de", 20)),
    ),
    Locale(
        10,
        ("José", "Álvaro", "Javier", "Raúl"),
        ("María José", "Lucía", "Inés", "Sofía"),
        _same("García", "Fernández", "Núñez", "Martínez", "de la Cruz"),
        (("Madrid", "Spain"), ("Barcelona", "Spain"), ("A Coruña", "Spain")),
        "+346",
        8,
        _INTL_DOMAINS,
    ),
    Locale(
        8,
        ("François", "Jean-Luc", "Loïc", "Théo"),
        ("Chloé", "Élodie", "Anaïs", "Marie-Claire"),
        _same("Lefèvre", "Dubois", "Dupont", "D'Angelo", "Bénard"),
        (("Paris", "France"), ("Lyon", "France"), ("Montréal", "Canada")),
        "+336",
        8,
        _INTL_DOMAINS,
    ),
    Locale(
        15,
        ("John", "Michael", "David", "Liam"),
        ("Mary Ann", "Emily", "Olivia", "Grace"),
        _same("Smith", "O'Connor", "Johnson", "Williams", "O'Brien", "Van der Berg"),
        (("New York", "USA"), ("London", "United Kingdom"), ("San Francisco", "USA")),
        "+1",
        10,
        _INTL_DOMAINS,
    ),
)

DOMAIN_GROUPS = {
    "gmail.com": "gmail",
    "yandex.ru": "yandex",
    "ya.ru": "yandex",
    "mail.ru": "mailru",
    "bk.ru": "mailru",
}

WORDS = ("sunny", "tiger", "pixel", "maple", "river", "nova", "echo", "orbit", "delta", "lynx")

SEGMENTS = ("new", "active", "loyal", "dormant", "churned")

CHANNELS = (("email", 45), ("sms", 25), ("push", 15), ("viber", 8), ("telegram_bot", 7))

STATUSES = (
    ("subscribed", 70),
    ("unsubscribed", 10),
    ("unconfirmed", 6),
    ("hardbounced", 4),
    ("suspended", 4),
    ("complained", 3),
    ("invalid", 3),
)

PUSH_PROVIDERS = ("Firebase", "APNs", "WebPush")

CATEGORIES = ("news", "promo", "digest", "partners")

CUSTOM_FIELDS: dict[str, tuple[str, ...]] = {
    "_browser_name": ("Chrome", "Firefox", "Safari", "Яндекс Браузер", "Edge"),
    "_device_type": ("desktop", "mobile", "tablet"),
    "_os": ("Windows", "macOS", "Android", "iOS", "Linux"),
    "utm_source": ("google", "yandex", "newsletter", "vk", "partner_site"),
}

# Cyrillic to Latin for the local part of generated e-mail addresses.
TRANSLIT = {
    "а": "a", "б": "b", "в": "v", "г": "g", "д": "d", "е": "e", "ё": "e", "ж": "zh",
    "з": "z", "и": "i", "й": "y", "к": "k", "л": "l", "м": "m", "н": "n", "о": "o",
    "п": "p", "р": "r", "с": "s", "т": "t", "у": "u", "ф": "f", "х": "kh", "ц": "ts",
    "ч": "ch", "ш": "sh", "щ": "shch", "ъ": "", "ы": "y", "ь": "", "э": "e", "ю": "yu",
    "я": "ya", "ß": "ss",
}  # fmt: skip
