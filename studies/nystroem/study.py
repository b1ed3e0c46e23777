"""Acceptance study of `kernelmaps.NystroemMap` (issue 21, part 1).

Three parts, each printed as markdown tables (with the CPU and the SIMD
path kernelmaps runs) for ``studies/nystroem/results.md``:

- ``meanmap`` (a): the mean map kernel (`sum_match_kernel`, rbf, gamma by
  the median heuristic on the training sets) of 500 training sets of 100
  points in 10-D. The mean absolute error of the 200 x 200 kernel matrix
  of 200 *held-out* sets (all pairs; neither side a landmark), at equal
  width t = 100, 200, 500, 1000: `NystroemMap` (uniform, kmeans++,
  leverage) against `RandomDistributionFeatures` (each ``draw`` and
  ``form`` the installed version takes). The held-out block is the fair
  one: between a landmark and any object the Nystroem inner product is
  exact, so errors against the training sets would favour Nystroem. With
  500 training sets Nystroem has at most 500 features: at t = 500 every
  rule takes all of them (one fit, shared), and at t = 1000 that map is
  compared with RDF at twice its width.
- ``renyi`` (b): the Renyi divergence kernel (``kernel="renyi"``,
  alpha = 0.99, k = 5) on sets whose classes differ in shape only. Its
  error against the PSD-projected exact kernel
  ``project_psd(divergence_kernel(D, gamma))`` of the 500 training sets
  (the gamma the map uses, fixed once from the training divergences:
  ``1 / median(S) ** 2``, `divergence_kernel`'s default), for 25 to 500
  landmarks (500: the exactness check); and the held-out accuracy of a
  linear SVM (`sklearn.svm.LinearSVC`) on the Nystroem features beside
  ``SVC(kernel="precomputed")`` on the projected exact kernel (test rows
  projected by `PSDProjector`), C chosen by 3-fold cross-validation on
  the training sets for each; a last row gives LinearSVC on the features
  of all 500 training sets as landmarks (which reproduce the projected
  training kernel exactly), to tell the two learners' difference from the
  approximation's. ``--power 1`` runs this part with ``exp(-gamma S)``.
- ``chi2`` (c): the additive chi2 kernel of clustered histograms (30
  clusters of Zipf-distributed sizes, so that most clusters are rare):
  the error of the held-out kernel matrix, over all pairs and over the
  pairs of two histograms from rare clusters, for each landmark rule. The
  leverage-vs-uniform summary (paired differences over the seeds) of all
  three kernels follows.

Every seed draws new data and new maps (``numpy.random.default_rng([part,
seed])``); the tables give the mean +- the standard error over the seeds.
Run on one thread (about 10 minutes; ``--quick``: a smoke run of
seconds)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python studies/nystroem/study.py
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python studies/nystroem/study.py --quick

RDF is shown with each ``draw`` ({"iid", "orthogonal", "qmc"}) and
``form`` ({"sincos", "offset"}).
"""

import argparse
import itertools
import subprocess
import sys
import time
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

import kernelmaps as km
from kernelmaps._engine import _runtime

RULES = ("uniform", "kmeans++", "leverage")
DRAWS = ("iid", "orthogonal", "qmc")
FORMS = ("sincos", "offset")
FORM_LABELS = {"sincos": "sin/cos", "offset": "cos+offset"}


@dataclass
class Sizes:
    """The sizes of one run (the full study, or the ``--quick`` smoke run)."""

    seeds: int
    n_train: int
    n_test: int
    set_points: int
    widths: tuple
    renyi_landmarks: tuple
    accuracy_landmarks: tuple
    n_hist_train: int
    n_hist_test: int
    hist_widths: tuple


FULL = Sizes(seeds=8, n_train=500, n_test=200, set_points=100,
             widths=(100, 200, 500, 1000), renyi_landmarks=(25, 50, 100, 200,
                                                           400, 500),
             accuracy_landmarks=(50, 100, 200, 400), n_hist_train=2000,
             n_hist_test=500, hist_widths=(25, 50, 100, 200, 400))
QUICK = Sizes(seeds=2, n_train=60, n_test=30, set_points=20, widths=(10, 30, 60, 120),
              renyi_landmarks=(10, 30, 60), accuracy_landmarks=(30,),
              n_hist_train=200, n_hist_test=60, hist_widths=(10, 30))


