"""Every public name has a numpydoc docstring whose examples run."""

import doctest
import inspect

import numpy as np
import pytest

import kernelmaps

PUBLIC = [getattr(kernelmaps, name) for name in kernelmaps.__all__]
SECTIONS = ["Parameters", "Returns", "References", "Examples"]


def test_all_names_exist():
    assert sorted(kernelmaps.__all__) == sorted(set(kernelmaps.__all__))
    for obj in PUBLIC:
        assert obj.__module__.startswith("kernelmaps")


@pytest.mark.parametrize("obj", PUBLIC, ids=lambda o: o.__name__)
def test_numpydoc_sections(obj):
    doc = inspect.getdoc(obj)
    assert doc, f"{obj.__name__} has no docstring"
    wanted = ["Parameters", "Examples"] if inspect.isclass(obj) else SECTIONS
    for section in wanted:
        assert f"\n{section}\n{'-' * len(section)}\n" in doc, (
            f"{obj.__name__}: no {section} section"
        )


@pytest.mark.parametrize("obj", PUBLIC, ids=lambda o: o.__name__)
def test_examples_run(obj):
    finder = doctest.DocTestFinder(recurse=True)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    tests = [t for t in finder.find(obj, globs={"np": np}) if t.examples]
    assert tests, f"{obj.__name__} has no examples"
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0


def test_imports_without_docstrings():
    # Docstrings filled at import (the dtype rule, shared parameters) must
    # not break `python -OO`, which removes them.
    import subprocess
    import sys
    import tempfile

    code = "import kernelmaps, kernelmaps.histograms, kernelmaps.psd; print('ok')"
    # from another directory: the installed package, not the source tree
    run = subprocess.run([sys.executable, "-OO", "-c", code], capture_output=True,
                         text=True, timeout=120, cwd=tempfile.gettempdir())
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "ok"
