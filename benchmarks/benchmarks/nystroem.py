"""Benchmarks for `NystroemMap`: fit and transform beside the exact Gram
matrix they approximate.

What is measured
----------------
Three kernels, each at a small and a realistic size, with ``m`` landmarks:

==========  ==========================================  ====================
kernel      data ("small" / "realistic")                ``m`` (small / real)
==========  ==========================================  ====================
mean_map    standard-normal sets, 100 x 50 points in     50 / 200
            5-D / 1000 x 100 points in 10-D,
            ``gamma = 1 / d``
renyi       standard-normal sets, 100 x 50 / 1000 x 100  50 / 200
            points in 2-D (alpha = 0.99, k = 5, the
            median scale on the landmarks)
chi2        `bag_of_words` histograms (300 words),       50 / 200
            1000 / 5000 of them
==========  ==========================================  ====================

`NystroemFit` times ``NystroemMap(m, kernel=..., landmarks=rule).fit(X)``
for each landmark rule ("uniform": the m x m kernel and its
eigendecomposition; "kmeans++": plus the embedding and the seeding;
"leverage": plus about one transform of the training data).
`NystroemTransform` times ``transform(X)`` of the same n objects with a
map fitted on them (uniform landmarks), ``time_transform_gram`` adds the
Gram matrix of the features ``Z @ Z.T`` (what replaces the exact Gram),
and ``time_exact`` the exact Gram matrix the features approximate:
``sum_match_kernel(X)``, ``project_psd(divergence_kernel(
renyi_divergence(X)))`` and ``additive_chi2_kernel(X)``. The
``peakmem_*`` methods give the peak resident memory of the process.

Everything runs on one thread (``workers=1``): the transform is the exact
engine's kernel block against the landmarks plus one matrix product, and
the engine's thread scaling is measured by `set_kernels`, `divergence` and
`histograms`.

Running
-------
From the ``benchmarks`` directory::

    asv run --python=same --bench "^nystroem\\." \\
        --set-commit-hash $(git rev-parse HEAD) --show-stderr
    python -m benchmarks.nystroem  # the ratios
"""

from kernelmaps import (
    Bags,
    NystroemMap,
    additive_chi2_kernel,
    divergence_kernel,
    project_psd,
    renyi_divergence,
    sum_match_kernel,
)

from .common import bag_of_words, make_sets, stored_times

KERNELS = ("mean_map", "renyi", "chi2")
SIZES = ("small", "realistic")
LANDMARKS = ("uniform", "kmeans++", "leverage")
# (data, landmarks) of each kernel and size: the sets as "n_sets x
# n_points x d" for `make_sets`, the histograms as their number.
DATA = {
    ("mean_map", "small"): ("100x50x5", 50),
    ("mean_map", "realistic"): ("1000x100x10", 200),
    ("renyi", "small"): ("100x50x2", 50),
    ("renyi", "realistic"): ("1000x100x2", 200),
    ("chi2", "small"): (1000, 50),
    ("chi2", "realistic"): (5000, 200),
}
RENYI = {"alpha": 0.99, "k": 5}


def nystroem_data(kernel, size):
    """The objects, the number of landmarks and the kernel's parameters of
    (kernel, size)."""
    spec, m = DATA[kernel, size]
    if kernel == "chi2":
        return bag_of_words(spec), m, {}
    sets, d = make_sets(spec, "float64")
    params = {"gamma": 1.0 / d} if kernel == "mean_map" else dict(RENYI)
    return Bags.from_list(sets), m, params


def exact_gram(kernel, X, params):
    """The exact (projected, for "renyi") Gram matrix of `X` that the
    Nystroem features approximate."""
    if kernel == "mean_map":
        return sum_match_kernel(X, **params, workers=1)
    if kernel == "renyi":
        D = renyi_divergence(X, **params, workers=1)
        return project_psd(divergence_kernel(D))
    return additive_chi2_kernel(X, workers=1)


class Timing:
    """One call per sample, up to 5 samples within 5 s (asv reports their
    median): several samples of the small sizes, of milliseconds, and one
    or two of the realistic ones, of seconds."""

    number = 1
    repeat = (1, 5, 5.0)
    rounds = 1
    warmup_time = 0
    timeout = 600


class NystroemFit(Timing):
    params = (KERNELS, SIZES, LANDMARKS)
    param_names = ("kernel", "size", "landmarks")

    def setup(self, kernel, size, landmarks):
        self.X, self.m, self.kernel_params = nystroem_data(kernel, size)

    def _fit(self, kernel, landmarks):
        NystroemMap(self.m, kernel=kernel, kernel_params=self.kernel_params,
                    landmarks=landmarks, rng=0).fit(self.X, workers=1)

    def time_fit(self, kernel, size, landmarks):
        self._fit(kernel, landmarks)

    def peakmem_fit(self, kernel, size, landmarks):
        self._fit(kernel, landmarks)


class NystroemTransform(Timing):
    params = (KERNELS, SIZES)
    param_names = ("kernel", "size")

    def setup(self, kernel, size):
        self.X, m, self.kernel_params = nystroem_data(kernel, size)
        self.map = NystroemMap(m, kernel=kernel, kernel_params=self.kernel_params,
                               rng=0).fit(self.X, workers=1)

    def time_transform(self, kernel, size):
        self.map.transform(self.X, workers=1)

    def peakmem_transform(self, kernel, size):
        self.map.transform(self.X, workers=1)

    def time_transform_gram(self, kernel, size):
        Z = self.map.transform(self.X, workers=1)
        Z @ Z.T

    def time_exact(self, kernel, size):
        exact_gram(kernel, self.X, self.kernel_params)

    def peakmem_exact(self, kernel, size):
        exact_gram(kernel, self.X, self.kernel_params)


def print_ratios(results_dir=".asv/results"):
    """Fit and transform times of every stored result, and their ratios to
    the exact Gram matrix."""
    for label, times in stored_times(results_dir):
        fit = times.get("nystroem.NystroemFit.time_fit", {})
        transform = times.get("nystroem.NystroemTransform.time_transform", {})
        gram = times.get("nystroem.NystroemTransform.time_transform_gram", {})
        exact = times.get("nystroem.NystroemTransform.time_exact", {})
        if not transform:
            continue
        print(label)
        for kernel in KERNELS:
            for size in SIZES:
                spec, m = DATA[kernel, size]
                e = exact.get((kernel, size))
                t = transform.get((kernel, size))
                g = gram.get((kernel, size))
                if not (e and t and g):
                    continue
                fits = ", ".join(
                    f"{rule} {fit[kernel, size, rule]:.3f} s"
                    for rule in LANDMARKS if (kernel, size, rule) in fit)
                print(f"  {kernel} {size} ({spec}, m = {m}): exact Gram "
                      f"{e:.3f} s; transform {t:.3f} s, + Z Z^T {g:.3f} s "
                      f"(exact / (transform + Gram) = {e / g:.1f}x); fit: {fits}")
                uniform = fit.get((kernel, size, "uniform"))
                if uniform:
                    print("    fit / exact Gram: " + ", ".join(
                        f"{rule} {fit[kernel, size, rule] / e:.3f}"
                        for rule in LANDMARKS if (kernel, size, rule) in fit))


if __name__ == "__main__":
    print_ratios()
