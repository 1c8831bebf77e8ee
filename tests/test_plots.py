"""Every picture on hand-made inputs: labels whole and legible, legends present, numbers known by hand."""
import random
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from jacobi_min.jacobi import BlockTrajectory
from jacobi_min.multiblock import Step
from jacobi_min.packing import allowed, pack
from jacobi_min.tools import plots
from jacobi_min.trajectories import SCHEDULES, schedule

WORDS = ["Question", " ", "\n", " the", "=", " fibonacci_sequence"]
LONG = "␣fibonacci_sequence"  # 19 characters: wraps onto two lines


class FakeTokenizer:
    def decode(self, ids):
        return "".join(WORDS[i] for i in ids)


# fixed point [0, 1, 2, 3, 4]; first mismatches 1, 2, 5; right after a wrong token: {4}, then {3, 4}
BLOCK = BlockTrajectory([], [[0, 5, 1, 2, 4], [0, 1, 4, 3, 4], [0, 1, 2, 3, 4]])
# fixed point [5, 4, 3]: first mismatch 1, position 2 right after it
SHORT = BlockTrajectory([], [[5, 3, 3], [5, 4, 3]])
# fixed point [0, 1, 2, 3, 4], reached after one iteration: converged 1/5, then 5/5
EARLY = BlockTrajectory([], [[0, 4, 4, 4, 4], [0, 1, 2, 3, 4]])

WIDE = BlockTrajectory([], [[0] + [5, 0] * 7 + [5], [0] * 16])  # n = 16, every other token the long one


@pytest.fixture
def ax():
    fig, ax = plt.subplots()
    yield ax
    plt.close(fig)


def texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


