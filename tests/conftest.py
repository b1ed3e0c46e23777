"""Test configuration: fail a run in which no test passed, show what is
under test, and share the SIMD code-path switch."""

import numpy as np
import pytest
from hypothesis import settings

import kernelmaps
from kernelmaps.histograms import _exact_impl
from kernelmaps.sets import _knn_impl, _pair_sums_impl, _set_features_impl

settings.register_profile("default", max_examples=40, deadline=None)
settings.register_profile("thorough", max_examples=1000, deadline=None)
settings.load_profile("default")  # --hypothesis-profile=thorough for more


def pytest_report_header(config):
    return [
        f"kernelmaps {kernelmaps.__version__} from {kernelmaps.__file__}",
        f"SIMD path: {_pair_sums_impl.simd_isa()}; numpy {np.__version__}",
    ]


def pytest_sessionfinish(session, exitstatus):
    # pytest exits with 5 when nothing was collected, but 0 when everything
    # was skipped or deselected: make that a failure too.
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    passed = len(reporter.stats.get("passed", [])) if reporter is not None else 0
    if exitstatus == pytest.ExitCode.OK and passed == 0:
        session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED


@pytest.fixture(params=["avx2", "baseline"])
def simd_path(request):
    """Run a test on each code path of the SIMD kernels this CPU has."""
    modules = (_pair_sums_impl, _knn_impl, _exact_impl, _set_features_impl)
    got = {module.simd_isa(request.param == "avx2") for module in modules}
    try:
        if got != {request.param}:
            pytest.skip(f"this CPU has no {request.param} path")
        yield request.param
    finally:
        for module in modules:
            module.simd_isa(True)
