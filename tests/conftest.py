"""Options every tier takes: ``--reverse-modules`` runs the test modules in reverse
order (each module's own tests in their order), to show the suite does not depend on
the order its modules run in (``RAYORCH_MODULE_ORDER=reverse bash scripts/test.sh``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--reverse-modules",
        action="store_true",
        help="run the collected test modules in reverse order",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("--reverse-modules"):
        return
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(str(item.path), []).append(item)
    items[:] = [item for path in reversed(list(modules)) for item in modules[path]]
