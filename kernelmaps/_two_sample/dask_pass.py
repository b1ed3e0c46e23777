"""The block passes of the resampling tests (`blocks`) and the cross
test's blocks as Dask tasks, for Dask input (the samples checked lazily by
`kernelmaps._lazy.lazy_samples`).

A pass (`run_blocks_dask`: one kernel's spec, one batch of resamples) is
the graph of `pass_graph`, its keys named ``mmd_test-<part>-<token>``:

- ``spec``: the spec, its scales and the layout (one key, shipped once);
- ``objects`` k: the pooled objects of the k-th range the tasks read (a
  range of the layout, its pairs' partners in Y, or unpaired objects),
  read from the chunks of the lazy samples as `lazy_gram` reads its
  blocks (`kernelmaps._lazy.ItemBlocks`);
- ``draw`` b: block b of the batch's draws (`RESAMPLE_BLOCK` resamples,
  int8) drawn from its seed, and ``draw-rows`` (b, r) its rows of range r
  (getitem tasks: a task receives only its rows);
- ``block`` t: task t of the layout, `block_task` on its objects and the
  rows of its draws (one task per pair of ranges and batch);
- ``sum`` (k, g): the total of key k after the g-th group of tasks (the
  tasks of one first range and kind, consecutive in the layout: chains of
  at most as many links as ranges), the contributions to a key added in
  the order of the tasks, as `run_blocks` adds them (`add_contribution`):
  the totals, hence the statistics, are those of the threaded pass bit for
  bit, whatever ran where.

Any Dask scheduler runs it: the threaded one by default, a
`distributed.Client` where one is active. On the local schedulers a
callback moves the progress bar at each block task; elsewhere the bar
moves when the pass ends.
"""

import itertools
import uuid
from operator import getitem

import numpy as np

from .._engine import lapack
from .._lazy import ItemBlocks
from .blocks import add_contribution, block_task, task_keys

# The prefix of the keys of a pass.
PREFIX = "mmd_test"


def run_blocks_dask(spec, Z, scales, layout, draws, bar):
    """The totals of one pass (a dict by key, as `run_blocks` gives them)
    and the batch's draws (int8, its blocks side by side), computed as Dask
    tasks (`pass_graph`) by the scheduler in use, the progress bar moved at
    each block task (local schedulers) or at the end."""
    import dask
    from dask.callbacks import Callback

    totals, blocks, name = pass_graph(spec, Z, scales, layout, draws)
    done = []

    def posttask(key, result, dsk, state, worker_id):
        if type(key) is tuple and key[0] == name:
            done.append(key)
            bar.update(1)

    with Callback(posttask=posttask):
        totals, blocks = dask.compute(totals, blocks, optimize_graph=False)
    bar.update(len(layout.tasks) - len(done))
    return totals, np.concatenate(blocks, axis=1)


def pass_graph(spec, Z, scales, layout, draws):
    """The Dask graph of a pass: ``(totals, blocks, name)``, totals a dict
    of the Delayed total of each key, blocks the Delayed draws of each block
    of the batch, name that of the block tasks' keys (see the module's
    docstring). `Z` holds the lazy pooled objects, `draws` a picklable
    function without arguments per block of the batch's draws (int8: a row
    per pooled object, or per pair)."""
    import dask

    token = uuid.uuid4().hex
    names = {part: f"{PREFIX}-{part}-{token}"
             for part in ("spec", "draw", "draw-rows", "block", "sum")}
    context = dask.delayed((spec, scales, layout), name=names["spec"],
                           traverse=False)
    # the bounds of the ranges of objects each task takes (`spec.take`)
    read = {t: list(dict.fromkeys((s.start, s.stop) for s in layout.objects(t)))
            for t in layout.tasks}
    objects = _objects(Z, [b for r in read.values() for b in r], token)
    blocks = [dask.delayed(f, pure=True)(dask_key_name=(names["draw"], b))
              for b, f in enumerate(draws)]
    rows = {(s.start, s.stop): [dask.delayed(getitem, pure=True)(
        block, s, dask_key_name=(names["draw-rows"], b, r))
        for b, block in enumerate(blocks)] for r, s in enumerate(layout.ranges)}

    totals, pending, index = {}, {}, {}

    def add(group):
        """Fold the contributions of a group of tasks into the totals."""
        for key, outputs in pending.items():
            k = index.setdefault(key, len(index))
            totals[key] = dask.delayed(_add, pure=True)(
                totals.get(key), key, *outputs,
                dask_key_name=(names["sum"], k, group))
        pending.clear()

    group = 0
    for t, task in enumerate(layout.tasks):
        if t and task[:2] != layout.tasks[t - 1][:2]:
            add(group)
            group += 1
        drawn = layout.draw_rows(task)
        di, dj = (None, None) if drawn is None else (
            rows[s.start, s.stop] for s in drawn)
        out = dask.delayed(_block, pure=True)(
            context, task, [(b, objects[b]) for b in read[task]], di, dj,
            dask_key_name=(names["block"], t))
        for key in [("flags",), *(key for key, _ in task_keys(layout, task))]:
            pending.setdefault(key, []).append(out)
    add(group)
    return totals, blocks, names["block"]


