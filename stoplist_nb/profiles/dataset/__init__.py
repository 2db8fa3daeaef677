"""A Parquet dataset of profiles on disk: its parts, its checkpoint, its lock, its sealing.

:func:`write_dataset` (behind
:meth:`~stoplist_nb.profiles.reading.ProfilesRequest.to_dataset`) writes a directory
that ``pd.read_parquet``, ``pyarrow.dataset``, DuckDB
(``read_parquet('dir/*.parquet')``) and Dask read as one table::

    part-00000.parquet   part-00001.parquet   ...   _common_metadata   _checkpoint.json

A file is written under a hidden name and renamed when whole (``parts``);
only then does the checkpoint move on to it (``checkpoint``). The pages go
into parts, their progress committed as they go (``writer``); before a
resumed pull sends anything every file is checked, and when the stream ends
the dataset is sealed (``seal``); one writer at a time holds the directory
(``lock``); ``directory`` writes, carries on or sums up a dataset.
"""

from __future__ import annotations

from stoplist_nb.profiles.dataset.checkpoint import CHECKPOINT, DatasetSummary
from stoplist_nb.profiles.dataset.directory import dataset_summary, write_dataset
from stoplist_nb.profiles.dataset.lock import LOCK
from stoplist_nb.profiles.dataset.parts import COMPRESSION, conform_to, parquet_schema
from stoplist_nb.profiles.dataset.writer import (
    DEFAULT_COMMIT_BYTES,
    DEFAULT_COMMIT_SECONDS,
    DEFAULT_PROFILES_PER_PART,
)

__all__ = [
    "CHECKPOINT",
    "COMPRESSION",
    "DEFAULT_COMMIT_BYTES",
    "DEFAULT_COMMIT_SECONDS",
    "DEFAULT_PROFILES_PER_PART",
    "LOCK",
    "DatasetSummary",
    "conform_to",
    "dataset_summary",
    "parquet_schema",
    "write_dataset",
]
