"""The drawings of ``lm-kassab-figures --plots``: NM against phi_max (Figs 2-3) and the best
planner as a coloured grid (Figs 4-5)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .tables import mean_by, ordered_planners

#: colours by order, as in the paper's figures (LPT blue, TwoQs red, LPTPN green, LPP brown,
#: LPN purple); line styles by class (list solid, binary search dashed, stripe dotted)
COLOURS = {"lpt": "tab:blue", "twoqs": "tab:red", "lptpn": "tab:green", "lpp": "tab:brown",
           "lpn": "tab:purple", "spt": "tab:gray", "random": "black", "ga": "yellowgreen"}


def plot_nm(runs: Sequence[dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    nm = mean_by(runs, ("planner", "phimax"), "nm")
    planners = ordered_planners(sorted({r["planner"] for r in runs}))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for pl in planners:
        points = sorted((p, v) for (name, p), v in nm.items() if name == pl)
        if not points:
            continue
        order = pl.split("-")[-1]
        style = "--" if pl.startswith("bs-") else ":" if pl.startswith("stripe-") else \
            "-." if pl == "ga" else "-"
        ax.plot([p for p, _ in points], [v for _, v in points], style, marker="o",
                markersize=3, color=COLOURS.get(order, "tab:olive"), label=pl)
    ax.set_xlabel("phi_max, the tasks' maximum power (W)")
    ax.set_ylabel("average NM")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_grid(pmaxes: Sequence[float], phis: Sequence[float],
              best: dict[tuple[float, float], str], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    names = ordered_planners(sorted(set(best.values())))
    index = {n: i for i, n in enumerate(names)}
    grid = np.full((len(phis), len(pmaxes)), np.nan)
    for (pm, ph), name in best.items():
        grid[phis.index(ph), pmaxes.index(pm)] = index[name]
    tab20 = plt.get_cmap("tab20")
    cmap = ListedColormap([tab20(i) for i in range(max(len(names), 1))])
    fig, ax = plt.subplots(figsize=(7, 5))
    ax.imshow(grid, origin="lower", cmap=cmap, vmin=-0.5, vmax=len(names) - 0.5,
              aspect="auto")
    ax.set_xticks(range(len(pmaxes)), [f"{p:g}" for p in pmaxes])
    ax.set_yticks(range(len(phis)), [f"{p:g}" for p in phis])
    ax.set_xlabel("p_max, the tasks' maximum length (intervals)")
    ax.set_ylabel("phi_max, the tasks' maximum power (W)")
    ax.set_title(title)
    ax.legend(handles=[Patch(color=cmap(index[n]), label=n) for n in names], fontsize=6,
              loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
