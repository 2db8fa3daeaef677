"""The ``stoplist-nb`` command line, against the embedded demo service on loopback."""

from __future__ import annotations

import functools
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys
import types
import zipfile
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pytest

import stoplist_nb
import stoplist_nb as sn
from stoplist_nb._http import transport
from stoplist_nb.demo import DemoService, generate_profiles, serve
from stoplist_nb.suppression.archive import read_hashed_csv
from stoplist_nb.suppression.hashing import canonical_phone, hash_email

if TYPE_CHECKING:
    from conftest import Run

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXIT_USAGE, EXIT_ERROR, EXIT_AUTH, EXIT_NETWORK = 2, 1, 3, 4
DATA_FILES = [
    f"{name}{suffix}"
    for name in ("profiles", "suppression_list", "flagged_contacts")
    for suffix in (".parquet", ".csv")
]
PLOTS = ["channels", "statuses", "registrations", "top_domains", "suppression_overlap"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
DEEP_QUERY = '{"$and": [' * 5000 + '{"a": 1}' + "]}" * 5000
DEEPISH_QUERY = '{"$and": [' * 60 + '{"a": 1}' + "]}" * 60  # past 100, within json.loads
DEEPER = "nests deeper than 100 levels"


@pytest.fixture
def fast_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default retry budget (5 retries), without the seconds of backoff."""
    default = transport.default_retry
    monkeypatch.setattr(transport, "default_retry", lambda: default().new(backoff_factor=0))


def api_requests(svc: DemoService) -> list[str]:
    return [r.method for r in svc.requests]


def subscriptions(profile: dict[str, Any]) -> list[dict[str, Any]]:
    return list(profile.get("subscriptions") or [])


def rows_of(profiles: list[dict[str, Any]]) -> int:
    """Rows of the frame: one per subscription, one for a profile without any."""
    return sum(max(1, len(subscriptions(p))) for p in profiles)


# --- demo ------------------------------------------------------------------------


def expected_kinds(
    profiles: list[dict[str, Any]], suppressed: dict[str, list[str]]
) -> dict[str, int]:
    """Contacts of the subscriptions found in the list per kind, counted without the library."""
    emails, phones = set(suppressed["emails"]), set(suppressed["phones"])
    domains = set(suppressed["domains"])
    kinds = {"email": 0, "phone": 0, "domain": 0}
    for profile in profiles:
        for sub in subscriptions(profile):
            email = (sub.get("email_data") or {}).get("email")
            phone = (sub.get("phone_data") or {}).get("phone")
            if email is not None:  # an e-mail subscription: its address, else its domain
                address = email.strip().lower()
                if address in emails:
                    kinds["email"] += 1
                elif address.rsplit("@", 1)[-1] in domains:
                    kinds["domain"] += 1
            elif phone is not None:
                kinds["phone"] += canonical_phone(phone) in phones
    return kinds


def expected_hits(profiles: list[dict[str, Any]], suppressed: dict[str, list[str]]) -> int:
    """Contacts of the subscriptions found in the list, counted without the library."""
    return sum(expected_kinds(profiles, suppressed).values())


def found_line(kinds: dict[str, int]) -> str:
    """How the summary reports the matches of ``kinds``."""
    per_kind = ", ".join(f"{n} by {kind}" for kind, n in kinds.items())
    return f"found in the list: {sum(kinds.values())} ({per_kind}), of "


@pytest.mark.slow
def test_demo_writes_frames_and_plots(
    run: Run, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The command's own demo service draws a random token; make it one to look for.
    secret = "demo-t0ken-never-printed"
    monkeypatch.setattr("stoplist_nb.demo.serve", functools.partial(serve, token=secret))
    out = tmp_path / "new" / "demo"
    code, stdout, stderr = run(
        "demo",
        "--out",
        str(out),
        "--profiles",
        "150",
        "--seed",
        "3",
        "--limit",
        "40",
        "--progress",
    )
    assert code == 0, stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(
        DATA_FILES + [f"{name}.png" for name in PLOTS]
    )
    held = generate_profiles(150, 3)
    suppressed = DemoService(held, 3).suppressed  # the same list, never started
    for suffix, read in ((".parquet", pd.read_parquet), (".csv", pd.read_csv)):
        profiles = read(out / f"profiles{suffix}")
        assert len(profiles) == rows_of(held)
        assert profiles["profile_id"].drop_duplicates().tolist() == [p["id"] for p in held]
        stop = read(out / f"suppression_list{suffix}")
        assert stop["type"].value_counts().to_dict() == {
            "emails": len(suppressed["emails"]),
            "phones": len(suppressed["phones"]),
            "domains": len(suppressed["domains"]),
        }
        assert set(stop["md5"]) >= {hash_email(e) for e in suppressed["emails"]}
        flagged = read(out / f"flagged_contacts{suffix}")
        contacts = sum(
            1 for p in held for s in subscriptions(p) if "email_data" in s or "phone_data" in s
        )
        assert len(flagged) == contacts
        assert int(flagged["suppressed"].sum()) == expected_hits(held, suppressed) > 0
    # Parquet keeps lists; CSV holds them as JSON.
    cats = pd.read_parquet(out / "profiles.parquet")["cats"].dropna()
    assert len(cats) > 0
    assert all(isinstance(v, list | np.ndarray) for v in cats)
    as_text = pd.read_csv(out / "profiles.csv")["cats"].dropna()
    assert [json.loads(v) for v in as_text] == [list(v) for v in cats]
    for name in PLOTS:
        png = (out / f"{name}.png").read_bytes()
        assert png.startswith(PNG_MAGIC)
        assert len(png) > 1000
    from PIL import Image

    with Image.open(out / "channels.png") as image:
        image.verify()
    assert "150 profiles" in stdout
    kinds = expected_kinds(held, suppressed)
    assert kinds["domain"] > 0  # an address found by its domain alone
    assert found_line(kinds) in stdout
    assert f"suppression list 7: {len(stop)} hashes" in stdout
    assert f"wrote {len(DATA_FILES) + len(PLOTS)} files to {out}" in stdout
    assert "profiles/list" in stderr  # the progress bar
    assert secret not in stdout + stderr


@pytest.mark.slow
def test_demo_reports_a_kind_checked_and_never_found(
    run: Run, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = generate_profiles(60, 5)
    addresses = sorted(
        email.strip().lower()
        for p in held
        for s in subscriptions(p)
        if (email := (s.get("email_data") or {}).get("email"))
    )
    # One address listed, and the domain of another: no phone at all.
    listed = {"emails": addresses[:1], "phones": [], "domains": [addresses[-1].split("@")[1]]}
    monkeypatch.setattr("stoplist_nb.demo.serve", functools.partial(serve, suppressed=listed))
    code, stdout, stderr = run(
        "demo", "--out", str(tmp_path), "--profiles", "60", "--seed", "5", "--no-plots"
    )
    assert code == 0, stderr
    kinds = expected_kinds(held, listed)
    assert kinds["phone"] == 0
    assert kinds["email"] > 0
    assert kinds["domain"] > 0
    assert found_line(kinds) in stdout  # "0 by phone": checked, and found nothing
    flagged = pd.read_parquet(tmp_path / "flagged_contacts.parquet")
    assert flagged["suppressed_by"].value_counts().to_dict() == {
        k: n for k, n in kinds.items() if n
    }
    assert "suppression list 7: 2 hashes (1 email, 0 phones, 1 domain)" in stdout


@pytest.fixture
def fake_plots(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """A stand-in for stoplist_nb.plots that records what each function was given."""
    calls: dict[str, list[Any]] = {}
    module = types.ModuleType("stoplist_nb.plots")

    def recorder(name: str) -> Callable[..., Any]:
        def plot(data: pd.DataFrame, *args: Any, ax: Any = None, **kwargs: Any) -> Any:
            calls[name] = [data, args, kwargs]
            ax.bar(["a", "b"], [1, 2])
            return ax

        return plot

    for name in PLOTS:
        setattr(module, f"plot_{name}", recorder(name))
    monkeypatch.setitem(sys.modules, "stoplist_nb.plots", module)
    monkeypatch.setattr(stoplist_nb, "plots", module, raising=False)
    return calls


@pytest.mark.slow
def test_demo_gives_each_plot_its_frame(
    run: Run, tmp_path: pathlib.Path, fake_plots: dict[str, list[Any]]
) -> None:
    code, _, stderr = run("demo", "--out", str(tmp_path), "--profiles", "40", "--quiet")
    assert code == 0, stderr
    assert set(fake_plots) == set(PLOTS)
    for name in ("channels", "statuses", "registrations", "top_domains"):
        assert fake_plots[name][0]["profile_id"].nunique() == 40
    assert fake_plots["registrations"][2] == {"freq": "MS"}
    assert fake_plots["top_domains"][2] == {"n": 10}
    flagged = fake_plots["suppression_overlap"][0]
    assert {"channel", "email", "phone", "suppressed", "suppressed_by"} <= set(flagged.columns)
    assert (tmp_path / "suppression_overlap.png").read_bytes().startswith(PNG_MAGIC)


@pytest.mark.slow
def test_demo_without_plots_is_quiet(
    run: Run, tmp_path: pathlib.Path, fake_plots: dict[str, list[Any]]
) -> None:
    code, stdout, stderr = run(
        "demo", "--out", str(tmp_path), "--profiles", "20", "-q", "--no-plots"
    )
    assert (code, stdout, stderr) == (0, "", "")
    assert not fake_plots
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(DATA_FILES)


# --- profiles --------------------------------------------------------------------


def test_profiles_parquet_with_query(run: Run, env: DemoService, tmp_path: pathlib.Path) -> None:
    cities = ["Moscow", "Kazan", "London"]
    query = {"_city": {"$in": cities}}
    out = tmp_path / "p.parquet"
    code, stdout, stderr = run(
        "profiles",
        "--db-id",
        str(env.db_id),
        "--query",
        json.dumps(query),
        "--limit",
        "7",
        "--out",
        str(out),
    )
    assert code == 0, stderr
    held = [p for p in env.profiles if p.get("_city") in cities]
    assert held
    df = pd.read_parquet(out)
    assert len(df) == rows_of(held)
    assert df["profile_id"].drop_duplicates().tolist() == [p["id"] for p in held]
    assert df.drop_duplicates("profile_id")["_city"].tolist() == [p["_city"] for p in held]
    sent = [r.params for r in env.requests if r.method == "profiles/list"]
    assert len(sent) == -(-len(held) // 7) + 1  # full pages, then the empty one
    assert all(p["query"] == query and p["limit"] == 7 for p in sent)
    assert f"wrote {len(df)} rows ({len(held)} profiles" in stdout


def test_profiles_csv_with_query_file_and_fields(
    run: Run, env: DemoService, tmp_path: pathlib.Path
) -> None:
    query_file = tmp_path / "q.json"
    query_file.write_text(json.dumps({"$or": [{"vip": True}, {"loyalty_level": {"$gte": 4}}]}))
    out = tmp_path / "p.CSV"
    code, _, stderr = run(
        "profiles",
        "--db-id",
        "1",
        "--query",
        f"@{query_file}",
        "--out",
        str(out),
        "--fields",
        "_fname, _city,subscriptions",
    )
    assert code == 0, stderr
    held = [p for p in env.profiles if p.get("vip") is True or p.get("loyalty_level", 0) >= 4]
    df = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert len(df) == rows_of(held)
    assert {"_fname", "_city", "channel", "email", "cats"} <= set(df.columns)
    assert not {"_lname", "vip", "loyalty_level"} & set(df.columns)
    first = df.drop_duplicates("profile_id")
    assert first["profile_id"].tolist() == [p["id"] for p in held]
    assert first["_fname"].tolist() == [p.get("_fname", "") for p in held]
    cats = [c for p in held for s in subscriptions(p) if (c := s.get("cats"))]
    assert [json.loads(v) for v in df["cats"] if v] == cats
    assert env.requests[0].params["fields"] == ["_fname", "_city", "subscriptions"]


def test_profiles_max_profiles_then_from_id(
    run: Run, env: DemoService, tmp_path: pathlib.Path
) -> None:
    first, rest = tmp_path / "a.parquet", tmp_path / "b.parquet"
    code, stdout, _ = run(
        "profiles", "--db-id", "1", "--max-profiles", "7", "--limit", "3", "--out", str(first)
    )
    assert code == 0
    ids = pd.read_parquet(first)["profile_id"].drop_duplicates().tolist()
    assert ids == [p["id"] for p in env.profiles[:7]]
    cursor = stdout.split("--from-id ")[1].split()[0]
    code, _, _ = run("profiles", "--db-id", "1", "--from-id", cursor, "--out", str(rest))
    assert code == 0
    later = pd.read_parquet(rest)["profile_id"].drop_duplicates().tolist()
    assert later == [p["id"] for p in env.profiles[7:]]


@pytest.fixture
def late_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[DemoService]:
    """A service whose profiles gain a field from the 36th on, named by the environment."""
    profiles = generate_profiles(60, seed=2)
    for i, profile in enumerate(profiles[35:], 35):
        profile["late_score"] = i
    with serve(profiles=profiles) as service:
        monkeypatch.setenv("STOPLIST_NB_URL", service.base_url)
        monkeypatch.setenv("STOPLIST_NB_TOKEN", service.token)
        yield service


def test_profiles_streamed_files_hold_a_column_that_joins_late(
    run: Run, late_env: DemoService, tmp_path: pathlib.Path
) -> None:
    from stoplist_nb.cli.output import write_frame

    with late_env.client() as client:
        frame = stoplist_nb.read_profiles(client, 1, progress=False)
    assert frame["late_score"].notna().sum() > 0
    expected = tmp_path / "expected.csv"
    write_frame(frame, expected)
    for name in ("p.csv", "p.parquet"):
        code, stdout, stderr = run(
            "profiles", "--db-id", "1", "--limit", "10", "--out", str(tmp_path / name)
        )
        assert code == 0, stderr
        assert f"wrote {len(frame)} rows (60 profiles, {len(frame.columns)} columns)" in stdout
    # Pages went to the file one by one; the header still names the column of page four.
    assert (tmp_path / "p.csv").read_bytes() == expected.read_bytes()
    back = pd.read_parquet(tmp_path / "p.parquet")
    assert back["phones"].dropna().map(json.loads).tolist() == frame["phones"].dropna().tolist()
    rest = [c for c in frame.columns if c != "phones"]
    pd.testing.assert_frame_equal(back[rest], frame[rest])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["expected.csv", "p.csv", "p.parquet"]


def test_profiles_streamed_file_of_no_profile_has_the_columns(
    run: Run, env: DemoService, tmp_path: pathlib.Path
) -> None:
    for name in ("none.csv", "none.parquet"):
        out = tmp_path / name
        code, stdout, _ = run(
            "profiles", "--db-id", "1", "--query", '{"_city": "Atlantis"}', "--out", str(out)
        )
        assert code == 0
        assert "wrote 0 rows (0 profiles" in stdout
        back = pd.read_csv(out) if name.endswith(".csv") else pd.read_parquet(out)
        assert len(back) == 0
        assert {"profile_id", "channel", "email", "cats"} <= set(back.columns)


def test_profiles_out_dir_writes_a_dataset(
    run: Run, env: DemoService, tmp_path: pathlib.Path
) -> None:
    out = tmp_path / "ds"
    code, stdout, stderr = run(
        "profiles", "--db-id", "1", "--limit", "25", "--out", f"{out}{os.sep}"
    )
    assert code == 0, stderr
    assert f"{out}/ holds " in stdout
    assert "(120 profiles, 1 part file) of database 1; it is complete" in stdout
    with env.client() as client:
        frame = stoplist_nb.read_profiles(client, 1, progress=False)
    back = pd.read_parquet(out)
    assert back["profile_id"].tolist() == frame["profile_id"].tolist()
    assert sorted(p.name for p in out.iterdir()) == [
        "_checkpoint.json",
        "_common_metadata",
        "part-00000.parquet",
    ]
    # The directory exists now: --out names it without the slash too, and it is refused.
    env.requests.clear()
    code, _, stderr = run("profiles", "--db-id", "1", "--out", str(out))
    assert code == EXIT_USAGE
    assert "holds a dataset already" in stderr
    assert "hint: add --resume to carry on from its checkpoint, or --overwrite to start" in stderr
    assert "=True" not in stderr
    assert env.requests == []
    code, stdout, _ = run("profiles", "--db-id", "1", "--out", str(out), "--resume")
    assert code == 0
    assert "(120 profiles, 1 part file)" in stdout
    assert env.requests == []  # complete: nothing to read
    code, _, _ = run("profiles", "--db-id", "1", "--out", str(out), "--overwrite", "--limit", "50")
    assert code == 0
    assert [r.params["limit"] for r in env.requests] == [50, 50, 50, 50]
    code, _, stderr = run(
        "profiles", "--db-id", "1", "--query", '{"_city": "Kazan"}', "--out", str(out), "--resume"
    )
    assert code == EXIT_USAGE
    assert "checkpoint of another pull (query: None there" in stderr


@pytest.mark.usefixtures("fast_retry")
def test_profiles_out_dir_resumes_after_a_failure(
    run: Run, late_env: DemoService, tmp_path: pathlib.Path
) -> None:
    reference, out = tmp_path / "reference", tmp_path / "ds"
    with late_env.client() as client:
        stoplist_nb.ProfilesRequest(client, 1, limit=10, progress=False).to_dataset(reference)
    late_env.add_fault("profiles/list", "status", status=502, times=None, after=4)
    code, _, stderr = run("profiles", "--db-id", "1", "--limit", "10", "--out", f"{out}/")
    assert code == EXIT_NETWORK
    assert "stoplist-nb: error: profiles/list: error 502" in stderr
    # Part 0 closed when late_score joined on page 4, which the failure committed too.
    assert (
        f"hint: 40 profiles are saved in {out}/; to carry on from there, run: "
        f"stoplist-nb profiles --db-id 1 --limit 10 --out {out}/ --resume\n"
    ) in stderr
    assert "resume=True" not in stderr
    assert ".partial" not in stderr
    late_env.clear_faults()
    late_env.requests.clear()
    code, _, stderr = run("profiles", "--db-id", "1", "--limit", "10", "--out", f"{out}/")
    assert code == EXIT_USAGE
    assert "--resume" in stderr
    code, _, stderr = run(
        "profiles", "--db-id", "1", "--limit", "10", "--out", f"{out}/", "--resume"
    )
    assert code == 0, stderr
    pd.testing.assert_frame_equal(pd.read_parquet(out), pd.read_parquet(reference))
    saved = json.loads((out / "_checkpoint.json").read_text())
    assert saved == json.loads((reference / "_checkpoint.json").read_text())
    assert saved["profiles"] == 60


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--out", "{tmp}/p.csv", "--resume"], "--resume goes with a dataset directory"),
        (["--out", "{tmp}/ds/", "--resume", "--overwrite"], "give one of them"),
        (["--out", "{tmp}/ds/", "--from-id", "x"], "--from-id and --max-profiles go with a file"),
        (["--out", "{tmp}/ds/", "--max-profiles", "3"], "a dataset directory carries on"),
    ],
)
def test_profiles_options_of_the_other_output_exit_2(
    run: Run, env: DemoService, tmp_path: pathlib.Path, argv: list[str], message: str
) -> None:
    code, _, stderr = run(
        "profiles", "--db-id", "1", *[a.replace("{tmp}", str(tmp_path)) for a in argv]
    )
    assert code == EXIT_USAGE
    assert message in stderr
    assert env.requests == []
    assert list(tmp_path.iterdir()) == []


def test_profiles_out_dir_interrupted_says_how_to_resume(
    run: Run, env: DemoService, monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(sn.ProfilesRequest, "to_dataset", interrupted)
    code, _, stderr = run("profiles", "--db-id", "1", "--out", f"{tmp_path}/ds/", "--overwrite")
    assert code == 130
    # Stopped before the pull had a checkpoint: there is nothing to carry on from.
    assert stderr == (
        "stoplist-nb: interrupted\n"
        f"stoplist-nb: nothing was saved in {tmp_path}/ds/\n"
        "stoplist-nb: hint: the same command starts again\n"
    )


# --- export ----------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".zip"])
def test_export(run: Run, env: DemoService, tmp_path: pathlib.Path, suffix: str) -> None:
    out = tmp_path / f"stop{suffix}"
    code, stdout, stderr = run(
        "export",
        "--list-id",
        str(env.suppress_id),
        "--type",
        "emails",
        "--out",
        str(out),
        "--poll-interval",
        "0.01",
    )
    assert code == 0, stderr
    if suffix == ".zip":
        assert zipfile.ZipFile(out).namelist() == [f"{env.suppress_name}.md5.csv"]
        frame = read_hashed_csv(out)
    else:
        frame = pd.read_csv(out, dtype=str) if suffix == ".csv" else pd.read_parquet(out)
    emails = env.suppressed["emails"]
    assert len(frame) == len(emails)
    assert set(frame["md5"]) == {hash_email(e) for e in emails}
    exported = [r.params for r in env.requests if r.method == "suppresses/export"]
    assert exported == [{"id": env.suppress_id, "type": "emails"}]
    assert str(out) in stdout
    assert "per kind" not in stdout  # the demo's default file names no kind
    assert not list(tmp_path.glob(".*"))  # no temporary file left beside the output


@pytest.mark.parametrize("layout", ["semicolon", "two_columns"])
def test_export_says_what_the_list_holds_per_kind(
    run: Run, env: DemoService, tmp_path: pathlib.Path, layout: str
) -> None:
    env.plan_next_export(csv_layout=layout)
    out = tmp_path / "stop.parquet"
    code, stdout, stderr = run(
        "export", "--list-id", "7", "--type", "all", "--out", str(out), "--poll-interval", "0.01"
    )
    assert code == 0, stderr
    sizes = {kind: len(env.suppressed[f"{kind}s"]) for kind in ("email", "phone", "domain")}
    assert all(sizes.values())
    assert pd.read_parquet(out)["type"].value_counts().to_dict() == sizes
    per_kind = ", ".join(f"{kind} {n}" for kind, n in sizes.items())
    assert f"\nrows per kind: {per_kind}\n" in stdout


def test_export_waits_for_a_started_task(
    run: Run, env: DemoService, tmp_path: pathlib.Path
) -> None:
    with env.client() as client:
        task_id = stoplist_nb.start_suppression_export(client, env.suppress_id, type="phones")
    out = tmp_path / "phones.csv"
    code, _, stderr = run(
        "export", "--task-id", task_id, "--out", str(out), "--poll-interval", "0.01"
    )
    assert code == 0, stderr
    assert len(pd.read_csv(out)) == len(env.suppressed["phones"])
    assert api_requests(env).count("suppresses/export") == 1


def test_export_warnings_are_printed_as_such(
    run: Run, env: DemoService, tmp_path: pathlib.Path
) -> None:
    env.plan_next_export(csv_layout="bad_rows")
    out = tmp_path / "stop.parquet"
    code, _, stderr = run("export", "--list-id", "7", "--out", str(out), "--poll-interval", "0.01")
    assert code == 0
    assert "stoplist-nb: warning: " in stderr
    assert "Traceback" not in stderr


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        ({"fail": True}, "failed: export failed: list is locked"),
        ({"archive": "corrupt"}, "error: "),
        ({"hashed_file": "https://evil.example/x.zip"}, "download path refused"),
    ],
)
def test_export_failures_exit_1(
    run: Run, env: DemoService, tmp_path: pathlib.Path, plan: dict[str, Any], message: str
) -> None:
    env.plan_next_export(**plan)
    out = tmp_path / "stop.csv"
    code, _, stderr = run("export", "--list-id", "7", "--out", str(out), "--poll-interval", "0.01")
    assert code == EXIT_ERROR
    assert stderr.startswith("stoplist-nb: export task exp-")  # the note naming the task
    assert "\nstoplist-nb: error: " in stderr
    assert message in stderr
    assert "Traceback" not in stderr
    assert not out.exists()


@pytest.mark.parametrize("suffix", [".zip", ".csv", ".parquet"])
def test_export_waits_for_a_file_not_served_yet(
    run: Run, env: DemoService, tmp_path: pathlib.Path, suffix: str
) -> None:
    env.plan_next_export(steps=0, not_ready_downloads=2)  # done, then 404 twice
    out = tmp_path / f"s{suffix}"
    code, _stdout, stderr = run(
        "export", "--list-id", "7", "--out", str(out), "--poll-interval", "0.01"
    )
    assert code == 0, stderr
    assert out.exists()
    assert out.stat().st_size > 0
    downloads = [r for r in env.requests if r.method == "download"]
    assert len(downloads) == 3


def test_export_of_a_file_never_served_names_the_task_and_how_to_resume(
    run: Run, env: DemoService, tmp_path: pathlib.Path
) -> None:
    env.plan_next_export(steps=0, not_ready_downloads=10_000)
    code, _, stderr = run(
        "export", "--list-id", "7", "--out", str(tmp_path / "s.zip"),
        "--poll-interval", "0.01", "--task-timeout", "0.3",
    )  # fmt: skip
    assert code == EXIT_ERROR
    error = next(line for line in stderr.splitlines() if "error:" in line)
    assert re.search(r"export task 'exp-\w+' is done but its file .* is not ready", error)
    assert "\nstoplist-nb: hint: " in stderr
    assert "--task-id exp-" in stderr
    assert not (tmp_path / "s.zip").exists()


def test_export_past_the_deadline_says_how_to_resume(
    run: Run, env: DemoService, tmp_path: pathlib.Path
) -> None:
    env.plan_next_export(never=True)
    code, _, stderr = run(
        "export",
        "--list-id",
        "7",
        "--out",
        str(tmp_path / "s.zip"),
        "--poll-interval",
        "0.01",
        "--task-timeout",
        "0.2",
    )
    assert code == EXIT_ERROR
    error = next(line for line in stderr.splitlines() if "error:" in line)
    assert re.search(r"export task 'exp-\w+' still processing at \d+% after 0\.2 s$", error)
    assert "--task-id" not in error  # said once, on the hint line
    assert "\nstoplist-nb: hint: " in stderr
    assert "--task-id exp-" in stderr
    assert "wait_for_task" not in stderr


# --- errors ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["profiles", "--db-id", "1", "--out", "{tmp}/p.txt"], "must end in .parquet or .csv"),
        (["profiles", "--db-id", "1", "--out", "{tmp}/missing/p.csv"], "no directory"),
        (["profiles", "--db-id", "1", "--query", "{bad", "--out", "{tmp}/p.csv"], "not valid JSON"),
        (["profiles", "--db-id", "1", "--query", "[1]", "--out", "{tmp}/p.csv"], "JSON object"),
        (
            [
                "profiles",
                "--db-id",
                "1",
                "--query",
                '{"_city": {"$inn": ["x"]}}',
                "--out",
                "{tmp}/p.csv",
            ],
            "unknown operator '$inn'",
        ),
        (
            ["profiles", "--db-id", "1", "--query", "@{tmp}/no.json", "--out", "{tmp}/p.csv"],
            "cannot read",
        ),
        # json.loads itself recurses, and gives up past a thousand levels
        (["profiles", "--db-id", "1", "--query", DEEP_QUERY, "--out", "{tmp}/p.csv"], DEEPER),
        (["profiles", "--db-id", "1", "--query", DEEPISH_QUERY, "--out", "{tmp}/p.csv"], DEEPER),
        (
            ["profiles", "--db-id", "1", "--query", '{"a": NaN}', "--out", "{tmp}/p.csv"],
            "query['a']: nan is not a JSON number",
        ),
        (
            ["profiles", "--db-id", "1", "--query", '{"a": 1e999}', "--out", "{tmp}/p.csv"],
            "query['a']: inf is not a JSON number",
        ),
        (
            [
                "profiles",
                "--db-id",
                "1",
                "--query",
                f'{{"a": {"9" * 5000}}}',
                "--out",
                "{tmp}/p.csv",
            ],
            "integer too long",
        ),
        (["profiles", "--db-id", "1", "--limit", "0", "--out", "{tmp}/p.csv"], "at least 1"),
        (["profiles", "--db-id", "x", "--out", "{tmp}/p.csv"], "invalid int value"),
        (["profiles", "--db-id", "1", "--fields", ",", "--out", "{tmp}/p.csv"], "at least one"),
        (["profiles", "--out", "{tmp}/p.csv"], "required: --db-id"),
        (["export", "--list-id", "7", "--out", "{tmp}/s.json"], "must end in .zip or"),
        (["export", "--list-id", "7", "--task-id", "t", "--out", "{tmp}/s.zip"], "not allowed"),
        (["export", "--list-id", "7", "--type", "urls", "--out", "{tmp}/s.zip"], "invalid choice"),
        (["export", "--list-id", "7", "--retries", "-1", "--out", "{tmp}/s.zip"], "at least 0"),
        (["demo", "--profiles", "0"], "at least 1"),
        (["nonsense"], "invalid choice"),
        ([], "required: COMMAND"),
    ],
)
def test_bad_arguments_exit_2_before_any_request(
    run: Run, env: DemoService, tmp_path: pathlib.Path, argv: list[str], message: str
) -> None:
    code, stdout, stderr = run(*[a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert code == EXIT_USAGE
    assert stderr.startswith("usage: stoplist-nb")
    assert message in stderr
    assert stdout == ""
    assert env.requests == []
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("unset", "message"),
    [
        (["STOPLIST_NB_URL"], "STOPLIST_NB_TOKEN is set but STOPLIST_NB_URL is not"),
        (["STOPLIST_NB_TOKEN"], "STOPLIST_NB_URL is set but STOPLIST_NB_TOKEN is not"),
        (
            ["STOPLIST_NB_URL", "STOPLIST_NB_TOKEN"],
            "STOPLIST_NB_URL and STOPLIST_NB_TOKEN are not set",
        ),
    ],
)
@pytest.mark.parametrize("command", ["profiles", "export"])
def test_incomplete_environment_exits_2_before_any_request(
    run: Run,
    env: DemoService,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: pathlib.Path,
    unset: list[str],
    message: str,
    command: str,
) -> None:
    for name in unset:
        monkeypatch.delenv(name)
    argv = (
        ["profiles", "--db-id", "1", "--out", str(tmp_path / "p.csv")]
        if command == "profiles"
        else ["export", "--list-id", "7", "--out", str(tmp_path / "s.zip")]
    )
    code, _, stderr = run(*argv)
    assert code == EXIT_USAGE
    assert stderr.startswith(f"stoplist-nb: error: {message}\nstoplist-nb: hint: export ")
    assert env.token not in stderr
    assert env.requests == []
    assert list(tmp_path.iterdir()) == []


def test_wrong_token_exits_3(
    run: Run, env: DemoService, monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    wrong = "wrong-" + env.token[::-1]
    monkeypatch.setenv("STOPLIST_NB_TOKEN", wrong)
    for argv in (
        ["profiles", "--db-id", "1", "--out", str(tmp_path / "p.csv")],
        ["export", "--list-id", "7", "--out", str(tmp_path / "s.zip")],
    ):
        code, stdout, stderr = run(*argv)
        assert code == EXIT_AUTH
        assert "stoplist-nb: error: " in stderr
        assert "error 403 (HTTP 403, Access denied)" in stderr
        assert "stoplist-nb: hint: check STOPLIST_NB_TOKEN" in stderr
        assert wrong not in stdout + stderr
        assert "Traceback" not in stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.usefixtures("fast_retry")
def test_server_failing_past_the_retries_exits_4(
    run: Run, env: DemoService, tmp_path: pathlib.Path
) -> None:
    env.add_fault("profiles/list", "status", status=502, times=50)
    code, _, stderr = run("profiles", "--db-id", "1", "--out", str(tmp_path / "p.csv"))
    assert code == EXIT_NETWORK
    assert stderr.startswith("stoplist-nb: error: profiles/list: error 502")
    assert api_requests(env) == ["profiles/list"] * 6  # the first try and 5 retries
    env.requests.clear()
    code, _, _ = run("profiles", "--db-id", "1", "--retries", "1", "--out", str(tmp_path / "p.csv"))
    assert code == EXIT_NETWORK
    assert api_requests(env) == ["profiles/list"] * 2
    assert list(tmp_path.iterdir()) == []


def test_unreachable_service_exits_4(
    run: Run, monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("STOPLIST_NB_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("STOPLIST_NB_TOKEN", "t0ken-not-to-show")
    code, _, stderr = run(
        "profiles", "--db-id", "1", "--retries", "0", "--out", str(tmp_path / "p.csv")
    )
    assert code == EXIT_NETWORK
    assert f"error: profiles/list: the connection to 127.0.0.1:{port} was refused" in stderr
    assert f"hint: check that the service runs at 127.0.0.1:{port}, the address " in stderr
    assert "STOPLIST_NB_URL names" in stderr
    assert "t0ken-not-to-show" not in stderr


@pytest.mark.usefixtures("fast_retry")
def test_failure_after_some_pages_says_where_to_resume(
    run: Run, env: DemoService, tmp_path: pathlib.Path
) -> None:
    # The first page is answered, every request after it (retries included) gets a 503.
    env.add_fault("profiles/list", "status", status=503, times=None, after=1)
    out = tmp_path / "p.parquet"
    code, _, stderr = run("profiles", "--db-id", "1", "--limit", "10", "--out", str(out))
    assert code == EXIT_NETWORK
    cursor = env.profiles[9]["id"]
    assert "10 profiles were read before the failure (nothing was written)" in stderr
    assert stderr.rstrip().endswith(
        f"run: stoplist-nb profiles --db-id 1 --limit 10 --out {out} --from-id {cursor}"
    )
    assert ".partial" not in stderr
    assert not out.exists()


def test_interrupt_exits_130(
    run: Run, env: DemoService, monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("stoplist_nb.cli.commands.ProfilesRequest.to_csv", interrupted)
    out = tmp_path / "p.csv"
    code, _, stderr = run("profiles", "--db-id", "1", "--out", str(out))
    assert (code, stderr) == (
        130,
        f"stoplist-nb: interrupted\nstoplist-nb: nothing was written: no {out}\n"
        "stoplist-nb: hint: the same command reads the profiles again\n",
    )


# --- entry points ----------------------------------------------------------------


def test_help_and_version(run: Run) -> None:
    code, stdout, _ = run("--help")
    assert code == 0
    assert stdout.startswith("usage: stoplist-nb")
    assert "exit codes:" in stdout
    assert "143 terminated (SIGTERM)" in " ".join(stdout.split())
    for command in ([], ["profiles"], ["export"]):  # how to try it, without an account
        code, stdout, _ = run(*command, "--help")
        assert code == 0
        assert "python -m stoplist_nb.demo" in stdout
        assert "stoplist-nb profiles --db-id 1 --out profiles.parquet" in stdout
    assert run("--version")[:2] == (0, f"stoplist-nb {stoplist_nb.__version__}\n")


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STOPLIST_NB_")}
    return {**env, **extra}


@pytest.mark.slow
def test_python_dash_m(tmp_path: pathlib.Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "stoplist_nb", "profiles", "--help"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env=clean_env(),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: stoplist-nb profiles")


@pytest.mark.slow
def test_console_script(svc: DemoService, tmp_path: pathlib.Path) -> None:
    script = pathlib.Path(sys.executable).with_name("stoplist-nb")
    if not script.exists():
        pytest.skip("the stoplist-nb script is not installed (pip install -e .)")
    result = subprocess.run(
        [str(script), "profiles", "--db-id", "1", "--max-profiles", "5", "--out", "p.csv"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env=clean_env(STOPLIST_NB_URL=svc.base_url, STOPLIST_NB_TOKEN=svc.token),
    )
    assert result.returncode == 0, result.stderr
    assert pd.read_csv(tmp_path / "p.csv")["profile_id"].nunique() == 5
    assert svc.token not in result.stdout + result.stderr
    unset = subprocess.run(
        [str(script), "export", "--list-id", "7", "--out", "s.zip"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env=clean_env(),
    )
    assert unset.returncode == EXIT_USAGE
    assert unset.stderr.startswith(
        "stoplist-nb: error: STOPLIST_NB_URL and STOPLIST_NB_TOKEN are not set"
    )


# --- words -------------------------------------------------------------------------------


def test_one_is_said_in_the_singular(run: Run, env: DemoService, tmp_path: pathlib.Path) -> None:
    one = next(p for p in env.profiles if not subscriptions(p))  # a profile is one row
    query = json.dumps({"email": one["email"]})
    code, stdout, stderr = run(
        "profiles", "--db-id", "1", "--query", query, "--out", str(tmp_path / "one.csv")
    )
    assert code == 0, stderr
    assert "wrote 1 row (1 profile, " in stdout
    code, stdout, stderr = run(
        "profiles", "--db-id", "1", "--query", query, "--out", f"{tmp_path}/ds/"
    )
    assert code == 0, stderr
    assert f"{tmp_path}/ds/ holds 1 row (1 profile, 1 part file) of database 1" in stdout
    assert not re.search(r"\b1 (rows|profiles|part files|columns|hashes|files)\b", stdout)


@pytest.mark.slow
def test_the_demo_counts_profiles_subscriptions_and_rows_truthfully(
    run: Run, tmp_path: pathlib.Path
) -> None:
    held = generate_profiles(80, 2)
    code, stdout, stderr = run(
        "demo", "--out", str(tmp_path), "--profiles", "80", "--seed", "2", "--no-plots"
    )
    assert code == 0, stderr
    bare = sum(1 for p in held if not subscriptions(p))
    subs = sum(len(subscriptions(p)) for p in held)
    assert bare > 0
    assert (
        f"\n80 profiles ({bare} without a subscription), {subs} subscriptions: "
        f"{rows_of(held)} rows, one per subscription and one per profile without any\n"
    ) in stdout
    assert len(pd.read_parquet(tmp_path / "profiles.parquet")) == rows_of(held) == bare + subs
    first = stdout.splitlines()[0]
    assert first == (
        "demo data: 80 generated profiles of the embedded demo service, database 1, "
        "suppression list 7"
    )  # no address: the service ends with the command


def test_profiles_dataset_options_reach_the_dataset(
    run: Run, env: DemoService, tmp_path: pathlib.Path
) -> None:
    out = f"{tmp_path}/ds/"
    code, stdout, stderr = run(
        "profiles", "--db-id", "1", "--limit", "10", "--out", out,
        "--profiles-per-part", "25", "--commit-seconds", "0", "--commit-bytes", "4096",
    )  # fmt: skip
    assert code == 0, stderr
    summary = stoplist_nb.dataset_summary(tmp_path / "ds")
    assert summary.parts >= 4  # parts close at whole pages past 25 profiles: 30 each
    assert f"(120 profiles, {summary.parts} part files)" in stdout
    for option, value in (("--profiles-per-part", "25"), ("--commit-seconds", "0")):
        code, _, stderr = run("profiles", "--db-id", "1", option, value, "--out", f"{out}x.csv")
        assert code == EXIT_USAGE
        assert f"{option} goes with a dataset directory (--out DIR/)" in stderr


def test_profiles_dataset_with_a_damaged_part_is_repaired_by_the_command_given(
    run: Run, env: DemoService, tmp_path: pathlib.Path
) -> None:
    out = f"{tmp_path}/ds/"
    argv = ["profiles", "--db-id", "1", "--limit", "10", "--profiles-per-part", "30"]
    code, _, stderr = run(*argv, "--out", out)
    assert code == 0, stderr
    whole = pd.read_parquet(tmp_path / "ds")
    damaged = tmp_path / "ds" / "part-00002.parquet"
    damaged.write_bytes(damaged.read_bytes()[:-100])  # cut short
    env.requests.clear()
    code, _, stderr = run(*argv, "--out", out, "--resume")
    assert code == EXIT_USAGE
    assert "part-00002.parquet, listed in the checkpoint" in stderr
    assert "hint: add --repair to drop part-00002.parquet and the " in stderr
    assert "=True" not in stderr
    assert env.requests == []  # found before anything was sent
    line = next(x for x in stderr.splitlines() if "to repair it, run: " in x)
    repair = shlex.split(line.split("to repair it, run: ", 1)[1])
    assert repair == ["stoplist-nb", *argv, "--out", out, "--repair"]
    code, stdout, stderr = run(*repair[1:])
    assert code == 0, stderr
    assert "(120 profiles, " in stdout
    assert env.requests[0].params["from_id"] == env.profiles[59]["id"]  # after part-00001
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "ds"), whole)
