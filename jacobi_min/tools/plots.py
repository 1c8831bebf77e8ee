"""Pictures of Jacobi decoding, shared by the notebooks and the figures command.

Each drawing function takes a matplotlib Axes, draws on it and returns it.
Token labels are at least 9 pt, show whitespace (a space as ␣, a newline as
⏎, a tab as ⇥) and are never cut: a token longer than LABEL_WIDTH characters
wraps onto two lines, and `grid_figsize` makes cells wide enough for them.

Every cell of a block state s is coloured against the fixed point y* (`state_grid`):

    converged prefix                  i < first_mismatch(s, y*)
    right, but after a wrong token    i > first_mismatch(s, y*) and s_i = y*_i   (LUCKY)
    wrong                             s_i ≠ y*_i

LUCKY tokens are what Jacobi Forcing trains for: a model that predicts tokens
right after a wrong one converges in fewer than one iteration per token.
"""
import random

import numpy as np
import torch
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch, Rectangle
from matplotlib.textpath import TextPath
from matplotlib.ticker import MaxNLocator

from ..jacobi import BlockTrajectory
from ..packing import CLEAN, NOISY, PADDING, PROMPT, allowed
from ..trajectories import SCHEDULES, first_mismatch, schedule

FONT_SIZE = 9  # every token label
LABEL_WIDTH = 8  # characters on one line of a cell; a longer token wraps onto two lines
ROW_HEIGHT = 0.4  # inches per grid row in `grid_figsize`
WHITESPACE = str.maketrans({" ": "␣", "\n": "⏎", "\t": "⇥"})

WRONG, LUCKY, CONVERGED = 0, 1, 2
STATE_COLOURS = ["#f4a6a3", "#fbd38d", "#a8d8a0"]  # indexed by WRONG, LUCKY, CONVERGED
STATE_NAMES = ["wrong", "right, but after a wrong token", "converged prefix"]
RA_COLOURS = {"RA: verified": STATE_COLOURS[CONVERGED], "RA: rejected": STATE_COLOURS[WRONG]}
PSEUDO_COLOURS = {"pseudo: agrees with its context": "#9ecae1", "pseudo: not yet": "#deebf7"}
MASK_COLOURS = ["#f2f2f2", "#3b6ea5"]  # masked, may attend
REGION_NAMES = {PROMPT: "P", NOISY: "ỹ{}", CLEAN: "y*{}", PADDING: "pad"}


def visible(text: str) -> str:
    """`text` with its whitespace drawn: ␣ for a space, ⏎ for a newline, ⇥ for a tab."""
    return text.translate(WHITESPACE)


def token_label(tokenizer, token: int) -> str:
    """One token's text for a cell: whitespace visible, past LABEL_WIDTH characters split into two halves."""
    text = visible(tokenizer.decode([token]))
    if len(text) <= LABEL_WIDTH:
        return text
    half = (len(text) + 1) // 2
    return text[:half] + "\n" + text[half:]


def label_rows(ax, rows: list[list[int]], tokenizer, offset: float = 0.0) -> None:
    """Write the label of token rows[y][x] at (x + offset, y + offset)."""
    for y, tokens in enumerate(rows):
        for x, tok in enumerate(tokens):
            ax.text(x + offset, y + offset, token_label(tokenizer, tok), ha="center", va="center", fontsize=FONT_SIZE)


def label_width(labels: list[str]) -> float:
    """Inches taken by the widest line of `labels` at FONT_SIZE."""
    lines = [line for label in labels for line in label.split("\n") if line]
    return max((TextPath((0, 0), line, size=FONT_SIZE).get_extents().width for line in lines), default=0) / 72


def grid_figsize(blocks: list[BlockTrajectory], tokenizer=None) -> tuple[float, float]:
    """(width, height) in inches for a column of `trajectory_grid` panels, one per block, each drawn with
    rows = max(len(b.states)): every row ROW_HEIGHT high and every cell wide enough for its label."""
    rows = max(len(b.states) for b in blocks)
    n = max(len(b.fixed_point) for b in blocks)
    labels = [token_label(tokenizer, t) for b in blocks for s in b.states for t in s] if tokenizer is not None else []
    cell = max(0.35, label_width(labels) + 0.15)
    return max(n * cell + 2.0, 8.0), len(blocks) * (rows * ROW_HEIGHT + 1.5)  # 8 inches: room for the legend


