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
row chunks of the points are moved to the nearest set boundary, and the
output is chunked by sets accordingly.

The exact kernels (Gram matrices between sets or rows) hand Dask input to
`lazy_gram`: a lazy Dask array of blocks, one task per block of rows
against a block of columns (per unordered pair of blocks for ``Y=None``),
each computed by the kernel's own trusted function on values checked in
the task, the blocks cut so that a task stays within the working-memory
budget (`_config.working_memory_bytes`).
"""

import functools
import inspect
import itertools

import numpy as np
import scipy.sparse

from ._bags import Bags, pack_sets
from ._base import check_weights_kept
from ._config import working_memory_bytes
from ._engine.schedule import MAP_VALUE_WORK, run_chunked
from ._parallel import check_progress, resolve_workers
from ._probes import (
    all_finite,
    any_negative,
    as_float_array,
    float_dtype,
    is_dask_array,
)
from ._validation import check_sets, check_unweighted_beside_lazy

__all__ = ["blocked_rows", "blocked_sets", "is_lazy", "lazy_gram", "map_delayed",
           "task_threads"]


def is_lazy(x):
    """Whether `x` is a Dask array, or a Bags whose points are one."""
    return is_dask_array(x) or (isinstance(x, Bags) and is_dask_array(x.points))


def map_delayed(obj):
    """`obj` as one Delayed key, so a task graph holds it once."""
    import dask

    return dask.delayed(obj, pure=True, traverse=False)


def task_threads(workers):
    """The threads of one Dask task: 1 for ``workers=None`` (Dask runs the
    blocks in parallel, and a team of threads per block would only compete
    for the same cores), else `workers` resolved on the machine that runs
    the task."""
    return 1 if workers is None else resolve_workers(workers)


def _threaded(function, workers, *args):
    """`function` of a `lazy_gram` task's arguments on its threads."""
    return function(*args, n_threads=task_threads(workers))


def _call(fmap, name, args, kwargs):
    """The map's method on one block: a Dask task, on one thread unless
    `workers` was given (Dask runs the blocks in parallel, and a team of
    threads per block would only compete for the same cores)."""
    if kwargs.get("workers") is None:
        kwargs = {**kwargs, "workers": 1}
    return getattr(fmap, name)(*args, **kwargs)


def blocked_rows(method):
    """Decorate ``transform(self, X, **kwargs)`` of a map on rows: a Dask `X`
    gives a lazy Dask array chunked as the rows of `X`, and
    ``progress=True`` a progress bar over blocks of rows."""

    @functools.wraps(method)
    def transform(self, X, *args, progress=False, **kwargs):
        if not is_dask_array(X):
            if check_progress(progress):
                return _rows_in_blocks(self, method, X, args, kwargs)
            return method(self, X, *args, **kwargs)
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


def blocked_sets(per_point=(), weighted=False):
    """Decorate ``transform(self, sets, ...)`` of a map on sets: a lazy
    `sets` gives a lazy Dask array chunked by sets. Keyword arguments named
    in `per_point` hold one row per point (a NumPy or Dask array aligned with
    the points) and are split as the points are. `weighted`: the map takes
    weighted sets (`check_sets`), whose blocks keep their weights; weighted
    lazy sets are refused. A callable `weighted` is asked with the map
    (``weighted(self)``), for a map whose kernel decides (`NystroemMap`)."""

    def decorate(method):
        signature = inspect.signature(method)
        name = list(signature.parameters)[1]  # of the sets, for the errors

        @functools.wraps(method)
        def transform(self, sets, *args, progress=False, **kwargs):
            check_weights_kept(self, sets, name)
            lazy = is_lazy(sets)
            if not (lazy or check_progress(progress)):
                return method(self, sets, *args, **kwargs)
            # Everything by keyword, to find the per-point arguments.
            bound = signature.bind(self, sets, *args, **kwargs).arguments
            kwargs = {k: v for k, v in list(bound.items())[2:]}
            takes = weighted(self) if callable(weighted) else weighted
            if lazy:
                return _lazy_sets(self, method, sets, kwargs, per_point, name,
                                  takes)
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


