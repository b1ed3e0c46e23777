"""Package-wide settings: the working-memory budget.

As scikit-learn's ``working_memory``: one number, in MiB, that bounds the
temporary memory a tool over objects uses (kernel blocks, resampling
draws, products); a tool whose data fit within it runs in memory, a larger
one streams blocks of its kernel, and one that cannot run even so within it
says what it needs. It is a package-wide setting (`set_config`, or
`config_context` for a ``with`` block; per thread) and a per-call argument
of the tools that take one (``working_memory=``), which wins.
"""

import contextlib
import math
import numbers
import os
import threading
import time

from ._validation import fill_docs, machine_memory

__all__ = ["config_context", "get_config", "set_config", "working_memory_bytes"]

# The default budget, MiB (scikit-learn's is 1024).
_DEFAULT_WORKING_MEMORY = 1024
_state = threading.local()


def _settings():
    if not hasattr(_state, "settings"):
        _state.settings = {"working_memory": _DEFAULT_WORKING_MEMORY}
    return _state.settings


def get_config():
    """The package's settings, as a new dict.

    Parameters
    ----------
    None

    Returns
    -------
    config : dict
        ``working_memory``: the working-memory budget in MiB (see
        `set_config`).

    See Also
    --------
    set_config, config_context

    References
    ----------
    {sklearn}

    Examples
    --------
    >>> import kernelmaps
    >>> kernelmaps.get_config()["working_memory"]
    1024
    """
    return dict(_settings())


def set_config(*, working_memory=None):
    """Set the package's settings (in this thread).

    Parameters
    ----------
    working_memory : int or float, optional
        The working-memory budget, in MiB (1024 by default): the temporary
        memory that a tool over objects (`mmd_test`, the exact kernels on
        Dask input) may use beside its input and output. A test whose
        kernel matrices fit within it computes them whole; a larger one
        streams blocks of its kernel, with memory proportional to the
        number of objects times the resamples, not to its square. The
        budget is capped at the memory available when the tool runs.
        None leaves it as it is.

    Returns
    -------
    None

    See Also
    --------
    get_config, config_context

    References
    ----------
    {sklearn}

    Examples
    --------
    >>> import kernelmaps
    >>> kernelmaps.set_config(working_memory=2048)
    >>> kernelmaps.get_config()["working_memory"]
    2048
    >>> kernelmaps.set_config(working_memory=1024)
    """
    if working_memory is not None:
        _settings()["working_memory"] = check_working_memory(working_memory)


@contextlib.contextmanager
def config_context(*, working_memory=None):
    """The package's settings changed within a ``with`` block (in this
    thread), and restored after it.

    Parameters
    ----------
    working_memory : int or float, optional
        The working-memory budget in MiB (see `set_config`).

    Returns
    -------
    context : contextlib.AbstractContextManager
        Entered by ``with``; it restores the settings on exit.

    See Also
    --------
    set_config, get_config

    References
    ----------
    {sklearn}

    Examples
    --------
    >>> import kernelmaps
    >>> with kernelmaps.config_context(working_memory=64):
    ...     kernelmaps.get_config()["working_memory"]
    64
    >>> kernelmaps.get_config()["working_memory"]
    1024
    """
    before = get_config()
    set_config(working_memory=working_memory)
    try:
        yield
    finally:
        _settings().update(before)


fill_docs((get_config, set_config, config_context), sklearn=(
    '.. [1] F. Pedregosa et al., "Scikit-learn: Machine Learning in Python",\n'
    "   Journal of Machine Learning Research 12, pp. 2825-2830, 2011 (its\n"
    "   ``working_memory`` setting, which this one follows)."), indent=4)


def check_working_memory(value, name="working_memory"):
    """A positive finite number of MiB, or a TypeError/ValueError naming
    `name`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number of MiB, got "
                        f"{type(value).__name__}")
    value = int(value) if isinstance(value, numbers.Integral) else float(value)
    # (an int of any size: isfinite would convert it to a float)
    if not (value > 0 and (isinstance(value, int) or math.isfinite(value))):
        raise ValueError(f"{name} must be a positive number of MiB, got {value}")
    return value


def working_memory_bytes(working_memory=None):
    """The budget in bytes: `working_memory` (MiB; None: the package's
    setting), at most the memory available now (`available_memory`)."""
    mib = (_settings()["working_memory"] if working_memory is None
           else check_working_memory(working_memory))
    return int(min(mib * 2**20, available_memory()))


def available_memory():
    """Bytes of memory this process can allocate now without swapping:
    psutil's estimate where it is installed (free memory plus what the
    kernel can reclaim), else the free pages the C library reports (an
    underestimate: the page cache is not counted), else the machine's
    memory. Read at most every `AVAILABLE_MEMORY_TTL` seconds (psutil takes
    50 us, a third of a small call)."""
    now = time.monotonic()
    read_at, value = _AVAILABLE
    if value is None or now - read_at > AVAILABLE_MEMORY_TTL:
        value = _read_available_memory()
        _AVAILABLE[:] = [now, value]
    return value


# Seconds for which a reading of the available memory stands.
AVAILABLE_MEMORY_TTL = 1.0
_AVAILABLE = [0.0, None]  # (the time of the last reading, its value)


def _read_available_memory():
    """`available_memory`, read now."""
    try:
        import psutil
    except ImportError:
        pass
    else:
        return int(psutil.virtual_memory().available)
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return machine_memory()
