"""The additive histogram maps, value by value: the driver of
``_expand.pyx``. Every value of the histograms expands into the `n_terms`
features of its dimension; dense input gives dense rows, CSR input CSR rows
with the same non-zeros per term (a 0 gives zero features). Inputs are
validated histograms.
"""

import numpy as np
import scipy.sparse

from . import _expand as _impl
from .schedule import run_chunked, threads_for

__all__ = ["expand"]


def expand(X, kind, params, scale, n_terms, n_threads):
    """Features of the rows of `X` (n, d), shape (n, d * n_terms), column
    ``j * n_terms + q`` for input column j and term q, in the dtype of `X`.

    `kind` is "direct", "chebyshev", "homogeneous" or "sqrt"; `params` and
    `scale` are those of ``_expand.expand``.
    """
    n, d = X.shape
    T = n_terms
    sparse = scipy.sparse.issparse(X)
    if sparse:
        # Output indices in the input's index type when they fit.
        big = max(d * T, X.nnz * T) >= np.iinfo(np.int32).max
        index = np.int64 if big else X.indices.dtype
        values, cols = X.data, X.indices.astype(index, copy=False)
        out_cols = np.empty(X.nnz * T, dtype=index)
    else:
        values, cols = X.reshape(-1), np.empty(0, dtype=np.intc)
        out_cols = cols
    out = np.empty((len(values), T), dtype=X.dtype)
    cost = 8.0 * T  # per value
    n_threads = threads_for(n_threads, cost * len(values), len(values))

    run_chunked(_impl.expand, (kind, values, cols, d, params, scale, out, out_cols),
                cost, n_tasks=len(values), n_threads=n_threads)
    if not sparse:
        return out.reshape(n, d * T)
    return scipy.sparse.csr_matrix(
        (out.reshape(-1), out_cols, X.indptr.astype(out_cols.dtype) * T),
        shape=(n, d * T),
    )
