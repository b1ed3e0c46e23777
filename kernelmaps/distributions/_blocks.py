"""The expected kernels on trusted input, a block at a time: what the
tools over objects (`mmd_test`, `NystroemMap`) call after one validation
of the whole input. Takes checked Gaussians and parameters, and neither
checks nor warns."""

import numpy as np

from ._expected import _expected

__all__ = ["expected_block"]


def expected_block(A, B, params, n_threads, progress=False):
    """The expected kernel of `params` (kernel, gamma, degree, coef0)
    between the Gaussians ``A = (means, covs)`` and B (None: A, the
    symmetric block), float64."""
    symmetric = B is None
    (m1, c1), (m2, c2) = A, (A if symmetric else B)
    with np.errstate(over="ignore", invalid="ignore"):
        return _expected(m1, c1, m2, c2, params["kernel"], params["gamma"],
                         params.get("degree", 2), params.get("coef0", 1.0),
                         symmetric, n_threads, progress)
