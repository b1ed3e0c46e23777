"""Checks that a Matplotlib figure reads at a glance: text of at least 10
points, at least two labelled ticks on every log axis, and no two texts on
top of each other.

The documentation's build runs them on every figure of the gallery
(`_get_sg_image_scraper`, named in ``conf.py``): a figure that fails them
fails the example, so the build. ``tests/test_examples.py`` runs them on
the examples run by themselves."""

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


def open_figures_problems():
    """`figure_problems` of each open figure of pyplot that has some, by
    figure number."""
    import matplotlib.pyplot as plt

    problems = {number: figure_problems(plt.figure(number))
                for number in plt.get_fignums()}
    return {number: found for number, found in problems.items() if found}


def checked_matplotlib_scraper(block, block_vars, gallery_conf, **kwargs):
    """sphinx-gallery's Matplotlib scraper (it saves and closes the open
    figures), then a ValueError naming the example where a figure it saved
    has `figure_problems`: sphinx-gallery reports it as the example's
    error. (Raised after the scraper, whose figures are then closed:
    sphinx-gallery calls the scrapers again after an error.)"""
    from sphinx_gallery.scrapers import matplotlib_scraper

    problems = open_figures_problems()
    rst = matplotlib_scraper(block, block_vars, gallery_conf, **kwargs)
    if problems:
        raise ValueError(f"figures of {block_vars['src_file']} are hard to "
                         f"read: {problems}")
    return rst


def _get_sg_image_scraper():
    """The scraper of ``image_scrapers: ("figure_checks",)`` in sphinx-gallery's
    configuration (a module name that sphinx-gallery imports)."""
    return checked_matplotlib_scraper
