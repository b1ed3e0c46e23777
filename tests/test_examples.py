"""The gallery examples in ``examples/`` run to the end and draw figures
that read at a glance: text of at least 10 points, at least two labelled
ticks on every log axis, and no two texts of a figure on top of each
other."""

import pathlib
import re
import runpy

import pytest

EXAMPLES = sorted(
    (pathlib.Path(__file__).resolve().parents[1] / "examples").glob("plot_*.py")
)
MIN_FONT_SIZE = 10


def _texts(fig):
    """The visible, non-empty texts of `fig` (titles, labels, tick labels,
    legends, annotations), after a draw has laid them out; not the labels
    of ticks outside their axis's view, which are not drawn."""
    import matplotlib.text

    fig.canvas.draw()
    hidden = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if not low <= tick.get_loc() <= high:
                    hidden.update((id(tick.label1), id(tick.label2)))
    return [t for t in fig.findobj(matplotlib.text.Text)
            if t.get_visible() and t.get_text().strip() and id(t) not in hidden
            and t.get_window_extent().width > 0]


def _labelled_ticks(axis):
    """Major tick labels of `axis` inside its view limits, with text, on
    either side (label1: left or bottom; label2: right or top)."""
    low, high = sorted(axis.get_view_interval())
    return [label.get_text() for tick in axis.get_major_ticks()
            if low <= tick.get_loc() <= high
            for label in (tick.label1, tick.label2)
            if label.get_visible() and label.get_text().strip()]


def _shared(ax, name):
    """The axes sharing `ax`'s x or y axis (`name`), `ax` included: one of
    them may carry the tick labels for all."""
    group = ax.get_shared_x_axes() if name == "x" else ax.get_shared_y_axes()
    return group.get_siblings(ax)


def figure_problems(fig):
    """What makes `fig` hard to read: small text, log axes with fewer than
    two labelled ticks, overlapping texts."""
    problems = []
    texts = _texts(fig)
    for text in texts:
        if text.get_fontsize() < MIN_FONT_SIZE:
            problems.append(f"{text.get_fontsize():g}-pt text {text.get_text()!r}")
    for ax in fig.axes:
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            if axis.get_scale() in ("log", "symlog") and ax.get_visible():
                labels = [label for sibling in _shared(ax, name)
                          for label in _labelled_ticks(getattr(sibling, f"{name}axis"))]
                if len(labels) < 2:
                    problems.append(f"log {name} axis of {ax.get_title()!r} has "
                                    f"labelled ticks {labels}")
    renderer = fig.canvas.get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts]
    for i, (text_a, a) in enumerate(boxes):
        for text_b, b in boxes[i + 1:]:
            overlap_x = min(a.x1, b.x1) - max(a.x0, b.x0)
            overlap_y = min(a.y1, b.y1) - max(a.y0, b.y0)
            if overlap_x > 1 and overlap_y > 1:  # a pixel of slack
                problems.append(f"{text_a!r} overlaps {text_b!r}")
    return problems


def test_figure_problems_are_found():
    """The checks find what they look for (so that a clean example is not
    clean because nothing was checked)."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    try:
        ax.plot([1, 2], [3, 4], label="a line")
        ax.set_yscale("log")
        ax.set_ylim(3, 4)  # no power of ten inside: no labelled major tick
        ax.legend(fontsize=7)
        ax.annotate("here", (1.5, 3.5))
        ax.annotate("there", (1.5, 3.5))
        problems = figure_problems(fig)
    finally:
        plt.close(fig)
    assert "7-pt text 'a line'" in problems
    assert any(p.startswith("log y axis") for p in problems), problems
    assert "'here' overlaps 'there'" in problems


# Warnings of a dask.distributed LocalCluster about the machine, not about
# the example: another process holds the scheduler's default HTTP port, or
# its scratch directories took more than a second to create (a loaded
# machine).
@pytest.mark.filterwarnings("ignore:Port 8787 is already in use:UserWarning")
@pytest.mark.filterwarnings(
    "ignore:Creating scratch directories is taking a surprisingly long time"
    ":UserWarning")
@pytest.mark.skipif(not EXAMPLES, reason="no examples/ directory next to tests/")
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs(path, monkeypatch, capsys):
    matplotlib = pytest.importorskip("matplotlib")
    # Examples may use Dask, scikit-learn (a dependency of the doc build) or
    # PyTorch (installed by CI), the last two not installed by the README's
    # test command: an example needing a missing one is skipped.
    for name in set(re.findall(r"^\s*(?:from|import) (sklearn|dask|torch)\b",
                               path.read_text(), flags=re.MULTILINE)):
        pytest.importorskip(name)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setattr(plt, "show", lambda *args, **kwargs: None)
    plt.close("all")
    try:
        runpy.run_path(str(path), run_name="__main__")
        assert plt.get_fignums(), f"{path.name} drew no figure"
        problems = {number: figure_problems(plt.figure(number))
                    for number in plt.get_fignums()}
        assert not any(problems.values()), problems
    finally:
        plt.close("all")
