"""The README's Python code blocks run as written, in order, in one
namespace (as a reader pastes them); a block that imports scikit-learn or
Dask is skipped where that package is not installed."""

from pathlib import Path

import pytest

from ._helpers import missing_packages, rst_code_blocks

README = Path(__file__).resolve().parents[1] / "README.rst"


def test_readme_blocks_run(capsys):
    if not README.exists():
        pytest.skip("not run from a source tree")
    blocks = [code for kind, code, _ in rst_code_blocks(README.read_text())
              if kind == "python"]
    assert len(blocks) >= 3  # the quick start, Dask, scikit-learn
    namespace, prints = {}, 0
    for block in blocks:
        if missing_packages(block):
            continue
        exec(compile(block, str(README), "exec"), namespace)
        prints += block.count("print(")
    printed = capsys.readouterr().out.split()
    assert len(printed) == prints
    assert all(0.5 < float(p) <= 1.0 for p in printed)  # the accuracies shown