def legend_below(ax, handles: list, columns: int) -> None:
    """A legend under the Axes (whose x ticks are on top)."""
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0), ncol=columns, fontsize=FONT_SIZE,
              frameon=False)


def cell_grid(ax, width: int, height: int, offset: float) -> None:
    """White lines between the cells of a width × height grid whose cells start at `offset`; the x axis
    on top, so that the legend fits below."""
    ax.set_xticks(np.arange(width + 1) + offset, minor=True)
    ax.set_yticks(np.arange(height + 1) + offset, minor=True)
    ax.grid(which="minor", color="white", lw=1.5)
    ax.tick_params(which="minor", length=0)
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")


def state_grid(block: BlockTrajectory) -> np.ndarray:
    """(iterations + 1, n) categories: CONVERGED prefix, LUCKY (right after a wrong token), WRONG."""
    fixed = block.fixed_point
    grid = np.full((len(block.states), len(fixed)), WRONG)
    for k, state in enumerate(block.states):
        good = np.array(state) == np.array(fixed)
        grid[k, good] = LUCKY
        grid[k, :first_mismatch(state, fixed)] = CONVERGED
    return grid


def trajectory_grid(ax, block: BlockTrajectory, tokenizer=None, title: str = "", rows: int | None = None):
    """Iteration × position grid of one block, each cell coloured by `state_grid` and labelled with its token.

    Row 0 is the initial draft [y0, d_1, …, d_{n-1}]; its first cell (framed) is y0, the token
    already known from the prefill or the previous block's bonus token. Row k is the state after
    k Jacobi iterations, the last row the fixed point y*. `rows` (≥ len(block.states)) leaves empty
    rows below, so equal-height panels drawn with the same `rows` have equal row heights; size the
    figure with `grid_figsize`.
    """
    grid = state_grid(block)
    iterations, n = grid.shape[0] - 1, grid.shape[1]
    ax.imshow(grid, cmap=ListedColormap(STATE_COLOURS), vmin=0, vmax=2, aspect="auto")
    ax.set_ylim((rows or len(grid)) - 0.5, -0.5)
    if tokenizer is not None:
        label_rows(ax, block.states, tokenizer)
    ax.add_patch(Rectangle((-0.5, -0.5), 1, 1, fill=False, lw=2.5, ec="black", zorder=3))
    cell_grid(ax, n, len(grid), -0.5)
    ax.set_xticks(range(n))
    ax.set_xlabel("position in block")
    ticks = ["draft (y0 known)"] + [str(k) for k in range(1, len(grid))]
    if iterations:
        ticks[-1] += ": fixed point"
    ax.set_yticks(range(len(grid)), ticks)
    ax.set_ylabel("iteration")
    ax.set_title(title or f"one block: {iterations} iterations for n = {n} tokens")
    states = [Patch(color=STATE_COLOURS[c], label=STATE_NAMES[c]) for c in (CONVERGED, LUCKY, WRONG)]
    y0 = Patch(fill=False, ec="black", lw=2.5, label="y0: known before the block")
    legend_below(ax, states + [y0], columns=2)
    return ax


def convergence(ax, block: BlockTrajectory, label: str = ""):
    """Converged prefix length per iteration against AR's one token per step."""
    prefix = [first_mismatch(s, block.fixed_point) for s in block.states]
    ax.plot(range(len(prefix)), prefix, marker="o", label=label or "Jacobi")
    ax.plot(range(len(prefix)), [min(k + 1, len(block.fixed_point)) for k in range(len(prefix))],
            ls="--", color="black", lw=1.5, zorder=3, label="one token per iteration")  # on top: visible where equal
    ax.set(xlabel="iteration", ylabel="converged prefix length")
    ax.legend()
    return ax


def converged_fraction(blocks: list[BlockTrajectory]) -> np.ndarray:
    """Mean over blocks of first_mismatch(s_k, y*) / n at every iteration k; a block that reached its
    fixed point earlier counts as 1 from then on. Every block must have the same size n."""
    sizes = {len(b.fixed_point) for b in blocks}
    if len(sizes) != 1:
        raise ValueError(f"give blocks of one size (leave out a shorter last block), got sizes {sorted(sizes)}")
    n, iterations = sizes.pop(), max(len(b.states) for b in blocks)
    return np.mean([[first_mismatch(b.states[min(k, len(b.states) - 1)], b.fixed_point) / n
                     for k in range(iterations)] for b in blocks], axis=0)


