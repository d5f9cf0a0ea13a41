"""Screenshots of the e2e deployment's UI for the docs: one headless chromium per test
module (browser.py), pages opened until what a shot must show is there. Shots go to
``$RAYORCH_BROWSER_ARTIFACTS`` (else the e2e root); ``RAYORCH_DOC_IMAGES=1`` also
copies them to docs/images, as in test_browser.py."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pytest
from browser import body_text, chromium, missing_browser, wait_until
from e2e_helpers import ROOT

if TYPE_CHECKING:
    from collections.abc import Iterator

DOC_IMAGES = ROOT / "docs" / "images"


@dataclass
class Shots:
    """A browser on the deployment at ``url``, saving named screenshots."""

    driver: Any
    url: str
    artifacts: Path

    def open(self, path: str, *texts: str, timeout: float = 60) -> str:
        """Load ``url + path`` and wait until every text is visible in the page."""
        self.driver.get(f"{self.url}{path}")
        try:
            return str(
                wait_until(
                    lambda: (lambda t: t if all(x in t for x in texts) else None)(
                        body_text(self.driver)
                    ),
                    timeout,
                    f"{texts} on {path}",
                )
            )
        except AssertionError:
            self.driver.save_screenshot(str(self.artifacts / "failed-page.png"))
            raise

    def shot(self, name: str) -> Path:
        path = self.artifacts / f"{name}.png"
        self.driver.save_screenshot(str(path))
        if os.environ.get("RAYORCH_DOC_IMAGES") == "1":
            DOC_IMAGES.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, DOC_IMAGES / path.name)
        return path

    def scroll_to(self, element: Any) -> None:
        self.driver.execute_script("arguments[0].scrollIntoView({block: 'start'});", element)

    def report_rows(self, table_id: str) -> list[list[str]]:
        """The cells of a RayOrch report table's visible body rows."""
        rows = self.driver.find_elements("css selector", f"#{table_id} tbody tr")
        return [
            [c.text for c in r.find_elements("tag name", "td")] for r in rows if r.is_displayed()
        ]


def run_path(dag_id: str, run_id: str) -> str:
    return f"/dags/{dag_id}/runs/{quote(run_id, safe='')}"


def report_path(dag_id: str, run_id: str) -> str:
    """The DAG run's RayOrch report, as the plugin serves it (the tab's iframe source)."""
    return f"/rayorch/dagrun?dag_id={dag_id}&run_id={quote(run_id, safe='')}"


@pytest.fixture(scope="module", name="shots")
def shots_fixture(airflow_deployment: Any, e2e_root: Path) -> Iterator[Shots]:
    """One browser for the module's shots; skipped where chromium is not installed."""
    missing = missing_browser()
    if missing:
        pytest.skip(missing)
    where = Path(os.environ.get("RAYORCH_BROWSER_ARTIFACTS") or e2e_root / "browser-artifacts")
    where.mkdir(parents=True, exist_ok=True)
    with chromium() as driver:
        yield Shots(driver, airflow_deployment.url, where)


def _get(url: str) -> str:
    """A plugin page over HTTP (the simple auth manager's all-admins mode lets it in)."""
    import requests

    got = requests.get(url, timeout=60)
    assert got.status_code == 200, (url, got.status_code, got.text[:500])
    assert "default-src 'none'" in got.headers.get("content-security-policy", ""), url
    return got.text


def assert_surfaces_say(url: str, dag_id: str, run_id: str, summary: Any, state: str) -> None:
    """After the run ended, the kept ``report.html``, the DAG run's
    RayOrch tab, the run task's report tab and the runs page all say ``state``, and none
    says the Ray job is running. ``summary``: the run task's lineage summary."""
    import re

    rayorch_run = str(summary["run_id"])
    uri = str(summary["outputs"]["uri"])
    kept = Path(uri[: uri.rindex(f"/{rayorch_run}/outputs")]) / rayorch_run / "report.html"
    # the driver writes its last report just after the run manifest: wait for it, bounded
    kept_html = wait_until(
        lambda: (lambda t: t if f'data-state="{state}"' in t else None)(kept.read_text()),
        60,
        f"the kept report {kept} to say {state}",
    )
    query = f"dag_id={dag_id}&run_id={quote(run_id, safe='')}"
    surfaces = {
        "kept report.html": kept_html,
        "DAG-run tab": _get(f"{url}/rayorch/dagrun?{query}"),
        "run task's report tab": _get(f"{url}/rayorch/ti?{query}&task_id=docs.run&map_index=-1"),
        "runs page": _get(f"{url}/rayorch/"),
    }
    row = re.search(
        rf"<tr>(?:(?!</tr>).)*>{re.escape(rayorch_run)}</a>(?:(?!</tr>).)*</tr>",
        surfaces["runs page"],
        re.S,
    )
    assert row is not None, f"{rayorch_run} is not on the runs page"
    # the runs page lists every run of the deployment (others may really run): this
    # run's row is what it says of this run
    surfaces["runs page"] = row.group(0)
    for name, html in surfaces.items():
        assert "RUNNING" not in html, f"{name} says the Ray job is RUNNING"
        assert " is running" not in html, f"{name} says the run is running"
        if name != "runs page":
            assert f'data-state="{state}"' in html, name
    assert f'<td class="state state-{state}">' in row.group(0), row.group(0)