# -- reporting --------------------------------------------------------------

def machine():
    """The CPU model (lscpu) and the SIMD path kernelmaps runs."""
    try:
        lines = subprocess.run(["lscpu"], capture_output=True, text=True,
                               check=True).stdout.splitlines()
        cpu = next(line.split(":", 1)[1].strip() for line in lines
                   if line.startswith("Model name"))
    except (OSError, subprocess.CalledProcessError, StopIteration):
        cpu = "unknown CPU"
    return f"CPU: {cpu}; kernelmaps SIMD path: {_runtime.simd_isa()}"


def mean_se(values):
    """Mean and standard error of `values` (one per seed)."""
    values = np.asarray(values, dtype=np.float64)
    se = values.std(ddof=1) / np.sqrt(len(values)) if len(values) > 1 else np.nan
    return values.mean(), se


def cell(values, fmt=".2e"):
    """"mean +- standard error" of `values`, both in `fmt` (the standard
    error without a sign)."""
    mean, se = mean_se(values)
    return f"{mean:{fmt}} +- {se:{fmt.lstrip('+')}}"


def table(header, rows):
    """A markdown table: `header` (list of str), `rows` (lists of str)."""
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def heading(title, sizes):
    print(f"\n### {title}\n")
    print(f"{machine()}; {sizes.seeds} seeds; workers=1\n")


def mean_abs_error(Z, K):
    """Mean absolute error of the inner products of the rows of `Z`
    against the kernel matrix `K` (all pairs)."""
    return float(np.abs(Z @ Z.T - K).mean())


# -- the maps ---------------------------------------------------------------

def rdf_variants():
    """(label, keyword arguments) of RDF with each draw and form."""
    return [(f"RDF {draw}, {FORM_LABELS[form]}", {"draw": draw, "form": form})
            for draw in DRAWS for form in FORMS]


def nystroem_features(kernel, params, train, test, widths, rng):
    """``{(rule, width): features of test}`` of a Nystroem map fitted on
    `train` for every rule and width: the width is capped at the number of
    training objects, where every rule takes them all (one map, shared)."""
    n = len(train) if not hasattr(train, "shape") else train.shape[0]
    out, shared = {}, {}
    for t in widths:
        m = min(t, n)
        for rule in RULES:
            if m == n and m in shared:
                out[rule, t] = shared[m]
                continue
            nys = km.NystroemMap(m, kernel=kernel, kernel_params=params,
                                 landmarks="uniform" if m == n else rule,
                                 rng=rng).fit(train, workers=1)
            out[rule, t] = nys.transform(test, workers=1)
            if m == n:
                shared[m] = out[rule, t]
    return out


# -- (a) the mean map kernel --------------------------------------------------

def class_sets(rng, n_sets, n_points, dim=10, n_classes=5):
    """Sets from Gaussians, clustered by class: each class has a centre
    (N(0, 4 I)); each set a mean near it (N(centre, 0.25 I)) and its own
    diagonal scales (log-uniform in [e^-0.5, e^0.5]), and `n_points`
    points in `dim` dimensions."""
    centres = 2.0 * rng.standard_normal((n_classes, dim))
    labels = rng.integers(n_classes, size=n_sets)
    means = centres[labels] + 0.5 * rng.standard_normal((n_sets, dim))
    scales = np.exp(rng.uniform(-0.5, 0.5, size=(n_sets, dim)))
    points = [m + s * rng.standard_normal((n_points, dim))
              for m, s in zip(means, scales, strict=True)]
    return km.Bags.from_list(points)


