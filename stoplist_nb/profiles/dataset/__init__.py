"""A Parquet dataset of profiles on disk: its parts, its checkpoint, its lock, its sealing.

:func:`write_dataset` writes a directory that pandas, pyarrow, DuckDB and Dask
read as one table::

    part-00000.parquet   part-00001.parquet   ...   _common_metadata   _checkpoint.json
"""

from __future__ import annotations

from stoplist_nb.profiles.dataset.checkpoint import CHECKPOINT, DatasetSummary
from stoplist_nb.profiles.dataset.directory import dataset_summary, write_dataset
from stoplist_nb.profiles.dataset.lock import LOCK
from stoplist_nb.profiles.dataset.writer import (
    DEFAULT_COMMIT_BYTES,
    DEFAULT_COMMIT_SECONDS,
    DEFAULT_PROFILES_PER_PART,
)

__all__ = [
    "CHECKPOINT", "DEFAULT_COMMIT_BYTES", "DEFAULT_COMMIT_SECONDS", "DEFAULT_PROFILES_PER_PART",
    "LOCK", "DatasetSummary", "dataset_summary", "write_dataset"
]  # fmt: skip
