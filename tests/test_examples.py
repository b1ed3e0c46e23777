"""The gallery examples in ``examples/`` run to the end and draw figures."""

import pathlib
import re
import runpy

import pytest

EXAMPLES = sorted(
    (pathlib.Path(__file__).resolve().parents[1] / "examples").glob("plot_*.py")
)


@pytest.mark.skipif(not EXAMPLES, reason="no examples/ directory next to tests/")
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs(path, monkeypatch, capsys):
    matplotlib = pytest.importorskip("matplotlib")
    # Examples may use scikit-learn (a dependency of the doc build).
    for name in set(re.findall(r"^\s*(?:from|import) (sklearn|dask)\b",
                               path.read_text(), flags=re.MULTILINE)):
        pytest.importorskip(name)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setattr(plt, "show", lambda *args, **kwargs: None)
    plt.close("all")
    try:
        runpy.run_path(str(path), run_name="__main__")
        assert plt.get_fignums(), f"{path.name} drew no figure"
    finally:
        plt.close("all")
