"""The kernel error of kernelmaps' random Fourier features at equal width t
for each frequency draw ("iid", "orthogonal", "qmc") and feature form
("sincos", "offset"): the measurements behind the defaults of
`RandomFourierFeatures` and the maps built like it (issue 21).

    python studies/fourier_draws/study.py [--dims 2 4 8 12 16 32] [--seeds 20]
        [--kernels rbf laplacian] [--no-fit-time] [--qmc-engines]

For each kernel and point dimension d, the features of 300 points of
N(0, I_d) by ``RandomFourierFeatures(t, kernel=..., gamma=..., draw=...,
form=...)`` (gamma = 1 / (2 d) for "rbf", 1 / d for "laplacian": about the
median heuristic's scale) give a Gram matrix; the table shows, per draw and
form and t, the mean absolute error against the exact kernel matrix over
the seeds and, in brackets, the mean signed error (the bias, which should
be indistinguishable from 0: its standard error is printed beside), then
the slope of log error against log t (-0.5 for Monte Carlo). After the
tables: the orthogonal / iid error ratio at d >= 16, the sincos / offset
ratio, the QMC slopes at d <= 8, and the best draw per d and t (what
``draw=None`` picks: `kernelmaps._draws.QMC_MAX_DIM`).

``--fit-time`` (on by default) times ``fit`` of each draw at d = 5000, t =
1000 (the width of `ExpChi2Features` on histograms of 1000 bins), as
ratios to "iid" measured in the same run. ``--qmc-engines`` compares the
package's scrambled Sobol points (the first t of ``random_base2``) with
scrambled Halton points at widths that are not powers of 2.

Run it on one thread (``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1``) on a
shared machine; it takes about 30 s with the defaults (2-core Xeon, AVX-512).
"""

import argparse
import platform
import time

import numpy as np

import kernelmaps
from kernelmaps import _draws
from kernelmaps._engine import _runtime

DRAWS = ("iid", "orthogonal", "qmc")
FORMS = ("offset", "sincos")


def machine():
    """The CPU model and the SIMD path the engine runs."""
    model = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (f"{model}; kernelmaps SIMD path {_runtime.simd_isa()}; NumPy "
            f"{np.__version__}")


def exact_kernel(X, kernel, gamma):
    """The exact Gaussian or Laplacian kernel matrix, from differences."""
    diff = X[:, None] - X[None]
    if kernel == "rbf":
        return np.exp(-gamma * (diff**2).sum(-1))
    return np.exp(-gamma * np.abs(diff).sum(-1))


def errors(X, K, kernel, gamma, draw, form, t, seeds):
    """Mean |error| and mean signed error of the Gram matrix, per seed."""
    absolute, signed = [], []
    for seed in seeds:
        fmap = kernelmaps.RandomFourierFeatures(t, kernel=kernel, gamma=gamma,
                                                draw=draw, form=form, rng=seed)
        Z = fmap.fit(X).transform(X, workers=1)
        D = Z @ Z.T - K
        absolute.append(np.abs(D).mean())
        signed.append(D.mean())
    return np.array(absolute), np.array(signed)


def slope(widths, values):
    """The slope of log(values) against log(widths)."""
    return float(np.polyfit(np.log(widths), np.log(values), 1)[0])


def measure(kernel, dims, widths, n_seeds):
    """{(d, draw, form): (mean |error| per t, bias per t, its standard
    error per t)} for every allowed draw."""
    table = {}
    for d in dims:
        X = np.random.default_rng(1000 + d).standard_normal((300, d))
        gamma = 1.0 / (2 * d) if kernel == "rbf" else 1.0 / d
        K = exact_kernel(X, kernel, gamma)
        for draw in DRAWS:
            if draw == "orthogonal" and kernel != "rbf":
                continue
            for form in FORMS:
                rows = [errors(X, K, kernel, gamma, draw, form, t,
                               [(d, t, s) for s in range(n_seeds)])
                        for t in widths]
                table[d, draw, form] = (
                    np.array([a.mean() for a, _ in rows]),
                    np.array([s.mean() for _, s in rows]),
                    np.array([s.std(ddof=1) / np.sqrt(len(s)) for _, s in rows]))
    return table


def print_tables(kernel, table, dims, widths, n_seeds):
    print(f"\n== kernel {kernel!r}: mean |K_features - K| of 300 points "
          f"(mean signed error; its standard error), {n_seeds} seeds")
    for d in dims:
        print(f"\nd = {d}")
        print(f"{'draw':>10} {'form':>6} " + " ".join(
            f"{'t=' + str(t):>26}" for t in widths) + "  slope")
        for (dd, draw, form), (err, bias, se) in table.items():
            if dd != d:
                continue
            cells = " ".join(f"{e:.4f} ({b:+.5f}; {s:.5f})"
                             for e, b, s in zip(err, bias, se, strict=True))
            print(f"{draw:>10} {form:>6} {cells}  {slope(widths, err):+.2f}")


