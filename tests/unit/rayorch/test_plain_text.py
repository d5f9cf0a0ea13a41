"""strip_ansi removes terminal escape sequences and leaves other text alone."""

from __future__ import annotations

from airflow_provider_rayorch.rayorch.plain_text import strip_ansi


def test_colour_codes_from_a_ray_task_error_are_removed() -> None:
    text = "\x1b[36mray::PoolWorker.run()\x1b[39m (pid=12, ip=10.0.0.1)\n\x1b[1;31mboom\x1b[0m"
    assert strip_ansi(text) == "ray::PoolWorker.run() (pid=12, ip=10.0.0.1)\nboom"


def test_hyperlinks_and_cursor_moves_are_removed() -> None:
    text = "\x1b]8;;http://x\x1b\\link\x1b]8;;\x07 done\x1b[2K\x1b[1A"
    assert strip_ansi(text) == "link done"


def test_text_without_escapes_is_unchanged() -> None:
    text = "value [36] of type 'generator' ; ray::run()"
    assert strip_ansi(text) is text