def legend_labels(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def assert_legible(ax):
    """Token labels have visible whitespace, are whole (the long one wrapped, not cut) and ≥ 9 pt."""
    labels = texts(ax)
    assert {"Question", "␣", "⏎", "␣the"} <= set(labels)
    assert LONG in [label.replace("\n", "") for label in labels]
    assert all(" " not in label for label in labels)
    assert all(t.get_fontsize() >= 9 for t in ax.texts + ax.get_legend().get_texts())


def test_visible_whitespace_and_wrapping():
    tokenizer = FakeTokenizer()
    assert plots.visible(" a\n\tb") == "␣a⏎⇥b"
    assert plots.token_label(tokenizer, 0) == "Question"  # 8 characters fit on one line
    assert plots.token_label(tokenizer, 5) == "␣fibonacci\n_sequence"


def test_trajectory_grid_labels_legend_and_draft_row(ax):
    plots.trajectory_grid(ax, BLOCK, FakeTokenizer(), title="a block")
    assert_legible(ax)
    assert len(ax.texts) == 3 * 5
    assert legend_labels(ax) == ["converged prefix", "right, but after a wrong token", "wrong",
                                 "y0: known before the block"]
    rows = [t.get_text() for t in ax.get_yticklabels()]
    assert rows == ["draft (y0 known)", "1", "2: fixed point"]
    assert ax.get_title() == "a block"


def test_trajectory_grid_equal_row_heights():
    tokenizer = FakeTokenizer()
    fig, axes = plt.subplots(2, 1, figsize=plots.grid_figsize([BLOCK, SHORT], tokenizer))
    for axis, block in zip(axes, [BLOCK, SHORT]):
        plots.trajectory_grid(axis, block, tokenizer, rows=3)
    fig.tight_layout()
    heights = [axis.get_window_extent().height / abs(np.diff(axis.get_ylim())[0]) for axis in axes]
    assert heights[0] == pytest.approx(heights[1])
    plt.close(fig)


@pytest.mark.parametrize("block", [BLOCK, WIDE], ids=["n=5", "n=16"])
def test_grid_figsize_fits_every_label_in_its_cell(block):
    tokenizer = FakeTokenizer()
    fig, ax = plt.subplots(figsize=plots.grid_figsize([block], tokenizer))
    plots.trajectory_grid(ax, block, tokenizer)
    fig.tight_layout()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing glyph (␣, ⏎) would warn
        fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    cell = ax.get_window_extent().width / len(block.fixed_point)
    row = ax.get_window_extent().height / len(block.states)
    for text in ax.texts:
        box = text.get_window_extent(renderer)
        assert box.width < cell and box.height < row, text.get_text()
    plt.close(fig)


def test_trajectory_grid_and_convergence_keep_their_old_calls(ax):
    plots.trajectory_grid(ax, BLOCK)
    assert len(ax.texts) == 0
    plots.convergence(ax, BLOCK, "base")
    assert list(ax.lines[0].get_ydata()) == [1, 2, 5]


def test_multiblock_step_labels_and_legend(ax):
    step = Step(rows=[[3, 1, 2, 4], [3, 1, 0, 5]], verified=[2, 3], row=1, pseudo=[[4, 0, 1, 2]],
                pseudo_accepted=[1], accepted=3, recycled=2, promoted=0)
    plots.multiblock_step(ax, step, FakeTokenizer(), title="forward 1")
    assert_legible(ax)
    assert len(ax.texts) == 3 * 4
    assert legend_labels(ax) == ["RA: verified", "RA: rejected", "pseudo: agrees with its context",
                                 "pseudo: not yet", "row kept"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["RA draft", "recycled 1", "pseudo 1"]


def test_tokens_after_first_error_counted_by_hand():
    assert plots.tokens_after_first_error([BLOCK]) == [1, 2]
    assert plots.tokens_after_first_error([BLOCK, SHORT]) == [1, 2, 1]
    assert plots.tokens_after_first_error([BlockTrajectory([], [[7, 8]])]) == []  # a fixed point has no noise


def test_after_error_histogram(ax):
    plots.after_error_histogram(ax, {"base": [0, 0, 1], "jacobi forcing": [2, 1, 1, 0]})
    assert legend_labels(ax) == ["base: mean 0.33, 33% of states ≥ 1", "jacobi forcing: mean 1.00, 75% of states ≥ 1"]
    assert list(ax.get_xticks()) == [0, 1, 2]
    base = [bar.get_height() for bar in ax.containers[0]]
    assert base == pytest.approx([2 / 3, 1 / 3, 0])


def test_mean_convergence_values(ax):
    assert plots.converged_fraction([BLOCK, EARLY]) == pytest.approx([0.2, 0.7, 1.0])  # EARLY stays at 1
    plots.mean_convergence(ax, [BLOCK, EARLY], "base")
    plots.mean_convergence(ax, [EARLY], "jacobi forcing")
    assert list(ax.lines[0].get_ydata()) == pytest.approx([0.2, 0.7, 1.0])
    assert list(ax.lines[1].get_ydata()) == pytest.approx([0.2, 0.4, 0.6, 0.8, 1.0, 1.0])
    assert ax.lines[1].get_linestyle() == "--"
    assert legend_labels(ax) == ["base (2 blocks)", "one token per iteration", "jacobi forcing (1 blocks)"]
    with pytest.raises(ValueError, match="one size"):
        plots.converged_fraction([BLOCK, SHORT])


def test_noise_schedules_draws_the_three_schedules(ax):
    plots.noise_schedules(ax, num_blocks=7, window=4)
    assert [line.get_label() for line in ax.lines] == list(SCHEDULES)
    for line, kind in zip(ax.lines, SCHEDULES):
        assert list(line.get_ydata()) == schedule(7, 4, kind, random.Random(0))
    assert legend_labels(ax) == list(SCHEDULES)


@pytest.mark.parametrize("mask", ["noisy", "clean"])
def test_packed_mask_regions_tokens_and_mask(ax, mask):
    example = pack([0, 1], [[3, 2], [4, 4]], [[3, 1], [2, 0]])  # P ỹ0 y*0 ỹ1 y*1, two tokens each
    tokens = [WORDS[i] for i in example.ids]
    plots.packed_mask(ax, example, tokens, mask=mask)
    assert texts(ax) == [name for name in ["P", "ỹ0", "y*0", "ỹ1", "y*1"] for _ in range(2)]  # top and right
    assert all(t.get_fontsize() >= 9 for t in ax.texts)
    expected = allowed(torch.tensor(example.kinds), torch.tensor(example.blocks), mask).numpy()
    assert np.array_equal(ax.images[0].get_array(), expected)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["Question", "␣", "␣the", "⏎", "␣the", "␣", "=", "=",
                                                            "⏎", "Question"]
    assert ax.get_title().startswith(f"{mask} mask")
    assert legend_labels(ax) == ["may attend", "masked"]


def test_multiblock_timeline_lanes_and_counts(ax):
    steps = [Step([[0]], [1], 0, [], [], accepted=2, recycled=0, promoted=0),
             Step([[0]], [1], 0, [[0, 0]], [1], accepted=4, recycled=3, promoted=0),
             Step([[0]], [1], 0, [[0, 0], [0, 0]], [2, 0], accepted=3, recycled=0, promoted=2)]
    plots.multiblock_timeline(ax, steps)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["pseudo 2", "pseudo 1", "RA"]
    recycled, promoted, own, flight = ax.containers
    totals = np.sum([[bar.get_height() for bar in c] for c in (recycled, promoted, own)], axis=0)
    assert totals / totals.max() == pytest.approx(np.array([2, 4, 3]) / 4)  # bar height ∝ step.accepted
    assert [bar.get_height() > 0 for bar in recycled] == [False, True, False]
    assert [bar.get_height() > 0 for bar in promoted] == [False, False, True]
    assert len(flight) == 3  # one box per pseudo block in flight: 0 + 1 + 2
    assert texts(ax) == ["2", "4", "3", "1", "2", "0"]  # committed per forward, then agreeing tokens per box
    assert legend_labels(ax) == ["committed: from a recycled row", "committed: from a promoted block",
                                 "committed: RA's Jacobi draft or bonus token",
                                 "pseudo block in flight (number: tokens agreeing with their context)"]


def test_acceptance_histogram_bins_on_integers(ax):
    plots.acceptance_histogram(ax, {"plain": [1, 1, 2, 3], "MR": [2, 5]}, max_count=4)
    assert list(ax.get_xticks()) == [1, 2, 3, 4]
    centres = np.mean([[bar.get_x() + bar.get_width() / 2 for bar in c] for c in ax.containers], axis=0)
    assert centres == pytest.approx([1, 2, 3, 4])  # each bar group centred on its k
    assert all(any(c[i].get_height() > 0 for c in ax.containers) for i in range(4))  # no empty bin
    assert legend_labels(ax) == ["plain (TPF 1.75)", "MR (TPF 3.50)"]  # TPF over the unclipped counts
    assert "≥ 4" in ax.get_xlabel()


def test_acceptance_histogram_stops_at_the_largest_count(ax):
    plots.acceptance_histogram(ax, {"plain": [1, 2, 2]})
    assert list(ax.get_xticks()) == [1, 2]
    assert "≥" not in ax.get_xlabel()


def test_every_figure_is_shown_where_a_reader_goes():
    """Each PNG in figures/ appears in the README, a page of docs/ or a notebook."""
    from pathlib import Path
    root = Path(__file__).parent.parent
    pages = [root / "README.md", *(root / "docs").glob("*.md"), *(root / "notebooks").glob("*.ipynb")]
    text = "".join(p.read_text() for p in pages)
    figures = sorted((root / "figures").glob("*.png"))
    assert figures and [p.name for p in figures if p.name not in text] == []
