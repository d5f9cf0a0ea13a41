"""A stand-in for the embedded driver (``python -m submit_fake_driver``): it fails the
way ``ray.init`` fails on a loaded machine for the first ``FAKE_DRIVER_FAILURES``
starts, then succeeds; it counts its starts in ``$FAKE_DRIVER_DIR/starts``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

RAY_START_TIMEOUT = (
    "Exception: The current node timed out during startup. This could happen because "
    "some of the raylet failed to startup or the GCS has become overloaded."
)


def main() -> int:
    counter = Path(os.environ["FAKE_DRIVER_DIR"]) / "starts"
    starts = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(starts))
    if starts <= int(os.environ.get("FAKE_DRIVER_FAILURES", "1")):
        print("Traceback (most recent call last):")
        print('  File "ray/_private/node.py", line 441, in __init__')
        print(os.environ.get("FAKE_DRIVER_ERROR", RAY_START_TIMEOUT))
        return 1
    print("driver done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