def _lazy_sets(fmap, method, sets, kwargs, per_point, name, weighted):
    import dask
    import dask.array as da

    bags = pack_sets(sets, name)
    if bags.weights is not None:
        # Refused: by a map without weights as in memory, else as lazy
        # (the blocks below would drop the weights).
        check_sets(bags, name, lazy=True, weighted=weighted)
    offsets = bags.offsets
    sizes = np.diff(offsets)
    if len(bags) == 0:
        raise ValueError(f"{name} must contain at least one set")
    if np.any(sizes == 0):
        raise ValueError(f"{name}[{int(np.argmin(sizes))}] is empty")
    points = bags.points.rechunk({1: -1})
    # Block boundaries: the first set starting at or after each row chunk
    # boundary of the points.
    row_bounds = np.cumsum((0, *points.chunks[0]))
    set_bounds = np.unique(np.searchsorted(offsets, row_bounds))
    points = points.rechunk({0: tuple(np.diff(offsets[set_bounds]).tolist())})
    extra = {}
    for key in per_point:
        value = kwargs.get(key)
        if value is None:
            continue
        if not is_dask_array(value):
            value = da.from_array(np.asarray(value), chunks=-1)
        if value.ndim < 1 or value.shape[0] != bags.n_points:
            raise ValueError(
                f"{key} must be one array aligned with the points of the "
                f"lazy sets ({bags.n_points} rows), got shape {value.shape}"
            )
        chunks = {0: points.chunks[0], **{i: -1 for i in range(1, value.ndim)}}
        extra[key] = value.rechunk(chunks).to_delayed().reshape(-1)
    probe_kwargs = dict(kwargs)
    for key in extra:
        probe_kwargs[key] = np.zeros((1, *kwargs[key].shape[1:]))
    probe = _probe(fmap, method,
                   [np.zeros((1, bags.dim), float_dtype(bags.dtype))], (),
                   probe_kwargs)
    fmap_key = map_delayed(fmap)
    blocks = points.to_delayed().reshape(-1)
    parts = []
    for k, block in enumerate(blocks):
        first, last = set_bounds[k], set_bounds[k + 1]
        local = offsets[first : last + 1] - offsets[first]
        block_kwargs = dict(kwargs)
        for key, value in extra.items():
            block_kwargs[key] = value[k]
        task = dask.delayed(_call, pure=True)(
            fmap_key, method.__name__,
            (dask.delayed(Bags, pure=True)(block, local),), block_kwargs,
        )
        parts.append(da.from_delayed(task, shape=(last - first, probe.shape[1]),
                                     dtype=probe.dtype,
                                     meta=np.empty((0, 0), probe.dtype)))
    return da.concatenate(parts, axis=0)


# ---------------------------------------------------------------- lazy Gram


