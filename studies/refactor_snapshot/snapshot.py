"""A snapshot of every public function, map and two-sample method on fixed
inputs, to show that a refactoring leaves their outputs bit for bit as they
were (issue 51: "outputs bit-identical to today's").

    python -P studies/refactor_snapshot/snapshot.py record before.npz
    (change the package, rebuild)
    python -P studies/refactor_snapshot/snapshot.py compare before.npz

`compare` prints each entry that differs (values, or the error raised) and
exits 1 where any does. Errors are recorded by their type only: a message
may improve without changing a result.
"""

import sys
import warnings

import numpy as np

import kernelmaps as km
from kernelmaps.sklearn import ExpectedKernel, SetKernel


def inputs():
    rng = np.random.default_rng(12345)
    X = rng.standard_normal((37, 3))
    Y = rng.standard_normal((41, 3)) + 0.4
    sizes = rng.integers(7, 15, 23)
    S = km.Bags.from_list([rng.standard_normal((s, 3)) for s in sizes])
    T = km.Bags.from_list([rng.standard_normal((s, 3)) + 0.3
                           for s in rng.integers(7, 15, 19)])
    W = km.Bags(S.points, S.offsets, rng.uniform(0.0, 2.0, S.n_points))
    H = rng.dirichlet(np.ones(9), 29)
    H2 = rng.dirichlet(np.ones(9) * 0.5, 31)
    means = rng.standard_normal((17, 3))
    covs = rng.uniform(0.1, 1.0, (17, 3))
    return X, Y, S, T, W, H, H2, means, covs


def entries():
    """Name -> a callable returning arrays (or a tuple of them)."""
    X, Y, S, T, W, H, H2, means, covs = inputs()
    S32 = km.Bags(S.points.astype(np.float32), S.offsets)
    out = {
        "sum_match": lambda: km.sum_match_kernel(S, T),
        "sum_match_self": lambda: km.sum_match_kernel(S),
        "sum_match_weighted": lambda: km.sum_match_kernel(W),
        "sum_match_f32": lambda: km.sum_match_kernel(S32),
        "sum_match_poly": lambda: km.sum_match_kernel(S, T, kernel="polynomial",
                                                      degree=3),
        "sum_match_linear": lambda: km.sum_match_kernel(S, kernel="linear"),
        "sum_match_laplacian": lambda: km.sum_match_kernel(S, kernel="laplacian",
                                                           gamma=0.3),
        "mmd": lambda: km.mmd(S, T),
        "mmd_unbiased": lambda: km.mmd(S, T, unbiased=True, squared=True),
        "mmd_weighted": lambda: km.mmd(W),
        "mmd_kernel": lambda: km.mmd_kernel(S, T, gamma2=0.5),
        "median_heuristic": lambda: km.median_heuristic(S),
        "renyi": lambda: km.renyi_divergence(S, T, alpha=0.8, k=3),
        "divergence_kernel": lambda: km.divergence_kernel(
            km.renyi_divergence(S, alpha=0.8, k=3)),
        "sliced": lambda: km.sliced_wasserstein(S, T, rng=1),
        "sliced_w": lambda: km.sliced_wasserstein(W, rng=1),
        "sliced_p1": lambda: km.sliced_wasserstein(S, T, p=1, rng=1),
        "sliced_kernel": lambda: km.sliced_wasserstein_kernel(S, T, rng=1),
        "chi2": lambda: km.additive_chi2_kernel(H, H2),
        "chi2_distance": lambda: km.chi2_distance(H, H2),
        "exp_chi2": lambda: km.exp_chi2_kernel(H, H2, beta=0.7),
        "intersection": lambda: km.intersection_kernel(H, H2),
        "hellinger": lambda: km.hellinger_kernel(H),
        "js": lambda: km.js_kernel(H, H2),
        "expected": lambda: km.gaussian_expected_kernel(means, covs),
        "expected_poly": lambda: km.gaussian_expected_kernel(
            means, covs, kernel="polynomial"),
        "level2": lambda: km.level2_kernel(
            km.sum_match_kernel(S, T, normalize=False),
            np.diag(km.sum_match_kernel(S, normalize=False)),
            np.diag(km.sum_match_kernel(T, normalize=False))),
        "project_psd": lambda: km.project_psd(
            km.divergence_kernel(km.renyi_divergence(S, alpha=0.8, k=3))),
        "psd_projector": lambda: km.PSDProjector().fit(
            km.divergence_kernel(km.renyi_divergence(S, alpha=0.8, k=3))
        ).transform(km.divergence_kernel(km.renyi_divergence(S, alpha=0.8,
                                                             k=3))[:5]),
    }
    maps = {
        "rff": (km.RandomFourierFeatures(64, rng=0), X),
        "rdf": (km.RandomDistributionFeatures(64, rng=0), S),
        "rdf_w": (km.RandomDistributionFeatures(64, rng=0), W),
        "drdf": (km.DoublyRandomDistributionFeatures(32, 16, rng=0), S),
        "swf": (km.SlicedWassersteinFeatures(20, 10, rng=0), S),
        "emk": (km.EMKFeatures(8, n_iter=20, rng=0), S),
        "chi2_direct": (km.Chi2DirectMap(), H),
        "chi2_cheb": (km.Chi2ChebyshevMap(), H),
        "hkm": (km.HomogeneousKernelMap(), H),
        "exp_chi2_f": (km.ExpChi2Features(64, rng=0), H),
        "anchor": (km.AnchorMap(n_anchors=6), H),
    }
    for name, (fmap, data) in maps.items():
        out[f"map_{name}"] = (lambda f=fmap, d=data: f.fit(d).transform(d))
    nystroem = {
        "mean_map": S, "mmd": S, "renyi": S, "sliced_wasserstein": S,
        "chi2": H, "intersection": H, "hellinger": H, "js": H,
        "exp_chi2": H, "expected": (means, covs),
    }
    for kernel, data in nystroem.items():
        params = {"k": 3, "alpha": 0.8} if kernel == "renyi" else None
        out[f"nystroem_{kernel}"] = (
            lambda k=kernel, d=data, p=params: km.NystroemMap(
                10, kernel=k, kernel_params=p, rng=0).fit(d).transform(d))
    for kernel in ("mean_map", "mmd", "renyi", "sliced_wasserstein"):
        params = {"k": 3, "alpha": 0.8} if kernel == "renyi" else {}
        out[f"setkernel_{kernel}"] = (
            lambda k=kernel, p=params: SetKernel(k, rng=0, **p).fit(S).transform(T))
    out["expected_kernel"] = lambda: ExpectedKernel().fit(
        np.hstack([means, covs])).transform(np.hstack([means, covs])[:5])
    methods = ("permutation", "wild_bootstrap", "aggregated", "fuse",
               "linear", "cross")
    samples = {"points": (X, Y), "sets": (S, T), "rows": (H, H2)}
    kernels = {"points": (None, "laplacian"),
               "sets": ("mean_map", "mmd", "renyi", "sliced_wasserstein"),
               "rows": ("chi2", "exp_chi2", "js")}
    for kind, (A, B) in samples.items():
        for kernel in kernels[kind]:
            for method in methods:
                if method == "wild_bootstrap":
                    A2, B2 = A[:19], B[:19]
                else:
                    A2, B2 = A, B
                params = ({"k": 3, "alpha": 0.8} if kernel == "renyi" else None)
                fmap = None
                if method == "linear" and kind != "points":
                    fmap = (km.RandomDistributionFeatures(32, rng=0)
                            if kind == "sets" else km.Chi2DirectMap())
                resamples = None if method in ("linear", "cross") else 99
                out[f"test_{kind}_{kernel}_{method}"] = (
                    lambda a=A2, b=B2, k=kernel, m=method, p=params,
                    r=resamples, fmap=fmap: _result(km.mmd_test(
                        a, b, kernel=k, method=m, kernel_params=p,
                        n_resamples=r, feature_map=fmap, rng=3)))
    out.update(lazy_entries(X, Y, S, T, H, H2))
    return out