def _objects(Z, ranges, token):
    """The objects of each of the `ranges` (bounds (start, stop) in the
    lazy pooled objects Z, cutting them into consecutive blocks): a
    Delayed read of its block of Z (`ItemBlocks`: a task per range, keyed
    ``(mmd_test-objects-<token>, k)``)."""
    bounds = np.unique(ranges).tolist()
    blocks = ItemBlocks(Z, None, bounds=bounds).delayed(f"{PREFIX}-objects",
                                                        token)
    return dict(zip(itertools.pairwise(bounds), blocks, strict=True))


def cross_dask(spec, Z, value, rows, cols):
    """The cross test's witness values on Dask: for each range (r0, r1) of
    `rows` (bounds in the pooled objects Z, lazy), ``sum over the ranges
    (c0, c1, weight) of cols of weight * k(Z[r0:r1], Z[c0:c1]).sum(axis=1)``,
    one task per pair of ranges, added in the order of `cols` (as the
    threaded pass); computed by the scheduler in use."""
    import dask

    token = uuid.uuid4().hex
    objects = _objects(Z, [*rows, *(c[:2] for c in cols)], token)
    context = dask.delayed((spec, value), name=f"{PREFIX}-spec-{token}",
                           traverse=False)
    out = []
    for i, r in enumerate(rows):
        parts = [dask.delayed(cross_part, pure=True)(
            context, objects[r], objects[c0, c1], weight,
            dask_key_name=(f"{PREFIX}-cross-{token}", i, j))
            for j, (c0, c1, weight) in enumerate(cols)]
        out.append(dask.delayed(_in_order, pure=True)(
            *parts, dask_key_name=(f"{PREFIX}-witness-{token}", i)))
    return dask.compute(*out, optimize_graph=False)


def cross_part(context, A, B, weight):
    """One block of the cross test: ``weight * k(A, B).sum(axis=1)`` at the
    scale of ``context = (spec, value)``, on one engine and one BLAS
    thread (the threaded pass and the Dask tasks alike)."""
    spec, value = context
    with lapack.one_blas_thread(), np.errstate(over="ignore"):  # (see
        # cross.conclude: sums beyond float64 refused)
        return spec.finite(spec.matrix(A, B, value, 1)).sum(axis=1) * weight


def _in_order(*parts):
    return sum(parts[1:], parts[0])


# -- the tasks ----------------------------------------------------------------


def _block(context, task, objects, draws_i, draws_j):
    """One task of a pass: `block_task` on its ranges of objects, with the
    rows of its draws of each block of the batch (joined), on one thread
    (one engine thread, one BLAS thread) as `run_blocks` runs it."""
    spec, scales, layout = context
    joined = [None if d is None else d[0] if len(d) == 1
              else np.concatenate(d, axis=1) for d in (draws_i, draws_j)]
    with lapack.one_blas_thread():
        # (the objects of a range from the task's, by its bounds)
        return block_task(spec, dict(objects), scales, layout, task, *joined,
                          1, take=lambda objects, s: objects[s.start, s.stop])


def _add(total, key, *outputs):
    """The total of `key` after a group of tasks: their contributions (in
    `outputs`, the tasks' lists) added to the total before them (None:
    none yet) in their order, as `run_blocks` adds them."""
    totals = {} if total is None else {key: total}
    for contributions in outputs:
        value = dict(contributions).get(key)
        if value is None:
            raise RuntimeError(f"a block task gave no contribution to {key}")
        add_contribution(totals, key, value)
    return totals[key]
