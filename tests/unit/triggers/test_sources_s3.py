"""RayOrchNewSourcesTrigger on an S3-compatible bucket (moto on loopback): the glob
carries the endpoint in its query string, the keys come from the credential chain,
and each announced file keeps the query, so the run opens it at the same endpoint."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest
from airflow.sdk.execution_time.context import AssetStateStoreAccessor
from airflow.triggers.shared_stream import AdvanceItem, AdvanceOutcome

from airflow_provider_rayorch.runs.uris import open_filesystem
from airflow_provider_rayorch.triggers.sources import RayOrchNewSourcesTrigger
from tests.unit.moto_s3 import BUCKET, credential_chain, endpoint_query, moto_s3_fixture  # noqa: F401 (a fixture)

if TYPE_CHECKING:
    from tests.unit.moto_s3 import S3Server

pytestmark = pytest.mark.timeout(120)

ASSET = "s3-inbox"


def test_the_trigger_announces_new_files_of_an_s3_compatible_bucket(
    moto_s3: S3Server, monkeypatch: pytest.MonkeyPatch, state_comms: Any
) -> None:
    credential_chain(monkeypatch, moto_s3)
    q = endpoint_query(moto_s3)
    client = moto_s3.client()
    client.put_object(Bucket=BUCKET, Key="inbox/a.txt", Body=b"alpha")
    trigger = RayOrchNewSourcesTrigger(f"s3://{BUCKET}/inbox/*.txt?{q}", asset_name=ASSET)
    producer = trigger.producer(state=AssetStateStoreAccessor(name=ASSET))

    async def poll() -> list[str]:
        batch, token = await producer.poll()
        await producer.advance([AdvanceItem(token, AdvanceOutcome(acked=1, failed=0))])
        return [f.uri for f in batch.files]

    async def scenario() -> list[list[str]]:
        seen = [await poll()]  # a listed object is a complete upload: announced at once
        client.put_object(Bucket=BUCKET, Key="inbox/b.txt", Body=b"beta")
        seen += [await poll(), await poll()]
        return seen

    a, b = f"s3://{BUCKET}/inbox/a.txt?{q}", f"s3://{BUCKET}/inbox/b.txt?{q}"
    assert asyncio.run(scenario()) == [[a], [b], []]
    assert producer.next_recheck() is None  # nothing waits for a quiet period
    fs, path = open_filesystem(b, setting="sources")
    with fs.open_input_stream(path) as f:
        assert f.read() == b"beta"


def test_a_glob_without_a_wildcard_before_its_query_is_refused_with_an_example() -> None:
    query = "endpoint_override=minio:9000&region=us-east-1"
    with pytest.raises(ValueError, match="has no glob pattern") as err:
        RayOrchNewSourcesTrigger(f"s3://{BUCKET}/inbox/a.txt?{query}", asset_name=ASSET)
    assert f"e.g. s3://{BUCKET}/inbox/a.txt/*.pdf?{query}" in str(err.value)
