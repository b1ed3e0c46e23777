"""The passes of the out-of-core models over their data: the blocks of
rows (or sets) read one at a time, or the blocks of a Dask array reduced
in parallel; each block mapped, reduced to float64 moments (`_moments`)
and dropped. Moments of two blocks combine exactly, in any order, so the
same code serves a stream of blocks read once (`reduce_moments`) and the
blocks of a Dask array on a cluster (`_reduce_dask`).
"""

import numpy as np
import scipy.sparse

from .. import _array_api
from .._bags import Bags
from .._engine import lapack
from .._engine.progress import progress_bar
from .._lazy import is_lazy
from .._probes import is_dask_array
from .._validation import check_rows, check_scalar
from ._moments import DeviceMoments, add_all, block_moments, on_host, reduce_tree

__all__ = ["check_maps", "check_moments", "check_n_components", "features",
           "host_features", "in_library_of", "reduce_moments", "split_blocks"]


def _block_stats(X, y, fmaps, pcas, block_name, map_name):
    """Moments of one block: of each map's features (with `y` if given) when
    `pcas` is None, else of the PCA projections of all maps side by side.

    The block is `block_name` in messages; a map that refuses it raises an
    error naming both (the map is argument `map_name`, the block's data are
    its X), and a block without a map is checked as features."""
    Z = []
    for i, f in enumerate(fmaps):
        try:
            Z.append(features(f, X, None, block_name))
        except (ValueError, TypeError) as err:
            if f is None:
                raise
            label = map_name if len(fmaps) == 1 else f"{map_name}[{i}]"
            raise type(err)(
                f"{label} cannot transform {block_name} (its X): {err}"
            ) from None
    with np.errstate(over="ignore", invalid="ignore"):  # see check_moments
        if pcas is not None:
            projected = [_coordinates(p, z) for p, z in zip(pcas, Z, strict=True)]
            library = _computing_library(projected[0])
            Z = [library.xp.concat(projected, axis=1) if library is not None
                 else np.hstack([host_features(z) for z in projected])]
        library = _computing_library(Z[0])
        if library is not None:  # (on their device: only the moments come back)
            return [DeviceMoments(library, z, y) for z in Z]
        return block_moments([host_features(z) for z in Z],
                             None if y is None else host_features(y))


def _computing_library(Z):
    """The library of the features Z where it computes them and their
    values can be read (their moments computed there), else None (NumPy's,
    on the host)."""
    if not _array_api.is_foreign(Z):
        return None
    library = _array_api.library_of(Z=Z)
    return library if library.native and library.readable(Z) else None


def host_features(Z):
    """Features Z as the moments read them: an array of another library
    (`kernelmaps._array_api`) copied to the host (its values), anything
    else as it is."""
    library = _array_api.library_of(Z=Z)
    return Z if library is None else library.to_numpy(Z)


def _check_y(y, n_rows, name, library=None):
    """`y` (of any array library: its values) as float64 (n_rows, c); on
    its device where `library` (its `ArrayLibrary`) is given."""
    if library is not None:
        return _check_device_y(library, y, n_rows, name)
    y = np.asarray(host_features(y))
    if y.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {y.dtype}")
    if y.ndim not in (1, 2) or y.shape[0] != n_rows:
        raise ValueError(
            f"{name} has shape {y.shape}, but its block of data has {n_rows} rows"
        )
    y = y.astype(np.float64)
    y = y[:, None] if y.ndim == 1 else y
    if not np.isfinite(y).all():
        raise ValueError(f"{name} contains NaN or infinity")
    return y


def _check_device_y(library, y, n_rows, name):
    """`_check_y` of targets `y` of `library`, on their device, without
    their gradient."""
    xp = library.xp
    if not xp.isdtype(y.dtype, ("bool", "integral", "real floating")):
        raise TypeError(f"{name} must hold real numbers, got dtype {y.dtype}")
    if y.ndim not in (1, 2) or y.shape[0] != n_rows:
        raise ValueError(f"{name} has shape {tuple(y.shape)}, but its block of "
                         f"data has {n_rows} rows")
    y = xp.astype(library.host_values(y), xp.float64)
    y = xp.reshape(y, (n_rows, 1)) if y.ndim == 1 else y
    if not library.all_finite(y):
        raise ValueError(f"{name} contains NaN or infinity")
    return y


