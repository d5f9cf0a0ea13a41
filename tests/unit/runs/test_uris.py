"""Run-store URIs: credentials refused without repeating them, options applied without
network, paths joined before a query string everywhere a store URI is built or parsed."""

from __future__ import annotations

import traceback

import pyarrow.fs as pafs
import pytest

from airflow_provider_rayorch.runs.store import RunStore, read_summary_outputs
from airflow_provider_rayorch.runs.uris import (
    RunStoreSettingError,
    fs_path,
    join_uri,
    open_filesystem,
    redact_uri,
    store_root_of,
)

pytestmark = pytest.mark.timeout(20)

SECRET = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"
QUERY = "endpoint_override=127.0.0.1:9&scheme=http&region=us-east-1"


@pytest.mark.parametrize(
    ("uri", "where"),
    [
        pytest.param(f"s3://AKIDEXAMPLE:{SECRET}@bucket/runs?{QUERY}", "'@'", id="userinfo"),
        pytest.param(f"s3://bucket/runs?secret_key={SECRET}&{QUERY}", "secret_key", id="secret"),
        pytest.param(f"s3://bucket/runs?{QUERY}&session_token={SECRET}", "session", id="token"),
        pytest.param(f"gs://bucket/runs?access_token={SECRET}", "access_token", id="gcs-token"),
    ],
)
def test_a_uri_with_credentials_is_refused_without_repeating_them(uri: str, where: str) -> None:
    with pytest.raises(RunStoreSettingError) as info:
        RunStore(uri)
    message = str(info.value)
    assert "run_store_options" in message
    assert where in message
    assert SECRET not in message
    assert SECRET not in "".join(traceback.format_exception(info.value))
    assert "AKIDEXAMPLE" not in message


def test_redact_uri_hides_userinfo_and_secret_query_values_only() -> None:
    uri = f"s3://AK:{SECRET}@bucket/runs?secret_key={SECRET}&region=us-east-1"
    assert redact_uri(uri) == "s3://***@bucket/runs?secret_key=***&region=us-east-1"


def test_options_build_an_s3_filesystem_without_asking_aws_for_the_region() -> None:
    options = {
        "endpoint_override": "127.0.0.1:9",
        "scheme": "http",
        "access_key": "AK",
        "secret_key": SECRET,
        "region": "us-east-1",
    }
    store = RunStore("s3://bucket/runs", options)
    assert isinstance(store.fs, pafs.S3FileSystem)
    assert store.fs.region == "us-east-1"
    assert store.root == "bucket/runs"
    assert SECRET not in repr(store)
    assert store.uri == "s3://bucket/runs"


def test_options_win_over_the_query_and_query_booleans_are_booleans() -> None:
    fs, root = open_filesystem(
        f"s3://bucket/runs/?{QUERY}&allow_bucket_creation=true", {"region": "eu-west-3"}
    )
    assert isinstance(fs, pafs.S3FileSystem)
    assert fs.region == "eu-west-3"
    assert root == "bucket/runs"


def test_an_unknown_option_names_run_store_options() -> None:
    with pytest.raises(RunStoreSettingError, match="run_store_options") as info:
        RunStore("s3://bucket/runs", {"endpoint": "x", "secret_key": SECRET})
    assert SECRET not in str(info.value)


@pytest.mark.parametrize(
    ("uri", "parts", "expected"),
    [
        pytest.param(
            f"s3://b/runs?{QUERY}",
            ("r1", "plan.json"),
            f"s3://b/runs/r1/plan.json?{QUERY}",
            id="query",
        ),
        pytest.param(f"s3://b?{QUERY}", ("r1",), f"s3://b/r1?{QUERY}", id="bucket-only"),
        pytest.param("s3://b/runs/", ("r1",), "s3://b/runs/r1", id="trailing-slash"),
        pytest.param("/data/runs", ("r1", "x"), "/data/runs/r1/x", id="local"),
    ],
)
def test_join_uri_appends_before_the_query(uri: str, parts: tuple[str, ...], expected: str) -> None:
    assert join_uri(uri, *parts) == expected


def test_store_uris_keep_the_query_at_the_end() -> None:
    store = RunStore(f"s3://bucket/runs?{QUERY}")
    assert store.run_uri("r1") == f"s3://bucket/runs/r1?{QUERY}"
    assert store.outputs_uri("r1", 3) == f"s3://bucket/runs/r1/outputs/mb-00003?{QUERY}"
    assert store.root == "bucket/runs"


@pytest.mark.parametrize(
    ("outputs", "root"),
    [
        pytest.param(
            f"s3://b/runs/r1/outputs/mb-00000?{QUERY}", f"s3://b/runs?{QUERY}", id="query"
        ),
        pytest.param("s3://b/runs/r1/outputs", "s3://b/runs", id="plain"),
        pytest.param("/tmp/r1/outputs", "/tmp", id="local"),
        pytest.param("s3://b/runs/other/outputs", None, id="another-run"),
    ],
)
def test_store_root_of_an_outputs_uri(outputs: str, root: str | None) -> None:
    assert store_root_of(outputs, "r1") == root