def print_summary(kernel, table, dims, widths):
    print(f"\n== kernel {kernel!r}: summary")
    present = {draw for _, draw, _ in table}
    if "orthogonal" in present:
        for d in (d for d in dims if d >= 16):
            for form in FORMS:
                ratio = table[d, "orthogonal", form][0] / table[d, "iid", form][0]
                print(f"orthogonal / iid, d={d}, {form}: " + " ".join(
                    f"{r:.3f}" for r in ratio) + f" (mean {ratio.mean():.3f})")
    for d in dims:
        for draw in sorted(present):
            ratio = table[d, draw, "sincos"][0] / table[d, draw, "offset"][0]
            print(f"sincos / offset, d={d}, {draw}: " + " ".join(
                f"{r:.3f}" for r in ratio))
    for d in (d for d in dims if d <= 8):
        slopes = {form: slope(widths, table[d, "qmc", form][0]) for form in FORMS}
        print(f"QMC slope, d={d}: sincos {slopes['sincos']:+.2f}, offset "
              f"{slopes['offset']:+.2f}")
    print("best draw (sincos) per d and t, and its error relative to the "
          "next best:")
    for d in dims:
        cells = []
        for i, t in enumerate(widths):
            ranked = sorted((table[d, draw, "sincos"][0][i], draw)
                            for draw in present)
            cells.append(f"t={t}: {ranked[0][1]} ({ranked[0][0] / ranked[1][0]:.2f} "
                         f"of {ranked[1][1]})")
        print(f"d={d}: " + "; ".join(cells))
    print(f"draw=None picks 'qmc' for d <= {_draws.QMC_MAX_DIM[kernel]}")


def fit_times(dim=5000, t=1000, repeat=3):
    """The best of `repeat` fit times of RandomFourierFeatures at (dim, t)
    per draw and form, and the ratio to iid."""
    X = np.zeros((2, dim))
    print(f"\n== fit time at d={dim}, t={t} (best of {repeat}; ratio to iid of "
          f"the same form)")
    for form in FORMS:
        best = {}
        for draw in DRAWS:
            times = []
            for _ in range(repeat):
                start = time.perf_counter()
                kernelmaps.RandomFourierFeatures(t, gamma=1.0 / dim, draw=draw,
                                                 form=form, rng=0).fit(X)
                times.append(time.perf_counter() - start)
            best[draw] = min(times)
        print(f"{form:>6}: " + "; ".join(
            f"{draw} {best[draw]:.3f} s ({best[draw] / best['iid']:.1f}x)"
            for draw in DRAWS))


def _halton(n, dim, rng):
    """`_draws._sobol`'s contract with scrambled Halton points instead."""
    from scipy.stats import qmc

    seed = np.random.default_rng(int(rng.integers(2**63)))
    return qmc.Halton(dim, scramble=True, **{_draws._QMC_SEED: seed}).random(n)


def compare_qmc_engines(dims=(2, 4, 8), widths=(96, 200, 384, 768, 1000, 1024),
                        n_seeds=20):
    """Mean |error| (rbf, sincos) of the package's Sobol points against
    scrambled Halton points, at widths that are not powers of 2."""
    print("\n== QMC points: Sobol (first t of random_base2) vs scrambled "
          f"Halton, rbf, sincos, {n_seeds} seeds")
    sobol = _draws._sobol
    try:
        for d in dims:
            X = np.random.default_rng(1000 + d).standard_normal((300, d))
            gamma = 1.0 / (2 * d)
            K = exact_kernel(X, "rbf", gamma)
            result = {}
            for name, engine in (("sobol", sobol), ("halton", _halton)):
                _draws._sobol = engine
                result[name] = [errors(X, K, "rbf", gamma, "qmc", "sincos", t,
                                       [(d, t, s) for s in range(n_seeds)])[0].mean()
                                for t in widths]
            print(f"d={d}: " + "; ".join(
                f"t={t}: {s:.4f} / {h:.4f}" for t, s, h in
                zip(widths, result["sobol"], result["halton"], strict=True))
                + " (sobol / halton)")
    finally:
        _draws._sobol = sobol


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dims", type=int, nargs="+",
                        default=[2, 4, 8, 12, 16, 32])
    parser.add_argument("--widths", type=int, nargs="+",
                        default=[64, 128, 256, 512, 1024])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--kernels", nargs="+", default=["rbf", "laplacian"])
    parser.add_argument("--no-fit-time", action="store_true")
    parser.add_argument("--qmc-engines", action="store_true")
    args = parser.parse_args(argv)
    print(machine())
    for kernel in args.kernels:
        table = measure(kernel, args.dims, args.widths, args.seeds)
        print_tables(kernel, table, args.dims, args.widths, args.seeds)
        print_summary(kernel, table, args.dims, args.widths)
    if not args.no_fit_time:
        fit_times()
    if args.qmc_engines:
        compare_qmc_engines(n_seeds=args.seeds)


if __name__ == "__main__":
    main()
