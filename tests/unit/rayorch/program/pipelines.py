"""Importable pipelines for the compiler tests (a subprocess imports them too)."""

from __future__ import annotations

from typing import Any

import airflow_provider_rayorch.rayorch as ro


class Render:
    def __init__(self, dpi: int = 150, langs: Any = ("en",)) -> None:
        self.dpi, self.langs = dpi, langs

    def run(self, pdfs: list[Any]) -> list[Any]:
        return [[p] for p in pdfs]


class Recognize:
    def run(self, pages: list[Any], *, lang: str = "en") -> list[Any]:
        return pages


class Assemble:
    def run(self, groups: list[Any], pdfs: list[Any]) -> list[Any]:
        return groups


class Doc(ro.Pipeline):
    """The API.md example, parameterised so each knob changes one thing."""

    def __init__(
        self,
        dpi: int = 150,
        batch_size: int = 32,
        replicas: int = 2,
        lang: str = "en",
        recovery: ro.RecoveryPolicy | None = None,
        num_cpus: float = 1,
        domain: str | None = None,
        filtered: bool = False,
        langs: Any = frozenset({"en", "fr", "de"}),
        batching: str = "any_parent",
    ) -> None:
        self.render = (
            ro.RayModule(Render)
            .pre_init(dpi=dpi, langs=langs)
            .ray_options(replicas=1, batch_size=2, num_cpus=num_cpus)
        )
        self.ocr = ro.RayModule(Recognize).ray_options(
            replicas=replicas,
            batch_size=batch_size,
            batching=batching,
            recovery=recovery or ro.RecoveryPolicy.isolate_tail(max_retries=1),
        )
        self.assemble = ro.RayModule(Assemble).ray_options(replicas=1, batch_size=4)
        self.keep = ro.function(lambda xs: [True for _ in xs])
        self.lang = lang
        self.domain = domain
        self.filtered = filtered

    def forward(self, pdfs: ro.Port) -> ro.Port:
        pages = ro.F.expand(self.render(pdfs), domain=self.domain)
        texts = self.ocr(pages, lang=self.lang)
        if self.filtered:
            texts = ro.F.filter(texts, self.keep(pages))
        return self.assemble(ro.F.reduce(texts), pdfs)