def part_meanmap(sizes):
    heading("(a) Mean map kernel: held-out kernel error at equal width", sizes)
    n = sizes.n_train
    print(f"{n} training and {sizes.n_test} held-out sets of {sizes.set_points} "
          f"points in 10-D (5 classes); error = mean |z(x) . z(y) - k(x, y)| "
          f"over all {sizes.n_test} x {sizes.n_test} pairs of held-out sets.\n")
    variants = rdf_variants()
    errors = {}  # (method, t): one error per seed
    reference = []
    for seed in range(sizes.seeds):
        rng = np.random.default_rng([1, seed])
        bags = class_sets(rng, n + sizes.n_test, sizes.set_points)
        train, test = bags[:n], bags[n:]
        gamma = km.median_heuristic(train)
        K = km.sum_match_kernel(test, gamma=gamma, workers=1)
        reference.append(np.abs(K).mean())
        features = nystroem_features("mean_map", {"gamma": gamma}, train, test,
                                     sizes.widths, rng)
        for (rule, t), Z in features.items():
            errors.setdefault((f"Nystroem {rule}", t), []).append(
                mean_abs_error(Z, K))
        for label, kwargs in variants:
            for t in sizes.widths:
                rdf = km.RandomDistributionFeatures(t, gamma=gamma, rng=rng,
                                                    **kwargs).fit(train)
                errors.setdefault((label, t), []).append(
                    mean_abs_error(rdf.transform(test, workers=1), K))
    methods = [f"Nystroem {r}" for r in RULES] + [label for label, _ in variants]
    print(table(["method"] + [f"t = {t}" for t in sizes.widths],
                [[m] + [cell(errors[m, t]) for t in sizes.widths]
                 for m in methods]))
    capped = [t for t in sizes.widths if t >= n]
    print(f"\nMean |k(x, y)| of the held-out pairs: {cell(reference, '.3f')}. "
          f"At t = {', '.join(map(str, capped))} Nystroem takes all {n} "
          f"training sets (every rule the same map, {n} features).\n")
    verdicts = []
    for t in sizes.widths:
        worst = max(np.mean(errors[f"Nystroem {r}", t]) for r in RULES)
        best = min(np.mean(errors[label, t]) for label, _ in variants)
        verdicts.append(worst < best)
        print(f"- t = {t}: worst Nystroem rule {worst:.2e} vs best RDF {best:.2e} "
              f"(ratio {worst / best:.1e}): {'below' if worst < best else 'NOT below'}")
    print(f"\nAcceptance (Nystroem below RDF at every width): "
          f"{'met' if all(verdicts) else 'NOT met'}")
    return {t: (errors["Nystroem uniform", t], errors["Nystroem leverage", t])
            for t in sizes.widths if t < n}


# -- (b) the Renyi divergence kernel ----------------------------------------

def mixture(rng, size):
    """Two Gaussians at -0.9 and 0.9 of variance 0.19 (mean 0, variance 1)."""
    return rng.choice([-0.9, 0.9], size=size) + np.sqrt(0.19) * rng.normal(size=size)


SHAPES = (
    lambda rng, size: rng.normal(size=size),
    lambda rng, size: rng.uniform(-np.sqrt(3), np.sqrt(3), size=size),
    lambda rng, size: rng.laplace(scale=np.sqrt(0.5), size=size),
    mixture,
)


def shape_sets(rng, n_sets, n_points, dim=2):
    """Sets of `n_points` +- 40 % points in `dim` dimensions whose classes
    differ in shape only: independent coordinates of mean 0 and variance 1
    (Gaussian, uniform, Laplace, a two-Gaussian mixture), each set shifted
    (N(0, 0.1 I)) and scaled (log-uniform in [e^-0.15, e^0.15]) at random
    so that no class has its own mean or scale. Returns the sets and their
    classes."""
    labels = rng.integers(len(SHAPES), size=n_sets)
    low, high = int(0.6 * n_points), int(1.4 * n_points) + 1
    sets = []
    for c in labels:
        size = (int(rng.integers(low, high)), dim)
        shift = 0.3 * rng.standard_normal(dim)
        sets.append(shift + np.exp(rng.uniform(-0.15, 0.15)) * SHAPES[c](rng, size))
    return km.Bags.from_list(sets), labels


def tuned(model, grid, X, y):
    """`model` with C (or its estimator's C) chosen by 3-fold
    cross-validation on (X, y)."""
    from sklearn.model_selection import GridSearchCV

    name = "estimator__C" if hasattr(model, "estimator") else "C"
    return GridSearchCV(model, {name: grid}, cv=3).fit(X, y).best_estimator_