def _targets_library(y, y_name, chunks, name):
    """The `ArrayLibrary` of targets `y` (argument `y_name`) that stay on
    their device: where they and the data `chunks` (argument `name`) are
    of a library that computes (their moments reduced there), else None
    (their values read on the host). Data and targets of two libraries or
    devices (NumPy aside) are refused, naming both."""
    points = getattr(chunks, "points", chunks)
    if not (_array_api.is_foreign(y) and _array_api.is_foreign(points)):
        return None
    library = _array_api.library_of(**{name: points, y_name: y})
    return library if library.native and library.readable(y) else None


def _n_rows(X, name="chunks"):
    """Rows (or sets) of the block `X` (argument `name`)."""
    if isinstance(X, (Bags, list, tuple)):
        return len(X)
    shape = getattr(X, "shape", None)
    if not shape:
        raise TypeError(
            f"{name} must be an array, a sparse matrix or a collection of sets, "
            f"got {type(X).__name__}"
        )
    return shape[0]


# Rows (or sets) per block when one in-memory data set is given.
OUTOFCORE_BLOCK_ROWS = 8192


def split_blocks(chunks, name):
    """The blocks of `chunks` and their number (None if unknown): slices of
    consecutive rows (or sets) when it is one array, sparse matrix or Bags,
    else its items. An array of another library (`kernelmaps._array_api`),
    or a Bags of its points, is one array, its blocks mapped there where
    the library computes (else NumPy's view of it, as NumPy's)."""
    if _array_api.is_foreign(getattr(chunks, "points", chunks)):
        library = _array_api.library_of_objects(**{name: chunks})
        if not library.native:
            chunks = _array_api.numpy_objects(library, chunks)
    if (isinstance(chunks, (np.ndarray, Bags)) or scipy.sparse.issparse(chunks)
            or _array_api.is_foreign(chunks)):
        if scipy.sparse.issparse(chunks):
            chunks = scipy.sparse.csr_matrix(chunks)
        n = _n_rows(chunks)
        starts = range(0, n, OUTOFCORE_BLOCK_ROWS)
        if _array_api.is_foreign(chunks):  # (the array API's index of rows)
            return ((chunks[i : min(i + OUTOFCORE_BLOCK_ROWS, n), ...]
                     for i in starts), len(starts))
        return (chunks[i : i + OUTOFCORE_BLOCK_ROWS] for i in starts), len(starts)
    if isinstance(chunks, (str, bytes)) or not hasattr(chunks, "__iter__"):
        raise TypeError(
            f"{name} must be an iterable of blocks of rows, an array or a Dask "
            f"array, got {type(chunks).__name__}"
        )
    return chunks, getattr(chunks, "__len__", lambda: None)()


class _Targets:
    """Target blocks aligned with data blocks: slices of one array, or the
    items of an iterable of blocks."""

    def __init__(self, y, name, library=None):
        self.name, self.start, self.ndim, self.width = name, 0, None, None
        self.library = library  # (where the targets stay on their device)
        if library is None:
            y = host_features(y)  # (targets of another library: their values)
        whole = library is not None or isinstance(y, np.ndarray) or (
            isinstance(y, (list, tuple)) and len(y) > 0
            and np.ndim(host_features(y[0])) == 0)
        if whole:
            self.whole, self.items = (np.asarray(y) if library is None else y), None
            if self.whole.ndim == 0:
                raise ValueError(f"{name} must be 1-D or 2-D, got a 0-D array")
        elif isinstance(y, (str, bytes)) or not hasattr(y, "__iter__"):
            raise TypeError(
                f"{name} must be an array or an iterable of blocks, got "
                f"{type(y).__name__}"
            )
        else:
            self.whole, self.items = None, iter(y)

    def next(self, n, k):
        if self.items is None:
            stop = min(self.start + n, self.whole.shape[0])  # (array API)
            block = self.whole[self.start : stop, ...]
            name = self.name
            if block.shape[0] < n:
                raise ValueError(f"{name} has {self.whole.shape[0]} rows, fewer "
                                 f"than the data")
        else:
            block = next(self.items, None)
            name = f"{self.name} block {k}"
            if block is None:
                raise ValueError(f"{self.name} has fewer blocks than the data")
        self.start += n
        self.ndim = np.ndim(block) if self.ndim is None else self.ndim
        y = _check_y(block, n, name, self.library)
        if self.width is not None and y.shape[1] != self.width:
            raise ValueError(
                f"{name} has {y.shape[1]} target column(s), the first block "
                f"{self.width}: the blocks must have the same number of columns"
            )
        self.width = y.shape[1]
        return y

    def finish(self):
        if self.items is None:
            if self.start != self.whole.shape[0]:
                raise ValueError(f"{self.name} has {self.whole.shape[0]} rows, "
                                 f"but the data have {self.start}")
        elif next(self.items, None) is not None:
            raise ValueError(f"{self.name} has more blocks than the data")


