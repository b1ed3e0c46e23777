"""Dask input, in one place: recognised (`is_lazy`), checked without
computing it, and computed in blocks of items.

Lazy input: 2-D Dask arrays of points or histograms, or `Bags` whose points
are a Dask array (a 3-D Dask array holds sets of equal size). Shapes,
dtypes and set sizes are checked at once (`lazy_sets`, `lazy_samples`);
the values (finite; histograms non-negative) in the tasks that read them, a
block at a time (`checked_points`), with the words of the checks of input
in memory (`check_rows`, `check_sets`), naming X or Y (and the set).

Three things run on such input: the feature maps' ``transform``
(`kernelmaps._transforms`), the exact kernels' Gram matrices
(`lazy_gram`: one task per pair of blocks of items, each computed by the
kernel's own in-memory function, the blocks cut so that a task stays
within the working-memory budget, `_config.working_memory_bytes`), and
the passes of the two-sample tests on the lazy samples (`lazy_samples`,
then `kernelmaps._two_sample.dask_pass`). The three read their blocks of
sets the same way, the last two their blocks of rows too (`ItemBlocks`: a
task per block, from the chunks it spans).
"""

import functools
import itertools
from operator import getitem

import numpy as np

from ._bags import Bags
from ._config import working_memory_bytes
from ._parallel import resolve_workers
from ._probes import as_float_array, is_dask_array
from ._validation import (
    check_rows,
    check_sets,
    check_unweighted_beside_lazy,
    check_values,
)

__all__ = ["ItemBlocks", "checked_points", "is_lazy", "lazy_gram", "lazy_samples",
           "lazy_sets", "map_delayed"]


def is_lazy(*objects):
    """Whether any of `objects` is a Dask array, or a Bags whose points are
    one."""
    return any(is_dask_array(x) or (isinstance(x, Bags) and is_dask_array(x.points))
               for x in objects)


def map_delayed(obj):
    """`obj` as one Delayed key, so a task graph holds it once."""
    import dask

    return dask.delayed(obj, pure=True, traverse=False)


def _threaded(function, workers, *args):
    """`function` of a `lazy_gram` task's arguments on the task's threads:
    1 for ``workers=None`` (Dask runs the blocks in parallel, and a team of
    threads per block would only compete for the same cores), else
    `workers` resolved on the machine that runs the task."""
    return function(*args, n_threads=1 if workers is None
                    else resolve_workers(workers))


def checked_points(points, name, nonnegative=False, offsets=None, first=0,
                   block_info=None):
    """A block of the points of the lazy rows or sets `name`, in a task,
    checked by `check_values` as `check_rows` and `check_sets` check them
    in memory: for sets, `offsets` are those of the sets from the block's
    first point and `first` the index of its first set; or, in
    ``map_blocks`` (which gives `block_info`), the offsets of all the
    sets."""
    points = np.ascontiguousarray(points)
    start = 0 if block_info is None else block_info[0]["array-location"][0][0]
    check_values(points, name, nonnegative=nonnegative, offsets=offsets,
                 start=start, first=first)
    return points


def lazy_sets(sets, name, weighted):
    """The lazy sets `sets` as a Bags of Dask points (one chunk of
    columns), the number and sizes of its sets checked by `check_sets`
    (not its values).
    Weighted sets are refused (the tasks' `Bags` carry no weights): by a
    kernel or map without weights (`weighted` False) as in memory, else as
    weighted lazy sets."""
    bags = check_sets(sets, name, lazy=True, weighted=weighted)
    return Bags(bags.points.rechunk({1: -1}), bags.offsets)


# ---------------------------------------------------- the tests' samples


def lazy_samples(spec, X, Y):
    """X and Y (one of them lazy) checked without computing them, as the
    objects `spec.pool` takes: Dask arrays of float rows (one chunk of
    columns; points of X and Y in their common dtype), or Bags of Dask
    points; their values are checked as their chunks are read. A sample in
    memory is checked as the spec checks it, then made lazy. (Their sizes
    are checked by the caller.)"""
    if spec.kind == "sets":
        return tuple(_sample_sets(spec, A, name) for A, name in ((X, "X"),
                                                                 (Y, "Y")))
    points = spec.kind == "points"
    arrays = [_sample_rows(A, name, "vectors" if points else "histograms")
              for A, name in ((X, "X"), (Y, "Y"))]
    if points and arrays[0].shape[1] != arrays[1].shape[1]:
        raise ValueError(f"X and Y must have the same number of features, "
                         f"got {arrays[0].shape[1]} and {arrays[1].shape[1]}")
    if points:  # in their common dtype
        dtype = np.result_type(*(A.dtype for A in arrays))
        arrays = [A.astype(dtype) for A in arrays]
    return tuple(A.map_blocks(checked_points, name, not points, dtype=A.dtype)
                 for A, name in zip(arrays, ("X", "Y"), strict=True))


