"""Draws the per-batch composition of `strata stream --report --plot FILE.png`.

Run by the strata CLI as: python3 -c <this script> DATA.json OUT.png
DATA.json holds, for the strata plan and for torch's DistributedSampler, the
per-batch counts of the largest strata (stacked) and the per-batch deviation
from target of the strata the report lists. Exit status 3: matplotlib missing.
"""
import json
import sys

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit(3)


def stacked(ax, panel, keys, title):
    rows = panel.get("stacked", [])
    steps = range(len(rows))
    bottom = [0] * len(rows)
    cmap = plt.get_cmap("tab20")
    for i, key in enumerate(keys):
        heights = [row[i] for row in rows]
        ax.bar(steps, heights, bottom=bottom, width=1.0, color=cmap(i % 20), label=key, linewidth=0)
        bottom = [b + h for b, h in zip(bottom, heights)]
    ax.set_title(title, fontsize=10)
    ax.set_xlim(-0.5, max(len(rows), 1) - 0.5)
    ax.set_xlabel("global batch (step)")
    ax.set_ylabel("samples")


def heat(ax, panel, keys, title, limit):
    rows = panel.get("deviation", [])
    if not rows:
        return None
    matrix = [[row[j] for row in rows] for j in range(len(keys))]
    image = ax.imshow(matrix, aspect="auto", cmap="RdBu_r", vmin=-limit, vmax=limit, interpolation="nearest")
    ax.set_yticks(range(len(keys)))
    ax.set_yticklabels([k if len(k) <= 28 else k[:25] + "..." for k in keys], fontsize=6)
    ax.set_xlabel("global batch (step)")
    ax.set_title(title, fontsize=10)
    return image


def main():
    data_path, out_path = sys.argv[1], sys.argv[2]
    with open(data_path) as f:
        data = json.load(f)
    keys, heat_keys = data.get("keys", []), data.get("heat_keys", [])
    ours, ds = data["strata"], data["distributed"]
    limit = max(1.0, max(abs(v) for p in (ours, ds) for row in p.get("deviation", [[0]]) for v in row))
    fig, axes = plt.subplots(2, 2, figsize=(16, 10), gridspec_kw={"height_ratios": [1, 1.3]})
    stacked(axes[0][0], ours, keys,
            "strata: largest deviation %.2f, batches lacking a stratum %d of %d"
            % (ours["max_deviation"], ours["batches_missing"], ours["batches"]))
    stacked(axes[0][1], ds, keys,
            "DistributedSampler: largest deviation %.2f, batches lacking a stratum %d of %d"
            % (ds["max_deviation"], ds["batches_missing"], ds["batches"]))
    heat(axes[1][0], ours, heat_keys, "strata: count - target per batch", limit)
    image = heat(axes[1][1], ds, heat_keys, "DistributedSampler: count - target per batch", limit)
    fig.subplots_adjust(top=0.86, bottom=0.06, left=0.14, right=0.9, hspace=0.3, wspace=0.45)
    if image is not None:
        bar = fig.add_axes([0.92, 0.06, 0.012, 0.4])
        fig.colorbar(image, cax=bar, label="samples")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.955),
               ncol=min(6, max(1, len(labels))), fontsize=7)
    fig.suptitle(data.get("title", ""), y=0.99, fontsize=11)
    fig.savefig(out_path, dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