def mean_convergence(ax, blocks: list[BlockTrajectory], label: str = ""):
    """`converged_fraction` against iteration, with AR's one token per iteration, min((k + 1) / n, 1),
    dashed (drawn once per Axes: compare models at the same n)."""
    fraction = converged_fraction(blocks)
    ax.plot(range(len(fraction)), fraction, marker="o", label=f"{label or 'Jacobi'} ({len(blocks)} blocks)")
    if "one token per iteration" not in [line.get_label() for line in ax.lines]:
        n = len(blocks[0].fixed_point)
        ax.plot(range(n + 1), [min((k + 1) / n, 1.0) for k in range(n + 1)], ls="--", color="grey",
                label="one token per iteration")
    ax.set(xlabel="iteration", ylabel="mean fraction of the block converged")
    ax.set_ylim(0, 1.05)
    ax.legend()
    return ax


def tokens_after_first_error(blocks: list[BlockTrajectory]) -> list[int]:
    """For every non-final state of every block: how many tokens after its first wrong token already
    equal the fixed point (the LUCKY cells of `state_grid`). Jacobi Forcing trains the model to get
    these right despite the noise before them; each one that survives saves an iteration."""
    return [int(c) for b in blocks for c in (state_grid(b)[:-1] == LUCKY).sum(axis=1)]


def shares(counts: list[int], bins: np.ndarray) -> np.ndarray:
    """Share of `counts` equal to each bin."""
    counts = np.asarray(counts)
    return np.array([(counts == b).mean() for b in bins])


def grouped_bars(ax, bins: np.ndarray, heights: dict[str, np.ndarray], colors: list | None = None) -> None:
    """One bar group per integer bin, centred on it; one bar per label within a group (in `colors`,
    one per label, when given)."""
    width = 0.8 / len(heights)
    for j, (label, values) in enumerate(heights.items()):
        ax.bar(bins + (j - (len(heights) - 1) / 2) * width, values, width, label=label,
               color=None if colors is None else colors[j])
    ax.set_xticks(bins)


def acceptance_histogram(ax, accepted: dict[str, list[int]], max_count: int = 16, colors: dict | None = None):
    """Share of forwards that produced k new tokens, one bar group per method, centred on
    k = 1 .. min(max_count, largest count); counts above max_count go to the last bar. `colors`
    maps a method to its colour (the figures' one colour per method)."""
    top = min(max_count, max(max(counts) for counts in accepted.values()))
    bins = np.arange(1, top + 1)
    grouped_bars(ax, bins, {f"{label} (TPF {np.mean(counts):.2f})": shares(np.minimum(counts, top), bins)
                            for label, counts in accepted.items()},
                 None if colors is None else [colors[label] for label in accepted])
    clipped = any(max(counts) > top for counts in accepted.values())
    ax.set_xlabel("new tokens in one forward" + (f" (last bar: ≥ {top})" if clipped else ""))
    ax.set_ylabel("share of forwards")
    ax.legend()
    return ax


def after_error_histogram(ax, counts_by_model: dict[str, list[int]]):
    """Share of non-final block states with k tokens right after their first wrong token
    (`tokens_after_first_error`), one bar group per model; the legend gives the mean and the share
    of states with at least one."""
    bins = np.arange(0, max(max(counts) for counts in counts_by_model.values()) + 1)
    labels = [f"{label}: mean {np.mean(counts):.2f}, {np.mean(np.array(counts) >= 1):.0%} of states ≥ 1"
              for label, counts in counts_by_model.items()]
    grouped_bars(ax, bins, {label: shares(counts, bins) for label, counts in zip(labels, counts_by_model.values())})
    ax.set(xlabel="tokens already right after the first wrong token of a state", ylabel="share of block states")
    ax.legend()
    return ax


def noise_schedules(ax, num_blocks: int, window: int):
    """Target noise t_j against block index j for every schedule of `trajectories.schedule`
    (random drawn with random.Random(0)); t = 0 is the fixed point, t = 1 the initial draft."""
    for kind, marker in zip(SCHEDULES, "os^"):
        ax.plot(range(num_blocks), schedule(num_blocks, window, kind, random.Random(0)), marker=marker, label=kind)
    ax.set_xticks(range(num_blocks))
    ax.set_yticks(np.linspace(0, 1, window))
    ax.set(xlabel="block index j", ylabel="target noise t_j")
    ax.set_title(f"noise schedules over {num_blocks} blocks, window w = {window}")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1))
    return ax