def _sample_rows(A, name, what):
    """`A` as a Dask array of float rows, checked as `check_rows` checks
    lazy rows (an array in memory wrapped as one chunk)."""
    import dask.array as da

    if not is_dask_array(A):  # (its values are checked in the tasks too)
        A = da.from_array(as_float_array(A, name), chunks=-1)
    if A.ndim == 2 and any(np.isnan(size) for size in A.shape):
        raise ValueError(f"{name} is a Dask array of unknown shape: compute "
                         f"its chunk sizes first ({name}.compute_chunk_sizes())")
    return check_rows(A, name, lazy=True, what=what).rechunk({1: -1})


def _sample_sets(spec, A, name):
    """The sets `A` as a Bags of Dask points (`lazy_sets`), with the sizes
    the spec needs, its points checked as they are read; sets in memory
    checked by the spec."""
    import dask.array as da

    if not is_lazy(A):
        bags = spec.check(A, name)
        check_unweighted_beside_lazy(bags, name)
        return Bags(da.from_array(bags.points, chunks=(-1, -1)), bags.offsets)
    bags = lazy_sets(A, name, spec.weighted)
    spec.check_sizes(bags, name)
    return Bags(bags.points.map_blocks(
        checked_points, name, False, map_delayed(bags.offsets),
        dtype=bags.points.dtype), bags.offsets)


# ------------------------------------------------------------ the Gram


