"""Out-of-core PCA and ridge regression on random features (rf_pca, rf_ridge)
against in-memory NumPy references, for any blocking of the rows."""

import functools
import itertools
import pickle
import tracemalloc
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse
from numpy.testing import assert_allclose, assert_array_equal

import kernelmaps as km
from kernelmaps import (
    Bags,
    Chi2DirectMap,
    ExpChi2Features,
    RandomDistributionFeatures,
    RandomFourierFeatures,
    rf_pca,
    rf_ridge,
)
from kernelmaps._outofcore import RandomFeaturePCA, RandomFeatureRidge
from kernelmaps._outofcore._models import _pieces

from ._helpers import dirichlet_histograms, sets_with_random_means
from ._references import ridge

TOL = 1e-8
# Relative gap (to the top eigenvalue) required after the last kept component,
# so that the kept subspace, and each axis, is well defined.
GAP = 0.02


# Dirichlet(0.5) histograms with zeros (values below 0.02 dropped).
histograms = functools.partial(dirichlet_histograms, alpha=0.5, cutoff=0.02)


def targets(X, n_targets, seed):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(X.shape[1], n_targets))
    return np.sin(3.0 * X @ W) + 0.1 * rng.normal(size=(X.shape[0], n_targets))


N = 2000
X = histograms(N, 10, 0)
X_TEST = histograms(50, 10, 1)
Y5 = targets(X, 5, 2)
Y = Y5[:, 0].copy()
EXP = ExpChi2Features(60, rng=0).fit(X)
DIRECT = Chi2DirectMap().fit(X)
# Each map with a number of components after which the spectrum has a gap.
MAPS = {"exp": (EXP, 6), "direct": (DIRECT, 9), "none": (None, 5)}


def dense(Z):
    return Z.toarray() if scipy.sparse.issparse(Z) else np.asarray(Z, np.float64)


def features(fmap, X):
    return dense(X if fmap is None else fmap.transform(X))


def reference_pca(Z, k, y=None):
    """PCA of the rows of Z by the SVD of the centred matrix, in memory."""
    Z = dense(Z)
    n = Z.shape[0]
    mean = Z.mean(axis=0)
    Zc = Z - mean
    _, s, Vt = np.linalg.svd(Zc, full_matrices=False)
    lam = s**2
    if k < lam.shape[0]:
        assert lam[k - 1] - lam[k] > GAP * lam[0], "no eigengap: pick another k"
    V = Vt[:k]
    V *= np.sign(V[np.arange(k), np.abs(V).argmax(axis=1)])[:, None]
    ref = SimpleNamespace(
        n=n, mean=mean, components=V, variance=lam[:k] / (n - 1),
        ratio=lam[:k] / np.sum(Zc**2), projected=None, y_mean=None,
    )
    if y is not None:
        y = np.asarray(y, np.float64).reshape(n, -1)
        ref.y_mean = y.mean(axis=0)
        ref.projected = V @ (Zc.T @ (y - ref.y_mean))
    return ref


def reference_ridge(Zs, y, ks, alpha):
    """Per-map PCA, then ridge with intercept on the centred projections side
    by side; weights mapped back to the unprojected features."""
    pcas = [reference_pca(Z, k) for Z, k in zip(Zs, ks)]
    P = np.hstack([(dense(Z) - p.mean) @ p.components.T for Z, p in zip(Zs, pcas)])
    y = np.asarray(y, np.float64)
    y_mean = y.mean(axis=0)
    w = np.linalg.solve(P.T @ P + alpha * np.eye(P.shape[1]), P.T @ (y - y_mean))
    bounds = np.cumsum([0, *ks])
    coefs = [p.components.T @ w[a:b] for p, a, b in zip(pcas, bounds, bounds[1:])]
    intercept = y_mean - sum(p.mean @ c for p, c in zip(pcas, coefs))
    return SimpleNamespace(pcas=pcas, w=w, coef=np.concatenate(coefs),
                           coefs=coefs, intercept=intercept)


def reference_predict(ref, Zs_test):
    return sum(dense(Z) @ c for Z, c in zip(Zs_test, ref.coefs)) + ref.intercept


def close(got, want, tol=TOL):
    """Equal to `tol`, relative to the largest entry of `want`."""
    want = np.asarray(want)
    assert np.shape(got) == want.shape
    assert_allclose(got, want, rtol=tol, atol=tol * max(np.abs(want).max(), 1e-300))


def assert_pca(pca, ref):
    assert isinstance(pca, RandomFeaturePCA)
    assert pca.n_samples_ == ref.n
    assert pca.n_components_ == ref.components.shape[0]
    close(pca.mean_, ref.mean)
    assert_allclose(pca.explained_variance_, ref.variance, rtol=TOL)
    assert_allclose(pca.explained_variance_ratio_, ref.ratio, rtol=TOL)
    assert_allclose(pca.components_, ref.components, rtol=0, atol=TOL)
    if ref.projected is None:
        assert pca.projected_target_ is None and pca.y_mean_ is None
    else:
        close(pca.projected_target_, ref.projected)
        close(pca.y_mean_, ref.y_mean)


def assert_ridge(model, ref, X_test=None, Zs_test=None):
    assert isinstance(model, RandomFeatureRidge)
    close(model.coef_, ref.coef.reshape(model.coef_.shape))
    close(model.intercept_, np.reshape(ref.intercept, np.shape(model.intercept_)))
    close(model.coef_projected_, ref.w.reshape(model.coef_projected_.shape))
    for pca, ref_pca in zip(model.pca_, ref.pcas):
        close(pca.mean_, ref_pca.mean)
        assert_allclose(pca.components_, ref_pca.components, rtol=0, atol=TOL)
    if X_test is not None:
        want = reference_predict(ref, Zs_test)
        close(model.predict(X_test), want.reshape(np.shape(model.predict(X_test))))


# --- blockings ---------------------------------------------------------------


