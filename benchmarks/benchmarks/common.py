"""Shared by the benchmark modules: generated data, and the stored asv
results read back for the ratio tables."""

import itertools
import math
import os
import platform

import numpy as np


class RunOnce:
    """Settings for benchmarks whose baselines take tens of seconds: each
    function runs once (``number = repeat = rounds = 1``, no warmup)."""

    timeout = 900
    number = 1
    repeat = 1
    rounds = 1
    warmup_time = 0


class BlasThreads:
    """For classes whose NumPy baselines use BLAS: ``setup_blas(workers)``
    limits the BLAS to `workers` threads (threadpoolctl) until teardown, so
    that each ratio compares the same number of cores."""

    def setup_blas(self, workers):
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:
            from asv_runner.benchmarks.mark import SkipNotImplemented

            raise SkipNotImplemented("threadpoolctl is not installed") from None
        self._limits = threadpool_limits(workers, user_api="blas")

    def teardown(self, *params):
        limits = getattr(self, "_limits", None)
        if limits is not None:
            limits.restore_original_limits()


def run_once(method):
    """The settings of `RunOnce` for one benchmark method of a class that
    does not have them (put it above ``skip_for_params``)."""
    for name in ("timeout", "number", "repeat", "rounds", "warmup_time"):
        setattr(method, name, getattr(RunOnce, name))
    return method


def machine():
    """One line naming what a timing ran on: the CPU model, the SIMD path
    kernelmaps runs (and those the CPU has), the CPUs this process may use,
    and the NumPy version (its BLAS may use AVX-512 where kernelmaps does
    not, or the reverse)."""
    from kernelmaps import _engine

    model = platform.processor() or "unknown CPU"
    try:  # Linux: the model name, family and model (a VM may hide the name)
        with open("/proc/cpuinfo") as f:
            info = dict(line.split(":", 1) for line in f.read().split("\n\n")[0]
                        .splitlines() if ":" in line)
        info = {k.strip(): v.strip() for k, v in info.items()}
        model = (f"{info['model name']} (family {info['cpu family']}, model "
                 f"{info['model']})")
    except (OSError, KeyError):
        pass
    cpus = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
            else os.cpu_count())
    return (f"{model}; kernelmaps SIMD path {_engine.simd_isa()} (CPU has "
            f"{', '.join(_engine.available_isas())}); {cpus} CPUs; "
            f"NumPy {np.__version__}")


def make_sets(size, dtype):
    """``n_sets`` arrays of shape ``(n_points, d)`` from a size string
    ``"{n_sets}x{n_points}x{d}"``, standard normal from
    ``numpy.random.default_rng(0)``; and ``d``."""
    n_sets, n_points, d = (int(n) for n in size.split("x"))
    rng = np.random.default_rng(0)
    sets = [
        rng.standard_normal((n_points, d)).astype(dtype, copy=False)
        for _ in range(n_sets)
    ]
    return sets, d


def bag_of_words(n, d=300, density=0.135, seed=0):
    """`n` L1-normalised word-count histograms over a vocabulary of `d`
    words, float64 of shape (n, d): word j occurs in a document with a
    Zipf-like probability (on average a share `density` of the words), with
    1 + Poisson(1.5) counts. About 13.5 % of the entries are non-zero."""
    rng = np.random.default_rng(seed)
    popularity = 1.0 / (np.arange(d) + 10.0) ** 0.8
    p = np.minimum(popularity * density * d / popularity.sum(), 1.0)
    present = rng.random((n, d)) < p
    counts = present * (1 + rng.poisson(1.5, size=(n, d)))
    counts[counts.sum(axis=1) == 0, 0] = 1
    return counts / counts.sum(axis=1, keepdims=True)


def stored_times(results_dir=".asv/results"):
    """Yield ``(label, times)`` for every stored asv result, with
    ``times[benchmark name][parameter strings] = seconds`` (failed or
    skipped runs left out)."""
    from asv.results import iter_results

    found = False
    for res in iter_results(results_dir):
        found = True
        times = {}
        for key in res.get_all_result_keys():
            params = res.get_result_params(key)
            combos = [
                tuple(p.strip("'") for p in combo)
                for combo in itertools.product(*params)
            ]
            values = res.get_result_value(key, params)
            times[key] = {
                c: v
                for c, v in zip(combos, values, strict=True)
                if v is not None and not math.isnan(v)
            }
        yield f"{res.commit_hash[:8]} {res.env_name}", times
    if not found:
        raise SystemExit(
            f"no stored asv results in {results_dir}: from benchmarks/, run "
            f"`asv machine --yes` once, then `asv run --python=same --quick "
            f"--set-commit-hash $(git rev-parse HEAD)` (asv stores nothing "
            f"without --set-commit-hash when it runs in the current environment)"
        )
