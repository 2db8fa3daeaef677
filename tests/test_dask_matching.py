"""flag_suppressed on a Dask DataFrame: the pandas result, partition by partition.

Contacts and the list come from the demo service; each lazy result is computed
on the local threaded scheduler or on a two-process ``dask.distributed`` cluster
and compared row for row with the in-memory result.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from collections.abc import Iterator
from typing import Any

import dask
import dask.dataframe as dd
import pandas as pd
import pytest
from dask.distributed import Client, LocalCluster

import stoplist_nb as sn
from stoplist_nb.demo import DemoService, serve
from stoplist_nb.errors import InvalidInput
from stoplist_nb.suppression.matching import HashedList

PARTS = 5


@pytest.fixture(scope="module")
def listed_svc() -> Iterator[DemoService]:
    with serve(profiles=120, seed=7) as service:
        yield service


@pytest.fixture(scope="module")
def crm(listed_svc: DemoService) -> pd.DataFrame:
    """A CRM-like export of the demo's contacts: e-mails in capitals, spaces around them."""
    with listed_svc.client() as api:
        profiles = sn.read_profiles(api, 1, progress=False)
    frame = pd.DataFrame(
        {
            "name": profiles["_fname"] + " " + profiles["_lname"],
            "email": " " + profiles["email"].str.upper() + " ",
            "phone": profiles["phone"],
        }
    )
    # Labels out of order, so a partition that lost its index or its place would show;
    # string[pyarrow], the dtype Dask gives text anyway.
    labels = [f"c{i:03d}" for i in range(len(frame))][::-1]
    return frame.set_axis(pd.Index(labels, dtype=pd.StringDtype("pyarrow")))


def suppression_list(service: DemoService, layout: str) -> pd.DataFrame:
    with service.client() as api:
        service.plan_next_export(steps=0, csv_layout=layout)
        return sn.read_suppression_list(
            api, service.suppress_id, type="all", poll_interval=0.01, progress=False
        )


@pytest.fixture(scope="module", params=["plain", "semicolon"])
def stop(listed_svc: DemoService, request: pytest.FixtureRequest) -> pd.DataFrame:
    """The demo's list without a kind column ("plain"), and with one ("semicolon")."""
    return suppression_list(listed_svc, request.param)


@pytest.fixture(scope="module")
def cluster_client() -> Iterator[Client]:
    cluster = LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
    )
    client = Client(cluster, set_as_default=False)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


def lazy_frame(crm: pd.DataFrame) -> Any:
    # sort=False keeps the rows in their order, index and all.
    return dd.from_pandas(crm, npartitions=PARTS, sort=False)


def flag_both(crm: pd.DataFrame, stop: Any) -> tuple[pd.DataFrame, Any]:
    expected = sn.flag_suppressed(crm, stop, email="email", phone="phone")
    lazy = sn.flag_suppressed(lazy_frame(crm), stop, email="email", phone="phone")
    return expected, lazy


def list_tasks(lazy: Any) -> dict[Any, Any]:
    """The tasks of ``lazy``'s graph that hold a decoded list."""
    graph = dict(lazy.__dask_graph__())
    return {k: t for k, t in graph.items() if isinstance(getattr(t, "value", None), HashedList)}


def test_the_demo_data_matches_every_kind(crm: pd.DataFrame, stop: pd.DataFrame) -> None:
    # Otherwise the comparisons below could pass on an all-False column.
    out = sn.flag_suppressed(crm, stop, email="email", phone="phone")
    assert set(out["suppressed_by"].dropna()) == {"email", "phone", "domain"}
    assert len(crm) >= 4 * PARTS


def test_lazy_result_has_the_pandas_columns_and_dtypes(
    crm: pd.DataFrame, stop: pd.DataFrame
) -> None:
    expected, lazy = flag_both(crm, stop)
    assert isinstance(lazy, dd.DataFrame)
    assert lazy.npartitions == PARTS
    pd.testing.assert_series_equal(lazy.dtypes, expected.dtypes)
    assert lazy._meta.attrs["checked"] == ["email", "phone", "domain"]


def test_local_scheduler_matches_in_memory_row_for_row(
    crm: pd.DataFrame, stop: pd.DataFrame
) -> None:
    expected, lazy = flag_both(crm, stop)
    got = lazy.compute(scheduler="threads")
    pd.testing.assert_frame_equal(got, expected)
    assert got.attrs["checked"] == expected.attrs["checked"]