def block_sizes(n, kind):
    if kind == "one":
        return [n]
    if kind == "equal":
        assert n % 4 == 0
        return [n // 4] * 4
    if kind == "ragged":
        return [700] * (n // 700) + [n % 700]
    if kind == "rows":  # single rows, then the rest
        return [1] * 300 + [n - 300]
    if kind == "mixed":
        return [1, 2, 3, n - 506, 500]
    raise AssertionError(kind)


def slices(n, kind):
    bounds = np.cumsum([0, *block_sizes(n, kind)])
    assert bounds[-1] == n
    return [slice(a, b) for a, b in itertools.pairwise(bounds)]


def make_blocks(data, parts, container):
    """`data` cut at `parts` and packed as `container` says."""
    if container == "list":
        return [data[s] for s in parts]
    if container == "tuple":
        return tuple(data[s] for s in parts)
    if container == "generator":
        return (data[s] for s in parts)
    if container == "reversed":
        return [data[s] for s in reversed(parts)]
    if container == "csr":
        return [scipy.sparse.csr_matrix(data[s]) for s in parts]
    raise AssertionError(container)


def make_targets(y, parts, container):
    if container == "csr":
        container = "list"
    return make_blocks(y, parts, container)


CHUNKINGS = [
    ("one", "list"),
    ("equal", "list"),
    ("ragged", "list"),
    ("rows", "list"),
    ("mixed", "tuple"),
    ("ragged", "generator"),
    ("ragged", "reversed"),
    ("one", "csr"),
    ("ragged", "csr"),
    ("whole", "ndarray"),
    ("whole", "csr"),
]


def chunked(data, y, kind, container):
    """Blocks of `data` and the aligned blocks of `y` (or all of y)."""
    if kind == "whole":
        if container == "csr":
            data = scipy.sparse.csr_matrix(data)
        return data, y
    parts = slices(data.shape[0], kind)
    return make_blocks(data, parts, container), make_targets(y, parts, container)


# --- 1, 2: against in-memory references, for any blocking ----------------------


@pytest.mark.parametrize(("kind", "container"), CHUNKINGS,
                         ids=["-".join(c) for c in CHUNKINGS])
@pytest.mark.parametrize("map_name", list(MAPS))
def test_pca_and_ridge_match_reference_for_any_blocking(map_name, kind, container):
    fmap, k = MAPS[map_name]
    Z = features(fmap, X)
    chunks, y_blocks = chunked(X, Y5, kind, container)
    pca = rf_pca(chunks, fmap, k, y=y_blocks)
    assert_pca(pca, reference_pca(Z, k, Y5))
    ref = reference_pca(Z, k)
    close(pca.transform(X_TEST), (features(fmap, X_TEST) - ref.mean) @ ref.components.T)

    chunks, y_blocks = chunked(X, Y, kind, container)
    model = rf_ridge(chunks, y_blocks, fmap, k, alpha=0.3)
    assert_ridge(model, reference_ridge([Z], Y, [k], 0.3), X_TEST,
                 [features(fmap, X_TEST)])


def test_transform_and_predict_take_csr():
    Xs = scipy.sparse.csr_matrix(X_TEST)
    for fmap, k in (MAPS["exp"], MAPS["direct"]):
        pca = rf_pca([X[:1000], X[1000:]], fmap, k)
        close(pca.transform(Xs), pca.transform(X_TEST), 1e-12)
        model = rf_ridge([X[:1000], X[1000:]], Y, fmap, k)
        close(model.predict(Xs), model.predict(X_TEST), 1e-12)


def test_random_fourier_features():
    rng = np.random.default_rng(3)
    P, P_test = rng.normal(size=(N, 3)), rng.normal(size=(40, 3))
    fmap, k = RandomFourierFeatures(40, gamma=0.5, rng=0).fit(np.eye(3)), 4
    Z = fmap.transform(P)
    blocks = [P[i : i + 333] for i in range(0, N, 333)]
    y = targets(P, 2, 4)
    y_blocks = [y[i : i + 333] for i in range(0, N, 333)]
    pca = rf_pca(blocks, fmap, k, y=y_blocks)
    assert_pca(pca, reference_pca(Z, k, y))
    ref = reference_pca(Z, k)
    close(pca.transform(P_test), (fmap.transform(P_test) - ref.mean) @ ref.components.T)
    model = rf_ridge(blocks, y_blocks, fmap, k, alpha=0.05)
    assert_ridge(model, reference_ridge([Z], y, [k], 0.05), P_test,
                 [fmap.transform(P_test)])


def test_features_with_a_large_mean_are_centred_accurately():
    """Features far from the origin: ``Z^T Z - n m m^T`` would lose every
    digit; the block moments must not."""
    rng = np.random.default_rng(5)
    n, p, k = 4000, 6, 3
    Q = np.linalg.qr(rng.normal(size=(p, p)))[0]
    Z = 1e5 + (rng.normal(size=(n, p)) * [4.0, 3.0, 2.0, 1.0, 0.5, 0.25]) @ Q
    y = Z @ rng.normal(size=p) + rng.normal(size=n)
    ref = reference_pca(Z, k, y)
    # The test can tell: the one-line update is far off here.
    mean = Z.mean(axis=0)
    naive = np.linalg.eigvalsh(Z.T @ Z - n * np.outer(mean, mean))[::-1][:k]
    assert np.abs(naive / (n - 1) / ref.variance - 1).max() > 1e-6
    blocks = [Z[i : i + 900] for i in range(0, n, 900)]
    y_blocks = [y[i : i + 900] for i in range(0, n, 900)]
    assert_pca(rf_pca(blocks, None, k, y=y_blocks), ref)
    model = rf_ridge(blocks, y, None, k, alpha=2.0)
    Z_test = 1e5 + rng.normal(size=(30, p))
    assert_ridge(model, reference_ridge([Z], y, [k], 2.0), Z_test, [Z_test])


@pytest.mark.parametrize("container", ["lists", "bags blocks", "whole bags"])
def test_set_map(container):
    sets, sets_test = sets_with_random_means(600, 6), sets_with_random_means(20, 7)
    fmap, k = RandomDistributionFeatures(30, gamma=0.5, rng=0).fit(sets), 5
    Z = fmap.transform(sets)
    y = targets(Z, 3, 8)
    cuts = [0, 1, 150, 151, 400, 600]
    y_blocks = [y[a:b] for a, b in itertools.pairwise(cuts)]
    if container == "lists":
        chunks = [sets[a:b] for a, b in itertools.pairwise(cuts)]
    elif container == "bags blocks":
        chunks = [Bags.from_list(sets[a:b]) for a, b in itertools.pairwise(cuts)]
    else:
        chunks, y_blocks = Bags.from_list(sets), y
    pca = rf_pca(chunks, fmap, k, y=y_blocks)
    assert_pca(pca, reference_pca(Z, k, y))
    ref = reference_pca(Z, k)
    close(pca.transform(sets_test),
          (fmap.transform(sets_test) - ref.mean) @ ref.components.T)
    model = rf_ridge(chunks, y_blocks, fmap, k, alpha=0.01)
    assert_ridge(model, reference_ridge([Z], y, [k], 0.01), sets_test,
                 [fmap.transform(sets_test)])


@pytest.mark.parametrize("as_csr", [False, True])
def test_whole_array_is_split_into_blocks(as_csr):
    """More rows than one internal block (8192): the splitting must not
    change the result."""
    n = 2 * 8192 + 1234
    Xb = histograms(n, 10, 9)
    y = targets(Xb, 2, 10)
    data = scipy.sparse.csr_matrix(Xb) if as_csr else Xb
    Z = DIRECT.transform(Xb)
    pca = rf_pca(data, DIRECT, 9, y=y)
    assert_pca(pca, reference_pca(Z, 9, y))
    model = rf_ridge(data, y, DIRECT, 9, alpha=1.0)
    assert_ridge(model, reference_ridge([Z], y, [9], 1.0), X_TEST,
                 [DIRECT.transform(X_TEST)])


def test_whole_bags_is_split_into_blocks():
    sets = sets_with_random_means(2 * 8192 + 77, 11)
    fmap = RandomDistributionFeatures(30, gamma=0.5, rng=0).fit([np.eye(2)])
    Z = fmap.transform(sets)
    y = targets(Z, 1, 12)[:, 0]
    pca = rf_pca(Bags.from_list(sets), fmap, 5, y=y)
    assert_pca(pca, reference_pca(Z, 5, y))


def test_pca_without_targets_and_all_components():
    Z = EXP.transform(X)
    pca = rf_pca([X[:999], X[999:]], EXP, None)
    assert pca.n_components is None and pca.n_components_ == 60
    Zc = Z - Z.mean(axis=0)
    lam = np.linalg.eigvalsh(Zc.T @ Zc)[::-1]
    close(pca.explained_variance_, lam / (N - 1))
    assert_allclose(pca.explained_variance_ratio_.sum(), 1.0, rtol=1e-12)
    # All components: an orthogonal matrix.
    assert_allclose(pca.components_ @ pca.components_.T, np.eye(60), atol=1e-12)
    assert pca.projected_target_ is None and pca.y_mean_ is None
    # Sign rule: the largest entry (in absolute value) of each axis > 0.
    C = pca.components_
    assert (C[np.arange(60), np.abs(C).argmax(axis=1)] > 0).all()


@pytest.mark.parametrize("y_kind", ["whole y", "y blocks"])
def test_empty_blocks_are_skipped(y_kind):
    """An empty block (e.g. an empty file), with its empty target block when
    the targets come in blocks."""
    fmap, k = MAPS["exp"]
    parts = [slice(0, 700), slice(700, 700), slice(700, N), slice(N, N)]
    chunks = [X[s] for s in parts]
    y = Y5 if y_kind == "whole y" else [Y5[s] for s in parts]
    Z = EXP.transform(X)
    assert_pca(rf_pca(chunks, fmap, k, y=y), reference_pca(Z, k, Y5))
    model = rf_ridge(chunks, y, fmap, k, alpha=0.5)
    assert_ridge(model, reference_ridge([Z], Y5, [k], 0.5))
    several = rf_ridge(chunks, y, [EXP, DIRECT], [6, 9], alpha=0.5)
    assert_ridge(several, reference_ridge([Z, DIRECT.transform(X)], Y5, [6, 9], 0.5))


# --- 3: targets ------------------------------------------------------------------


def test_multi_output_equals_separate_solves():
    fmap, k = MAPS["exp"]
    chunks = [X[:600], X[600:1300], X[1300:]]
    model = rf_ridge(chunks, Y5, fmap, k, alpha=0.1)
    assert model.coef_.shape == (60, 5)
    assert model.intercept_.shape == (5,)
    assert model.predict(X_TEST).shape == (50, 5)
    pca = rf_pca(chunks, fmap, k, y=Y5)
    for j in range(5):
        one = rf_ridge(chunks, Y5[:, j], fmap, k, alpha=0.1)
        close(model.coef_[:, j], one.coef_, 1e-10)
        close(model.intercept_[j], one.intercept_, 1e-10)
        close(model.predict(X_TEST)[:, j], one.predict(X_TEST), 1e-10)
        close(pca.projected_target_[:, j],
              rf_pca(chunks, fmap, k, y=Y5[:, j]).projected_target_[:, 0], 1e-10)
    ref = reference_ridge([EXP.transform(X)], Y5, [k], 0.1)
    assert_ridge(model, ref, X_TEST, [EXP.transform(X_TEST)])


def test_multi_output_several_maps_equals_separate_solves():
    chunks = [X[:600], X[600:1300], X[1300:]]
    model = rf_ridge(chunks, Y5[:, :3], [EXP, DIRECT], [6, 9], alpha=0.1)
    assert model.coef_.shape == (110, 3)
    for j in range(3):
        one = rf_ridge(chunks, Y5[:, j], [EXP, DIRECT], [6, 9], alpha=0.1)
        close(model.coef_[:, j], one.coef_, 1e-10)
        close(model.intercept_[j], one.intercept_, 1e-10)


def test_target_shapes():
    fmap, k = MAPS["direct"]
    one = rf_ridge([X[:1000], X[1000:]], Y, fmap, k)
    assert one.coef_.shape == (50,)
    assert type(one.intercept_) is float
    assert one.predict(X_TEST).shape == (50,)
    # A list of numbers is one target array, not blocks.
    listed = rf_ridge(X, Y.tolist(), fmap, k)
    assert_array_equal(listed.coef_, rf_ridge(X, Y, fmap, k).coef_)
    col = rf_ridge([X[:1000], X[1000:]], Y[:, None], fmap, k)
    assert col.coef_.shape == (50, 1)
    assert col.intercept_.shape == (1,)
    assert col.predict(X_TEST).shape == (50, 1)
    close(col.coef_[:, 0], one.coef_, 1e-12)
    close(col.intercept_[0], one.intercept_, 1e-12)
    # Integer targets are real numbers.
    yi = (Y > 0).astype(np.int64)
    close(rf_ridge(X, yi, fmap, k).coef_, rf_ridge(X, yi * 1.0, fmap, k).coef_, 1e-12)
    pca = rf_pca(X, fmap, k, y=Y)
    assert pca.projected_target_.shape == (k, 1)
    assert pca.y_mean_.shape == (1,)


# --- 4: plain ridge and least squares ----------------------------------------------


@pytest.mark.parametrize("alpha", [0.01, 3.0])
def test_all_components_is_plain_ridge(alpha):
    Z = EXP.transform(X)
    model = rf_ridge([X[:700], X[700:]], Y5[:, :2], EXP, None, alpha=alpha)
    assert model.pca_[0].n_components_ == 60
    coef, intercept = ridge(Z, Y5[:, :2], alpha)
    close(model.coef_, coef)
    close(model.intercept_, intercept)
    close(model.predict(X_TEST), EXP.transform(X_TEST) @ coef + intercept)


def test_alpha_zero_full_rank_is_least_squares():
    Z = DIRECT.transform(X)
    assert np.linalg.matrix_rank(Z - Z.mean(axis=0)) == Z.shape[1]
    A = np.hstack([Z, np.ones((N, 1))])
    sol = np.linalg.lstsq(A, Y, rcond=None)[0]
    for chunks in ([X[:700], X[700:]], X):
        model = rf_ridge(chunks, Y, DIRECT, None, alpha=0)
        close(model.coef_, sol[:-1])
        close(model.intercept_, sol[-1])
        close(model.predict(X_TEST), DIRECT.transform(X_TEST) @ sol[:-1] + sol[-1])


def test_all_components_need_no_eigendecomposition(monkeypatch):
    """Plain ridge (every feature kept) is one Cholesky solve; the PCA of a
    map keeping all its features is computed when pca_ is read, the one
    rf_pca gives, and coef_projected_ is the weights on its components."""

    def no_eigh(*args, **kwargs):
        raise AssertionError("eigendecomposition in a plain ridge fit")

    chunks = [X[:700], X[700:]]
    monkeypatch.setattr(scipy.linalg, "eigh", no_eigh)
    one = rf_ridge(chunks, Y5[:, :2], EXP, None, alpha=0.1)
    also = rf_ridge(chunks, Y5[:, :2], EXP, 60, alpha=0.1)  # 60: all of them
    two = rf_ridge(chunks, Y, [EXP, DIRECT], None, alpha=0.1)
    back = pickle.loads(pickle.dumps(one))  # before pca_ is read
    monkeypatch.undo()
    assert [p.n_components_ for p in two.pca_] == [60, 50]
    close(also.coef_, one.coef_, 1e-14)
    Zs = [EXP.transform(X), DIRECT.transform(X)]
    coef, intercept = ridge(np.hstack(Zs), Y, 0.1)
    close(two.coef_, coef)
    close(two.intercept_, intercept)
    for model, y in ((one, Y5[:, :2]), (back, Y5[:, :2]), (two, None)):
        maps = model.feature_maps
        want = [rf_pca(chunks, f, None, y=y) for f in maps]
        coefs = _pieces(model.coef_.reshape(model.coef_.shape[0], -1),
                        [p.mean_.shape[0] for p in model.pca_])
        for pca, ref in zip(model.pca_, want):
            assert_array_equal(pca.components_, ref.components_)
            assert_array_equal(pca.explained_variance_, ref.explained_variance_)
            if y is not None:
                assert_array_equal(pca.projected_target_, ref.projected_target_)
        close(model.coef_projected_,
              np.vstack([p.components_ @ c for p, c in zip(want, coefs)]), 1e-12)
        assert not model.coef_projected_.flags.writeable


@pytest.mark.parametrize("case", ["well conditioned", "near singular", "singular"])
@pytest.mark.parametrize("alpha", [0.0, 1e-3])
def test_ridge_weights_cholesky_or_pseudo_inverse(case, alpha):
    """The Cholesky solve gives the pseudo-inverse's solution to rounding
    where H + alpha I is well conditioned; elsewhere the pseudo-inverse
    itself (the directions below roundoff get no weight)."""
    from kernelmaps._outofcore._models import _pseudo_solve, _ridge_weights

    rng = np.random.default_rng(5)
    p = 40
    Q = np.linalg.qr(rng.normal(size=(p, p)))[0]
    lam = {"well conditioned": np.geomspace(1, 1e-6, p),
           "near singular": np.geomspace(1, 1e-15, p),
           "singular": np.r_[np.geomspace(1, 1e-3, p - 5), np.zeros(5)]}[case]
    H = (Q * lam) @ Q.T
    H = (H + H.T) / 2
    v = rng.normal(size=(p, 3))
    want = _pseudo_solve(*scipy.linalg.eigh(H), v, alpha)
    got = _ridge_weights(H, v, alpha)
    if case == "well conditioned" or alpha > 0:
        close(got, want, 1e-8)
    else:  # the fallback: the same computation
        assert_array_equal(got, want)


@pytest.mark.parametrize("case", ["repeated columns", "fewer rows than columns"])
def test_alpha_zero_rank_deficient_is_minimum_norm(case):
    rng = np.random.default_rng(13)
    if case == "repeated columns":
        A = rng.normal(size=(500, 10))
        Z = np.hstack([A, A, A[:, :3] + A[:, 3:6]])
    else:
        Z = rng.normal(size=(30, 60)) + 5.0
    y = rng.normal(size=Z.shape[0])
    n = Z.shape[0]
    model = rf_ridge([Z[: n // 3], Z[n // 3 :]], y, None, None, alpha=0.0)
    Zc = Z - Z.mean(axis=0)
    coef = np.linalg.lstsq(Zc, y - y.mean(), rcond=None)[0]
    close(model.coef_, coef)
    close(model.intercept_, y.mean() - Z.mean(axis=0) @ coef)


def test_against_scikit_learn():
    pytest.importorskip("sklearn")
    from sklearn.decomposition import PCA, IncrementalPCA
    from sklearn.linear_model import Ridge

    Z = EXP.transform(X)
    chunks = [X[i : i + 400] for i in range(0, N, 400)]
    for alpha in (0.1, 10.0):
        model = rf_ridge(chunks, Y5, EXP, None, alpha=alpha)
        skl = Ridge(alpha=alpha).fit(Z, Y5)
        close(model.coef_, skl.coef_.T)
        close(model.intercept_, skl.intercept_)
    pca = rf_pca(chunks, EXP, 6)
    skl = PCA(n_components=6, svd_solver="full").fit(Z)
    assert_allclose(pca.explained_variance_, skl.explained_variance_, rtol=TOL)
    assert_allclose(pca.explained_variance_ratio_, skl.explained_variance_ratio_,
                    rtol=TOL)
    signs = np.sign((pca.components_ * skl.components_).sum(axis=1))
    assert_allclose(pca.components_, signs[:, None] * skl.components_, atol=TOL)
    full = rf_pca(chunks, EXP, None)
    ipca = IncrementalPCA(n_components=60, batch_size=400).fit(Z)
    assert_allclose(full.explained_variance_, ipca.explained_variance_, rtol=1e-7,
                    atol=1e-9 * full.explained_variance_[0])
    close(full.mean_, ipca.mean_)


# --- 5: several maps (Algorithm 5) ----------------------------------------------


MULTI_CASES = [
    ("ragged", "list", "whole y"),
    ("ragged", "tuple", "y blocks"),
    ("equal", "list", "y generator"),
    ("ragged", "csr", "y blocks"),
    ("whole", "ndarray", "whole y"),
    ("whole", "csr", "whole y"),
]


@pytest.mark.parametrize(("kind", "container", "y_kind"), MULTI_CASES,
                         ids=["-".join(c) for c in MULTI_CASES])
def test_several_maps_match_reference(kind, container, y_kind):
    chunks, y_blocks = chunked(X, Y5[:, :2], kind, container)
    if y_kind == "whole y":
        y_blocks = Y5[:, :2]
    elif y_kind == "y generator":
        y_blocks = (b for b in list(y_blocks))
    model = rf_ridge(chunks, y_blocks, [EXP, DIRECT], [6, 9], alpha=0.2)
    assert model.feature_maps == (EXP, DIRECT)
    assert [p.n_components_ for p in model.pca_] == [6, 9]
    assert model.n_samples_ == N
    Zs = [EXP.transform(X), DIRECT.transform(X)]
    ref = reference_ridge(Zs, Y5[:, :2], [6, 9], 0.2)
    assert_ridge(model, ref, X_TEST, [EXP.transform(X_TEST), DIRECT.transform(X_TEST)])
    # Each map's PCA is that of its own features.
    for pca, Z, k in zip(model.pca_, Zs, [6, 9]):
        assert_pca(pca, reference_pca(Z, k))


def test_several_maps_one_int_and_none():
    chunks = [X[:1500], X[1500:]]
    Zs = [EXP.transform(X), DIRECT.transform(X)]
    Zs_test = [EXP.transform(X_TEST), DIRECT.transform(X_TEST)]
    model = rf_ridge(chunks, Y, (EXP, DIRECT), 9, alpha=0.5)
    assert [p.n_components_ for p in model.pca_] == [9, 9]
    assert_ridge(model, reference_ridge(Zs, Y, [9, 9], 0.5), X_TEST, Zs_test)
    # None: joint plain ridge on all features of both maps.
    full = rf_ridge(chunks, Y, [EXP, DIRECT], None, alpha=0.5)
    coef, intercept = ridge(np.hstack(Zs), Y, 0.5)
    close(full.coef_, coef)
    close(full.intercept_, intercept)
    close(full.predict(X_TEST), np.hstack(Zs_test) @ coef + intercept)
    mixed = rf_ridge(chunks, Y, [EXP, DIRECT], [None, 9], alpha=0.5)
    assert [p.n_components_ for p in mixed.pca_] == [60, 9]


def test_several_maps_weigh_kernels_jointly():
    """Alg. 5 is not the sum of the one-map models."""
    chunks = [X[:1000], X[1000:]]
    joint = rf_ridge(chunks, Y, [EXP, DIRECT], [6, 9], alpha=0.2)
    alone = rf_ridge(chunks, Y, EXP, 6, alpha=0.2)
    assert np.abs(joint.coef_[:60] - alone.coef_).max() > 1e-3


def test_several_maps_reject_a_one_shot_iterator():
    gen = (X[i : i + 500] for i in range(0, N, 500))
    with pytest.raises(ValueError, match="one-shot"):
        rf_ridge(gen, Y, [EXP, DIRECT], [6, 9])
    with pytest.raises(ValueError, match="one-shot"):
        rf_ridge(iter([X[:1000], X[1000:]]), Y, [EXP, DIRECT], [6, 9])
    # One map: one pass, a generator is fine.
    gen = (X[i : i + 500] for i in range(0, N, 500))
    assert rf_ridge(gen, Y, EXP, 6).n_samples_ == N


# --- 6: memory ----------------------------------------------------------------------


def test_peak_memory_does_not_grow_with_the_rows():
    block, dim, width = 10_000, 5, 40
    fmap = RandomFourierFeatures(width, rng=0, gamma=1.0).fit(np.eye(dim))

    def stream(n_blocks):
        rng = np.random.default_rng(0)
        for _ in range(n_blocks):
            yield rng.normal(size=(block, dim))

    def peak(n_blocks):
        tracemalloc.start()
        try:
            pca = rf_pca(stream(n_blocks), fmap, 5)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert pca.n_samples_ == n_blocks * block
        return peak

    small, large = peak(10), peak(100)  # 10**5 and 10**6 rows
    block_bytes = block * width * 8
    assert small > block_bytes  # NumPy's allocations are seen
    assert large < 1.3 * small
    assert large < 8 * block_bytes


# --- 7: bad input -------------------------------------------------------------------


def bad_cases():
    Xs, ys = X[:200], Y[:200]
    two = [Xs[:100], Xs[100:]]
    ragged = [Xs[:100, :5], Xs[100:, :4]]
    return [
        ("widths", lambda: rf_pca(ragged, None, 2), ValueError, "columns"),
        # (the map, fitted on 10 columns, refuses 5)
        ("widths of chi2 features", lambda: rf_pca(ragged, DIRECT, 2), ValueError,
         "block 0 .*X has 5 features, but Chi2DirectMap is expecting 10 features"),
        ("ridge widths", lambda: rf_ridge(ragged, ys, None, 2), ValueError,
         "columns"),
        ("several maps widths", lambda: rf_ridge(ragged, ys, [DIRECT, DIRECT], 2),
         ValueError, r"feature_maps\[0\] .*X has 5 features"),
        ("y short", lambda: rf_pca(two, None, 2, y=ys[:199]), ValueError,
         "y has 199 rows"),
        ("y long", lambda: rf_pca(two, None, 2, y=Y[:201]), ValueError,
         "y has 201 rows"),
        ("y_chunks short", lambda: rf_ridge(two, ys[:150], None, 2), ValueError,
         "y_chunks has 150 rows"),
        ("y_chunks long", lambda: rf_ridge(Xs, Y[:300], None, 2), ValueError,
         "y_chunks has 300 rows"),
        ("fewer y blocks", lambda: rf_pca(two, None, 2, y=[ys[:100]]), ValueError,
         "y has fewer blocks"),
        ("more y blocks", lambda: rf_ridge(two, [ys[:100], ys[100:], ys[:5]], None, 2),
         ValueError, "y_chunks has more blocks"),
        ("wrong y block", lambda: rf_ridge(two, [ys[:100], ys[100:199]], None, 2),
         ValueError, "y_chunks block 1 has shape"),
        ("y 3-D", lambda: rf_ridge(Xs, ys[:, None, None], None, 2), ValueError,
         "y_chunks has shape"),
        ("n_components > width", lambda: rf_pca(two, EXP, 61), ValueError,
         r"n_components=61 is larger than the number of features \(60\)"),
        ("ridge n_components > width", lambda: rf_ridge(two, ys, DIRECT, 51),
         ValueError, "n_components=51 is larger"),
        ("n_components[1] > width", lambda: rf_ridge(two, ys, [EXP, DIRECT], [6, 51]),
         ValueError, r"n_components\[1\]=51 is larger"),
        ("n_components 0", lambda: rf_pca(two, None, 0), ValueError,
         "n_components must be >= 1"),
        ("ridge n_components 0", lambda: rf_ridge(two, ys, None, 0), ValueError,
         "n_components must be >= 1"),
        ("n_components[0] 0", lambda: rf_ridge(two, ys, [EXP, DIRECT], [0, 3]),
         ValueError, r"n_components\[0\] must be >= 1"),
        ("n_components -1", lambda: rf_pca(two, None, -1), ValueError,
         "n_components"),
        ("n_components str", lambda: rf_pca(two, None, "3"), TypeError,
         "n_components"),
        ("ridge n_components 2.5", lambda: rf_ridge(two, ys, None, 2.5), TypeError,
         "n_components"),
        ("n_components length", lambda: rf_ridge(two, ys, [EXP, DIRECT], [6, 9, 2]),
         ValueError, "n_components has 3 entries for 2 maps"),
        ("alpha negative", lambda: rf_ridge(two, ys, None, 2, alpha=-0.1), ValueError,
         "alpha must be >= 0"),
        ("alpha nan", lambda: rf_ridge(two, ys, None, 2, alpha=np.nan), ValueError,
         "alpha"),
        ("alpha str", lambda: rf_ridge(two, ys, None, 2, alpha="1"), TypeError,
         "alpha"),
        ("y nan", lambda: rf_pca(two, None, 2, y=np.where(np.arange(200) == 7, np.nan,
                                                          ys)),
         ValueError, "y contains NaN"),
        ("y_chunks nan", lambda: rf_ridge(two, [ys[:100], ys[100:] * np.nan], None, 2),
         ValueError, "y_chunks block 1 contains NaN"),
        ("y_chunks inf", lambda: rf_ridge(Xs, np.r_[ys[:-1], np.inf], None, 2),
         ValueError, "y_chunks contains NaN or infinity"),
        ("y strings", lambda: rf_ridge(Xs, np.array(["a"] * 200), None, 2), TypeError,
         "y_chunks must hold real numbers"),
        ("y_chunks None", lambda: rf_ridge(two, None, None, 2), ValueError,
         "y_chunks is required"),
        ("y_chunks int", lambda: rf_ridge(two, 3, None, 2), TypeError, "y_chunks"),
        # before: NumPy's IndexError of a 0-D array's slice
        ("y_chunks 0-D", lambda: rf_ridge(Xs, np.array(3.0), None, 2), ValueError,
         "y_chunks must be 1-D or 2-D, got a 0-D array"),
        ("features nan", lambda: rf_pca([Xs[:100], Xs[100:] * np.nan], None, 2),
         ValueError, "NaN or infinity"),
        ("chunks str", lambda: rf_pca("abc", None, 2), TypeError, "chunks"),
        ("chunks int", lambda: rf_pca(5, None, 2), TypeError, "chunks"),
        ("ridge chunks str", lambda: rf_ridge("abc", ys, EXP, 2), TypeError, "chunks"),
        ("ridge chunks int", lambda: rf_ridge(5, ys, EXP, 2), TypeError, "chunks"),
        ("several maps chunks str", lambda: rf_ridge("abc", ys, [EXP, DIRECT], 2),
         TypeError, "chunks"),
        ("several maps chunks int", lambda: rf_ridge(5, ys, [EXP, DIRECT], 2),
         TypeError, "chunks"),
        ("empty list", lambda: rf_pca([], None, 2), ValueError, "chunks holds no data"),
        ("ridge empty list", lambda: rf_ridge([], ys, EXP, 2), ValueError,
         "chunks holds no data"),
        ("only empty blocks", lambda: rf_pca([Xs[:0], Xs[:0]], None, 2), ValueError,
         "chunks holds no data"),
        ("several maps empty list", lambda: rf_ridge([], ys, [EXP, DIRECT], 2),
         ValueError, "chunks holds no data"),
        ("map without transform", lambda: rf_ridge(two, ys, [EXP, object()], 2),
         TypeError, r"feature_maps\[1\] has no transform method"),
        ("feature_maps int", lambda: rf_ridge(two, ys, 5, 2), TypeError,
         "feature_maps must be a feature map"),
        # before: NumPy's "zero-size array to reduction operation maximum"
        ("no features", lambda: rf_ridge([Xs[:, :0]], Xs[:, 0], None, None),
         ValueError, r"chunks block 0 is empty \(shape \(\d+, 0\)\)"),
        ("no features pca", lambda: rf_pca(Xs[:, :0], None, None), ValueError,
         r"chunks block 0 is empty"),
        ("feature_maps empty", lambda: rf_ridge(two, ys, [], 2), ValueError,
         "feature_maps is empty"),
        ("feature_map int", lambda: rf_pca(two, 5, 2), TypeError,
         "feature_map must be a feature map"),
        ("feature_map list", lambda: rf_pca(two, [EXP, DIRECT], 2), TypeError,
         "feature_map must be one map"),
        ("progress str", lambda: rf_pca(two, None, 2, progress="yes"), TypeError,
         "progress"),
    ]


BAD = bad_cases()


@pytest.mark.parametrize(("call", "error", "match"), [c[1:] for c in BAD],
                         ids=[c[0] for c in BAD])
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize("widths", [(2, 3), (3, 1)])
def test_target_blocks_of_different_widths(widths):
    """Target blocks must agree in their number of columns, as the data
    blocks must; the error names y (a 1-column block after 3-column ones
    must not be broadcast to all targets)."""
    chunks = [X[:100], X[100:200]]
    y = [Y5[:100, : widths[0]], Y5[100:200, : widths[1]]]
    with pytest.raises(ValueError, match=r"\by\b"):
        rf_pca(chunks, None, 2, y=y)
    with pytest.raises(ValueError, match="y_chunks"):
        rf_ridge(chunks, y, None, 2)


def test_outofcore_blocks_that_are_not_arrays():
    for call in (lambda: km.rf_pca([1.0], None, 1),
                 lambda: km.rf_ridge([1.0], [np.zeros(1)], None, 1)):
        with pytest.raises(TypeError, match=r"chunks block 0 must be an array"):
            call()


def test_outofcore_errors_name_the_block_and_overflow_is_clear():
    H = np.random.default_rng(0).random((12, 4))
    bad = H.copy()
    bad[3, 1] = np.nan
    # a map's error names the map (feature_map) and the block (chunks)
    with pytest.raises(ValueError, match=r"feature_map cannot transform chunks "
                                         r"block 1 \(its X\): X contains NaN"):
        km.rf_pca([H, bad], km.Chi2DirectMap().fit(H), 2)
    with pytest.raises(ValueError, match=r"feature_maps\[1\] cannot transform "
                                         r"chunks block 1"):
        km.rf_ridge([H, -H], [np.zeros(12)] * 2,  # negative: not histograms
                    [km.RandomFourierFeatures(8, rng=0, gamma=1.0).fit(np.eye(4)),
                     km.Chi2DirectMap().fit(H)],
                    2)
    with pytest.raises(ValueError, match=r"chunks block 0 must be 2-D"):
        km.rf_pca([H.ravel()], None, 2)
    with pytest.raises(TypeError, match=r"chunks block 0 must hold real numbers"):
        km.rf_pca([H.astype(str)], None, 2)  # strings were parsed as numbers
    with pytest.raises(ValueError, match="features of chunks overflow float64"):
        km.rf_pca(H * 1e308, None, 2)  # eigh's "must not contain infs" before
    with pytest.raises(ValueError, match="of chunks \\(or of them and y_chunks\\) "
                                         "overflow float64"):
        km.rf_ridge(H, np.full(12, 1e308), None, 2)

    class Identity:
        def transform(self, X):
            return X

    with pytest.raises(ValueError, match="overflow float64"):
        km.rf_ridge([H * 1e200, H], [np.zeros(12), np.zeros(12)],
                    [Identity(), Identity()], 2)


def test_rf_pca_errors_name_the_map_and_the_chunks():
    X = np.random.default_rng(0).normal(size=(10, 3))
    with pytest.raises(ValueError, match=r"^feature_map cannot transform chunks "
                                         r"block 0 \(its X\): X contains negative"):
        km.rf_pca([X], km.Chi2ChebyshevMap(3), 2)
    with pytest.raises(ValueError, match=r"^feature_maps cannot transform chunks"):
        km.rf_ridge([X], [np.zeros(10)],
                    km.RandomFourierFeatures(4, rng=0, gamma=1.0).fit(np.eye(5)), 2)
    with pytest.raises(ValueError, match=r"features of chunks overflow"):
        km.rf_pca([X * 1e300], None, 2)


def test_rf_models_refuse_empty_input():
    X = np.random.default_rng(0).normal(size=(10, 3))
    pca = km.rf_pca([X], None, 2)
    ridge = km.rf_ridge([X], [X[:, 0]], None, None)
    for call in (pca.transform, ridge.predict):
        with pytest.raises(ValueError, match=r"^X is empty"):
            call(X[:0])
        with pytest.raises(ValueError, match=r"^X is empty"):
            call(scipy.sparse.csr_matrix(X[:0]))


# --- 8: the fitted objects ------------------------------------------------------------


def test_objects_are_estimators_with_read_only_arrays_picklable_with_a_repr():
    # the maps' protocol (constructor parameters, fit returns self, clone,
    # set_params, a refit replaces the fit); the fitted arrays read-only
    # (before: the objects immutable, made by rf_pca and rf_ridge only)
    sklearn_base = pytest.importorskip("sklearn.base")
    chunks = [X[:1000], X[1000:]]
    pca = rf_pca(chunks, EXP, 6, y=Y)
    model = rf_ridge(chunks, Y5[:, :2], [EXP, DIRECT], [6, 9], alpha=0.2)
    for array in (pca.components_, pca.mean_, pca.explained_variance_,
                  pca.projected_target_, model.coef_, model.intercept_,
                  model.coef_projected_):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 0.0
    assert pca.get_params(deep=False) == {"feature_map": EXP, "n_components": 6}
    assert model.get_params(deep=False) == {"feature_maps": (EXP, DIRECT),
                                            "n_components": [6, 9], "alpha": 0.2}
    again = RandomFeaturePCA(EXP, 6)
    assert again.fit(chunks, Y) is again
    assert_array_equal(again.components_, pca.components_)
    assert_array_equal(again.projected_target_, pca.projected_target_)
    twin = sklearn_base.clone(model)
    assert not twin.__sklearn_is_fitted__() and not hasattr(twin, "coef_")
    with pytest.raises(ValueError, match=r"not fitted yet: .*\.predict\(X\)\)$"):
        twin.predict(X_TEST)
    # (clone clones the maps too, unfitted: the model takes fitted maps)
    with pytest.raises(ValueError, match=r"feature_maps\[0\] is not fitted"):
        twin.fit(chunks, Y5[:, :2])
    assert twin.set_params(feature_maps=(EXP, DIRECT)).fit(chunks, Y5[:, :2]) is twin
    assert_array_equal(twin.coef_, model.coef_)
    assert_array_equal(twin.predict(X_TEST), model.predict(X_TEST))
    refit = twin.set_params(n_components=None, alpha=1.0).fit(chunks, Y)
    assert refit.coef_.shape == (110,) and "coef_projected_" not in vars(refit)
    assert sklearn_base.is_regressor(model)

    pca2, model2 = pickle.loads(pickle.dumps((pca, model)))
    assert_array_equal(pca2.transform(X_TEST), pca.transform(X_TEST))
    assert_array_equal(pca2.components_, pca.components_)
    assert_array_equal(pca2.projected_target_, pca.projected_target_)
    assert_array_equal(model2.predict(X_TEST), model.predict(X_TEST))
    assert_array_equal(model2.coef_, model.coef_)
    assert model2.alpha == model.alpha and model2.n_samples_ == N
    with pytest.raises(ValueError, match="read-only"):
        model2.coef_[0] = 0.0

    one = rf_ridge(chunks, Y, DIRECT, 9)
    one2 = pickle.loads(pickle.dumps(one))
    assert type(one2.intercept_) is float
    assert_array_equal(one2.predict(X_TEST), one.predict(X_TEST))

    assert repr(pca) == ("RandomFeaturePCA(feature_map=ExpChi2Features("
                         "n_components=60, rng=0), n_components=6)")
    assert repr(model).startswith("RandomFeatureRidge(feature_maps=(")
    assert "n_components=[6, 9]" in repr(model) and "alpha=0.2" in repr(model)


@pytest.mark.parametrize("make", [lambda: RandomFeaturePCA(EXP, 6),
                                  lambda: RandomFeatureRidge(EXP, 6, alpha=0.5)],
                         ids=["pca", "ridge"])
def test_estimator_checks_without_data(make):
    # the checks of scikit-learn that the maps of sets pass (the models take
    # blocks of data, not (n, d) arrays as samples)
    pytest.importorskip("sklearn")
    from sklearn.utils import estimator_checks as checks

    for check in (checks.check_estimator_cloneable, checks.check_estimator_repr,
                  checks.check_no_attributes_set_in_init,
                  checks.check_get_params_invariance, checks.check_set_params,
                  checks.check_do_not_raise_errors_in_init_or_set_params,
                  checks.check_parameters_default_constructible,
                  checks.check_valid_tag_types):
        check(type(make()).__name__, make())


# --- 9: progress bar ----------------------------------------------------------------


def test_progress_bar(capsys):
    pytest.importorskip("tqdm")
    chunks = [X[i : i + 500] for i in range(0, N, 500)]
    quiet = rf_pca(chunks, EXP, 6, y=Y)
    capsys.readouterr()
    loud = rf_pca(chunks, EXP, 6, y=Y, progress=True)
    assert "blocks" in capsys.readouterr().err
    assert_array_equal(loud.components_, quiet.components_)
    assert_array_equal(loud.explained_variance_, quiet.explained_variance_)
    assert_array_equal(loud.projected_target_, quiet.projected_target_)
    gen = (X[i : i + 500] for i in range(0, N, 500))
    assert_array_equal(rf_pca(gen, EXP, 6, progress=True).components_,
                       quiet.components_)
    for maps, k in ((EXP, 6), ([EXP, DIRECT], [6, 9])):
        quiet = rf_ridge(chunks, Y, maps, k)
        loud = rf_ridge(chunks, Y, maps, k, progress=True)
        assert "blocks" in capsys.readouterr().err
        assert_array_equal(loud.coef_, quiet.coef_)
        assert loud.intercept_ == quiet.intercept_