def lazy_gram(block, X, Y=None, *, dtype, workers, both=False, prepare=None,
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
    block of items is read and checked (finite; with `nonnegative` not
    negative) in its own task (`ItemBlocks`), and arrives in the others as
    a `Bags` or an ndarray.

    ``block(x, y[, px, py])`` computes one block of the output, an array of
    `dtype` of shape ``lead + (len(x), len(y))``; ``y`` is None for a
    diagonal block of ``Y=None``, computed as `x` against itself. With
    ``Y=None`` each unordered pair of blocks is one task: block (J, I) is the
    transpose of block (I, J), or, with `both` (a kernel that is not
    symmetric), the second output of ``block(x_I, x_J[, px, py],
    both=True)``, which returns blocks (I, J) and (J, I) from one
    computation. ``prepare(x)``, when given, runs once per block of items
    (of `X`, and of `Y`), and its outputs ``px``, ``py`` (``py`` None for a
    diagonal block) are passed to `block`. Both functions take the task's
    threads too, the keyword ``n_threads`` (1, or `workers` where given),
    and are those of the call in memory (one block is the whole input),
    picklable (for the distributed scheduler) and deterministic. `name`
    prefixes the keys.
    """
    import dask.array as da
    from dask.base import tokenize

    symmetric = Y is None
    both = both and symmetric
    pair = functools.partial(block, both=True) if both else None
    block, pair, prepare = (None if f is None else functools.partial(
        _threaded, f, workers) for f in (block, pair, prepare))

    budget = working_memory_bytes()
    out_values = int(np.prod(lead, dtype=np.int64)) * (2 if both else 1)
    per_out, per_in = copies[0] * out_values * 8, copies[1] * 8
    x = ItemBlocks(X, "X", nonnegative)
    y = x if symmetric else ItemBlocks(Y, "Y", nonnegative)
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
            two = both and not diagonal
            tasks[(pairs_name, i, j)] = (pair if two else block, *args)
            if two:
                outputs[(out_name, *zeros, i, j)] = (getitem, (pairs_name, i, j), 0)
                outputs[(out_name, *zeros, j, i)] = (getitem, (pairs_name, i, j), 1)
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
    chunks = (*((n,) for n in lead), x.chunks, y.chunks)
    return da.Array(_graph(layers, deps, x.array, y.array), out_name,
                    chunks=chunks, dtype=dtype,
                    meta=np.empty((0,) * len(chunks), dtype))


def _transposed(block):
    """Block (J, I) of a symmetric matrix from block (I, J)."""
    return np.ascontiguousarray(np.swapaxes(block, -1, -2))


def _graph(layers, deps, *arrays):
    """The graph of `layers` (and their dependencies `deps`) over the
    graphs of the Dask `arrays`."""
    from dask.highlevelgraph import HighLevelGraph

    layers, deps = dict(layers), dict(deps)
    for array in arrays:
        graph = array.__dask_graph__()
        layers.update(graph.layers)
        deps.update(graph.dependencies)
    return HighLevelGraph(layers, deps)


class ItemBlocks:
    """A lazy collection of items cut into blocks of consecutive items,
    each read from the row chunks it spans in one task (one layer of the
    graph: `add_layers`), checked as `checked_points` checks it (naming
    `name`; None: not checked, its values checked upstream), as an ndarray
    or a `Bags`: the blocks of `lazy_gram` (`bounds` None: from the row
    chunks, then split to the memory budget, `plan`), of the maps'
    transform of lazy sets (from the row chunks, `delayed`) and of the
    block passes of the two-sample tests (`bounds`: their ranges of
    objects, `delayed`).

    `data` holds sets (a `Bags` of points, without weights) or rows (a 2-D
    array), a Dask array or in memory (then one chunk); `bounds` are the
    items before each block, ``0`` to the number of items."""

    def __init__(self, data, name, nonnegative=False, bounds=None):
        import dask.array as da

        self.name, self.nonnegative = name, nonnegative
        if isinstance(data, Bags):  # (the blocks are rebuilt without weights)
            check_unweighted_beside_lazy(data, name)
            self.offsets, points, self.width = data.offsets, data.points, data.dim
        else:
            self.offsets, points, self.width = None, data, data.shape[1]
        if not is_dask_array(points):  # the side in memory: one chunk
            points = da.from_array(points, chunks=(max(points.shape[0], 1), -1))
        self.array = points.rechunk({1: -1})
        self.rows = np.cumsum((0, *self.array.chunks[0]))  # the chunks' bounds
        if bounds is None:  # the first item at or after each chunk's start
            bounds = np.unique(self.rows if self.offsets is None
                               else np.searchsorted(self.offsets, self.rows))
        self.bounds = np.asarray(bounds, dtype=np.int64)

    def plan(self, per_out, per_in, budget):
        """Split the blocks where one would need more than `budget` bytes
        (a task of two such blocks then needs at most `budget`)."""
        # the input values before each item
        values = self.width * (np.arange(self.bounds[-1] + 1, dtype=np.int64)
                               if self.offsets is None else self.offsets)

        def cost(start, stop):
            n = stop - start
            return per_out * n * n + 2 * per_in * (values[stop] - values[start])

        bounds = [0]
        for start, stop in zip(self.bounds[:-1], self.bounds[1:], strict=True):
            bounds += _split(start, stop, cost, budget, self._too_large)[1:]
        self.bounds = np.array(bounds, dtype=np.int64)

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

    def add_layers(self, layers, deps, prefix, token, prepare=None):
        """The layer of the blocks read (and of their `prepare` outputs)."""
        self.layer = f"{prefix}-{token}"
        rows = self.bounds if self.offsets is None else self.offsets[self.bounds]
        tasks = {}
        for k in range(self.n_blocks):
            start, stop = int(rows[k]), int(rows[k + 1])
            spans = range(np.searchsorted(self.rows, start, side="right") - 1,
                          np.searchsorted(self.rows, stop))
            cuts = [slice(max(start - self.rows[c], 0),
                          min(stop, self.rows[c + 1]) - self.rows[c])
                    for c in spans]
            local, first = None, int(self.bounds[k])
            if self.offsets is not None:  # the block's sets, as a Bags
                local = self.offsets[first:self.bounds[k + 1] + 1] - start
            tasks[(self.layer, k)] = (
                _read_block, [(self.array.name, c, 0) for c in spans], cuts,
                self.name, self.nonnegative, local, first)
        layers[self.layer] = tasks
        deps[self.layer] = {self.array.name}
        if prepare is not None:
            self.aux_layer = f"{prefix}-prepared-{token}"
            layers[self.aux_layer] = {(self.aux_layer, k): (prepare, self.key(k))
                                      for k in range(self.n_blocks)}
            deps[self.aux_layer] = {self.layer}

    def delayed(self, prefix, token):
        """The blocks read, as a Delayed each."""
        from dask.delayed import Delayed

        layers, deps = {}, {}
        self.add_layers(layers, deps, prefix, token)
        graph = _graph(layers, deps, self.array)
        return [Delayed(self.key(k), graph, layer=self.layer)
                for k in range(self.n_blocks)]

    def key(self, k):
        return (self.layer, k)

    def aux(self, k):
        return (self.aux_layer, k)


def _read_block(chunks, cuts, name, nonnegative, offsets, first):
    """A block of items in its task: the rows `cuts` of the `chunks` it
    spans, joined, checked (`checked_points`; `name` None: not), as an
    ndarray, or a `Bags` of the sets of `offsets` (from its first point)
    whose first is the set `first`."""
    parts = [chunk[cut] for chunk, cut in zip(chunks, cuts, strict=True)]
    points = np.ascontiguousarray(parts[0] if len(parts) == 1
                                  else np.concatenate(parts))
    if name is not None:
        checked_points(points, name, nonnegative, offsets, first)
    return points if offsets is None else Bags(points, offsets)


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
