"""Pictures of Jacobi decoding, shared by the notebooks and the figures command.

Each function draws on a matplotlib Axes it is given and returns it.
"""
import matplotlib.patches
import numpy as np
from matplotlib.colors import ListedColormap

from .jacobi import BlockTrajectory
from .trajectories import first_mismatch

STATE_COLOURS = ["#d9534f", "#f0ad4e", "#5cb85c"]  # wrong, right but after a wrong token, converged prefix
WRONG, LUCKY, CONVERGED = 0, 1, 2


def state_grid(block: BlockTrajectory) -> np.ndarray:
    """(iterations + 1, n) categories: CONVERGED prefix, LUCKY (right after a wrong token), WRONG."""
    fixed = block.fixed_point
    grid = np.full((len(block.states), len(fixed)), WRONG)
    for k, state in enumerate(block.states):
        good = np.array(state) == np.array(fixed)
        grid[k, good] = LUCKY
        grid[k, :first_mismatch(state, fixed)] = CONVERGED
    return grid


def trajectory_grid(ax, block: BlockTrajectory, tokenizer=None, title: str = ""):
    """Iteration × position grid of one block, each cell labelled with its token."""
    grid = state_grid(block)
    ax.imshow(grid, cmap=ListedColormap(STATE_COLOURS), vmin=0, vmax=2, aspect="auto")
    if tokenizer is not None:
        for k, state in enumerate(block.states):
            for i, tok in enumerate(state):
                text = tokenizer.decode([tok]).strip().replace("\n", "⏎")[:6]
                ax.text(i, k, text, ha="center", va="center", fontsize=6)
    ax.set_xlabel("position in block")
    ax.set_ylabel("iteration (0 = initial draft)")
    ax.set_yticks(range(len(block.states)))
    ax.set_title(title or "green: converged prefix, orange: right after a wrong token, red: wrong")
    return ax


def convergence(ax, block: BlockTrajectory, label: str = ""):
    """Converged prefix length per iteration against AR's one token per step."""
    prefix = [first_mismatch(s, block.fixed_point) for s in block.states]
    ax.plot(range(len(prefix)), prefix, marker="o", label=label or "Jacobi")
    ax.plot(range(len(prefix)), [min(k + 1, len(block.fixed_point)) for k in range(len(prefix))],
            ls="--", color="grey", label="one token per iteration")
    ax.set_xlabel("iteration")
    ax.set_ylabel("converged prefix length")
    ax.legend()
    return ax


def acceptance_histogram(ax, accepted: dict[str, list[int]], max_count: int = 16):
    """Share of forwards that produced k new tokens, one bar group per method."""
    width = 0.8 / len(accepted)
    bins = np.arange(1, max_count + 1)
    for j, (label, counts) in enumerate(accepted.items()):
        counts = np.minimum(np.array(counts), max_count)
        share = np.array([(counts == b).mean() for b in bins])
        ax.bar(bins + (j - (len(accepted) - 1) / 2) * width, share, width,
               label=f"{label} (TPF {np.mean(counts):.2f})")
    ax.set_xlabel(f"new tokens in one forward (last bar: ≥ {max_count})")
    ax.set_ylabel("share of forwards")
    ax.legend()
    return ax


def multiblock_step(ax, step, tokenizer=None, title: str = ""):
    """One multi-block forward: RA rows (green verified, red rejected, thick frame = kept) then pseudo blocks (blue)."""
    rows = [(r, v, "RA draft" if b == 0 else f"recycled {b}") for b, (r, v) in enumerate(zip(step.rows, step.verified))]
    rows += [(p, a, f"pseudo {j + 1}") for j, (p, a) in enumerate(zip(step.pseudo, step.pseudo_accepted + [0] * 9))]
    width = max(len(r) for r, _, _ in rows)
    for y, (tokens, good, label) in enumerate(rows):
        pseudo = label.startswith("pseudo")
        for x, tok in enumerate(tokens):
            colour = ("#9ecae1" if x < good else "#deebf7") if pseudo else ("#5cb85c" if x < good else "#d9534f")
            ax.add_patch(matplotlib.patches.Rectangle((x, y), 1, 1, color=colour, ec="white"))
            if tokenizer is not None:
                ax.text(x + 0.5, y + 0.5, tokenizer.decode([tok]).strip()[:6], ha="center", va="center", fontsize=6)
        if y == step.row:
            ax.add_patch(matplotlib.patches.Rectangle((0, y), len(tokens), 1, fill=False, lw=2, ec="black"))
    ax.set_xlim(0, width)
    ax.set_ylim(len(rows), 0)
    ax.set_yticks([y + 0.5 for y in range(len(rows))], [label for _, _, label in rows])
    ax.set_xlabel("position")
    ax.set_title(title or f"committed {step.accepted} (recycled {step.recycled}, promoted {step.promoted})")
    return ax
