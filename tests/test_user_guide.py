"""Every code block of the user guide, the index page and the getting-started
page runs as written, in order, in one namespace per page (as a reader
pastes them): Python blocks are executed, ``>>>`` blocks are checked as
doctests (their printed output compared). A page stops at its first block
that imports scikit-learn, Dask or Matplotlib where that package is not
installed (the later blocks may use its results): that page is skipped
from there, naming the package."""

import doctest
from pathlib import Path

import pytest

from ._helpers import missing_packages, rst_code_blocks

DOC = Path(__file__).resolve().parents[1] / "doc"
PAGES = sorted(
    [DOC / "index.rst", DOC / "getting_started.rst",
     *DOC.glob("user_guide/*.rst")], key=str)


def run_page(path):
    """Run the blocks of the page at `path` in order; raises what a block
    raises, AssertionError for a doctest whose output differs, and skips
    from the first block that needs a missing optional package."""
    namespace = {"__name__": f"doc.{path.stem}"}
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    parser = doctest.DocTestParser()
    for kind, code, line in rst_code_blocks(path.read_text(encoding="utf-8")):
        missing = missing_packages(code)
        if missing:
            pytest.skip(f"{path.name}:{line} and later blocks need "
                        f"{', '.join(missing)}, not installed")
        if kind == "python":
            # Padded so that a traceback gives the line in the .rst file.
            exec(compile("\n" * (line - 1) + code, str(path), "exec"), namespace)
            continue
        test = parser.get_doctest(code, namespace, f"{path.name}:{line}",
                                  str(path), line - 1)
        report = []
        result = runner.run(test, out=report.append, clear_globs=False)
        assert result.failed == 0, "".join(report)


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.relative_to(DOC).as_posix())
def test_page_blocks_run(path):
    if not DOC.exists():
        pytest.skip("not run from a source tree")
    if not path.exists():
        pytest.skip(f"{path.name} not written yet")
    run_page(path)


def test_user_guide_has_blocks():
    # The extraction finds the guide's examples (a changed markup would
    # otherwise let the test above pass on nothing).
    if not DOC.exists():
        pytest.skip("not run from a source tree")
    counts = {p.name: len(rst_code_blocks(p.read_text(encoding="utf-8")))
              for p in DOC.glob("user_guide/*.rst")}
    assert sum(counts.values()) >= 20, counts


def test_failures_are_reported(tmp_path):
    # A block that raises and a doctest whose output differs both fail.
    raising = tmp_path / "raising.rst"
    raising.write_text("Text.\n\n.. code-block:: python\n\n"
                       "   x = 1\n   raise ValueError('from the block')\n")
    with pytest.raises(ValueError, match="from the block"):
        run_page(raising)
    wrong = tmp_path / "wrong.rst"
    wrong.write_text("Text::\n\n    y = 2\n\nMore.\n\n>>> print(y + 1)\n4\n")
    with pytest.raises(AssertionError, match=r"Expected:\s+4\s+Got:\s+3"):
        run_page(wrong)
    right = tmp_path / "right.rst"
    right.write_text(">>> import math\n>>> print(math.floor(2.5))\n2\n")
    run_page(right)