def linear_svms():
    """The linear SVMs of the features: `LinearSVC` (liblinear, squared
    hinge loss, one-vs-rest for several classes) and the same in
    one-vs-one, the multi-class scheme of `SVC`."""
    from sklearn.multiclass import OneVsOneClassifier
    from sklearn.svm import LinearSVC

    svm = LinearSVC(dual=False, max_iter=10_000)
    return {"one-vs-rest": svm, "one-vs-one": OneVsOneClassifier(svm)}


def floored(K):
    """K with only its positive eigenvalues above a quarter of the largest
    negative one's magnitude (and above rounding): what `NystroemMap`
    reproduces with every object a landmark."""
    w, U = np.linalg.eigh((K + K.T) / 2)
    keep = w > max(w.max() * len(w) * np.finfo(float).eps, 0.25 * max(-w.min(), 0))
    return (U[:, keep] * w[keep]) @ U[:, keep].T


def part_renyi(sizes, power=2):
    from sklearn.svm import SVC

    heading("(b) Renyi divergence kernel: error and accuracy against landmarks",
            sizes)
    n = sizes.n_train
    print(f"{n} training and {sizes.n_test} held-out sets of "
          f"{int(0.6 * sizes.set_points)}-{int(1.4 * sizes.set_points)} points "
          f"in 2-D, 4 classes of equal mean and variance (Gaussian, uniform, "
          f"Laplace, mixture); alpha = 0.99, k = 5, power {power:g}. Error = mean "
          f"|z(x) . z(y) - P(x, y)| over the {n} x {n} training pairs, P = "
          f"project_psd of the exact kernel.\n")
    divergence = {"alpha": 0.99, "k": 5}
    grid = 2.0 ** np.arange(-2, 11, 2)
    errors, exact_max, accuracy, negative, overshoot = {}, [], {}, [], {}
    for seed in range(sizes.seeds):
        rng = np.random.default_rng([2, seed])
        bags, labels = shape_sets(rng, n + sizes.n_test, sizes.set_points)
        train, test = bags[:n], bags[n:]
        y_train, y_test = labels[:n], labels[n:]
        D = km.renyi_divergence(bags, **divergence, workers=1)
        S = np.maximum((D + D.T) / 2, 0.0)
        off = ~np.eye(n, dtype=bool)
        gamma = 1.0 / np.median(S[:n, :n][off]) ** power
        K = km.divergence_kernel(D, gamma=gamma, power=power)
        P = km.project_psd(K[:n, :n])
        negative.append(np.sum(np.linalg.eigvalsh(K[:n, :n]) < 0))
        params = {**divergence, "gamma": gamma, "power": power}
        for m in sizes.renyi_landmarks:
            for rule in RULES if m < n else ("uniform",):
                nys = km.NystroemMap(m, kernel="renyi", kernel_params=params,
                                     landmarks=rule, rng=rng).fit(train, workers=1)
                assert nys.params_["gamma"] == gamma
                Z = nys.transform(train, workers=1)
                errors.setdefault((rule, m), []).append(mean_abs_error(Z, P))
                # The largest squared feature norm against the largest
                # diagonal of P (for a PSD kernel at most 1).
                overshoot.setdefault((rule, m), []).append(
                    np.einsum("ij,ij->i", Z, Z).max() / np.diag(P).max())
                if m == n:
                    exact_max.append(np.abs(Z @ Z.T - floored(K[:n, :n])).max())
                # Accuracy at m = n too: features that reproduce P exactly,
                # which separates the learners' difference from the
                # approximation's.
                if (m in sizes.accuracy_landmarks or m == n) and rule != "kmeans++":
                    Z_test = nys.transform(test, workers=1)
                    for scheme, svm in linear_svms().items():
                        svm = tuned(svm, grid, Z, y_train)
                        accuracy.setdefault((scheme, rule, m), []).append(
                            np.mean(svm.predict(Z_test) == y_test))
        projector = km.PSDProjector("clip").fit(K[:n, :n])
        svm = tuned(SVC(kernel="precomputed"), grid, P, y_train)
        accuracy.setdefault("exact", []).append(
            np.mean(svm.predict(projector.transform(K[n:, :n])) == y_test))
    print(f"Negative eigenvalues of the exact training kernel (clipped): "
          f"{cell(negative, '.1f')}\n")
    landmarks = [m for m in sizes.renyi_landmarks if m < n]
    rows = [[f"Nystroem {rule}"] + [cell(errors[rule, m]) for m in landmarks]
            for rule in RULES]
    print(table(["landmarks m"] + [str(m) for m in landmarks], rows))
    print("\nLargest |z(x)|^2 over the training sets divided by the largest "
          "diagonal entry of P (mean +- SE over the seeds; the Nystroem "
          "features of a PSD kernel have |z(x)|^2 <= k(x, x)):\n")
    print(table(["landmarks m"] + [str(m) for m in landmarks],
                [[f"Nystroem {rule}"] + [cell(overshoot[rule, m], ".2f")
                                         for m in landmarks] for rule in RULES]))
    uniform = [np.mean(errors["uniform", m]) for m in landmarks]
    falling = all(b < a for a, b in itertools.pairwise(uniform))
    slope = np.polyfit(np.log(landmarks), np.log(uniform), 1)[0]
    print(f"\nError falling with m (uniform): {'yes' if falling else 'NO'}; "
          f"fitted slope of log error against log m: {slope:.2f}.")
    if exact_max:
        print(f"All {n} training sets as landmarks: max |Z Z^T - P_floor| = "
              f"{max(exact_max):.1e} over the seeds, P_floor the exact kernel "
              f"with its positive spectrum above a quarter of the largest "
              f"negative eigenvalue's magnitude, the projection the map makes "
              f"(acceptance: 1e-10: "
              f"{'met' if max(exact_max) < 1e-10 else 'NOT met'}).")
    exact = accuracy["exact"]
    print(f"\nHeld-out accuracy ({sizes.n_test} sets): SVC on the projected "
          f"exact kernel {cell(exact, '.3f')}\n")
    schemes = tuple(linear_svms())
    cases = [(rule, m, f"Nystroem {rule}, m = {m}") for rule in ("uniform", "leverage")
             for m in sizes.accuracy_landmarks]
    cases.append(("uniform", n, f"all {n} training sets (Z Z^T = P)"))
    rows = []
    for rule, m, label in cases:
        row = [label]
        for scheme in schemes:
            row += [cell(accuracy[scheme, rule, m], ".3f"),
                    cell(np.subtract(accuracy[scheme, rule, m], exact), "+.3f")]
        rows.append(row)
    print(table(["LinearSVC on"] + [f"{name} {scheme}" for scheme in schemes
                                    for name in ("accuracy", "minus exact")],
                rows))
    largest = sizes.accuracy_landmarks[-1]
    print("\nThe exact SVC is one-vs-one; LinearSVC's default one-vs-rest. The "
          "paired differences are per seed.\n")
    for scheme in schemes:
        gaps = {rule: np.mean(np.subtract(accuracy[scheme, rule, largest], exact))
                for rule in ("uniform", "leverage")}
        ok = all(abs(g) <= 0.02 for g in gaps.values())
        print(f"- Acceptance (LinearSVC {scheme} within 2 points of the exact "
              f"kernel SVM at m = {largest}): {'met' if ok else 'NOT met'} ("
              + ", ".join(f"{r} {g:+.3f}" for r, g in gaps.items()) + ")")
    return {m: (errors["uniform", m], errors["leverage", m]) for m in landmarks}


