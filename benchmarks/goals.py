"""The issue's goals, checked against results (targets, not test assertions)."""

from __future__ import annotations

from typing import Any

__all__ = ["evaluate"]

OURS, PAPER = "this engine", "rayorch (paper)"
#: The opt-out variant (a process per module replica), reported beside the default.
OWN = "this engine, a process per replica"


def _goal(
    goal: str, target: str, value: float | None, ok: bool | None, shown: str
) -> dict[str, str]:
    met = "-" if ok is None or value is None else ("yes" if ok else "**no**")
    return {
        "goal": goal,
        "target": target,
        "measured": shown if value is not None else "-",
        "met": met,
    }


def evaluate(r: dict[str, Any]) -> list[dict[str, str]]:
    goals = []
    e = r.get("e2e") or {}
    systems = e.get("systems", {})

    def ratio(ours: str, peer: str, mode: str) -> float | None:
        if ours in systems and peer in systems:
            return systems[ours][mode]["e2e_s"] / systems[peer][mode]["e2e_s"]
        return None

    variants = ((OURS, ""), (OWN, ", a process per replica"))
    for ours, tag in variants:
        for peer, mode, limit in (
            (PAPER, "cold", 0.60),
            ("Daft", "cold", 0.65),
            ("Xenna", "cold", 0.35),
            ("Xenna", "warm", 0.35),
        ):
            v = ratio(ours, peer, mode)
            if v is None and ours != OURS:
                continue
            goals.append(
                _goal(
                    f"W1 E2E vs {peer} ({mode}{tag})",
                    f"<= {limit}x",
                    v,
                    v is not None and v <= limit,
                    f"{v:.3f}x" if v else "",
                )
            )
        if ours in systems:
            for mode, limit in (("cold", 0.60), ("warm", 0.97)):
                v = systems[ours][mode]["fraction_of_ideal"]
                goals.append(
                    _goal(
                        f"W1 fraction of ideal ({mode}{tag})",
                        f">= {limit:.0%}",
                        v,
                        v >= limit,
                        f"{100 * v:.1f}%",
                    )
                )
    s = r.get("scaling") or {}
    pts = [p for p in s.get("points", []) if p["accelerators"] == 16]
    if pts:
        v = pts[0]["efficiency"]
        goals.append(
            _goal("scaling efficiency at 16 (warm)", ">= 95%", v, v >= 0.95, f"{100 * v:.1f}%")
        )
    curve = (r.get("containment_curve") or {}).get("points", [])
    paper_like = [p for p in curve if "paper-like" in p["label"]]
    if paper_like:
        v = paper_like[0]["saving_mean"]
        goals.append(
            _goal(
                "containment paired saving, paper-like configuration (W5)",
                ">= 10%",
                v,
                v is not None and v >= 0.10,
                f"{100 * v:.1f}% (bound {100 * paper_like[0]['bound']:.1f}%)"
                if v is not None
                else "",
            )
        )
    return goals