def regions(example) -> list[tuple[int, int, str]]:
    """(start, end, name) of every run of positions of one kind and block: P, ỹj, y*j."""
    runs = []
    for i, key in enumerate(zip(example.kinds, example.blocks)):
        if runs and runs[-1][2] == key:
            runs[-1][1] = i + 1
        else:
            runs.append([i, i + 1, key])
    return [(start, end, REGION_NAMES[kind].format(block)) for start, end, (kind, block) in runs]


def packed_mask(ax, example, tokens: list[str] | None = None, mask: str = "noisy"):
    """The (L, L) mask `packing.allowed` of a packed example (row: query, column: key), with the
    prompt P, noisy blocks ỹj and clean blocks y*j marked; `tokens` (strings) label the axes."""
    allow = allowed(torch.tensor(example.kinds), torch.tensor(example.blocks), mask)
    ax.imshow(allow.numpy(), cmap=ListedColormap(MASK_COLOURS), vmin=0, vmax=1, interpolation="nearest")
    for start, end, name in regions(example):
        if start:
            ax.axhline(start - 0.5, color="black", lw=0.8)
            ax.axvline(start - 0.5, color="black", lw=0.8)
        middle = (start + end - 1) / 2
        ax.text(middle, 1.01, name, transform=ax.get_xaxis_transform(), ha="center", va="bottom", fontsize=FONT_SIZE)
        ax.text(1.01, middle, name, transform=ax.get_yaxis_transform(), ha="left", va="center", fontsize=FONT_SIZE)
    if tokens is not None:
        ax.set_xticks(range(len(tokens)), [visible(t) for t in tokens], rotation=90, fontsize=FONT_SIZE)
        ax.set_yticks(range(len(tokens)), [visible(t) for t in tokens], fontsize=FONT_SIZE)
    ax.set(xlabel="key", ylabel="query")
    context = "ỹ<j" if mask == "noisy" else "y*<j"
    ax.set_title(f"{mask} mask: ỹj sees P, {context} and itself; y*j sees P, y*<j and itself", pad=20)
    keys = [Patch(fc=colour, ec="grey", label=name) for colour, name in zip(MASK_COLOURS[::-1], ["may attend", "masked"])]
    ax.legend(handles=keys, loc="upper right", fontsize=FONT_SIZE)  # the causal mask leaves that corner empty
    return ax


def multiblock_step(ax, step, tokenizer=None, title: str = ""):
    """One multi-block forward, one row per input row: RA's draft rows (the Jacobi draft, then recycled
    candidates; verified on the exact prefix or rejected; the thick frame is the row kept), then the
    pseudo-active blocks (whose leading tokens agree with their noisy context, or not yet)."""
    rows = [(r, v, "RA draft" if b == 0 else f"recycled {b}") for b, (r, v) in enumerate(zip(step.rows, step.verified))]
    rows += [(p, a, f"pseudo {j + 1}") for j, (p, a) in enumerate(zip(step.pseudo, step.pseudo_accepted))]
    width = max(len(tokens) for tokens, _, _ in rows)
    for y, (tokens, good, label) in enumerate(rows):
        right, not_yet = (PSEUDO_COLOURS if label.startswith("pseudo") else RA_COLOURS).values()
        for x in range(len(tokens)):
            ax.add_patch(Rectangle((x, y), 1, 1, color=right if x < good else not_yet))
    if tokenizer is not None:
        label_rows(ax, [tokens for tokens, _, _ in rows], tokenizer, offset=0.5)
    ax.add_patch(Rectangle((0, step.row), len(step.rows[step.row]), 1, fill=False, lw=2.5, ec="black", zorder=3))
    cell_grid(ax, width, len(rows), 0)
    ax.set_xlim(0, width)
    ax.set_ylim(len(rows), 0)
    ax.set_xticks([x + 0.5 for x in range(width)], range(width))
    ax.set_yticks([y + 0.5 for y in range(len(rows))], [label for _, _, label in rows])
    ax.set_xlabel("position")
    ax.set_title(title or f"committed {step.accepted} (recycled {step.recycled}, promoted {step.promoted})")
    names = {**RA_COLOURS, **PSEUDO_COLOURS}
    kept = Patch(fill=False, ec="black", lw=2.5, label="row kept")
    legend_below(ax, [Patch(color=c, label=name) for name, c in names.items()] + [kept], columns=3)
    return ax


