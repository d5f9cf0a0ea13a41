"""Turn results.json into docs/benchmarks/README.md and PNG plots.

``document`` writes the README from the section renderers (``workloads``,
``studies``, over the ``markdown`` primitives); ``plots`` draws the PNGs.
"""

from __future__ import annotations

from .document import write_report

__all__ = ["write_report"]
