"""The specs of the histogram kernels (`kernelmaps._spec`): the additive
kernels and exp-chi2 as the tools over objects (`mmd_test`,
`NystroemMap`) compute them, on histograms checked once, a block at a
time."""

import numpy as np
import scipy.sparse

from .._spec import DistanceSpec, Spec, register
from .._validation import check_histograms
from ._exact import additive_block, check_beta, chi2_distance_block

__all__ = ["AdditiveSpec", "ExpChi2Spec"]


class RowSpec(Spec):
    """A kernel of histograms (the rows of a dense array or CSR matrix)."""

    kind = "rows"

    def check(self, X, name="X"):
        return check_histograms(X, name)

    def pool(self, X, Y):
        if X.shape[1] != Y.shape[1]:
            raise ValueError(f"X and Y must hold histograms of the same number "
                             f"of bins, got {X.shape[1]} and {Y.shape[1]}")
        if scipy.sparse.issparse(X) or scipy.sparse.issparse(Y):
            return scipy.sparse.vstack([scipy.sparse.csr_array(X),
                                        scipy.sparse.csr_array(Y)],
                                       format="csr")
        return np.concatenate([X, Y])

    def value_keys(self, Z):
        return Z

    def embedding(self, X, params, rng):
        """The square roots of the histograms (their Euclidean distance is
        the Hellinger distance)."""
        return X.sqrt() if scipy.sparse.issparse(X) else np.sqrt(X)


@register("chi2", "intersection", "hellinger", "js")
class AdditiveSpec(RowSpec):
    """The additive kernels "chi2", "intersection", "hellinger", "js"."""

    def blocks(self, A, B, scales, n_threads):
        yield additive_block(A, B, self.name, n_threads)


@register("exp_chi2")
class ExpChi2Spec(DistanceSpec, RowSpec):
    """`exp_chi2_kernel`: ``exp(-beta chi2_distance)``; its scale is
    beta."""

    takes = ("beta",)
    scale = "beta"
    default_scale = 1.0

    def check_params(self, params):
        if "beta" in params:
            params = {**params, "beta": check_beta(params["beta"])}
        return params

    distance = staticmethod(chi2_distance_block)
