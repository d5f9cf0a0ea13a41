"""The command-line options of the benchmarks that stream sources through an Executor."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse


def add_stream_options(
    parser: argparse.ArgumentParser, *, sources: int, input_batch_size: int
) -> None:
    """Add ``--sources``, ``--batch-size`` (256), ``--input-batch-size`` and
    ``--max-active`` (2) to ``parser``."""
    parser.add_argument("--sources", type=int, default=sources, help="how many sources")
    parser.add_argument("--batch-size", type=int, default=256, help="a Call's batch size")
    parser.add_argument(
        "--input-batch-size", type=int, default=input_batch_size, help="sources a microbatch"
    )
    parser.add_argument("--max-active", type=int, default=2, help="microbatches at a time")
