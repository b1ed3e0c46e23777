"""The fused random Fourier features of sparse rows, ``scale * cos(X @ W +
b)`` (`_engine.set_means.csr_cos`, behind `ExpChi2Features.transform` on
CSR input), against NumPy on the dense rows."""

import numpy as np
import pytest
import scipy.sparse

import kernelmaps
from kernelmaps._engine.set_means import csr_cos


def _problem(seed, n, p, t, dtype, density=0.2):
    rng = np.random.default_rng(seed)
    dense = (rng.random((n, p)) * 3 - 1) * (rng.random((n, p)) < density)
    dense[min(1, n - 1)] = 0  # an empty row
    X = scipy.sparse.csr_matrix(dense.astype(dtype))
    W = rng.normal(size=(p, t)).astype(dtype)
    b = rng.uniform(0, 2 * np.pi, size=t).astype(dtype)
    return X, W, b


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(("n", "p", "t"), [(1, 1, 1), (7, 5, 3), (70, 40, 65),
                                           (130, 300, 200), (65, 1500, 130)])
def test_csr_cos_matches_numpy(simd_path, n, p, t, dtype):
    X, W, b = _problem(n + t, n, p, t, dtype)
    ref = 0.7 * np.cos(X.toarray().astype(np.float64) @ W.astype(np.float64) + b)
    Z = csr_cos(X, W, b, scale=0.7, n_threads=2)
    assert Z.dtype == dtype and Z.shape == (n, t)
    # float64: sums in float64; float32: in float32 over runs of 16
    # nonzeros, then float64, and the phases and cosine in float32.
    atol = 1e-13 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(Z, ref, rtol=0, atol=atol)
    np.testing.assert_array_equal(Z, csr_cos(X, W, b, scale=0.7, n_threads=1))
    X64 = X.copy()
    X64.indices, X64.indptr = X.indices.astype(np.int64), X.indptr.astype(np.int64)
    np.testing.assert_array_equal(Z, csr_cos(X64, W, b, scale=0.7, n_threads=2))


def test_exp_chi2_features_csr_equal_dense():
    rng = np.random.default_rng(3)
    X = rng.random((60, 40)) * (rng.random((60, 40)) < 0.3)
    f = kernelmaps.ExpChi2Features(333, rng=0).fit(X)
    Zs = f.transform(scipy.sparse.csr_array(X))
    np.testing.assert_allclose(Zs, f.transform(X), rtol=0, atol=1e-14)
    Z32 = f.transform(scipy.sparse.csr_array(X.astype(np.float32)))
    assert Z32.dtype == np.float32
    np.testing.assert_allclose(Z32, f.transform(X), rtol=0, atol=1e-5)
