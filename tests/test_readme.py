"""The README's Python code blocks run as written, in order, in one
namespace (as a reader pastes them); a block that imports scikit-learn or
Dask is skipped where that package is not installed."""

import importlib.util
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.rst"


def code_blocks(text):
    """The bodies of the ``.. code-block:: python`` directives of `text`,
    dedented."""
    blocks = []
    for match in re.finditer(r"^\.\. code-block:: python\n\n((?:    .*\n|\n)+)",
                             text, flags=re.MULTILINE):
        lines = match.group(1).rstrip("\n").split("\n")
        blocks.append("\n".join(line[4:] for line in lines) + "\n")
    return blocks


def test_readme_blocks_run(capsys):
    if not README.exists():
        pytest.skip("not run from a source tree")
    blocks = code_blocks(README.read_text())
    assert len(blocks) >= 3  # the quick start, Dask, scikit-learn
    namespace, prints = {}, 0
    for block in blocks:
        needs = [p for p in ("sklearn", "dask")
                 if re.search(rf"^(from|import) {p}\b", block, flags=re.MULTILINE)]
        if any(importlib.util.find_spec(p) is None for p in needs):
            continue
        exec(compile(block, str(README), "exec"), namespace)
        prints += block.count("print(")
    printed = capsys.readouterr().out.split()
    assert len(printed) == prints
    assert all(0.5 < float(p) <= 1.0 for p in printed)  # the accuracies shown
