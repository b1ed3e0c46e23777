"""Two released peer tests for the which_test study, run with their defaults.

Not part of kernelmaps and not imported by it: this module runs in its own
virtual environment, /work/peers (numpy, scipy, the two packages below, jax
for agginc's package import), never in the project's one.

    /work/peers/bin/python studies/which_test/peers.py --n 1000 --d 64 \
        --shift 0.1 --seeds 0-4 --peer agginc [--m M] [--threads 2] \
        [--opt KEY=VALUE ...] [--mem-limit-gb 16]

prints one JSON line per seed. The data of a seed are

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)); Y = rng.normal(size=(m, d)); Y[:, 0] += shift

Peers (--peer):

agginc      MMDAggInc of Schrab, Kim, Guedj and Gretton (NeurIPS 2022),
            package `agginc` (github.com/antoninschrab/agginc, not on PyPI),
            its NumPy implementation `agginc.np.agginc("mmd", X, Y, ...)`
            with all its defaults (R=200 superdiagonals, 10 Gaussian
            bandwidths from the distances between the first 500 points of X
            and of Y, B1=B2=500, B3=50, uniform weights, alpha=0.05);
            its `seed` (the Rademacher draws) is the run's seed.
agginc-jax  The same test, the package's JAX implementation
            (`agginc.jax.agginc`, float32, jit-compiled for each shape and
            each seed, the seed being a static argument: only a second call
            with the same shapes and seed in a process runs without
            compiling; `includes_compile` says which).
ctt         Compress Then Test of Domingo-Enrich, Dwivedi and Mackey
            (AISTATS 2023), package `goodpoints` (PyPI),
            `goodpoints.ctt.ctt(X, Y, g, B=39, s=16, lam, ...)`.  The
            package has no default for the compression level g nor a
            bandwidth rule (lam=1.0 is its placeholder); this harness uses
            g=2 (--opt g=K to change) and the rule of the authors'
            experiment scripts (examples/mmd_test/test.py):
            lam = sqrt(2) * median of all pairwise Euclidean distances of
            the pooled first min(n, 512) rows of X and of Y (diagonal zeros
            included), the kernel being exp(-||x - y||^2 / lam^2).
            null_seed and statistic_seed are two children of
            np.random.SeedSequence(seed).
actt        goodpoints' aggregated CTT, `goodpoints.ctt.actt`, with the
            authors' experiment collection: 5 bandwidths lam / 2^i,
            i = 0..4, uniform weights, B=299, B_2=200, B_3=20 (function
            defaults), g=2.
lrctt       goodpoints' low-rank CTT, `goodpoints.ctt.lrctt` (random
            Fourier features), g=2, r=256 features (no package default for
            either), B=39, s=16.

Every function returns a dict with `reject` (bool), `pvalue` (float or
None where the package gives none) and `seconds` (wall time of the package
call plus, for goodpoints, the bandwidth rule; data generation excluded).
"""

import argparse
import contextlib
import io
import json
import os
import resource
import sys
import time

_DEFAULT_THREADS = 2


def _set_threads(threads):
    """Fix the BLAS / OpenMP thread counts before numpy is imported (an
    already exported variable wins).  XLA (agginc-jax) keeps its default,
    one thread per core; goodpoints' Cython code is single-threaded."""
    threads = str(int(threads))
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, threads)


if __name__ == "__main__":
    _pre = argparse.ArgumentParser(add_help=False)
    _pre.add_argument("--threads", type=int, default=_DEFAULT_THREADS)
    _set_threads(_pre.parse_known_args()[0].threads)

import numpy as np  # noqa: E402
from scipy.spatial.distance import pdist  # noqa: E402

ALPHA = 0.05
SQRT_2 = np.sqrt(2.0)
_jax_shapes_seen = set()