# -- (c) chi2 on clustered histograms ----------------------------------------

def clustered_histograms(rng, n, bins=64, clusters=30, words=200):
    """`n` word-count histograms of `bins` bins (`words` words each, L1
    normalised; about half the entries are zero) around `clusters`
    prototypes (Dirichlet(0.5)) whose sizes follow Zipf's law (weights 1 /
    k^2: the first cluster holds 60 % of the histograms, the last 27 under
    0.5 % each); each histogram counts words drawn from Dirichlet(50 p)
    around its prototype p. Returns the histograms and their clusters."""
    prototypes = rng.dirichlet(np.full(bins, 0.5), size=clusters)
    weights = 1.0 / np.arange(1, clusters + 1) ** 2
    labels = rng.choice(clusters, n, p=weights / weights.sum())
    counts = [rng.multinomial(words, rng.dirichlet(50 * prototypes[c]))
              for c in labels]
    return np.array(counts) / words, labels


def part_chi2(sizes):
    heading("(c) Additive chi2 kernel on clustered histograms", sizes)
    n = sizes.n_hist_train
    print(f"{n} training and {sizes.n_hist_test} held-out histograms of 64 bins "
          f"in 30 clusters of Zipf sizes; error over all held-out pairs, and "
          f"over the pairs of two held-out histograms of the rare clusters "
          f"(all but the 3 largest, about 15 % of the histograms).\n")
    errors = {}
    for seed in range(sizes.seeds):
        rng = np.random.default_rng([3, seed])
        X, labels = clustered_histograms(rng, n + sizes.n_hist_test)
        train, test = X[:n], X[n:]
        rare = labels[n:] >= 3
        K = km.additive_chi2_kernel(test, workers=1)
        norm = np.linalg.norm(K, 2)
        features = nystroem_features("chi2", None, train, test, sizes.hist_widths,
                                     rng)
        for (rule, t), Z in features.items():
            E = Z @ Z.T - K
            errors.setdefault((rule, t, "all"), []).append(np.abs(E).mean())
            errors.setdefault((rule, t, "rare"), []).append(
                np.abs(E[np.ix_(rare, rare)]).mean())
            # What ridge leverage scores bound: the spectral norm.
            errors.setdefault((rule, t, "spectral"), []).append(
                np.linalg.norm(E, 2) / norm)
    header = ["rule"] + [f"m = {t}" for t in sizes.hist_widths]
    for subset, what in (("all", "mean |error|, all pairs"),
                         ("rare", "mean |error|, pairs of rare clusters"),
                         ("spectral", "spectral norm of the error / of K")):
        print(f"\n{what}\n")
        print(table(header, [[rule] + [cell(errors[rule, t, subset])
                                       for t in sizes.hist_widths]
                             for rule in RULES]))
    return {subset: {t: (errors["uniform", t, subset],
                         errors["leverage", t, subset])
                     for t in sizes.hist_widths}
            for subset in ("all", "rare", "spectral")}


