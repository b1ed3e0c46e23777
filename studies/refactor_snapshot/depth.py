"""The call depth of issue 51: the package's Python frames from each public
kernel function (and from mmd_test) to the compiled loop, the deepest over
every call into a compiled engine module (each such function wrapped here
to record its callers; the wrapper of `_hints` not counted).

    python -P studies/refactor_snapshot/depth.py
"""

import importlib
import os
import pkgutil
import sys
import warnings

import numpy as np

import kernelmaps as km
import kernelmaps._engine as engine

PACKAGE = os.path.dirname(os.path.abspath(km.__file__)) + os.sep
RECORD = []


def _callers():
    names, frame = [], sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        if (os.path.abspath(code.co_filename).startswith(PACKAGE)
                and code.co_name != "hinted"):
            names.append(code.co_name)
        frame = frame.f_back
    return names[::-1]


def _recorded(function):
    def wrapper(*args, **kwargs):
        RECORD.append(_callers())
        return function(*args, **kwargs)
    return wrapper


def wrap_engine():
    """Every compiled function of the engine, recording its callers."""
    for info in pkgutil.iter_modules(engine.__path__):
        module = importlib.import_module(f"kernelmaps._engine.{info.name}")
        for name in dir(module):
            value = getattr(module, name)
            compiled = type(value).__name__ in ("cython_function_or_method",
                                                "fused_cython_function")
            if (compiled and name != "last_isa" and (getattr(
                    value, "__module__", "") or "").startswith("kernelmaps._engine._")):
                setattr(module, name, _recorded(value))


def depth(call):
    """The deepest chain of the package's frames to a compiled call."""
    RECORD.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        call()
    return max((names for names in RECORD if names), key=len, default=[])


def calls():
    rng = np.random.default_rng(0)
    S = km.Bags.from_list([rng.normal(size=(20, 3)) for _ in range(10)])
    T = km.Bags.from_list([rng.normal(size=(20, 3)) + 0.5 for _ in range(10)])
    H = rng.dirichlet(np.ones(6), 20)
    out = {
        "sum_match_kernel": lambda: km.sum_match_kernel(S, T),
        "mmd": lambda: km.mmd(S, T),
        "mmd_kernel": lambda: km.mmd_kernel(S, T),
        "renyi_divergence": lambda: km.renyi_divergence(S, T, k=3),
        "sliced_wasserstein": lambda: km.sliced_wasserstein(S, T, rng=0),
        "sliced_wasserstein_kernel": lambda: km.sliced_wasserstein_kernel(
            S, T, rng=0),
        "additive_chi2_kernel": lambda: km.additive_chi2_kernel(H),
        "exp_chi2_kernel": lambda: km.exp_chi2_kernel(H),
        "js_kernel": lambda: km.js_kernel(H),
        "gaussian_expected_kernel": lambda: km.gaussian_expected_kernel(
            rng.normal(size=(5, 2)), np.ones(5)),
        "mmd_test points": lambda: km.mmd_test(
            S.points, T.points, n_resamples=9, rng=0, workers=1),
        "mmd_test chi2": lambda: km.mmd_test(
            H[:10], H[10:], kernel="chi2", n_resamples=9, rng=0, workers=1),
    }
    for kernel in ("mean_map", "mmd", "renyi", "sliced_wasserstein"):
        params = {"k": 3} if kernel == "renyi" else None
        out[f"mmd_test {kernel}"] = (lambda k=kernel, p=params: km.mmd_test(
            S, T, kernel=k, kernel_params=p, n_resamples=9, rng=0, workers=1))
    return out


if __name__ == "__main__":
    wrap_engine()
    for name, call in calls().items():
        names = depth(call)
        print(f"{name:28s} {len(names) - 1:3d}  {' > '.join(names)}")