def make_data(n, m, d, shift, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    Y = rng.normal(size=(m, d))
    Y[:, 0] += shift
    return X, Y


def blas_info():
    """What BLAS libraries numpy/scipy loaded, and their thread counts."""
    try:
        import threadpoolctl
    except ImportError:
        return None
    return [{"api": i.get("internal_api"), "version": i.get("version"),
             "threads": i.get("num_threads")}
            for i in threadpoolctl.threadpool_info()]


# --------------------------------------------------------------- agginc ----

def agginc_mmd(X, Y, seed, impl="np", **options):
    """MMDAggInc, `agginc(\"mmd\", X, Y, seed=seed, **options)`.

    impl="np" (agginc.np, float64) or "jax" (agginc.jax, float32).  Uses
    only the first min(n, m) rows of each sample (the package's design:
    pairs (i, i + r), r = 1..R, of the paired rows (X_i, Y_i)).
    """
    options = dict(options)
    options.setdefault("alpha", ALPHA)
    n_used = min(X.shape[0], Y.shape[0])
    if impl == "np":
        from agginc.np import agginc
        t0 = time.perf_counter()
        out, dic = agginc("mmd", X, Y, seed=seed, return_dictionary=True,
                          **options)
        seconds = time.perf_counter() - t0
        compiled = None
    elif impl == "jax":
        import jax.numpy as jnp
        from agginc.jax import agginc, human_readable_dict
        Xj = jnp.asarray(X, dtype=jnp.float32)
        Yj = jnp.asarray(Y, dtype=jnp.float32)
        # agginc.jax.agginc is jitted with everything but X and Y static,
        # the seed included: a new seed is a new compilation.
        key = (X.shape, Y.shape, seed, tuple(sorted(options.items())))
        compiled = key not in _jax_shapes_seen
        t0 = time.perf_counter()
        out, dic = agginc("mmd", Xj, Yj, seed=seed, return_dictionary=True,
                          **options)
        out = int(out.block_until_ready())
        seconds = time.perf_counter() - t0
        _jax_shapes_seen.add(key)
        human_readable_dict(dic)
    else:
        raise ValueError("impl must be 'np' or 'jax'")
    singles = [v for k, v in dic.items() if k.startswith("Single test")]
    pvals = [float(s["p-value"]) for s in singles]
    thresholds = [float(s["p-value threshold"]) for s in singles]
    return {
        "reject": bool(int(out)),
        # The aggregated test gives no p-value of its own: it rejects when
        # some bandwidth's p-value <= its threshold u * w (u from B2, B3).
        "pvalue": None,
        "min_pvalue": min(pvals),
        "threshold": thresholds[0] if len(set(thresholds)) == 1 else None,
        "pvalues": pvals,
        "bandwidths": [float(s["Bandwidth"]) for s in singles],
        "n_used": n_used,
        "seconds": seconds,
        "includes_compile": compiled,
    }


# ------------------------------------------------------------ goodpoints ---

def median_bandwidth(X, Y, max_rows=512):
    """goodpoints' examples/mmd_test rule: sqrt(2) * median pairwise
    distance of the pooled first min(n, max_rows) rows of X and Y, diagonal
    zeros included (their util_sqMMD_estimators.median_criterion)."""
    U = np.concatenate((X[:max_rows], Y[:max_rows]))
    k = U.shape[0]
    dist = pdist(U)
    # the full k x k matrix has each pair twice and k zeros on the diagonal
    full = np.concatenate((dist, dist, np.zeros(k)))
    return float(SQRT_2 * np.median(full))


def _seeds(seed):
    ss = np.random.SeedSequence(seed).spawn(2)
    return (int(ss[0].generate_state(1)[0]), int(ss[1].generate_state(1)[0]))


def _perm_pvalue(result):
    # estimator_values holds the B permuted statistics and the original one
    # (partitioned, not in order); the usual (1 + #{T_b >= T}) / (B + 1).
    vals = np.asarray(result.estimator_values)
    return float(np.mean(vals >= result.statistic_values))


def ctt(X, Y, seed, variant="ctt", g=2, lam=None, **options):
    """goodpoints' Compress Then Test (variant "ctt", "actt" or "lrctt")."""
    from goodpoints import ctt as gp
    options = dict(options)
    options.setdefault("alpha", ALPHA)
    null_seed, statistic_seed = _seeds(seed)
    t0 = time.perf_counter()
    if lam is None:
        lam = median_bandwidth(X, Y)
    t_bw = time.perf_counter() - t0
    info = {}
    if variant == "ctt":
        res = gp.ctt(X, Y, g, lam=lam, null_seed=null_seed,
                     statistic_seed=statistic_seed, **options)
        pvalue = _perm_pvalue(res)
        info["statistic"] = float(res.statistic_values)
        info["n_used"] = _ctt_points_used(X.shape[0], Y.shape[0],
                                          options.get("s", 16))
    elif variant == "lrctt":
        r = options.pop("r", 256)
        res = gp.lrctt(X, Y, g, r, lam=lam, null_seed=null_seed,
                       statistic_seed=statistic_seed, **options)
        if res is None:
            raise RuntimeError("lrctt declined these sizes (see its warning)")
        pvalue = _perm_pvalue(res)
        info["r"] = r
        info["statistic"] = float(res.statistic_values)
    elif variant == "actt":
        n_bw = options.pop("n_bandwidths", 5)
        lams = np.array([lam / 2 ** i for i in range(n_bw)][::-1])
        weights = np.full(n_bw, 1.0 / n_bw)
        with contextlib.redirect_stdout(io.StringIO()):  # it prints a lot
            res = gp.actt(X, Y, g, lam=lams, weights=weights,
                          null_seed=null_seed, statistic_seed=statistic_seed,
                          **options)
        pvalue = None
        info["bandwidths"] = lams.tolist()
        info["n_used"] = _ctt_points_used(X.shape[0], Y.shape[0],
                                          options.get("s", 16))
        info["u"] = float(res.hat_u_alpha)
    else:
        raise ValueError("variant must be 'ctt', 'actt' or 'lrctt'")
    seconds = time.perf_counter() - t0
    rejects = float(res.rejects)
    return dict({
        "reject": rejects >= 1.0,
        "pvalue": pvalue,
        # the package's randomised decision: 1, 0, or a fraction at ties
        "reject_prob": rejects,
        "g": g,
        "lam": lam,
        "seconds": seconds,
        "seconds_bandwidth": t_bw,
        "seconds_package": float(res.total_times),
    }, **info)


def _ctt_points_used(n1, n2, s=16):
    """Rows of X and Y that ctt/actt feed to KT-Compress: each sample is cut
    into bins of one size, then each bin is thinned to the largest power of
    4 not above that size (goodpoints.compress.compress_kt)."""
    total = min(2 * s, n1 + n2)
    bin_size = min((n1 + n2) // total, n1, n2)
    pow4 = 1
    while pow4 * 4 <= bin_size:
        pow4 *= 4
    return [(n1 // bin_size) * pow4, (n2 // bin_size) * pow4]


PEERS = {
    "agginc": lambda X, Y, seed, **o: agginc_mmd(X, Y, seed, impl="np", **o),
    "agginc-jax": lambda X, Y, seed, **o: agginc_mmd(X, Y, seed, impl="jax",
                                                     **o),
    "ctt": lambda X, Y, seed, **o: ctt(X, Y, seed, variant="ctt", **o),
    "actt": lambda X, Y, seed, **o: ctt(X, Y, seed, variant="actt", **o),
    "lrctt": lambda X, Y, seed, **o: ctt(X, Y, seed, variant="lrctt", **o),
}


def _machine_cpu_seconds():
    """CPU time (user + system, all cores) the whole machine has spent,
    from /proc/stat; None where there is none.  Beside this process's own
    CPU time it tells whether something else ran during a timing."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()[1:]
    except OSError:
        return None
    ticks = sum(int(x) for i, x in enumerate(fields) if i not in (3, 4))
    return ticks / os.sysconf("SC_CLK_TCK")


def _own_cpu_seconds():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _parse_seeds(text):
    seeds = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-")
            seeds.extend(range(int(a), int(b) + 1))
        else:
            seeds.append(int(part))
    return seeds


def _parse_opt(text):
    key, _, value = text.partition("=")
    with contextlib.suppress(ValueError):
        value = json.loads(value)
    return key, value


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--peer", choices=sorted(PEERS), required=True)
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--m", type=int, default=None, help="default: n")
    p.add_argument("--d", type=int, default=64)
    p.add_argument("--shift", type=float, default=0.0)
    p.add_argument("--seeds", default="0")
    p.add_argument("--threads", type=int, default=_DEFAULT_THREADS,
                   help="BLAS/OpenMP threads (set before numpy loads)")
    p.add_argument("--opt", action="append", default=[], type=_parse_opt,
                   metavar="KEY=VALUE", help="extra keyword for the peer "
                   "(value read as JSON when it parses)")
    p.add_argument("--mem-limit-gb", type=float, default=16.0,
                   help="address-space limit (RLIMIT_AS), so that a run "
                   "too big fails with MemoryError instead of the OOM "
                   "killer; 0: none")
    args = p.parse_args(argv)
    m = args.n if args.m is None else args.m
    if args.mem_limit_gb > 0:
        lim = int(args.mem_limit_gb * 2 ** 30)
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    options = dict(args.opt)
    run = PEERS[args.peer]
    for seed in _parse_seeds(args.seeds):
        X, Y = make_data(args.n, m, args.d, args.shift, seed)
        row = {"peer": args.peer, "n": args.n, "m": m, "d": args.d,
               "shift": args.shift, "seed": seed, "options": options}
        own0, all0 = _own_cpu_seconds(), _machine_cpu_seconds()
        try:
            row.update(run(X, Y, seed, **options))
        except Exception as exc:  # a failed run is a result too
            row.update({"error": type(exc).__name__ + ": " + str(exc)[:300]})
        row["cpu_seconds"] = round(_own_cpu_seconds() - own0, 2)
        if all0 is not None:
            row["machine_cpu_seconds"] = round(
                _machine_cpu_seconds() - all0, 2)
        row["maxrss_gb"] = round(resource.getrusage(
            resource.RUSAGE_SELF).ru_maxrss / 2 ** 20, 3)
        row["blas"] = blas_info()
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
