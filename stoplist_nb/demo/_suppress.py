"""The demo suppression list and its exports: contacts, MD5 rows, tasks, CSV and ZIP.

An export task advances one step per ``tasks/status`` poll, never with the clock, so a
test knows what the n-th poll answers. The platform does not document the CSV inside the
``.md5.zip``, so the demo writes several layouts and archive shapes, hostile ones included.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import io
import random
import secrets
import threading
import uuid
import zipfile
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from stoplist_nb.demo._data import WORDS, unique

KINDS: tuple[str, ...] = ("emails", "phones", "domains")
EXPORT_TYPES: tuple[str, ...] = (*KINDS, "all")


def canonical(kind: str, value: str) -> str:
    """The form of ``value`` that is hashed: ``+`` and digits, or trimmed lower case."""
    if kind == "phones":
        digits = "".join(ch for ch in value if "0" <= ch <= "9")
        if digits:
            return "+" + digits
    elif text := value.strip().lower():
        return text
    raise ValueError(f"no {kind[:-1]} in {value!r} in the suppression list")


def canonicalize(suppressed: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
    """A given list checked, as sorted unique canonical forms per kind (missing: empty)."""
    if unknown := set(suppressed) - set(KINDS):
        raise ValueError(f"unknown suppressed keys {sorted(unknown)}; use {list(KINDS)}")
    result: dict[str, list[str]] = {}
    for kind in KINDS:
        given = suppressed.get(kind, ())
        values = None if isinstance(given, str) else list(given)
        if values is None or not all(isinstance(value, str) for value in values):
            raise ValueError(f"suppressed[{kind!r}] must be a list of strings, got {given!r}")
        result[kind] = sorted({canonical(kind, value) for value in values})
    return result


def build_suppressed(profiles: Sequence[Mapping[str, Any]], seed: int) -> dict[str, list[str]]:
    """Some of the profiles' contacts, and as many that belong to no profile, sorted."""

    def share(count: int, fraction: float) -> int:
        # At least one whenever there is anything, so a small data set still overlaps.
        return 0 if count == 0 else max(1, round(count * fraction))

    rng = random.Random(f"stoplist-nb-demo/suppress/{seed}")
    found: dict[str, set[str]] = {"emails": set(), "phones": set()}
    # Profiles may come from the caller, so no field is trusted to have its usual shape.
    for profile in profiles:
        subscriptions = profile.get("subscriptions")
        for sub in subscriptions if isinstance(subscriptions, list) else ():
            for block, key, kind in (
                ("email_data", "email", "emails"),
                ("phone_data", "phone", "phones"),
            ):
                data = sub.get(block) if isinstance(sub, Mapping) else None
                value = data.get(key) if isinstance(data, Mapping) else None
                if isinstance(value, str):
                    with contextlib.suppress(ValueError):
                        found[kind].add(canonical(kind, value))
    emails, phones = found["emails"], found["phones"]
    used = Counter(email.rsplit("@", 1)[1] for email in emails if "@" in email)
    domains = set(used)
    own_emails = rng.sample(sorted(emails), share(len(emails), 0.15))
    own_phones = rng.sample(sorted(phones), share(len(phones), 0.15))
    # From the less used half: a blocked gmail.com would flag a third of the profiles
    # and drown the e-mail and phone matches.
    rare = sorted(domains, key=lambda d: (used[d], d))[: max(1, (len(domains) + 1) // 2)]
    own_domains = rng.sample(rare, min(len(rare), share(len(domains), 0.10)))

    def new_domain() -> str:
        name = f"{rng.choice(WORDS)}-{rng.randint(1, 99)}"
        return name + rng.choice((".example", ".test", ".invalid"))

    def new_email() -> str:
        # Half at domains the profiles use, so a domain alone never decides a match.
        pool = sorted(domains) if domains and rng.random() < 0.5 else None
        domain = rng.choice(pool) if pool else new_domain()
        return f"{rng.choice(WORDS)}.{rng.choice(WORDS)}{rng.randint(1, 9999)}@{domain}"

    def new_phone() -> str:
        prefix = rng.choice(("+7", "+7", "+49", "+33", "+1", "+380"))
        return prefix + "".join(str(rng.randrange(10)) for _ in range(10))

    result = {}
    # Drawn in this order: the same seed gives the same list.
    for kind, own, new, known in (
        ("domains", own_domains, new_domain, domains),
        ("emails", own_emails, new_email, emails),
        ("phones", own_phones, new_phone, phones),
    ):
        taken = set(known)
        result[kind] = sorted({*own, *(unique(new, taken) for _ in own)})
    return {kind: result[kind] for kind in KINDS}


CsvLayout = Literal["plain", "header", "semicolon", "two_columns", "crlf", "upper", "bad_rows"]
ArchiveKind = Literal["normal", "junk", "bomb", "corrupt", "two_csv"]
CSV_LAYOUTS: frozenset[str] = frozenset(get_args(CsvLayout))
ARCHIVE_KINDS: frozenset[str] = frozenset(get_args(ArchiveKind))

# Exactly 200 MiB once inflated, so a test can compare the declared size.
BOMB_SIZE = 200 * 1024 * 1024

# A fixed timestamp makes the same export give the same archive bytes.
_STAMP = (2024, 1, 1, 0, 0, 0)
_CHUNK = 1024 * 1024
# The start of an AppleDouble file, what macOS's zip puts under __MACOSX/.
_APPLE_DOUBLE = b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        " + b"\x00" * 58
_README = (
    b"Suppression list export.\n"
    b"The .md5.csv file holds the MD5 hashes of the contacts of the list.\n"
)

Row = tuple[str, str]  # (row type such as "email", lower-case md5 hex)


def render_csv(rows: Sequence[Row], layout: CsvLayout) -> bytes:
    """The CSV bytes of ``rows``, ``(row type, md5)`` pairs; see ``ExportPlan.csv_layout``.

    >>> render_csv([("email", "ab" * 16)], "semicolon").decode()
    'md5;type\\nabababababababababababababababab;email\\n'
    """
    if layout == "semicolon":
        lines = ["md5;type", *(f"{md5};{kind}" for kind, md5 in rows)]
    elif layout == "two_columns":
        lines = ["type,md5", *(f"{kind},{md5}" for kind, md5 in rows)]
    else:
        lines = [md5.upper() if layout == "upper" else md5 for _, md5 in rows]
        if layout == "header":
            lines.insert(0, "md5")
        elif layout == "bad_rows":
            # Near the start, in the middle and at the end, where readers slip.
            lines.insert(min(1, len(lines)), "not-a-hash")
            lines.insert(len(lines) // 2, "")
            lines.append("12345")
    end = "\r\n" if layout == "crlf" else "\n"
    return "".join(line + end for line in lines).encode("utf-8")


def _info(name: str, *, directory: bool = False) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, _STAMP)
    info.compress_type = zipfile.ZIP_STORED if directory else zipfile.ZIP_DEFLATED
    # A directory: its Unix mode plus the MS-DOS dir bit.
    info.external_attr = (0o40755 << 16) | 0x10 if directory else 0o644 << 16
    return info


def build_archive(
    name: str, rows: Sequence[Row], *, layout: CsvLayout = "plain", kind: ArchiveKind = "normal"
) -> bytes:
    """The ``<name>.md5.zip`` of ``<name>.md5.csv``; see ``ExportPlan.archive``."""
    if kind == "corrupt":
        # A real local header and the start of the data, then bytes that are no ZIP
        # structure, then an end-of-central-directory record cut short.
        good = build_archive(name, rows, layout=layout)
        garbage = hashlib.sha256(good).digest() * 8
        return good[: max(64, len(good) // 2)] + garbage + b"PK\x05\x06\x00\x00\x00\x00\x01\x00"
    member = f"{name}.md5.csv"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        junk = kind in ("junk", "two_csv")
        if junk:
            archive.writestr(_info(f"__MACOSX/._{member}"), _APPLE_DOUBLE)
            archive.writestr(_info("extra/", directory=True), b"")
        if kind == "bomb":
            line = f"{rows[0][1] if rows else hashlib.md5(b'').hexdigest()}\n".encode()
            block = line * (_CHUNK // len(line))
            # Streamed in blocks of whole lines: the 200 MiB never exist in memory at once.
            with archive.open(_info(member), "w") as out:
                for _ in range(BOMB_SIZE // len(block)):
                    out.write(block)
                rest = BOMB_SIZE % len(block)
                out.write(line * (rest // len(line)) + b"\n" * (rest % len(line)))
        elif kind == "two_csv":
            half = (len(rows) + 1) // 2
            archive.writestr(_info("part1.csv"), render_csv(rows[:half], layout))
            archive.writestr(_info("part2.csv"), render_csv(rows[half:], layout))
        else:
            archive.writestr(_info(member), render_csv(rows, layout))
        if junk:
            archive.writestr(_info("readme.txt"), _README)
    return buffer.getvalue()


@dataclass(frozen=True)
class ExportPlan:
    """How the next export task behaves; see ``DemoService.plan_next_export``.

    With the defaults, polls 1-3 answer ``queued`` 0, ``processing`` 40 and 80 with
    ``result`` ``{}``, and poll 4 onward ``completed`` 100 with the filled ``result``.

    Attributes:
        steps: Running polls before the end; poll ``i`` reports ``words[min(i - 1,
            len(words) - 1)]``, progress ``(i - 1) * 200 // (2 * steps - 1)``.
        words: Status words while running, undocumented ones allowed.
        final: Status word of completion (progress 100, ``result`` filled).
        fail: After the steps report ``"failed"``, progress stuck, ``result``
            ``{"error": "export failed: list is locked"}`` (the envelope's ``error`` 0).
        never: After the steps report ``words[-1]`` forever, progress at least 60.
        hashed_file_as_list: Report ``result.hashed_file`` as ``[path]``.
        hashed_file: Report this string instead of the real path (still served).
        csv_layout: ``"plain"``, ``"header"`` (``md5`` first), ``"semicolon"``
            (``md5;type``), ``"two_columns"`` (``type,md5``), ``"crlf"``, ``"upper"``
            or ``"bad_rows"`` (plus ``not-a-hash``, an empty line and ``12345``).
        archive: ``"normal"``; ``"junk"`` (plus ``__MACOSX/._<name>.md5.csv``,
            ``readme.txt``, ``extra/``); ``"bomb"`` (inflates to 200 MiB); ``"corrupt"``;
            ``"two_csv"`` (``part1.csv`` and ``part2.csv``, junk added).
        done_before_file: Polls after the steps that report progress 100 and the filled
            ``result`` under ``words[-1]`` while the file still answers 404.
        not_ready_downloads: Downloads of the served file that answer 404 first.

    Raises:
        ValueError: On a value out of range, or ``fail`` or ``never`` with another end.
    """

    steps: int = 3
    words: tuple[str, ...] = ("queued", "processing")
    final: str = "completed"
    fail: bool = False
    never: bool = False
    hashed_file_as_list: bool = False
    hashed_file: str | None = None
    csv_layout: CsvLayout = "plain"
    archive: ArchiveKind = "normal"
    done_before_file: int = 0
    not_ready_downloads: int = 0

    def __post_init__(self) -> None:
        words: Any = self.words
        sequence = isinstance(words, Sequence) and not isinstance(words, str) and words
        if not sequence or not all(isinstance(w, str) and w for w in words):
            raise ValueError(f"words must be a sequence of non-empty status words, got {words!r}")
        object.__setattr__(self, "words", tuple(words))  # a list given by the caller, frozen
        if not isinstance(self.final, str) or not self.final:
            raise ValueError(f"final must be a non-empty string, got {self.final!r}")
        for name in ("fail", "never", "hashed_file_as_list"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be a bool, got {getattr(self, name)!r}")
        if self.fail and self.never:
            raise ValueError("a task cannot both fail and never end")
        for name in ("steps", "done_before_file", "not_ready_downloads"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be an int >= 0, got {value!r}")
            if value and name != "steps" and (self.fail or self.never):
                raise ValueError(f"{name} needs a task that completes (not fail or never)")
        if self.hashed_file is not None and not isinstance(self.hashed_file, str):
            raise ValueError(f"hashed_file must be a string or None, got {self.hashed_file!r}")
        for name, allowed in (("csv_layout", CSV_LAYOUTS), ("archive", ARCHIVE_KINDS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {sorted(allowed)}")


@dataclass
class _Task:
    type: str
    plan: ExportPlan
    polls: int = 0
    result: dict[str, Any] | None = None
    served: bool = False  # the task has reported its final word
    refused: int = 0  # downloads of the served file answered 404 so far
    lock: threading.Lock = field(default_factory=threading.Lock)


class ExportStore:
    """The suppression list, its export tasks and their archives."""

    def __init__(
        self, suppress_id: int, suppress_name: str, suppressed: Mapping[str, Iterable[str]]
    ) -> None:
        name = suppress_name if isinstance(suppress_name, str) else ""
        # A path separator would nest the file.
        if not name.strip() or not name.isprintable() or {"/", "\\"} & set(name):
            raise ValueError(f"suppress_name must be printable, without / or \\: {suppress_name!r}")
        self.suppress_id, self.suppress_name = suppress_id, suppress_name
        self.suppressed = canonicalize(suppressed)
        self._plan = ExportPlan()
        self._lock = threading.Lock()
        self._tasks: dict[str, _Task] = {}
        self._files: dict[str, tuple[bytes, _Task]] = {}

    def plan_next(self, plan: ExportPlan) -> None:
        """Use ``plan`` for the next export started (replacing a pending one)."""
        with self._lock:
            self._plan = plan

    def start(self, type_: str) -> str:
        """Start an export of ``type_`` with the pending plan; returns the task id."""
        with self._lock:
            plan, self._plan = self._plan, ExportPlan()
            task_id = unique(lambda: f"exp-{secrets.token_hex(6)}", set(self._tasks))
            self._tasks[task_id] = _Task(type_, plan)
        return task_id

    def poll(self, task_id: str) -> dict[str, Any] | None:
        """Advance the task one step; its ``data`` reply, or ``None`` if it is unknown."""
        with self._lock:
            task = self._tasks.get(task_id)
        if task is None:
            return None
        # One lock per task: building a large archive does not hold up other tasks.
        with task.lock:
            task.polls += 1
            plan, steps = task.plan, task.plan.steps
            last = (steps - 1) * 200 // (2 * steps - 1) if steps else 0  # the last step's
            if task.polls <= steps:
                word = plan.words[min(task.polls - 1, len(plan.words) - 1)]
                progress = (task.polls - 1) * 200 // (2 * steps - 1)
                return {"status": word, "progress": progress, "result": {}}
            if plan.never:
                return {"status": plan.words[-1], "progress": max(60, last), "result": {}}
            if plan.fail:
                result = {"error": "export failed: list is locked"}
                return {"status": "failed", "progress": last, "result": result}
            if task.result is None:
                task.result = self._complete(task)
            result = copy.deepcopy(task.result)
            if task.polls <= steps + plan.done_before_file:
                return {"status": plan.words[-1], "progress": 100, "result": result}
            task.served = True
            return {"status": plan.final, "progress": 100, "result": result}

    def _complete(self, task: _Task) -> dict[str, Any]:
        kinds = KINDS if task.type == "all" else (task.type,)
        rows = [
            (k[:-1], hashlib.md5(v.encode()).hexdigest()) for k in kinds for v in self.suppressed[k]
        ]
        plan = task.plan
        data = build_archive(self.suppress_name, rows, layout=plan.csv_layout, kind=plan.archive)
        path = f"suppress/{uuid.uuid4()}/{self.suppress_name}.md5.zip"
        with self._lock:
            self._files[path] = (data, task)
        reported = path if plan.hashed_file is None else plan.hashed_file
        return {
            "hashed_file": [reported] if plan.hashed_file_as_list else reported,
            "regular_file": "",
            "is_api": True,
            "suppress_id": self.suppress_id,
            "total": len(rows),
        }

    def file(self, path: str) -> bytes | None:
        """The archive at ``/api/download/<path>``; ``None`` (a 404) if unknown or held back."""
        with self._lock:
            data, task = self._files.get(path, (None, None))
        if task is None:
            return None
        with task.lock:
            if not task.served:
                return None
            if task.refused < task.plan.not_ready_downloads:
                task.refused += 1
                return None
        return data
