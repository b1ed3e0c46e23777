"""The gallery examples in ``examples/`` run to the end and draw figures
that read at a glance: text of at least 10 points, at least two labelled
ticks on every log axis, and no two texts of a figure on top of each
other (``doc/figure_checks.py``, which the documentation's build runs on
every figure of the gallery too)."""

import importlib.util
import pathlib
import re
import runpy
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("plot_*.py"))
_spec = importlib.util.spec_from_file_location(
    "figure_checks", ROOT / "doc" / "figure_checks.py")
figure_checks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(figure_checks)
figure_problems = figure_checks.figure_problems


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


def test_the_gallery_build_checks_its_figures(monkeypatch):
    """The documentation's build scrapes the gallery's figures through
    `figure_checks` (``doc/conf.py``), whose scraper saves and closes the
    figures (sphinx-gallery's scraper, here a stand-in) and then refuses
    one that is hard to read, naming the example."""
    matplotlib = pytest.importorskip("matplotlib")
    scrapers = pytest.importorskip("sphinx_gallery.scrapers")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setattr(sys, "path", list(sys.path))
    conf = {"__file__": str(ROOT / "doc" / "conf.py")}
    exec(compile((ROOT / "doc" / "conf.py").read_text(), conf["__file__"], "exec"),
         conf)
    names = conf["sphinx_gallery_conf"]["image_scrapers"]
    scraper = [importlib.import_module(name)._get_sg_image_scraper() for name in names]
    assert [s.__name__ for s in scraper] == ["checked_matplotlib_scraper"]
    saved = []

    def stand_in(block, block_vars, gallery_conf, **kwargs):
        saved.append(plt.get_fignums())
        plt.close("all")
        return "rst"

    monkeypatch.setattr(scrapers, "matplotlib_scraper", stand_in)
    plt.close("all")
    _, ax = plt.subplots()
    ax.plot([1, 2], [3, 4])
    assert scraper[0](None, {"src_file": "good.py"}, {}) == "rst"
    _, ax = plt.subplots()
    ax.set_title("tiny", fontsize=6)
    with pytest.raises(ValueError, match=r"bad\.py .*6-pt text 'tiny'"):
        scraper[0](None, {"src_file": "bad.py"}, {})
    assert len(saved) == 2 and saved[1] and not plt.get_fignums()


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
        problems = figure_checks.open_figures_problems()
        assert not problems, problems
    finally:
        plt.close("all")