def reduce_moments(chunks, y, fmaps, pcas, names, progress):
    """Moments of all blocks of `chunks` (and `y`): see `_block_stats`.
    `names`: the arguments of the data, the targets and the maps."""
    if is_lazy(chunks):
        return _reduce_dask(chunks, y, fmaps, pcas, names)
    name, y_name, map_name = names
    targets = None if y is None else _Targets(
        y, y_name, _targets_library(y, y_name, chunks, name))
    blocks, total = split_blocks(chunks, name)
    acc = None
    with progress_bar(progress, total, "blocks") as bar:
        for k, X in enumerate(blocks):
            n = _n_rows(X, f"{name} block {k}")
            yk = None if targets is None else targets.next(n, k)
            if n == 0:
                continue
            stats = _block_stats(X, yk, fmaps, pcas, f"{name} block {k}", map_name)
            if acc is None:
                acc = stats
            else:
                widths = [s.mean.shape[0] for s in stats]
                if widths != [a.mean.shape[0] for a in acc]:
                    raise ValueError(
                        f"{name}: block {k} has a different number of "
                        f"columns than block 0 (its features are {widths} "
                        f"wide, those of block 0 "
                        f"{[a.mean.shape[0] for a in acc]})"
                    )
                if type(acc[0]) is not type(stats[0]):  # (blocks of two libraries)
                    acc, stats = [on_host(a) for a in acc], [on_host(s) for s in stats]
                with np.errstate(over="ignore", invalid="ignore"):
                    add_all(acc, stats)
            bar.update()
    if acc is None:
        raise ValueError(f"{name} holds no data")
    if targets is not None:
        targets.finish()
    acc = [on_host(a) for a in acc]  # (the p x p moments of a device: copied once)
    check_moments(acc, name, y_name if targets is not None else None)
    return acc, (None if targets is None else targets.ndim)


def _reduce_dask(chunks, y, fmaps, pcas, names):
    """The same over the blocks of a Dask array (or lazy sets): one task per
    block, a tree of pairwise combinations, computed by the active Dask
    scheduler (a distributed Client when one is set up)."""
    import dask
    import dask.array as da

    name, y_name, _ = names
    Z = [chunks if f is None else f.transform(chunks) for f in fmaps]
    if not all(is_dask_array(z) and z.ndim == 2 for z in Z):
        raise TypeError(f"{name}: the feature maps must return 2-D Dask arrays "
                        f"for Dask input")
    rows = Z[0].chunks[0]
    if pcas is not None:
        Z = [da.concatenate([_coordinates(p, z) for p, z in
                             zip(pcas, Z, strict=True)], axis=1)]
    Z = [z.rechunk({0: rows, 1: -1}).to_delayed().ravel() for z in Z]
    ndim = None
    if y is None:
        ys = [None] * len(rows)
    else:
        if not is_dask_array(y):
            y = np.asarray(y)
        if y.ndim not in (1, 2) or y.shape[0] != sum(rows):
            raise ValueError(
                f"{y_name} has shape {y.shape}, but the data have {sum(rows)} "
                f"rows"
            )
        ndim = y.ndim
        y = da.asarray(y).rechunk({0: rows, **({1: -1} if ndim == 2 else {})})
        check = dask.delayed(_check_y, pure=True)
        blocks = y.to_delayed().ravel()
        ys = [check(b, n, y_name) for b, n in zip(blocks, rows, strict=True)]
    stats = dask.delayed(_block_moments_one_thread, pure=True)
    parts = [stats(list(zs), yk)
             for zs, yk in zip(zip(*Z, strict=True), ys, strict=True)]
    moments = reduce_tree(parts, dask.delayed(add_all, pure=True)).compute()
    if moments[0].n == 0:
        raise ValueError(f"{name} holds no data")
    check_moments(moments, name, y_name if y is not None else None)
    return moments, ndim


