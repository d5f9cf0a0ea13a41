"""Helpers of the browser test: headless Debian chromium through selenium (the
Airflow deployment it visits is the e2e session's, see deployment.py)."""

from __future__ import annotations

import contextlib
import importlib.util
import shutil
import tempfile
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1440,1000",
)
INSTALL_HINT = "run `bash scripts/install-browser.sh`"


def missing_browser() -> str | None:
    """Why the browser test cannot run here, or None."""
    for tool in ("chromium", "chromedriver"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed: {INSTALL_HINT}"
    if importlib.util.find_spec("selenium") is None:
        return f"selenium is not installed: {INSTALL_HINT}"
    return None


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """A headless chromium (fresh profile) driven by chromedriver; always quit."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="rayorch-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(shutil.which("chromium"))
    for arg in (*CHROMIUM_ARGS, f"--user-data-dir={profile}"):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Service(str(shutil.which("chromedriver"))))
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait_until(
    condition: Callable[[], Any], timeout: float, what: str, interval: float = 0.25
) -> Any:
    """Poll ``condition`` until it returns something truthy; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            value = condition()
        except Exception as exc:  # a page still rendering: retry until the deadline
            value, last = None, exc
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(
        f"timed out after {timeout}s waiting for {what}" + (f": {last!r}" if last else "")
    )


def body_text(driver: Any) -> str:
    return str(driver.find_element("tag name", "body").text)


def expand_grid(driver: Any, *texts: str) -> None:
    """Expand the run's task groups in Airflow's grid, once its button is rendered (the
    page's texts can show before the grid's toolbar); wait for ``texts``."""
    wait_until(
        lambda: driver.find_elements("css selector", "button[aria-label='Expand all task groups']"),
        30,
        "the grid's 'Expand all task groups' button",
    )[0].click()
    wait_until(
        lambda: all(t in body_text(driver) for t in texts), 30, f"{texts} in the expanded grid"
    )


@contextlib.contextmanager
def serve(app: Any) -> Iterator[str]:
    """Serve an ASGI ``app`` with uvicorn on a free loopback port; yields its URL."""
    import socket
    import threading

    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        wait_until(lambda: server.started, 30, "uvicorn to start")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
