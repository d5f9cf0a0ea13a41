"""Dataset names: OpenLineage's naming conventions, one dataset per input location."""

from __future__ import annotations

import pytest

from airflow_provider_rayorch.lineage.naming import (
    DatasetName,
    dataset_name,
    input_locations,
    is_location,
)


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        pytest.param("/data/in/a.pdf", ("file", "/data/in/a.pdf"), id="local-path"),
        pytest.param("file:///data/in/", ("file", "/data/in"), id="file-uri"),
        pytest.param("s3://bucket/runs/r1/outputs", ("s3://bucket", "runs/r1/outputs"), id="s3"),
        pytest.param("gs://bucket/a/b.mp4", ("gs://bucket", "a/b.mp4"), id="gs"),
        pytest.param("gcs://bucket/a", ("gs://bucket", "a"), id="gcs-spelling"),
        pytest.param(
            "s3://bucket/runs?endpoint_override=127.0.0.1:9000&scheme=http",
            ("s3://bucket", "runs"),
            id="query-dropped",
        ),
        pytest.param("s3://KEY:SECRET@bucket/in/x", ("s3://bucket", "in/x"), id="userinfo-dropped"),
        pytest.param("s3://bucket", ("s3://bucket", "/"), id="bucket-root"),
    ],
)
def test_dataset_names_follow_openlineage_naming(uri, expected) -> None:
    name = dataset_name(uri)
    assert (name.namespace, name.name) == expected
    assert "SECRET" not in name.uri
    assert "endpoint_override" not in name.uri


def test_names_agree_with_the_openlineage_client() -> None:
    naming = pytest.importorskip("openlineage.client.naming.dataset")
    pairs = [
        (dataset_name("/data/in"), naming.LocalFileSystem(path="/data/in")),
        (dataset_name("s3://b/k/x"), naming.S3(bucket_name="b", object_key="k/x")),
        (dataset_name("gs://b/k/x"), naming.GCS(bucket_name="b", object_key="k/x")),
    ]
    for ours, theirs in pairs:
        assert (ours.namespace, ours.name) == (theirs.get_namespace(), theirs.get_name())


def test_a_file_asset_uri_translates_back_to_the_same_dataset() -> None:
    """Airflow's asset graph and the lineage backend agree: the OpenLineage provider
    turns the Asset URI we emit into the dataset name we report."""
    from airflow.providers.common.io.assets.file import convert_asset_to_openlineage
    from airflow.sdk import Asset

    name = DatasetName("file", "/store/run/outputs")
    translated = convert_asset_to_openlineage(Asset(uri=name.uri), None)
    assert (translated.namespace, translated.name) == ("file", "/store/run/outputs")


def test_one_location_per_folder_never_one_per_file() -> None:
    files = [f"/land/2026-12-01/doc{i}.pdf" for i in range(1000)]
    (location,) = input_locations(files)
    assert (location.dataset, location.sources) == (DatasetName("file", "/land/2026-12-01"), 1000)


def test_a_recursive_glob_is_its_files_common_folder() -> None:
    files = ["/land/a/x.pdf", "/land/b/y.pdf", "/land/b/deep/z.pdf"]
    assert [(loc.dataset.name, loc.sources) for loc in input_locations(files)] == [("/land", 3)]


def test_buckets_and_columns_are_separate_locations() -> None:
    rows = [["s3://raw/pdf/a.pdf", "/labels/a.json"], ["s3://raw/pdf/b.pdf", "/labels/b.json"]]
    found = {
        (loc.dataset.namespace, loc.dataset.name): loc.sources for loc in input_locations(rows, 2)
    }
    assert found == {("s3://raw", "pdf"): 2, ("file", "/labels"): 2}


def test_a_microbatch_counts_its_own_sources_in_the_runs_locations() -> None:
    files = ["/land/a/1.pdf", "/land/a/2.pdf", "/land/b/3.pdf", "/land/b/4.pdf"]
    counts = {loc.dataset.name: loc.sources for loc in input_locations(files, within=files[2:3])}
    assert counts == {"/land": 1}  # the run's location, not the microbatch's own /land/b


@pytest.mark.parametrize(
    "value",
    [42, "plain text", "relative/path.pdf", "https://example.org/a.pdf", None, b"%PDF"],
)
def test_inline_values_name_no_dataset(value) -> None:
    assert not is_location(value)
    assert input_locations([value]) == []