def test_read_summary_outputs_opens_the_store_with_its_query_and_options(monkeypatch) -> None:
    opened: list[tuple[str, object]] = []

    class Recording:
        def __init__(self, uri: str, options: object = None) -> None:
            opened.append((uri, options))

        def read_outputs(self, run_id: str, port: str) -> list[dict[str, object]]:
            return [{"source": 0, "outcome": "present", "cause": None, "value": 1}]

    import airflow_provider_rayorch.runs.store as store_module

    monkeypatch.setattr(store_module, "RunStore", Recording)
    summary = {"run_id": "r1", "outputs": {"uri": f"s3://b/runs/r1/outputs?{QUERY}", "rows": 1}}
    rows = read_summary_outputs(summary, options={"region": "us-east-1"})
    assert rows[0]["value"] == 1
    assert opened == [(f"s3://b/runs?{QUERY}", {"region": "us-east-1"})]


def test_a_local_store_writes_outputs_whose_uri_it_can_read_back(tmp_path) -> None:
    store = RunStore(str(tmp_path))
    uri = store.write_outputs("r1", 0, "out", 0, [("present", None, 7)])
    assert uri == f"{tmp_path}/r1/outputs/mb-00000/out.parquet"
    store.commit_microbatch("r1", 0, {"state": "success"})
    summary = {"run_id": "r1", "outputs": {"uri": store.outputs_uri("r1"), "rows": 1}}
    assert [r["value"] for r in read_summary_outputs(summary)] == [7]


@pytest.mark.parametrize(
    ("uri", "path"),
    [
        pytest.param(
            f"s3://b/runs/r1/outputs/mb-00000/out.parquet?{QUERY}",
            "b/runs/r1/outputs/mb-00000/out.parquet",
            id="s3-query",
        ),
        pytest.param("gs://b/runs/x.json", "b/runs/x.json", id="gcs"),
        pytest.param("file:///data/runs/x.json", "/data/runs/x.json", id="file"),
        pytest.param("/data/runs/x.json", "/data/runs/x.json", id="local"),
    ],
)
def test_fs_path_is_the_path_inside_the_filesystem(uri: str, path: str) -> None:
    assert fs_path(uri) == path


def test_report_rows_are_read_with_the_stores_filesystem(tmp_path, monkeypatch) -> None:
    """A manifest's file URI is read through the store's filesystem (its options: the
    endpoint, region, keys), never opened by pyarrow from the URI alone."""
    import pyarrow.parquet as pq

    from airflow_provider_rayorch.reports import _data

    store = RunStore(str(tmp_path))
    uri = store.write_outputs("r1", 0, "out", 0, [("present", None, 7)])
    seen: list[object] = []
    real = pq.read_table

    def recording(path, *args, **kwargs):
        seen.append(kwargs.get("filesystem"))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(_data.pq, "read_table", recording)
    view = type("MB", (), {"index": 0, "files": {"out": uri}})()
    assert _data._output_rows(store, "r1", view, "out")[0]["outcome"] == "present"
    assert seen == [store.fs]


def test_a_sources_glob_with_credentials_is_refused_pointing_at_the_credential_chain() -> None:
    from airflow_provider_rayorch.runs.globbing import glob_uris

    with pytest.raises(RunStoreSettingError, match="credential chain") as info:
        glob_uris(f"s3://AKID:{SECRET}@landing/in/*.pdf")
    assert str(info.value).startswith("sources URI s3://***@landing/in/")
    assert "run_store_options" not in str(info.value)
    assert SECRET not in str(info.value)


def test_a_remote_filesystem_is_opened_once_per_uri_and_options() -> None:
    """A store, a listing or a trigger opening the same remote place again reuses its
    client; other options get another one; at most OPENED_MAX are kept."""
    from airflow_provider_rayorch.runs import uris

    options = {"endpoint_override": "http://127.0.0.1:9", "access_key": "a", "secret_key": "b"}
    first, root = open_filesystem("s3://bucket/runs", options)
    again, _ = open_filesystem("s3://bucket/runs", dict(options))
    other, _ = open_filesystem("s3://bucket/runs", {**options, "region": "eu-west-1"})
    assert again is first
    assert other is not first
    assert root == "bucket/runs"
    for i in range(uris.OPENED_MAX + 1):
        open_filesystem(f"s3://bucket-{i}/runs", options)
    assert len(uris._opened) == uris.OPENED_MAX
    assert open_filesystem("s3://bucket/runs", options)[0] is not first  # the oldest went
