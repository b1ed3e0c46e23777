"""The feature maps' ``transform`` in blocks: lazily on Dask input (Dask
stays an optional dependency), or under a progress bar on input in memory.

A map's ``transform`` is decorated with `blocked_rows` (one sample per row)
or `blocked_sets` (one sample per set). Given a Dask input they return a
lazy Dask array built from one task per block, each calling the map on its
block; the map enters the task graph once, as a single key that the
distributed scheduler ships to each worker once. Given ``progress=True``
and input in memory, they call the map on fixed blocks of about
`TRANSFORM_BLOCK_VALUES` input values, run in the chunks of
`schedule.run_chunked` that move the bar.

Sets are given as a `Bags` whose ``points`` is a Dask array (the offsets, one
integer per set, are in memory), or as a 3-D Dask array
``(n_sets, n_points, d)`` of sets of equal size. Blocks hold whole sets: the
row chunks of the points are moved to the next set boundary, each block
read and checked in a task of its own as the exact kernels' Gram reads
its blocks (`kernelmaps._lazy.ItemBlocks`), and the output is chunked by
sets accordingly.

Lazy input is recognised and checked by `kernelmaps._lazy`, which also
computes the exact kernels' Gram matrices on it (`lazy_gram`).

`fourier_features` is the transform of the random Fourier maps of two
units (`RandomFourierFeatures` and `RandomDistributionFeatures` of sets,
`ExpChi2Features` of histograms): the cosine features of rows, dense or
CSR, or their means over sets.
"""

import functools
import inspect
import math

import numpy as np
import scipy.sparse

from ._array_api import library_of_objects, numpy_objects, row_blocks
from ._bags import Bags
from ._base import check_weights_kept
from ._engine.layout import max_abs
from ._engine.schedule import MAP_VALUE_WORK, run_chunked
from ._engine.set_means import csr_cos, set_means
from ._lazy import ItemBlocks, is_lazy, lazy_sets, map_delayed
from ._parallel import check_progress
from ._probes import as_float_array, float_dtype, is_dask_array
from ._validation import check_fourier_range, check_sets

__all__ = ["array_fourier_features", "blocked_rows", "blocked_sets", "checked_rows",
           "fourier_features"]


def _call(fmap, name, args, kwargs):
    """The map's method on one block: a Dask task, on one thread unless
    `workers` was given (Dask runs the blocks in parallel, and a team of
    threads per block would only compete for the same cores)."""
    if kwargs.get("workers") is None:
        kwargs = {**kwargs, "workers": 1}
    return getattr(fmap, name)(*args, **kwargs)


def blocked_rows(method=None, *, check=None):
    """Decorate ``transform(self, X, **kwargs)`` of a map on rows: a Dask `X`
    gives a lazy Dask array chunked as the rows of `X`, and
    ``progress=True`` a progress bar over blocks of rows. With `check` (as
    `check_histograms`; ``@blocked_rows(check=...)``), the map is checked
    fitted first, and `method` takes `X` in memory as ``check(X)`` returns
    it, its feature names and width compared with the fit's."""
    if method is None:
        return functools.partial(blocked_rows, check=check)

    @functools.wraps(method)
    def transform(self, X, *args, progress=False, **kwargs):
        library = library_of_objects(X=X)
        if library is not None:
            return _array_transform(self, transform, library, X, args, progress,
                                    kwargs)
        if not is_dask_array(X):
            if check is not None:  # (fitted first)
                X = checked_rows(self, X, check)
            if check_progress(progress):
                return _rows_in_blocks(self, method, X, args, kwargs)
            return method(self, X, *args, **kwargs)
        if check is not None:
            self._check_fitted()
        import dask.array as da

        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (n, d), got shape {X.shape}")
        if X.dtype.kind not in "biuf":
            raise TypeError(f"X must hold real numbers, got dtype {X.dtype}")
        X = X.rechunk({1: -1})
        # The output width and dtype: the map applied to one row of zeros.
        probe = _probe(self, method, np.zeros((1, X.shape[1]),
                                              float_dtype(X.dtype)), args, kwargs)
        return da.map_blocks(
            _rows_block, X, map_delayed(self), method.__name__, args, kwargs,
            probe[:0], chunks=(X.chunks[0], (probe.shape[1],)),
            dtype=probe.dtype, meta=np.empty((0, 0), probe.dtype),
        )

    return transform


