"""Ctrl-C cases: a long call of a compiled engine, interrupted by SIGINT.

The worker tells the parent when the call starts; the parent sends SIGINT
two seconds later and expects the worker to answer ``interrupted`` (the call
raised KeyboardInterrupt) within a few seconds. A call that runs on is a
``hang`` (the parent kills it at its deadline). Each input is sized to run
20 to 40 s on one thread, so it cannot finish before the signal.
"""

import json
import time

import numpy as np

CASES = {
    "sum_match_kernel": "sets",
    "mmd": "sets",
    "renyi_divergence": "sets",
    "js_kernel": "hist",
    "RandomDistributionFeatures.transform": "rdf",
    "gaussian_expected_kernel": "gauss",
}


def _inputs(name, km):
    """The call, with its inputs made (and sets packed) beforehand, so that
    the time after the start goes to the compiled engine."""
    rng = np.random.default_rng(0)
    kind = CASES[name]
    if kind == "sets":
        n_sets, n = (400, 350) if name == "renyi_divergence" else (400, 400)
        sets = km.Bags.from_list([rng.normal(size=(n, 10)) for _ in range(n_sets)])
        return lambda: getattr(km, name)(sets, workers=1)
    if kind == "hist":
        X = rng.random((3000, 3000))
        return lambda: km.js_kernel(X, workers=1)
    if kind == "rdf":
        sets = km.Bags.from_list([rng.normal(size=(24000, 10)) for _ in range(100)])
        rdf = km.RandomDistributionFeatures(4000, rng=0, gamma=0.1).fit(sets)
        return lambda: rdf.transform(sets, workers=1)
    m = rng.normal(size=(3000, 48))
    A = rng.normal(size=(3000, 48, 48)) / 8
    covs = A @ A.transpose(0, 2, 1)
    return lambda: km.gaussian_expected_kernel(m, covs, workers=1)


def run(req, km, proto):
    name = req["id"].split("|")[1]
    call = _inputs(name, km)
    proto.write(json.dumps({"id": req["id"], "event": "started"}) + "\n")
    proto.flush()
    t0 = time.perf_counter()
    try:
        call()
    except KeyboardInterrupt:
        return {
            "id": req["id"],
            "category": "interrupted",
            "elapsed": time.perf_counter() - t0,
        }
    except Exception as e:
        return {
            "id": req["id"],
            "category": "error-other",
            "detail": f"{type(e).__name__}: {e}"[:300],
            "elapsed": time.perf_counter() - t0,
        }
    return {
        "id": req["id"],
        "category": "finished",
        "elapsed": time.perf_counter() - t0,
    }
