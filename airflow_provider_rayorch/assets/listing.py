"""List the files a ``pyarrow.fs`` glob matches, with their sizes, in one listing.

The matching rules are the run store's (``glob_uris``): ``*`` and ``?`` stay within
one path segment, ``**/`` spans several, and results keep the pattern's scheme and
query string, so a listed file is exactly a source ``RayOrchOperator`` would take
from that glob.
"""

from __future__ import annotations

from airflow_provider_rayorch.assets.watch_state import ListedFile
from airflow_provider_rayorch.runs.globbing import glob_files

__all__ = ["list_files"]


def list_files(uri_glob: str) -> list[ListedFile]:
    """Files matching ``uri_glob``, sorted by URI; a folder that does not exist is empty."""
    return [
        ListedFile(uri, int(info.size or 0))
        for uri, info in glob_files(uri_glob, setting="uri_glob")
    ]