def _block_moments_one_thread(Z, y):
    """`block_moments` in a Dask task: on one BLAS thread (Dask runs the
    blocks in parallel)."""
    with lapack.one_blas_thread():
        return block_moments(Z, y)


def check_moments(moments, name="chunks", y_name=None):
    """A ValueError naming the data (argument `name`) and the targets
    (`y_name`, None: none) where the accumulated moments (one or a list,
    one per map) overflowed float64."""
    for m in (moments if isinstance(moments, (list, tuple)) else [moments]):
        parts = [m.mean, m.M2] + [
            a for a in (m.y_mean, m.Czy) if a is not None]
        if not all(np.isfinite(a).all() for a in parts):
            targets = "" if y_name is None else f" (or of them and {y_name})"
            scale = name if y_name is None else f"{name} or {y_name}"
            raise ValueError(
                f"the cross-products of the features of {name}{targets} "
                f"overflow float64: scale {scale} down"
            )


def features(fmap, X, width, name="X"):
    """The features of `X` (argument `name`) by `fmap`, or `X` itself
    checked as features when `fmap` is None: a 2-D real, finite array of
    `width` columns (None: any), not empty (float32 kept), a
    sparse matrix of them, or a Dask array (checked as far as it can be
    without computing it)."""
    if fmap is not None:
        return fmap.transform(X)
    library = _array_api.library_of(**{name: X})
    Z = (check_rows(X, name, lazy=True, what="features") if library is None
         else _array_api.check_rows(library, X, name))
    if width is not None and Z.shape[1] != width:
        raise ValueError(f"{name} has {Z.shape[1]} features, but the model was "
                         f"fitted on {width}")
    return Z


def check_maps(feature_maps, name):
    if feature_maps is None or hasattr(feature_maps, "transform"):
        return (_check_fitted(feature_maps, name),)
    try:
        maps = tuple(feature_maps)
    except TypeError:
        raise TypeError(
            f"{name} must be a feature map (an object with a transform method), "
            f"a sequence of them, or None, got {type(feature_maps).__name__}"
        ) from None
    if not maps:
        raise ValueError(f"{name} is empty")
    for i, f in enumerate(maps):
        if f is not None and not hasattr(f, "transform"):
            raise TypeError(f"{name}[{i}] has no transform method: "
                            f"{type(f).__name__}")
        _check_fitted(f, f"{name}[{i}]")
    return maps


def _check_fitted(feature_map, name):
    """`feature_map`, refused when it is a kernelmaps map not fitted yet."""
    if not getattr(feature_map, "__sklearn_is_fitted__", lambda: True)():
        raise ValueError(
            f"{name} is not fitted: fit it first on training rows (e.g. on the "
            f"first block: {type(feature_map).__name__}(...).fit(X_block))"
        )
    return feature_map


def check_n_components(n_components, width, name):
    if n_components is None:
        return width
    n_components = check_scalar(n_components, name, kind="int", low=1)
    if n_components > width:
        raise ValueError(
            f"{name}={n_components} is larger than the number of features "
            f"({width})"
        )
    return n_components


def in_library_of(Z, a):
    """The NumPy array `a` in the library of the features Z, on their
    device, of their float type (float32 features: float32); NumPy's `a`
    for NumPy features."""
    library = _array_api.library_of(Z=Z)
    if library is None:
        return a
    dtype = np.float32 if Z.dtype == library.xp.float32 else np.float64
    return library.from_numpy(np.asarray(a, dtype=dtype))


def _coordinates(pca, Z):
    """The coordinates of features Z on which the joint ridge is solved:
    their PCA projection, or Z itself (dense) for a map keeping every
    feature (`pca` None), which ridge regression treats alike: the
    projection on all components is a rotation."""
    if pca is not None:
        return pca._project(Z)
    return Z.toarray() if scipy.sparse.issparse(Z) else Z
