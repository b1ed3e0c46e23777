"""The quick fuzz run (a few hundred generated bad and extreme inputs over
every entry point, each in a worker subprocess): no crash, hang, silent
NaN, wrong value, mutated input or unclear error may remain.

The full run (every mutation, more than 5000 cases) is
``python -P tests/fuzz/run.py --full``, run by CI.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fuzz_harness


def test_quick_fuzz_run_has_no_failure():
    report = fuzz_harness.run("quick")
    assert len(report.results) >= 200
    assert not report.failures, (
        f"{len(report.failures)} fuzz failures\n{report.table()}\n\n"
        f"{report.failure_text()}"
    )