def lazy_gram(block, X, Y=None, *, dtype, workers, pair=None, prepare=None,
              lead=(), nonnegative=False, copies=(4, 4), name="gram"):
    """The matrix between the items of `X` and `Y` (None: `X` against
    itself) as a lazy Dask array, computed in blocks by trusted functions.

    `X` and `Y` are validated (without their values) sets, a `Bags` whose
    points are a Dask array or in memory, or rows, a 2-D Dask array or
    ndarray, of float32 or float64, not both in memory. Blocks of items
    follow the row chunks of `X` and `Y` (moved to set boundaries), split
    where a task would need more than the working-memory budget
    (`working_memory_bytes`, read here, once) by the model: ``8 *
    (copies[0] * n_out + copies[1] * n_in)`` bytes for a task of ``n_out``
    output values and ``n_in`` input values (both blocks of items). Each
    block of items is checked (finite; with `nonnegative` not negative)
    in its own task, and arrives in the others as a `Bags` or an ndarray.

    ``block(x, y[, px, py])`` computes one block of the output, an array of
    `dtype` of shape ``lead + (len(x), len(y))``; ``y`` is None for a
    diagonal block of ``Y=None``, computed as `x` against itself. With
    ``Y=None`` each unordered pair of blocks is one task: block (J, I) is the
    transpose of block (I, J), or, when `pair` is given, the second output
    of ``pair(x_I, x_J[, px, py])``, which returns blocks (I, J) and (J, I)
    from one computation (a kernel that is not symmetric). ``prepare(x)``,
    when given, runs once per block of items (of `X`, and of `Y`), and its
    outputs ``px``, ``py`` (``py`` None for a diagonal block) are passed to
    `block` and `pair`. Each function takes the task's threads too, the
    keyword ``n_threads`` (`task_threads` of `workers`). The functions must
    be picklable (for the distributed scheduler) and deterministic. `name`
    prefixes the keys.
    """
    from dask.base import tokenize

    block, pair, prepare = (None if f is None else functools.partial(
        _threaded, f, workers) for f in (block, pair, prepare))

    budget = working_memory_bytes()
    symmetric = Y is None
    out_values = int(np.prod(lead, dtype=np.int64)) * (2 if pair is not None else 1)
    per_out, per_in = copies[0] * out_values * 8, copies[1] * 8
    x = _GramSide(X, "X", nonnegative)
    y = x if symmetric else _GramSide(Y, "Y", nonnegative)
    for side in (x,) if symmetric else (x, y):
        side.plan(per_out, per_in, budget)
    token = tokenize(block, pair, prepare, tuple(lead), np.dtype(dtype).str,
                     nonnegative, x.token(), None if symmetric else y.token())
    out_name = f"{name}-{token}"
    pairs_name = f"{name}-blocks-{token}"
    layers, deps = {}, {}
    for side, tag in [(x, "x"), (y, "y")][:1 if symmetric else 2]:
        side.add_layers(layers, deps, f"{name}-{tag}", token, prepare)

    tasks, outputs = {}, {}
    zeros = (0,) * len(lead)
    for i in range(x.n_blocks):
        for j in range(i if symmetric else 0, y.n_blocks):
            diagonal = symmetric and i == j
            args = [x.key(i), None if diagonal else y.key(j)]
            if prepare is not None:
                args += [x.aux(i), None if diagonal else y.aux(j)]
            both = symmetric and not diagonal and pair is not None
            tasks[(pairs_name, i, j)] = (pair if both else block, *args)
            if both:
                outputs[(out_name, *zeros, i, j)] = (_first, (pairs_name, i, j))
                outputs[(out_name, *zeros, j, i)] = (_second, (pairs_name, i, j))
            else:
                outputs[(out_name, *zeros, i, j)] = (pairs_name, i, j)
                if symmetric and not diagonal:
                    outputs[(out_name, *zeros, j, i)] = (_transposed,
                                                         (pairs_name, i, j))
    layers[pairs_name] = tasks
    deps[pairs_name] = {x.layer, y.layer} | (
        {x.aux_layer, y.aux_layer} if prepare is not None else set())
    layers[out_name] = outputs
    deps[out_name] = {pairs_name}
    return _dask_array(layers, deps, (x, y), out_name,
                       (*((n,) for n in lead), x.chunks, y.chunks), dtype)


def _dask_array(layers, deps, sides, out_name, chunks, dtype):
    import dask.array as da
    from dask.highlevelgraph import HighLevelGraph

    graphs = [side.array.__dask_graph__() for side in sides]
    for graph in graphs:
        layers.update(graph.layers)
        deps.update(graph.dependencies)
    graph = HighLevelGraph(layers, deps)
    return da.Array(graph, out_name, chunks=chunks, dtype=dtype,
                    meta=np.empty((0,) * len(chunks), dtype))


def _first(both):
    return both[0]


def _second(both):
    return both[1]


def _transposed(block):
    """Block (J, I) of a symmetric matrix from block (I, J)."""
    return np.ascontiguousarray(np.swapaxes(block, -1, -2))


