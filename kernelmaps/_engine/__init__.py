"""The compiled engine of kernelmaps: private, shared by every public
subpackage.

It computes and trusts its inputs: the layers above validate them, choose
the thread count and document the API. Each engine is a compiled extension
``_<name>.pyx`` (the arithmetic, OpenMP over independent outputs, SIMD
kernels from the ``km_*.h`` headers) and its Python driver ``<name>.py``
(planning, packing, buffers, progress):

- ``pair_sums``: sums of a point kernel over all pairs of points of two
  sets (the set kernels);
- ``knn``: k-th nearest-neighbour distances between sets (the kNN
  divergences), by distance tiles or kd-trees;
- ``set_means``: per-set means of point features (the set feature maps);
- ``additive``: additive kernels between histograms;
- ``expand`` and ``anchors``: the additive histogram maps, value by value;
- ``expected``: expected kernels between Gaussians.

Beside them, in Python: ``layout`` (the tile geometry, the packing of points
for the tiles, every panel and block size), ``schedule`` (the threads and
chunks of every long loop of the package), ``progress`` (progress bars)
and ``scales`` (default kernel scales).

``_runtime`` holds what the extensions share: the element types and the
tile geometry (``_runtime.pxd``), SciPy's BLAS products (for
``_products.pxd``, which the set kernels and the kNN search use from many
features on), the thread counts, and the one switch
that selects the code path (instruction set) of every SIMD kernel at once:
`select_isa`, for the tests and benchmarks of each path. The environment
variable ``KERNELMAPS_SIMD`` (``baseline``, ``avx2`` or ``avx512``) selects
the path at import, for a whole process (an asv run, a bug report); a path
this CPU lacks gives a RuntimeWarning and the best path it has.

The engine writes no environment variable: the OpenMP settings
(``OMP_NUM_THREADS``, ``OMP_WAIT_POLICY``) and the BLAS threads
(threadpoolctl) are the user's, described with ``workers`` in the user
guide's conventions (threads).
"""

import os
import warnings

from ._runtime import available_isas, select_isa, simd_isa


def _select_from_environment():
    name = os.environ.get("KERNELMAPS_SIMD", "").strip().lower()
    if not name:
        return
    if name in available_isas():
        select_isa(name)
    else:
        warnings.warn(
            f"KERNELMAPS_SIMD={name!r}: this CPU runs {available_isas()}; "
            f"using {simd_isa()!r}",
            RuntimeWarning,
            stacklevel=2,
        )


_select_from_environment()

__all__ = ["available_isas", "select_isa", "simd_isa"]
