"""The report's PNG plots, drawn from results.json with matplotlib."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["render"]


def render(r: dict[str, Any], out: Path) -> list[str]:
    """Write one PNG per plotted section into ``out``; returns their file names.

    Needs matplotlib (the bench extra): the caller treats ImportError as no plots.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    e = r.get("e2e")
    if e and e.get("systems"):
        names = list(e["systems"])
        fig, ax = plt.subplots(figsize=(7, 4))
        x = range(len(names))
        cold = [e["systems"][n]["cold"]["e2e_s"] for n in names]
        warm = [e["systems"][n]["warm"]["e2e_s"] for n in names]
        ax.bar([i - 0.2 for i in x], cold, 0.4, label="cold")
        ax.bar([i + 0.2 for i in x], warm, 0.4, label="warm")
        ax.axhline(e["ideal"]["bound_s"], color="k", ls="--", lw=1, label="ideal")
        ax.set_xticks(list(x), names)
        ax.set_ylabel("seconds (median)")
        ax.set_title("Workload 1 end to end")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "e2e.png", dpi=110)
        plt.close(fig)
        made.append("e2e.png")

        fig, ax = plt.subplots(figsize=(7, 4))
        for n in names:
            curve = e["systems"][n]["warm"]["curve"]
            if curve:
                ys = [(i + 1) / len(curve) for i in range(len(curve))]
                ax.step(curve, ys, where="post", label=n)
        ax.set_xlabel("seconds since the run started (warm)")
        ax.set_ylabel("fraction of documents written")
        ax.set_title("Completion curve, workload 1")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "completion.png", dpi=110)
        plt.close(fig)
        made.append("completion.png")
    s = r.get("scaling")
    if s and s.get("points"):
        pts = s["points"]
        a = [p["accelerators"] for p in pts]
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot(a, [p["speedup"] for p in pts], "o-", label="measured (warm)")
        ax.plot(a, [p["sim_speedup"] for p in pts], "s--", label="simulator")
        ax.plot(a, [p["ideal_speedup"] for p in pts], "k:", label="ideal bound")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xlabel("emulated accelerators")
        ax.set_ylabel("speedup over 1")
        ax.set_title("Strong scaling, workload 1")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "scaling.png", dpi=110)
        plt.close(fig)
        made.append("scaling.png")
    ab = r.get("ablations")
    if ab:
        fig, ax = plt.subplots(figsize=(7, 4))
        labels, values = [], []
        for key in ("fifo", "batching", "containment"):
            part = ab.get(key)
            if part:
                for name, fig_ in part["variants"].items():
                    labels.append(f"{key}:\n{name}")
                    values.append(fig_["e2e_s"])
        ax.bar(range(len(values)), values)
        ax.set_xticks(range(len(values)), labels, fontsize=7)
        ax.set_ylabel("seconds (median, warm)")
        ax.set_title("Ablations")
        fig.tight_layout()
        fig.savefig(out / "ablations.png", dpi=110)
        plt.close(fig)
        made.append("ablations.png")
    cc = r.get("containment_curve")
    if cc and cc.get("points"):
        pts = sorted(cc["points"], key=lambda p: p["queued_share"])
        fig, ax = plt.subplots(figsize=(6, 4))
        xs = [100 * p["queued_share"] for p in pts]
        ax.plot(xs, [100 * (p["saving_mean"] or 0.0) for p in pts], "o-", label="measured saving")
        ax.plot(xs, [100 * p["bound"] for p in pts], "k--", label="bound (cost model)")
        for p, x in zip(pts, xs, strict=True):
            ax.annotate(p["label"], (x, 100 * p["bound"]), fontsize=6, rotation=15)
        ax.set_xlabel("poisoned siblings still queued when the failure reports (%)")
        ax.set_ylabel("paired E2E saving (%)")
        ax.set_title("Containment, workload 5")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "containment.png", dpi=110)
        plt.close(fig)
        made.append("containment.png")
    sim = r.get("simulator")
    if sim and sim.get("extrapolation"):
        pts = sim["extrapolation"]
        a = [p["accelerators"] for p in pts]
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot(a, [p["fraction_of_ideal"] for p in pts], "o-", label="emulated costs")
        fast = [
            (p["accelerators"], p["driver_10x_fraction_of_ideal"])
            for p in pts
            if p.get("driver_10x_fraction_of_ideal") is not None
        ]
        if fast:
            ax.plot(*zip(*fast, strict=True), "s", label="driver 10x cheaper")
        ax.plot(a, [p["driver_busy_fraction"] for p in pts], "^:", label="driver busy")
        gpu = sim.get("extrapolation_gpu_like") or []
        if gpu:
            ax.plot(
                [p["accelerators"] for p in gpu],
                [p["fraction_of_ideal"] for p in gpu],
                "d-",
                label="GPU-like costs",
            )
        ax.set_xscale("log", base=2)
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("emulated accelerators")
        ax.set_ylabel("fraction of ideal")
        ax.set_title(f"Simulator, {sim['pages']:,} pages")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "simulator.png", dpi=110)
        plt.close(fig)
        made.append("simulator.png")
    return made
