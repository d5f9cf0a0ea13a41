"""``Plan.semantic_fingerprint``: schedule-only options may change, nothing else;
``semantic_diff`` names what changed."""

from __future__ import annotations

from typing import Any

import pytest

import airflow_provider_rayorch.rayorch as ro
from airflow_provider_rayorch.rayorch.program.semantics import semantic_diff


class Split:
    def run(self, docs: list[Any]) -> list[Any]:
        return [list(d) for d in docs]


class Upper:
    def run(self, parts: list[Any], *, loud: bool = True) -> list[Any]:
        return [str(p).upper() if loud else p for p in parts]


class Lower:
    def run(self, parts: list[Any], *, loud: bool = True) -> list[Any]:
        return [str(p).lower() for p in parts]


class Doc(ro.Pipeline):
    def __init__(
        self,
        udf: Any = Upper,
        loud: bool = True,
        init: Any = None,
        extra_stage: bool = False,
        **options: Any,
    ) -> None:
        self.extra_stage = extra_stage
        self.loud = loud
        self.split = ro.RayModule(Split).ray_options(batch_size=2)
        module = ro.RayModule(udf)
        if init is not None:
            module = module.pre_init(**init)
        self.map = module.ray_options(**options)
        self.again = ro.RayModule(Upper)

    def forward(self, doc: ro.Port) -> ro.Port:
        parts = ro.F.expand(self.split(doc))
        out = self.map(parts, loud=self.loud)
        if self.extra_stage:
            out = self.again(out)
        return ro.F.reduce(out)


SCHEDULE_ONLY = [
    pytest.param({"replicas": 3}, id="replicas"),
    pytest.param({"batch_size": 7}, id="batch_size"),
    pytest.param({"batch_timeout_s": 12}, id="batch_timeout_s"),
    pytest.param({"recovery": ro.RecoveryPolicy.retry_batch(max_retries=4)}, id="retries"),
    pytest.param({"batching": "single_parent"}, id="batching"),
    pytest.param({"num_cpus": 2, "memory": 10_000_000}, id="actor options"),
]


@pytest.mark.parametrize("options", SCHEDULE_ONLY)
def test_schedule_only_options_keep_the_semantic_fingerprint(options: dict[str, Any]) -> None:
    base, changed = Doc().compile(), Doc(**options).compile()
    assert changed.fingerprint != base.fingerprint  # `fingerprint` is unchanged in meaning
    assert changed.semantic_fingerprint == base.semantic_fingerprint
    assert semantic_diff(base.semantic_record(), changed.semantic_record()) == []


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        pytest.param(
            {"udf": Lower},
            r"module 'map': udf changed from \".*:Upper\" to \".*:Lower\"",
            id="udf import path",
        ),
        pytest.param({"loud": False}, r"call 'map': kwargs changed from", id="call kwargs"),
        pytest.param({"init": {"x": 1}}, r"module 'map': init_kwargs changed", id="init kwargs"),
        pytest.param(
            {"recovery": ro.RecoveryPolicy.abort()},
            r"module 'map': recovery changed from \"retry_batch\" to \"abort\"",
            id="recovery kind",
        ),
        pytest.param({"extra_stage": True}, r"the structure changed: ", id="structure"),
    ],
)
def test_other_changes_alter_it_and_the_diff_names_them(
    kwargs: dict[str, Any], expected: str
) -> None:
    base, changed = Doc().compile(), Doc(**kwargs).compile()
    assert changed.semantic_fingerprint != base.semantic_fingerprint
    diff = semantic_diff(base.semantic_record(), changed.semantic_record())
    assert diff, "a semantic change must be named"
    assert any(__import__("re").search(expected, line) for line in diff), diff


def test_the_record_is_json_and_the_same_in_every_build() -> None:
    import json

    record = Doc().compile().semantic_record()
    assert json.loads(json.dumps(record)) == record
    assert Doc().compile().semantic_fingerprint == Doc().compile().semantic_fingerprint