def _array_transform(fmap, transform, library, X, args, progress, kwargs):
    """The map's `transform` of `X`, an array or sets of `library`
    (`kernelmaps._array_api`), in the library: by `transform` itself on
    its NumPy view, or (`library.native`) by the map's `_array_features`
    (given the transform's other arguments but `workers`), computed by the
    library on the device of `X`, differentiably (`workers` and `progress`
    then unused)."""
    if not library.native:
        return library.from_numpy(transform(fmap, numpy_objects(library, X), *args,
                                            progress=progress, **kwargs))
    fmap._check_fitted()
    return fmap._array_features(library, X, *args, **{
        k: v for k, v in kwargs.items() if k != "workers"})


def checked_rows(fmap, X, check):
    """The rows `X` in memory given to the map `fmap` (to its transform),
    checked by ``check(X)`` (as `check_histograms`), once the map is
    fitted, with the feature names and the width of the fit."""
    fmap._check_fitted()
    fmap._check_names(X, reset=False)
    X = check(X)
    fmap._check_width(X.shape[1])
    return X


def _probe(fmap, method, sample, args, kwargs):
    """The output of the map on a one-row (one-point set) `sample`, for its
    width and dtype; a map that cannot transform such a sample (the kNN
    divergences need more points) gives them as ``_lazy_output(dtype)``."""
    if hasattr(fmap, "_lazy_output"):
        width, dtype = fmap._lazy_output(float_dtype(np.asarray(sample[0]).dtype))
        return np.zeros((0, width), dtype)
    return method(fmap, sample, *args, **kwargs)


def _rows_block(block, fmap, name, args, kwargs, empty):
    if block.shape[0] == 0:  # e.g. after filtering rows
        return empty
    return _call(fmap, name, (block, *args), kwargs)


def blocked_sets(per_point=(), weighted=False, checked=False):
    """Decorate ``transform(self, sets, ...)`` of a map on sets: a lazy
    `sets` gives a lazy Dask array chunked by sets. Keyword arguments named
    in `per_point` hold one row per point (a NumPy or Dask array aligned with
    the points) and are split as the points are. `weighted`: the map takes
    weighted sets (`check_sets`), whose blocks keep their weights; weighted
    lazy sets are refused. A callable `weighted` is asked with the map
    (``weighted(self)``), for a map whose kernel decides (`NystroemMap`).
    `checked`: the map is checked fitted first, and `method` takes sets in
    memory as the `Bags` that `check_sets` returns, of the fit's width."""

    def decorate(method):
        signature = inspect.signature(method)
        name = list(signature.parameters)[1]  # of the sets, for the errors

        @functools.wraps(method)
        def transform(self, sets, *args, progress=False, **kwargs):
            library = library_of_objects(**{name: sets})
            if library is not None:
                return _array_transform(self, transform, library, sets, args,
                                        progress, kwargs)
            check_weights_kept(self, sets, name)
            lazy = is_lazy(sets)
            takes = weighted(self) if callable(weighted) else weighted
            if checked:
                self._check_fitted()
            if checked and not lazy:
                sets = check_sets(sets, name, weighted=takes)
                self._check_width(sets.dim, name)
            if not (lazy or check_progress(progress)):
                return method(self, sets, *args, **kwargs)
            # Everything by keyword, to find the per-point arguments.
            bound = signature.bind(self, sets, *args, **kwargs).arguments
            kwargs = {k: v for k, v in list(bound.items())[2:]}
            if lazy:
                return _sets_on_dask(self, method, sets, kwargs, per_point,
                                     name, takes)
            return _sets_in_blocks(self, method, sets, kwargs, per_point, name,
                                   takes)

        return transform

    return decorate


# A map's transform under a progress bar runs on blocks of rows (whole
# sets) of about this many input values, the same whatever the machine's
# speed (a row's features may depend on the rows it is computed with, by a
# few units in the last place, as BLAS products do): about one chunk (50
# ms) of a map of a thousand features. Smaller blocks cost more calls
# (benchmarks/TUNING.md).
TRANSFORM_BLOCK_VALUES = 1 << 18


