"""Bring a stored report's state up to date without re-rendering it.

The driver writes its report while the run goes on (``running``) and once more at the
end; if the job dies, is stopped or never starts, no driver writes again. The UI
serves the stored report (it alone has the actors' timeline) with the state that
:func:`~.state.read_run_state` decides now.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ._html import job_state_block, state_badge

if TYPE_CHECKING:
    from .state import RunState

__all__ = ["restate_report"]

_BODY_STATE = re.compile(r'(<body\b[^>]*?\bdata-state=")[^"]*(")')
_BADGE = re.compile(r'<span class="state state-[^"]*" id="run-state">[^<]*</span>')
#: Reports written before the badge had an id: the first badge of the heading.
_OLD_BADGE = re.compile(r'(<h1>[^<]*)<span class="state state-[^"]*">[^<]*</span>')
_JOB_STATE = re.compile(r'<div class="job-state" id="job-state">.*?</div>', re.S)
_PENDING = '<span class="state state-pending">pending</span>'


def restate_report(html: str, state: RunState) -> str:
    """``html`` showing ``state``: the header badge, the job line, never-run microbatches."""
    html = _BODY_STATE.sub(lambda m: m.group(1) + state.state + m.group(2), html, count=1)
    badge = state_badge(state.state)
    if _BADGE.search(html):
        html = _BADGE.sub(lambda _: badge, html, count=1)
    else:
        html = _OLD_BADGE.sub(lambda m: m.group(1) + badge, html, count=1)
    block = job_state_block(state.job_status, state.message)
    if _JOB_STATE.search(html):
        html = _JOB_STATE.sub(lambda _: block, html, count=1)
    else:
        html = html.replace("</h1>", "</h1>" + block, 1)
    if state.is_terminal:
        html = html.replace(_PENDING, '<span class="state state-not_run">not run</span>')
    return html
