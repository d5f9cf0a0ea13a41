"""Plain text from terminal output: ANSI escape sequences removed.

Ray colours the text of its errors and worker logs (``\\x1b[36mray::Worker.run()\\x1b[39m``).
Causes, summaries, reports, the run store and relayed log lines are read in files,
web pages and JSON, where those sequences are noise: :func:`strip_ansi` removes them.
"""

from __future__ import annotations

import re

__all__ = ["strip_ansi"]

#: CSI sequences (colours, cursor moves: ``ESC [ params final``), OSC sequences
#: (``ESC ] ... BEL`` or ``ESC ] ... ESC \\``, e.g. hyperlinks) and the remaining
#: two-character escapes (``ESC`` then one byte in ``@``..``_``).
_ANSI = re.compile(
    r"""
    \x1b\[[0-?]*[ -/]*[@-~]            # CSI
    | \x1b\][^\x07\x1b]*(?:\x07|\x1b\\) # OSC, ended by BEL or ST
    | \x1b[@-Z\\-_]                    # other two-byte escapes
    | \x9b[0-?]*[ -/]*[@-~]            # 8-bit CSI
    """,
    re.VERBOSE,
)


def strip_ansi(text: str) -> str:
    """``text`` without ANSI escape sequences; text without any is returned as is."""
    if "\x1b" not in text and "\x9b" not in text:
        return text
    return _ANSI.sub("", text)