def _block_bounds(cum_values):
    """Block boundaries over items whose input values end at `cum_values`
    (``cum_values[i]``: the values before item i, ``n + 1`` entries): a
    boundary every `TRANSFORM_BLOCK_VALUES` values, moved back to the item
    it falls in (a block holds at least one item)."""
    cuts = np.arange(0, cum_values[-1], TRANSFORM_BLOCK_VALUES)
    return np.unique(np.append(
        np.searchsorted(cum_values, cuts, side="right") - 1, len(cum_values) - 1))


def _in_blocks(fmap, method, X, args, kwargs, bounds, values, take):
    """`method` applied to the blocks ``bounds[b]:bounds[b + 1]`` of the
    items (rows or sets) of `X`, ``take(X, kwargs, start, stop)`` giving a
    block's arguments and `values` its input values, under a progress bar,
    the outputs stacked: the values of one call up to rounding (a block's
    rows may be computed together, by a BLAS product), the same on every
    run. Without items, one call (the map's own error or empty output)."""
    if len(bounds) < 2:
        return method(fmap, X, *args, **kwargs)
    out, parts = None, []  # dense output: written in place; CSR: stacked

    def run(first, stop, _):
        nonlocal out
        for start, end in zip(bounds[first:stop], bounds[first + 1:stop + 1],
                              strict=True):
            block, block_kwargs = take(X, kwargs, start, end)
            part = method(fmap, block, *args, **block_kwargs)
            if scipy.sparse.issparse(part):
                parts.append(part)
                continue
            if out is None:
                out = np.empty((bounds[-1], *part.shape[1:]), part.dtype)
            out[start:end] = part

    run_chunked(run, (), values * MAP_VALUE_WORK, n_threads=1, progress=True,
                desc=f"{type(fmap).__name__}.{method.__name__}")
    return scipy.sparse.vstack(parts, format="csr") if parts else out


def _rows_in_blocks(fmap, method, X, args, kwargs):
    """`_in_blocks` over blocks of rows of about `TRANSFORM_BLOCK_VALUES`
    values (a row at least)."""
    X = X if scipy.sparse.issparse(X) or hasattr(X, "shape") else \
        as_float_array(X, "X")
    width = max(1, int(np.prod(X.shape[1:])))
    bounds = _block_bounds(np.arange(X.shape[0] + 1) * width)

    def take(X, kwargs, start, stop):
        return X[start:stop], kwargs

    return _in_blocks(fmap, method, X, args, kwargs, bounds,
                      np.diff(bounds) * width, take)


def _sets_in_blocks(fmap, method, sets, kwargs, per_point, name, weighted):
    """`_in_blocks` over blocks of whole sets of about
    `TRANSFORM_BLOCK_VALUES` values (a set at least); the per-point
    arguments given as one array aligned with the points are split as the
    points are, and so are the weights of weighted sets (a slice of a
    `Bags` keeps them); `name` names `sets` in the errors."""
    bags = check_sets(sets, name, weighted=weighted)
    cum_values = bags.offsets * bags.dim
    bounds = _block_bounds(cum_values)

    def take(bags, kwargs, start, stop):
        block_kwargs = dict(kwargs)
        for key in per_point:
            value = kwargs.get(key)
            if isinstance(value, np.ndarray) and value.dtype != object and \
                    value.ndim == 2:  # one array aligned with all the points
                first, last = bags.offsets[start], bags.offsets[stop]
                block_kwargs[key] = value[first:last]
            elif value is not None:  # one item per set
                block_kwargs[key] = value[start:stop]
        return bags[start:stop], block_kwargs

    return _in_blocks(fmap, method, bags, (), kwargs, bounds,
                      np.diff(cum_values[bounds]), take)