def multiblock_timeline(ax, steps: list):
    """Multi-block decoding forward by forward, from `multiblock_decode(..., record=True).steps`.

    Lane RA: the tokens each forward committed (`step.accepted`, written above the bar), split into
    those drafted by a recycled row (`step.recycled`), by a promoted pseudo block (`step.promoted`)
    and the rest (RA's own Jacobi draft and the correction/bonus token); bar height ∝ count.
    Lane pseudo j: a box when a j-th pseudo block was in flight (len(step.pseudo) ≥ j), with the
    number of its leading tokens that agree with their context.
    """
    slots = max(len(s.pseudo) for s in steps)
    x = np.arange(1, len(steps) + 1)
    scale = 0.75 / max(s.accepted for s in steps)  # the longest bar fills 3/4 of the lane
    parts = {"committed: from a recycled row": [s.recycled for s in steps],
             "committed: from a promoted block": [s.promoted for s in steps],
             "committed: RA's Jacobi draft or bonus token": [s.accepted - s.recycled - s.promoted for s in steps]}
    bottom = np.full(len(steps), float(slots))  # RA's lane is the top one
    for (label, counts), colour in zip(parts.items(), ["#f0ad4e", "#9467bd", "#5cb85c"]):
        ax.bar(x, np.array(counts) * scale, 0.8, bottom=bottom, color=colour, label=label)
        bottom += np.array(counts) * scale
    for xi, top, s in zip(x, bottom, steps):
        ax.text(xi, top, str(s.accepted), ha="center", va="bottom", fontsize=FONT_SIZE)
    flight = [(xi, slots - 1 - j, a) for xi, s in zip(x, steps) for j, a in enumerate(s.pseudo_accepted)]
    if flight:
        xs, lanes, _ = zip(*flight)
        ax.bar(xs, 0.6, 0.8, bottom=np.array(lanes) + 0.2, color=PSEUDO_COLOURS["pseudo: agrees with its context"],
               label="pseudo block in flight (number: tokens agreeing with their context)")
        for xi, lane, a in flight:
            ax.text(xi, lane + 0.5, str(a), ha="center", va="center", fontsize=FONT_SIZE)
    for lane in range(1, slots + 1):
        ax.axhline(lane, color="grey", lw=0.8)
    ax.set_xlim(0.4, len(steps) + 0.6)
    ax.set_ylim(0, slots + 1)
    names = [f"pseudo {slots - lane}" for lane in range(slots)] + ["RA"]  # bottom to top
    ax.set_yticks([lane + 0.5 for lane in range(slots + 1)], names)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    ax.set_xlabel("forward")
    total = sum(s.accepted for s in steps)
    ax.set_title(f"{len(steps)} forwards, {total} tokens committed: TPF {total / len(steps):.2f}")
    legend_below(ax, ax.get_legend_handles_labels()[0], columns=2)
    return ax


def animation(blocks: dict[str, BlockTrajectory], tokenizer, path, seconds_per_frame: float = 0.8) -> int:
    """A GIF of blocks converging forward by forward, one `trajectory_grid` panel per name: frame k shows
    rows 0..k (the draft, then the state after each of k Jacobi forwards); a block that reached its fixed
    point earlier stays whole. Returns the frame count, the most states any block has."""
    import matplotlib.pyplot as plt
    from matplotlib.animation import FuncAnimation, PillowWriter
    frames = max(len(b.states) for b in blocks.values())
    fig, axes = plt.subplots(len(blocks), 1, figsize=grid_figsize([*blocks.values()], tokenizer), squeeze=False,
                             layout="constrained")

    def draw(k: int) -> None:
        for ax, (name, block) in zip(axes[:, 0], blocks.items()):
            ax.clear()
            last = len(block.states) - 1
            shown = min(k, last)
            state = f"the fixed point after {last} forwards" if shown == last else f"after {shown} of {last} forwards"
            trajectory_grid(ax, block, tokenizer, f"{name}: {state}", rows=frames)
            ax.add_patch(Rectangle((-0.5, shown + 0.5), len(block.fixed_point), frames, fc="white", ec="none", zorder=5))

    FuncAnimation(fig, draw, frames=frames).save(path, writer=PillowWriter(fps=1 / seconds_per_frame))
    plt.close(fig)
    return frames
