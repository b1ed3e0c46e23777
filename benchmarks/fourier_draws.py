"""Issue 21, groundwork: the error of random Fourier features of the
Gaussian kernel exp(-gamma |x - y|^2) at equal feature width t, for
the frequency draws "iid", "orthogonal" (Yu et al., NIPS 2016: blocks of
orthogonal directions with chi-distributed norms, unbiased) and "qmc"
(scrambled Sobol points through the normal quantile; Avron et al., JMLR
2016), and the feature forms "cos+offset" (sqrt(2/t) cos(w x + b), as
kernelmaps' RandomFourierFeatures) and "sincos" (t/2 frequencies, cos and
sin of each; Sutherland and Schneider, UAI 2015).

    python benchmarks/fourier_draws.py [--dims 4 8 16 32] [--seeds 20]

Prints, per d and t, the mean absolute error of the kernel matrix of 300
points (N(0, I_d), gamma = 1 / (2 d): the median heuristic's scale) over
the seeds, its mean signed error (bias), and for each draw the slope of
log error against log t. A prototype to choose the defaults of issue 21;
not a benchmark of the package.
"""

import argparse

import numpy as np
import scipy.stats
from scipy.stats import qmc


def frequencies(draw, n_freq, d, gamma, rng):
    """(n_freq, d) frequencies of N(0, 2 gamma I)."""
    scale = np.sqrt(2 * gamma)
    if draw == "iid":
        return rng.standard_normal((n_freq, d)) * scale
    if draw == "orthogonal":
        blocks = []
        for _ in range(-(-n_freq // d)):
            Q, R = np.linalg.qr(rng.standard_normal((d, d)))
            Q *= np.sign(np.diag(R))  # Haar-distributed
            norms = np.sqrt(rng.chisquare(d, size=d))
            blocks.append(Q.T * norms[:, None])
        return np.vstack(blocks)[:n_freq] * scale
    if draw == "qmc":
        u = qmc.Sobol(d, scramble=True, seed=rng).random(n_freq)
        return scipy.stats.norm.ppf(np.clip(u, 1e-12, 1 - 1e-12)) * scale
    raise ValueError(draw)


def features(X, draw, form, t, gamma, rng):
    d = X.shape[1]
    if form == "sincos":
        W = frequencies(draw, t // 2, d, gamma, rng)
        P = X @ W.T
        return np.hstack([np.cos(P), np.sin(P)]) / np.sqrt(t // 2)
    W = frequencies(draw, t, d, gamma, rng)
    b = rng.uniform(0, 2 * np.pi, t)
    return np.sqrt(2.0 / t) * np.cos(X @ W.T + b)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dims", type=int, nargs="+", default=[4, 8, 16, 32])
    parser.add_argument("--widths", type=int, nargs="+",
                        default=[64, 128, 256, 512, 1024])
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args(argv)
    for d in args.dims:
        X = np.random.default_rng(1000 + d).standard_normal((300, d))
        gamma = 1.0 / (2 * d)
        sq = ((X[:, None] - X[None]) ** 2).sum(-1)
        K = np.exp(-gamma * sq)
        print(f"\nd = {d}: mean |error| of the 300 x 300 kernel matrix "
              f"(mean signed error), {args.seeds} seeds")
        print(f"{'draw':>11} {'form':>10} " + " ".join(f"{t:>16}" for t in
                                                    args.widths) + "  slope")
        for draw in ("iid", "orthogonal", "qmc"):
            for form in ("cos+offset", "sincos"):
                errs = []
                cells = []
                for t in args.widths:
                    e, s = [], []
                    for seed in range(args.seeds):
                        rng = np.random.default_rng([d, t, seed])
                        F = features(X, draw, form, t, gamma, rng)
                        D = F @ F.T - K
                        e.append(np.abs(D).mean())
                        s.append(D.mean())
                    errs.append(np.mean(e))
                    cells.append(f"{np.mean(e):.4f} ({np.mean(s):+.4f})")
                slope = np.polyfit(np.log(args.widths), np.log(errs), 1)[0]
                print(f"{draw:>11} {form:>10} " + " ".join(
                    f"{c:>16}" for c in cells) + f"  {slope:+.2f}")


if __name__ == "__main__":
    main()