def _sets_on_dask(fmap, method, sets, kwargs, per_point, name, weighted):
    """The lazy transform of the lazy sets `sets`: one task per block of
    whole sets, read (and its values checked) in a task of its own, as
    `lazy_gram` reads its blocks (`ItemBlocks`: the row chunks of the
    points moved to set boundaries); the per-point arguments rechunked to
    the blocks' points."""
    import dask
    import dask.array as da
    from dask.base import tokenize

    bags = lazy_sets(sets, name, weighted)
    items = ItemBlocks(bags, name)
    rows = {0: tuple(np.diff(bags.offsets[items.bounds]).tolist()), 1: -1}
    extra = {}
    for key in per_point:
        value = kwargs.get(key)
        if value is None:
            continue
        if not is_dask_array(value):
            value = da.from_array(np.asarray(value), chunks=-1)
        if value.ndim != 2 or value.shape[0] != bags.n_points:
            raise ValueError(
                f"{key} must be one array aligned with the points of the "
                f"lazy sets ({bags.n_points} rows), got shape {value.shape}"
            )
        extra[key] = value.rechunk(rows).to_delayed().reshape(-1)
    probe_kwargs = {**kwargs, **{key: np.zeros((1, kwargs[key].shape[1]))
                                 for key in extra}}
    probe = _probe(fmap, method, Bags(np.zeros((1, bags.dim), float_dtype(
        bags.dtype)), np.array([0, 1])), (), probe_kwargs)
    fmap_key = map_delayed(fmap)
    parts = []
    blocks = items.delayed(f"{name}-blocks", tokenize(items.token()))
    for k, (block, size) in enumerate(zip(blocks, items.chunks, strict=True)):
        block_kwargs = {**kwargs, **{key: value[k] for key, value in extra.items()}}
        task = dask.delayed(_call, pure=True)(
            fmap_key, method.__name__, (block,), block_kwargs)
        parts.append(da.from_delayed(task, shape=(size, probe.shape[1]),
                                     dtype=probe.dtype,
                                     meta=np.empty((0, 0), probe.dtype)))
    return da.concatenate(parts, axis=0)


def fourier_features(fmap, X, n_threads, name="X"):
    """The random Fourier features ``sqrt(2 / t) cos(x W + b)`` of the
    fitted map `fmap` (its ``weights_`` W, ``offsets_`` b and
    ``_weight_norm``) of each row of `X` (an array or a CSR matrix), or
    their mean over each set of a `Bags`; `name` names `X` where its values
    are too large for the frequencies."""
    sparse = scipy.sparse.issparse(X)
    values = X.data if sparse else X.points if isinstance(X, Bags) else X
    check_fourier_range(max_abs(values), fmap._weight_norm, values.dtype, name)
    scale = math.sqrt(2.0 / fmap.n_features_out_)
    if sparse:
        return csr_cos(X.tocsr(), fmap.weights_, fmap.offsets_, scale=scale,
                       n_threads=n_threads)
    if not isinstance(X, Bags):  # each row a set of its own: the fused
        X = Bags(X, np.arange(X.shape[0] + 1))  # product and cosine of sets
    return set_means(X, fmap.weights_, fmap.offsets_, kind="cos", scale=scale,
                     n_threads=n_threads)


def array_fourier_features(fmap, library, points, shares=None):
    """`fourier_features` computed by `library` on the device of `points`,
    differentiably: of each row of `points` (2-D, checked), or with
    `shares` (padded sets, as `sets._array_sets.ArraySets` holds them:
    points (n_sets, n_max, d), shares (n_sets, n_max)), each set's mean,
    by blocks of sets. The fitted W and b move to that device once."""
    xp = library.xp
    dtype = np.float32 if points.dtype == xp.float32 else np.float64
    top = library.scalar(xp.max(xp.abs(points)))
    if top is not None:
        check_fourier_range(top, fmap._weight_norm, dtype, "X")
    W, b = fmap._on_device(library, dtype, "weights_", "offsets_")
    scale = math.sqrt(2.0 / fmap.n_features_out_)
    if shares is None:
        return scale * xp.cos(points @ W + b)
    row_bytes = 2 * points.shape[1] * W.shape[1] * dtype().itemsize
    blocks = [xp.sum(xp.cos(points[a:z, ...] @ W + b) * shares[a:z, :, None], axis=1)
              for a, z in row_blocks(points.shape[0], row_bytes, library)]
    return scale * (blocks[0] if len(blocks) == 1 else xp.concat(blocks))