def leverage_summary(results):
    """Leverage minus uniform (paired over the seeds), per kernel and width."""
    print("\n### (c) Leverage against uniform landmarks at equal width\n")
    print("Paired difference of the mean errors over the seeds (leverage minus "
          "uniform; negative: leverage better), and the ratio of the means; "
          "'as good' means the difference is below 2 standard errors.\n")
    rows = []
    for name, by_width in results.items():
        for width, (uniform, leverage) in by_width.items():
            diff = np.subtract(leverage, uniform)
            mean, se = mean_se(diff)
            good = mean <= 2 * se if np.isfinite(se) else mean <= 0
            rows.append([name, str(width), f"{mean:+.2e} +- {se:.1e}",
                         f"{np.mean(leverage) / np.mean(uniform):.3f}",
                         "yes" if good else "NO"])
    print(table(["kernel", "width", "leverage - uniform", "ratio", "as good"],
                rows))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run of seconds (tiny sizes, 2 seeds)")
    parser.add_argument("--seeds", type=int, help="number of seeds")
    parser.add_argument("--parts", nargs="+", default=["meanmap", "renyi", "chi2"],
                        choices=["meanmap", "renyi", "chi2"])
    parser.add_argument("--power", type=float, default=2.0,
                        help="power of the divergences in the Renyi kernel (b)")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    if args.seeds:
        sizes.seeds = args.seeds
    print(f"## `python {' '.join(sys.argv)}`\n\nkernelmaps {km.__version__}; "
          f"RDF variants: {', '.join(label for label, _ in rdf_variants())}")
    summary = {}
    with threadpool_limits(1):
        for part, run in (("meanmap", part_meanmap),
                          ("renyi", lambda s: part_renyi(s, args.power)),
                          ("chi2", part_chi2)):
            if part not in args.parts:
                continue
            start = time.perf_counter()
            result = run(sizes)
            if part == "chi2":
                for subset, label in (("all", "all pairs"), ("rare", "rare pairs"),
                                      ("spectral", "spectral norm")):
                    summary[f"chi2 ({label})"] = result[subset]
            else:
                summary[{"meanmap": "mean map", "renyi": "Renyi"}[part]] = result
            print(f"\n({part}: {time.perf_counter() - start:.0f} s)")
    leverage_summary(summary)


if __name__ == "__main__":
    main()
