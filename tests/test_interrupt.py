"""Ctrl-C stops every long call within half a second, leaves no thread
running, and the process goes on working.

Each case runs in a subprocess: it builds its data, starts the call, and a
timer thread sends SIGINT to the process 0.3 s later; the subprocess
reports the time from the signal to the KeyboardInterrupt, the threads
alive afterwards, and whether a small computation still works. The calls
take several seconds uninterrupted on a fast machine.
"""

import json
import subprocess
import sys
import textwrap

import pytest

LATENCY = 0.5  # seconds from SIGINT to KeyboardInterrupt, at most

SETUP = """
import numpy as np
import scipy.sparse
import kernelmaps as km
rng = np.random.default_rng(0)
"""

CASES = {
    "sum_match_kernel": (
        "sets = [rng.normal(size=(300, 30)) for _ in range(400)]",
        "km.sum_match_kernel(sets)"),
    "sum_match_kernel, BLAS products (d = 256)": (
        "sets = [rng.normal(size=(100, 256)) for _ in range(400)]",
        "km.sum_match_kernel(sets)"),
    "mmd float32": (
        "sets = [rng.normal(size=(300, 30)).astype(np.float32) for _ in range(600)]",
        "km.mmd(sets, sets[:300])"),
    "additive_chi2_kernel": (
        "X = rng.random((8000, 300))",
        "km.additive_chi2_kernel(X)"),
    "chi2_distance float32, progress bar": (
        "X = rng.random((8000, 300)).astype(np.float32)",
        "km.chi2_distance(X, progress=True)"),
    "js_kernel CSR": (
        "X = scipy.sparse.random(6000, 2000, density=0.2, format='csr', "
        "random_state=0)",
        "km.js_kernel(X)"),
    "js_kernel dense": (
        "X = rng.random((5000, 300))",
        "km.js_kernel(X, X[:4000])"),
    "renyi_divergence": (
        "sets = [rng.normal(size=(300, 10)) for _ in range(400)]",
        "km.renyi_divergence(sets)"),
    "renyi_divergence blocks on the fly": (
        "sets = [rng.normal(size=(100, 3)) for _ in range(1500)]",
        "km.renyi_divergence(sets)"),
    "renyi_divergence kd-trees": (
        "sets = [rng.normal(size=(3000, 2)) for _ in range(60)]",
        "km.renyi_divergence(sets)"),
    "RandomDistributionFeatures.transform": (
        "sets = [rng.normal(size=(2000, 30)) for _ in range(400)]\n"
        "rdf = km.RandomDistributionFeatures(30, 4000, rng=0)",
        "rdf.transform(sets)"),
    "EMKFeatures.transform, one large set": (
        "emk = km.EMKFeatures.fit(rng.normal(size=(500, 20)), 400, n_iter=0, "
        "rng=0)\nsets = [rng.normal(size=(2000000, 20))]",
        "emk.transform(sets)"),
    "gaussian_expected_kernel": (
        "m = rng.normal(size=(3000, 16)); A = rng.normal(size=(3000, 16, 16))\n"
        "S = A @ A.transpose(0, 2, 1) / 16 + np.eye(16)",
        "km.gaussian_expected_kernel(m, S)"),
    "gaussian_expected_kernel diagonal": (
        "m = rng.normal(size=(40000, 16)); v = rng.random((40000, 16))",
        "km.gaussian_expected_kernel(m, v)"),
    "ExpChi2Features.transform": (
        "X = rng.random((30000, 300)); X /= X.sum(axis=1, keepdims=True)\n"
        "f = km.ExpChi2Features.fit(X[:100], 4000, rng=0)",
        "f.transform(X)"),
    "project_psd": (
        "A = rng.normal(size=(3000, 3000)); K = A + A.T",
        "km.project_psd(K)"),
    "rf_pca": (
        "X = rng.random((20000, 300))\nf = km.Chi2DirectMap.fit(X[:100], 8)",
        "km.rf_pca(X, f, 100)"),
    "mmd_test permutation": (
        "X = rng.normal(size=(3000, 10)); Y = rng.normal(size=(3000, 10))",
        "km.mmd_test(X, Y, n_resamples=20000)"),
    "mmd_test aggregated (wild bootstrap)": (
        "X = rng.normal(size=(2500, 10)); Y = rng.normal(size=(2500, 10))",
        "km.mmd_test(X, Y, method='aggregated')"),
    "NystroemMap.fit, leverage landmarks": (
        "sets = [rng.normal(size=(300, 30)) for _ in range(1500)]",
        "km.NystroemMap(400, landmarks='leverage', rng=0).fit(sets)"),
    "NystroemMap.fit, k-means++ landmarks": (
        "X = rng.random((100000, 50))",
        "km.NystroemMap(3000, kernel='chi2', landmarks='kmeans++', rng=0).fit(X)"),
    "Chi2DirectMap.transform": (
        "X = rng.random((20000, 2000))\nf = km.Chi2DirectMap.fit(X[:50])",
        "for _ in range(20): f.transform(X)"),
}

SCRIPT = """
import json, os, signal, threading, time
{setup}
{data}
fired = []

done = threading.Event()

def interrupt():
    if not done.wait(0.3):  # the call still runs after 0.3 s
        fired.append(time.perf_counter())
        os.kill(os.getpid(), signal.SIGINT)

def running():
    # tqdm's monitor (a daemon thread that sleeps between its checks of the
    # bars) starts with the first bar and lives as long as the process:
    # not a thread of the call.
    return sum(t.name != "tqdm_monitor" for t in threading.enumerate())

threads = running()
timer = threading.Thread(target=interrupt)
timer.start()
try:
    {call}
    stopped, latency = False, None
except KeyboardInterrupt:
    stopped, latency = True, time.perf_counter() - fired[0]
done.set()
timer.join()
time.sleep(0.05)
extra = running() - threads
check = km.sum_match_kernel([np.eye(3), np.ones((2, 3))], gamma=1.0)
print(json.dumps({{"stopped": stopped, "latency": latency, "extra_threads": extra,
                  "usable": bool(np.isfinite(check).all())}}))
"""


@pytest.mark.parametrize("name", list(CASES))
def test_ctrl_c_stops_the_call(name):
    data, call = CASES[name]
    if "progress=True" in call:
        pytest.importorskip("tqdm")
    script = SCRIPT.format(setup=SETUP, data=data, call=call)
    result = subprocess.run([sys.executable, "-P", "-c", textwrap.dedent(script)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["stopped"], f"{name} finished before the signal: make it larger"
    assert report["latency"] < LATENCY, report
    assert report["extra_threads"] == 0, report
    assert report["usable"], report