class _GramSide:
    """One input of `lazy_gram`: its items (sets or rows), its blocks of
    items and the keys of their checked values in the graph."""

    def __init__(self, data, name, nonnegative):
        import dask.array as da

        self.name, self.nonnegative = name, nonnegative
        if isinstance(data, Bags):  # (the blocks are rebuilt without weights)
            check_unweighted_beside_lazy(data, name)
            self.offsets = data.offsets
            points = data.points
            self.width = data.dim
        else:
            self.offsets = None
            points = data
            self.width = data.shape[1]
        if not is_dask_array(points):  # the side in memory: one chunk
            points = da.from_array(points, chunks=(max(points.shape[0], 1), -1))
        self.array = points.rechunk({1: -1})
        n_items = len(data) if self.offsets is not None else points.shape[0]
        # The first item starting at or after each row chunk boundary.
        rows = np.cumsum((0, *self.array.chunks[0]))
        if self.offsets is not None:
            self.bounds = np.unique(np.searchsorted(self.offsets, rows))
        else:
            self.bounds = np.unique(rows)
        assert self.bounds[0] == 0 and self.bounds[-1] == n_items

    def item_values(self):
        """The input values before each item, ``n_items + 1`` entries."""
        if self.offsets is not None:
            return self.offsets * self.width
        return np.arange(self.bounds[-1] + 1, dtype=np.int64) * self.width

    def plan(self, per_out, per_in, budget):
        """Split the blocks where one would need more than `budget` bytes
        (a task of two such blocks then needs at most `budget`), and cut the
        array at the blocks."""
        values = self.item_values()

        def cost(start, stop):
            n = stop - start
            return per_out * n * n + 2 * per_in * (values[stop] - values[start])

        bounds = [0]
        for start, stop in zip(self.bounds[:-1], self.bounds[1:], strict=True):
            bounds += _split(start, stop, cost, budget, self._too_large)[1:]
        self.bounds = np.array(bounds, dtype=np.int64)
        sizes = np.diff(self.bounds)
        rows = sizes if self.offsets is None else np.diff(self.offsets[self.bounds])
        self.array = self.array.rechunk({0: tuple(rows.tolist()), 1: -1})

    def _too_large(self, item, need, budget):
        if self.offsets is not None:
            size = self.offsets[item + 1] - self.offsets[item]
            what = f"{self.name}[{item}] has {size} points"
        else:
            what = f"a row of {self.name} has {self.width} values"
        raise ValueError(
            f"{what}: one block of it needs {need / 2**20:.0f} MiB, more than "
            f"the working-memory budget ({budget / 2**20:.0f} MiB); raise it "
            f"with kernelmaps.set_config(working_memory=...)"
        )

    @property
    def n_blocks(self):
        return len(self.bounds) - 1

    @property
    def chunks(self):
        return tuple(np.diff(self.bounds).tolist())

    def token(self):
        return (self.array.name, self.bounds.tobytes(),
                None if self.offsets is None else self.offsets.tobytes())

    def add_layers(self, layers, deps, prefix, token, prepare):
        """The layer of checked blocks (and of their `prepare` outputs)."""
        self.layer = f"{prefix}-{token}"
        tasks = {}
        for k in range(self.n_blocks):
            first, stop = int(self.bounds[k]), int(self.bounds[k + 1])
            local = (None if self.offsets is None
                     else self.offsets[first:stop + 1] - self.offsets[first])
            tasks[(self.layer, k)] = (_checked_block, (self.array.name, k, 0),
                                      local, self.name, first, self.nonnegative)
        layers[self.layer] = tasks
        deps[self.layer] = {self.array.name}
        if prepare is not None:
            self.aux_layer = f"{prefix}-prepared-{token}"
            layers[self.aux_layer] = {(self.aux_layer, k): (prepare, self.key(k))
                                      for k in range(self.n_blocks)}
            deps[self.aux_layer] = {self.layer}

    def key(self, k):
        return (self.layer, k)

    def aux(self, k):
        return (self.aux_layer, k)


def _split(start, stop, cost, budget, too_large):
    """Boundaries from `start` to `stop` of blocks of items of at most
    `budget` ``cost(a, b)`` each (a cost that grows with ``b - a``): the
    fewest greedy blocks, then as many of equal numbers of items if they
    fit too. ``too_large(item, cost, budget)`` raises for an item that does
    not fit alone."""
    if cost(start, stop) <= budget:
        return [start, stop]
    bounds = [start]
    while bounds[-1] < stop:
        a = bounds[-1]
        if cost(a, a + 1) > budget:
            too_large(a, cost(a, a + 1), budget)
        lo, hi = a + 1, stop  # the largest b in [lo, hi] that fits
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if cost(a, mid) <= budget:
                lo = mid
            else:
                hi = mid - 1
        bounds.append(lo)
    q = len(bounds) - 1
    even = [start + (stop - start) * p // q for p in range(q + 1)]
    if all(cost(a, b) <= budget for a, b in itertools.pairwise(even)):
        return even
    return bounds


def _checked_block(values, offsets, name, first, nonnegative):
    """One block of items of a `lazy_gram` input, in a task: the sets (a
    `Bags`, `offsets` given) or rows, checked as the in-memory functions
    check them (the same errors, naming `name` and, for sets, the index of
    the set in the whole input)."""
    values = np.asarray(values)
    if offsets is not None:
        bags = Bags(values, offsets)
        if not all_finite(bags.points):
            bad = np.flatnonzero(~np.isfinite(bags.points).all(axis=1))[0]
            i = np.searchsorted(offsets, bad, side="right") - 1
            raise ValueError(f"{name}[{first + i}] contains NaN or infinity")
        return bags
    values = np.ascontiguousarray(values)
    if not all_finite(values):
        raise ValueError(f"{name} contains NaN or infinity")
    if nonnegative and any_negative(values):
        raise ValueError(f"{name} contains negative values; histograms must be >= 0")
    return values