def lazy_entries(X, Y, S, T, H, H2):
    """The Dask path: the exact kernels of lazy input, computed, and the
    tests and Nystroem features of it."""
    import dask.array as da

    def lazy(B):
        return km.Bags(da.from_array(B.points, chunks=50), B.offsets, B.weights)

    LS, LT, LH = lazy(S), lazy(T), da.from_array(H, chunks=10)
    return {
        "lazy_sum_match": lambda: km.sum_match_kernel(LS, LT, gamma=0.5).compute(),
        "lazy_mmd": lambda: km.mmd(LS, LT, gamma=0.5).compute(),
        "lazy_renyi": lambda: km.renyi_divergence(LS, LT, k=3).compute(),
        "lazy_sliced": lambda: km.sliced_wasserstein(LS, LT, rng=1).compute(),
        "lazy_sliced_kernel": lambda: km.sliced_wasserstein_kernel(
            LS, LT, gamma=0.5, rng=1).compute(),
        "lazy_chi2": lambda: km.additive_chi2_kernel(LH).compute(),
        "lazy_js": lambda: km.js_kernel(LH).compute(),
        "lazy_test_points": lambda: _result(km.mmd_test(
            da.from_array(X, chunks=10), da.from_array(Y, chunks=10),
            n_resamples=99, rng=3)),
        "lazy_test_sets": lambda: _result(km.mmd_test(
            LS, LT, kernel="mean_map", n_resamples=99, rng=3)),
        "lazy_test_rows": lambda: _result(km.mmd_test(
            LH, da.from_array(H2, chunks=10), kernel="chi2", n_resamples=99,
            rng=3)),
        "lazy_nystroem_sets": lambda: km.NystroemMap(10, rng=0).fit(S).transform(
            LS).compute(),
    }


def _result(r):
    return np.concatenate([np.ravel(r.statistic), np.ravel(r.pvalue)])


def run():
    values = {}
    for name, make in entries().items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                value = make()
            except Exception as e:  # (recorded, compared)
                values[name] = np.array(f"error {type(e).__name__}: {e}")
                continue
        if not isinstance(value, tuple):
            value = (value,)
        for i, v in enumerate(value):
            v = v.toarray() if hasattr(v, "toarray") else np.asarray(v)
            values[f"{name}.{i}"] = v
    return values


def main():
    mode, path = sys.argv[1:3]
    values = run()
    if mode == "record":
        np.savez(path, **values)
        print(f"{len(values)} entries recorded in {path}")
        return 0
    before = np.load(path)
    differ = []
    for name in sorted(set(before.files) | set(values)):
        if name not in before.files or name not in values:
            differ.append(f"{name}: only {'now' if name in values else 'before'}")
            continue
        a, b = before[name], values[name]
        if a.dtype.kind == "U" or b.dtype.kind == "U":
            same = a.dtype.kind == b.dtype.kind == "U" and (
                str(a).split(":")[0] == str(b).split(":")[0])
        else:
            same = a.dtype == b.dtype and a.shape == b.shape and (
                np.array_equal(a, b, equal_nan=True))
        if not same:
            differ.append(f"{name}: {str(a)[:80]!r} -> {str(b)[:80]!r}")
    print("\n".join(differ) if differ else
          f"all {len(values)} entries bit-identical")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
