"""What the tests take from the kernels' layer: the specs of the kernels
(check once, pool, scales, any block at every scale) and the recognition of
lazy input. Imported here only, so that the tests follow the specs where
they move."""

from .._composite._dask_blocks import is_lazy_input, lazy_samples
from .._composite._specs import (
    BANDWIDTH_SAMPLE,
    KINDS,
    N_BANDWIDTHS,
    SPECS,
    PrecomputedSpec,
    check_precomputed,
    computed,
    object_kind,
    point_gamma,
    pool_any,
    spec_for,
    value_sample,
)

__all__ = ["BANDWIDTH_SAMPLE", "KINDS", "N_BANDWIDTHS", "SPECS",
           "PrecomputedSpec", "check_precomputed", "computed",
           "is_lazy_input", "lazy_samples", "object_kind", "point_gamma",
           "pool_any", "spec_for", "value_sample"]
