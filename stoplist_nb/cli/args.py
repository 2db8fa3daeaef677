"""Argument types of the command line: each checks its value, or says what is wrong.

They raise ``argparse.ArgumentTypeError``, so a bad value is an argparse error
(usage, message, exit 2) and nothing is sent.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stoplist_nb import errors
from stoplist_nb.query import MAX_DEPTH, validate_query

__all__ = [
    "Out",
    "count",
    "fields",
    "out_file",
    "out_file_or_dir",
    "positive_int",
    "query",
    "seconds",
    "seconds_or_zero",
]


def _whole_number(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be at least {minimum}, not {value}")
    return value


def positive_int(text: str) -> int:
    """A whole number of at least 1 (``--limit``, ``--max-profiles``, ``--profiles``)."""
    return _whole_number(text, 1)


def count(text: str) -> int:
    """A whole number of at least 0 (``--retries``)."""
    return _whole_number(text, 0)


def seconds(text: str) -> float:
    """A finite number of seconds above 0 (``--timeout``, ``--poll-interval``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text}")
    return value


def seconds_or_zero(text: str) -> float:
    """A finite number of seconds of at least 0 (``--commit-seconds``: 0 is every page)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    return 0.0 if value == 0 else seconds(text)


def query(text: str) -> dict[str, Any]:
    """``--query``: JSON text, or ``@path`` to a JSON file; checked before anything is sent."""
    where = "the query"
    if text.startswith("@"):
        where = text[1:]
        try:
            text = pathlib.Path(where).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise argparse.ArgumentTypeError(f"cannot read {where}: {reason}") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"{where} is not valid JSON: {exc}") from None
    except ValueError:  # an int of more digits than sys.get_int_max_str_digits()
        raise argparse.ArgumentTypeError(
            f"{where} has an integer too long for MongoDB, which holds 64 bits"
        ) from None
    except RecursionError:  # json.loads recurses, so it gives up near the recursion limit
        raise argparse.ArgumentTypeError(
            f"{where} nests deeper than {MAX_DEPTH} levels, the most MongoDB takes"
        ) from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(
            f'{where} must be a JSON object like {{"_city": "Moscow"}}, '
            f"not a {type(value).__name__}"
        )
    try:
        return validate_query(value)
    except errors.InvalidQuery as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def fields(text: str) -> list[str]:
    """``--fields``: names separated by commas, blanks around them dropped."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError("name at least one field, e.g. _fname,_city")
    return names


def out_file(*suffixes: str) -> Callable[[str], pathlib.Path]:
    """``--out``: a file named with one of ``suffixes``, in a directory that exists."""

    def check(text: str) -> pathlib.Path:
        path = pathlib.Path(text)
        if path.suffix.lower() not in suffixes:
            raise argparse.ArgumentTypeError(
                f"{text!r}: the file name must end in {' or '.join(suffixes)}"
            )
        if path.is_dir():
            raise argparse.ArgumentTypeError(f"{text!r} is a directory")
        if not path.parent.is_dir():
            raise argparse.ArgumentTypeError(f"{text!r}: no directory {str(path.parent)!r}")
        return path

    return check


@dataclass(frozen=True)
class Out:
    """Where ``profiles --out`` writes.

    Attributes:
        path: The file, or the dataset's directory.
        dataset: Whether it is a directory (a Parquet dataset).
    """

    path: pathlib.Path
    dataset: bool


def out_file_or_dir(*suffixes: str) -> Callable[[str], Out]:
    """``profiles --out``: a file as :func:`out_file` takes it, or the directory of a dataset.

    A path that ends in ``/``, or a directory that exists, names a dataset's
    directory (created if missing).
    """
    file = out_file(*suffixes)

    def check(text: str) -> Out:
        path = pathlib.Path(text)
        if text.endswith(("/", os.sep)) or path.is_dir():
            if path.exists() and not path.is_dir():
                raise argparse.ArgumentTypeError(f"{text!r} is a file, not a directory")
            return Out(path, dataset=True)
        if path.suffix.lower() not in suffixes:
            raise argparse.ArgumentTypeError(
                f"{text!r}: the file name must end in {' or '.join(suffixes)} "
                "(or end the path in / for a directory of Parquet files)"
            )
        return Out(file(text), dataset=False)

    return check