@pytest.mark.slow
def test_distributed_cluster_matches_in_memory_row_for_row(
    crm: pd.DataFrame, stop: pd.DataFrame, cluster_client: Client
) -> None:
    expected, lazy = flag_both(crm, stop)
    (key,) = list_tasks(lazy)
    got = cluster_client.compute(lazy).result()
    pd.testing.assert_frame_equal(got, expected)
    # The list reached each worker at most once, however many partitions it flagged.
    logs = cluster_client.run(lambda dask_worker: list(dask_worker.transfer_incoming_log))
    fetched = [sum(key in entry["keys"] for entry in log) for log in logs.values()]
    assert all(count <= 1 for count in fetched), fetched


def test_list_is_one_task_every_partition_depends_on(crm: pd.DataFrame, stop: pd.DataFrame) -> None:
    _, lazy = flag_both(crm, stop)
    (key,) = list_tasks(lazy)
    graph = dict(lazy.__dask_graph__())
    partitions = [graph[k] for k in lazy.__dask_keys__()]
    assert len(partitions) == PARTS
    assert all(key in task.dependencies for task in partitions)
    # Flagging the same contacts again names the same task: the list is tokenized, not copied.
    assert list(list_tasks(sn.flag_suppressed(lazy_frame(crm), stop, email="email"))) == [key]


def test_dask_optimize_keeps_the_partitions(crm: pd.DataFrame, stop: pd.DataFrame) -> None:
    expected, lazy = flag_both(crm, stop)
    (optimized,) = dask.optimize(lazy)
    pd.testing.assert_frame_equal(optimized.compute(scheduler="threads"), expected)


def test_a_dask_list_is_computed_once_first(crm: pd.DataFrame, stop: pd.DataFrame) -> None:
    expected = sn.flag_suppressed(crm, stop, email="email")
    lazy = sn.flag_suppressed(lazy_frame(crm), dd.from_pandas(stop, npartitions=3), email="email")
    assert len(list_tasks(lazy)) == 1
    pd.testing.assert_frame_equal(lazy.compute(scheduler="threads"), expected)


def test_list_values_not_md5_warn_once_at_the_call(crm: pd.DataFrame, stop: pd.DataFrame) -> None:
    junk = pd.concat([stop, stop.iloc[:2].assign(md5=["junk", "x" * 32])], ignore_index=True)
    with pytest.warns(UserWarning, match="2 values of the suppression list") as caught:
        lazy = sn.flag_suppressed(lazy_frame(crm), junk, email="email", phone="phone")
    assert len(caught) == 1
    assert caught[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = lazy.compute(scheduler="threads")
    expected = sn.flag_suppressed(crm, stop, email="email", phone="phone")
    pd.testing.assert_frame_equal(got, expected)


def test_hashed_columns_match_as_in_memory(crm: pd.DataFrame, stop: pd.DataFrame) -> None:
    hashed = crm.assign(email=sn.hash_emails(crm["email"]), phone=sn.hash_phones(crm["phone"]))
    expected = sn.flag_suppressed(hashed, stop, email="email", phone="phone", hashed=True)
    lazy = sn.flag_suppressed(lazy_frame(hashed), stop, email="email", phone="phone", hashed=True)
    pd.testing.assert_frame_equal(lazy.compute(scheduler="threads"), expected)
    assert expected.attrs["checked"] == ["email", "phone"]


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({}, "name a column"),
        ({"email": "mail"}, "'mail' is not a column"),
        ({"email": "email", "domains": 1}, "domains must be True or False"),
        ({"email": "email", "hashed": True, "email_canonical": str.lower}, "hashed=True"),
    ],
)
def test_bad_arguments_raise_at_the_call(
    crm: pd.DataFrame, options: dict[str, Any], match: str
) -> None:
    with pytest.raises(InvalidInput, match=match):
        sn.flag_suppressed(lazy_frame(crm), [], **options)


@pytest.mark.slow
def test_importing_the_package_leaves_dask_out() -> None:
    code = (
        "import sys, pandas as pd, stoplist_nb as sn;"
        "sn.flag_suppressed(pd.DataFrame({'e': ['a@x.org']}), [], email='e');"
        "print([m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')])"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
