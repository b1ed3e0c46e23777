"""Test configuration: fail a run in which no test passed, show what is
under test, run the BLAS on one thread, and share the SIMD code-path
fixture."""

import numpy as np
import pytest
from hypothesis import settings
from kernelmaps._engine._runtime import ISAS

import kernelmaps
from kernelmaps import _engine
from kernelmaps._engine import lapack

settings.register_profile("default", max_examples=40, deadline=None)
settings.register_profile("thorough", max_examples=1000, deadline=None)
settings.load_profile("default")  # --hypothesis-profile=thorough for more


def pytest_report_header(config):
    return [
        f"kernelmaps {kernelmaps.__version__} from {kernelmaps.__file__}",
        f"SIMD path: {_engine.simd_isa()} (this CPU runs "
        f"{', '.join(_engine.available_isas())}); numpy {np.__version__}",
    ]


def pytest_sessionfinish(session, exitstatus):
    # pytest exits with 5 when nothing was collected, but 0 when everything
    # was skipped or deselected: make that a failure too.
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    passed = len(reporter.stats.get("passed", [])) if reporter is not None else 0
    if exitstatus == pytest.ExitCode.OK and passed == 0:
        session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED


@pytest.fixture(scope="session", autouse=True)
def _one_blas_thread():
    """NumPy's and SciPy's BLAS on one thread for the session: on a machine
    busy with other work, a multi-threaded level-2 BLAS call (the SVDs and
    small products of the tests' references) waits for a descheduled
    thread at every call (a test of 0.03 s took 3 s beside two CPU-bound
    processes). Through threadpoolctl, when it is installed. What the tests
    compute does not change; tests of the thread counts set their own
    (``tests/test_lapack.py``)."""
    restore = lapack._set_blas_threads(1)
    yield
    restore()


@pytest.fixture(params=ISAS)
def simd_path(request):
    """Run a test on each code path of the SIMD kernels this CPU has, selected
    for every extension at once by the engine's one switch."""
    if request.param not in _engine.available_isas():
        pytest.skip(f"this CPU has no {request.param} path")
    previous = _engine.select_isa(request.param)
    try:
        yield request.param
    finally:
        _engine.select_isa(previous)
