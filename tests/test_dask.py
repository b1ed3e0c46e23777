"""Dask support: lazy transforms of Dask arrays and of Bags with Dask points,
rf_pca / rf_ridge and the resampling tests of mmd_test on Dask input
(threaded scheduler and a real dask.distributed cluster), tokenization of
the maps, and Dask staying an optional dependency.

Tolerances: rows maps compute each row on its own, so the lazy result is
compared with the NumPy transform to ``rtol=1e-12`` (float64) or ``1e-5``
(float32), with ``atol`` the same factor times the largest absolute value;
set maps to ``1e-13`` (float64; the summation grouping may differ).
"""

import functools
import itertools
import os
import pickle
import subprocess
import sys
import threading

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import kernelmaps as km
from kernelmaps import _spec as fam
from kernelmaps._two_sample import draws, resampling

from ._helpers import dirichlet_histograms

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
tokenize = pytest.importorskip("dask.base").tokenize

RTOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}
SET_RTOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-13}

# Warnings of the cluster fixture, harmless: when another process holds the
# default HTTP port of the scheduler (8787, used even with
# dashboard_address=None), distributed warns and takes another port, leaving
# the socket of the failed attempt to the garbage collector.
PORT_IN_USE = pytest.mark.filterwarnings(
    "ignore:Port 8787 is already in use:UserWarning")
UNCLOSED_SOCKET = pytest.mark.filterwarnings(
    "ignore:unclosed <socket.socket:ResourceWarning")
# ... and when creating its scratch directories took more than a second
# (distributed times it: on a machine busy with other processes, or with
# another cluster's lock on the directory), a warning about the machine,
# not about what the tests check.
SLOW_SCRATCH = pytest.mark.filterwarnings(
    "ignore:Creating scratch directories is taking a surprisingly long time"
    ":UserWarning")


def assert_close(got, ref, rtol, err_msg=""):
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.shape == ref.shape, err_msg
    scale = float(np.abs(ref).max()) if ref.size else 0.0
    assert_allclose(got, ref, rtol=rtol, atol=rtol * scale, err_msg=err_msg)


# ---------------------------------------------------------------- data


# Dirichlet(0.7) histograms, values below 0.01 dropped.
histograms = functools.partial(dirichlet_histograms, alpha=0.7, cutoff=0.01)


N, D = 60, 6
X64 = histograms(N, D, 0)

ROW_MAPS = {
    "chi2_direct": lambda: km.Chi2DirectMap().fit(X64),
    "chi2_direct_per_dim": lambda: km.Chi2DirectMap(per_dimension=True).fit(X64),
    "chi2_chebyshev": lambda: km.Chi2ChebyshevMap(),
    "hkm_chi2": lambda: km.HomogeneousKernelMap("chi2"),
    "hkm_js": lambda: km.HomogeneousKernelMap("js"),
    "hkm_intersection": lambda: km.HomogeneousKernelMap("intersection"),
    "hkm_hellinger": lambda: km.HomogeneousKernelMap("hellinger"),
    "anchor": lambda: km.AnchorMap().fit(X64),
    "exp_chi2": lambda: km.ExpChi2Features(64, rng=0).fit(X64),
    "rff": lambda: km.RandomFourierFeatures(64, rng=0, gamma=1.0).fit(X64),
}

# Row chunks of the (N, D) input, several split along the columns too.
ROW_CHUNKS = [
    ((10, 25, 3, 22), (D,)),  # ragged rows
    (7, 2),  # rows and columns split
    ((1, 58, 1), (1, 2, 3)),  # ragged rows, ragged columns
    ((N,), (4, 2)),  # one row block, columns split
]

# Ragged sets of 3-D points; the point chunks below cut sets in the middle.
SET_SIZES = np.random.default_rng(1).integers(1, 9, size=25)
SET_OFFSETS = np.concatenate([[0], np.cumsum(SET_SIZES)])
N_POINTS = int(SET_OFFSETS[-1])
POINTS = np.random.default_rng(2).normal(size=(N_POINTS, 3))
POSITIONS = np.random.default_rng(3).uniform(size=(N_POINTS, 2))
# training sets of the set maps (their gamma is given: only the width matters)
train = [POINTS[:10], POINTS[10:]]
POINT_CHUNKS = [
    (17, 3),  # cuts sets
    ((5, 1, 30, 2, N_POINTS - 38), (2, 1)),  # ragged, columns split
    (4, 3),  # several chunks inside one set
    ((N_POINTS,), (3,)),  # one block
]


@pytest.fixture(scope="module")
def row_maps():
    return {name: make() for name, make in ROW_MAPS.items()}


@pytest.fixture(scope="module")
def emk():
    return km.EMKFeatures(10, gamma=0.5, n_iter=5, rng=0).fit(POINTS)


def set_maps(emk):
    """(name, map, kwargs of transform) of every map on sets."""
    return [
        ("rdf", km.RandomDistributionFeatures(32, gamma=0.5, rng=0).fit(train), {}),
        ("drdf", km.DoublyRandomDistributionFeatures(32, 16, gamma=0.5, gamma2=2.0,
                                                     rng=0).fit(train), {}),
        ("emk_levels0", emk, {"levels": 0}),
        ("emk_levels2", emk, {"positions": POSITIONS, "levels": 2}),
    ]


class Counter:
    """Counts the calls of `block`, a source of Dask blocks with a side
    effect, to tell whether a graph was computed."""

    def __init__(self):
        self.calls = 0
        self._lock = threading.Lock()

    def block(self, a):
        with self._lock:
            self.calls += 1
        return a

    def array(self, a, rows):
        """`a` as a Dask array of row blocks `rows`, each read by `block`."""
        parts, start = [], 0
        for n in rows:
            part = dask.delayed(self.block, pure=False)(a[start : start + n])
            parts.append(da.from_delayed(part, shape=(n, *a.shape[1:]),
                                         dtype=a.dtype))
            start += n
        return da.concatenate(parts, axis=0)


def node_value(node):
    """The object held by a graph node (a DataNode wraps it)."""
    return node.value if type(node).__name__ == "DataNode" else node


def key_name(key):
    return key if isinstance(key, str) else str(key[0])


def expected_set_chunks(offsets, row_chunks):
    """Numbers of sets starting in each row chunk of the points (non-empty
    blocks only)."""
    starts = offsets[:-1]
    bounds = np.cumsum((0, *row_chunks))
    counts = [int(np.sum((starts >= a) & (starts < b)))
              for a, b in itertools.pairwise(bounds)]
    return tuple(c for c in counts if c > 0)


# ---------------------------------------------------------------- 1. rows


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", list(ROW_MAPS))
def test_rows_map_lazy_equals_numpy(row_maps, name, dtype):
    fmap = row_maps[name]
    X = X64.astype(dtype)
    ref = fmap.transform(X)
    assert ref.dtype == dtype
    rtol = RTOL[np.dtype(dtype)]
    for chunks in ROW_CHUNKS:
        Xd = da.from_array(X, chunks=chunks)
        Z = fmap.transform(Xd)
        msg = f"{name}, {np.dtype(dtype)}, chunks {Xd.chunks}"
        assert isinstance(Z, da.Array), msg
        assert Z.chunks[0] == Xd.chunks[0], msg
        assert Z.chunks[1] == (ref.shape[1],), msg
        assert Z.shape == ref.shape, msg
        assert Z.dtype == ref.dtype, msg
        assert isinstance(Z._meta, np.ndarray), msg
        assert Z._meta.dtype == ref.dtype, msg
        got = Z.compute()
        assert isinstance(got, np.ndarray), msg
        assert got.dtype == ref.dtype, msg
        assert_close(got, ref, rtol, msg)


def test_rows_map_keyword_and_integer_input(row_maps):
    # workers passes through; integer counts become float64 as in NumPy.
    counts = np.random.default_rng(4).integers(0, 5, size=(N, D))
    Xd = da.from_array(counts, chunks=(11, 3))
    for name in ("hkm_chi2", "rff", "chi2_chebyshev"):
        fmap = row_maps[name]
        ref = fmap.transform(counts)
        Z = fmap.transform(Xd, workers=1)
        assert Z.dtype == ref.dtype == np.float64
        assert Z.chunks[0] == Xd.chunks[0]
        assert_close(Z.compute(), ref, 1e-12, name)


def test_rows_map_unknown_row_chunks(row_maps):
    # Chunks of unknown size (NaN) after boolean indexing; every block keeps
    # rows.
    fmap = row_maps["exp_chi2"]
    mask = X64[:, 0] > 0.05
    Xd = da.from_array(X64, chunks=15)
    Xf = Xd[da.from_array(mask, chunks=15)]
    Z = fmap.transform(Xf)
    assert isinstance(Z, da.Array)
    assert np.isnan(Z.shape[0])
    assert_close(Z.compute(), fmap.transform(X64[mask]), 1e-12)


@pytest.mark.parametrize("name", ["exp_chi2", "hkm_chi2", "rff"])
def test_rows_map_empty_row_block(row_maps, name):
    # A filter that keeps no row of one block (a block of 0 rows, as Dask
    # makes them) must give an empty block of features, as NumPy drops the
    # rows.
    fmap = row_maps[name]
    mask = np.ones(N, dtype=bool)
    mask[20:40] = False
    Xd = da.from_array(X64, chunks=20)
    Xf = Xd[da.from_array(mask, chunks=20)]
    ref = fmap.transform(X64[mask])
    assert_close(fmap.transform(Xf).compute(), ref, 1e-12)
    # the same with known chunks (20, 0, 20)
    X0 = da.from_array(X64[mask], chunks=((20, 0, 20), (D,)))
    Z = fmap.transform(X0)
    assert Z.chunks[0] == (20, 0, 20)
    assert_close(Z.compute(), ref, 1e-12)


def test_rows_map_bad_dask_input(row_maps):
    fmap = row_maps["hkm_chi2"]
    with pytest.raises(ValueError, match="2-D"):
        fmap.transform(da.from_array(X64[0], chunks=3))
    with pytest.raises(ValueError, match="2-D"):
        fmap.transform(da.from_array(X64.reshape(6, 10, D), chunks=3))
    with pytest.raises(TypeError, match="real numbers"):
        fmap.transform(da.from_array(np.full((4, 3), "a"), chunks=2))
    # the map's own checks run eagerly too (on a probe row)
    with pytest.raises(ValueError, match="features"):
        row_maps["exp_chi2"].transform(da.zeros((4, D + 1), chunks=2))


# ---------------------------------------------------------------- 2. sets


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_set_maps_lazy_bags_equal_numpy(emk, dtype):
    points = POINTS.astype(dtype)
    bags = km.Bags(points, SET_OFFSETS)
    rtol = SET_RTOL[np.dtype(dtype)]
    for name, fmap, kwargs in set_maps(emk):
        ref = fmap.transform(bags, **kwargs)
        assert ref.dtype == dtype
        for chunks in POINT_CHUNKS:
            pd = da.from_array(points, chunks=chunks)
            Z = fmap.transform(km.Bags(pd, SET_OFFSETS), **kwargs)
            msg = f"{name}, {np.dtype(dtype)}, point chunks {pd.chunks}"
            assert isinstance(Z, da.Array), msg
            assert sum(Z.chunks[0]) == len(SET_SIZES), msg
            assert Z.chunks[0] == expected_set_chunks(SET_OFFSETS,
                                                      pd.chunks[0]), msg
            # each block boundary is a set boundary of the points
            ends = SET_OFFSETS[np.cumsum(Z.chunks[0])]
            assert set(ends.tolist()) <= set(SET_OFFSETS.tolist()), msg
            assert Z.chunks[1] == (ref.shape[1],), msg
            assert Z.shape == ref.shape and Z.dtype == ref.dtype, msg
            assert isinstance(Z._meta, np.ndarray), msg
            assert Z._meta.dtype == ref.dtype, msg
            assert_close(Z.compute(), ref, rtol, msg)


def test_emk_positions_as_dask_array(emk):
    bags = km.Bags(POINTS, SET_OFFSETS)
    ref = emk.transform(bags, POSITIONS, levels=2)
    pd = da.from_array(POINTS, chunks=(17, 3))
    lazy = km.Bags(pd, SET_OFFSETS)
    for chunks in [(11, 2), ((3, N_POINTS - 3), (2,)), ((N_POINTS,), (2,))]:
        pos = da.from_array(POSITIONS, chunks=chunks)
        Z = emk.transform(lazy, positions=pos, levels=2)
        assert Z.chunks[0] == expected_set_chunks(SET_OFFSETS, pd.chunks[0])
        assert_close(Z.compute(), ref, 1e-13, f"positions chunks {chunks}")
    # positionally, as the NumPy method takes them
    Z = emk.transform(lazy, da.from_array(POSITIONS, chunks=9), 2)
    assert_close(Z.compute(), ref, 1e-13)


def test_emk_positions_as_dask_array_split_columns(emk):
    # positions chunked along their 2 columns as well as the rows
    ref = emk.transform(km.Bags(POINTS, SET_OFFSETS), POSITIONS, levels=2)
    lazy = km.Bags(da.from_array(POINTS, chunks=(17, 3)), SET_OFFSETS)
    pos = da.from_array(POSITIONS, chunks=(11, 1))
    Z = emk.transform(lazy, positions=pos, levels=2)
    assert_close(Z.compute(), ref, 1e-13)


def test_emk_bad_positions_raise_eagerly(emk):
    counter = Counter()
    lazy = km.Bags(counter.array(POINTS, [40, N_POINTS - 40]), SET_OFFSETS)
    with pytest.raises(ValueError, match="positions"):
        emk.transform(lazy, positions=POSITIONS[:-1], levels=2)
    with pytest.raises(ValueError, match="positions must be one array aligned"):
        emk.transform(lazy, positions=da.from_array(POSITIONS[:-1], chunks=7),
                      levels=2)
    with pytest.raises(ValueError, match="positions"):
        emk.transform(lazy, levels=2)
    assert counter.calls == 0


@pytest.mark.parametrize("point_chunks", [(4, 5, 3), (5, 2, 2)],
                         ids=["whole_sets", "split_points"])
def test_set_maps_3d_dask_array(emk, point_chunks):
    rng = np.random.default_rng(5)
    sets = rng.normal(size=(12, 5, 3))
    pos = rng.uniform(size=(12 * 5, 2))
    sd = da.from_array(sets, chunks=point_chunks)
    for name, fmap, kwargs in set_maps(emk):
        if "positions" in kwargs:
            kwargs = dict(kwargs, positions=pos)
        ref = fmap.transform(sets, **kwargs)
        Z = fmap.transform(sd, **kwargs)
        assert isinstance(Z, da.Array), name
        assert Z.chunks[0] == sd.chunks[0], name  # whole sets: same blocks
        assert Z.shape == ref.shape and Z.dtype == ref.dtype, name
        assert_close(Z.compute(), ref, 1e-13, name)
    # a 3-D Dask array of float32 sets stays float32
    rdf = set_maps(emk)[0][1]
    Z = rdf.transform(sd.astype(np.float32))
    assert Z.dtype == np.float32
    assert_close(Z.compute(), rdf.transform(sets.astype(np.float32)), 1e-5)


def test_set_maps_bad_3d_or_2d_dask_array(emk):
    rdf = set_maps(emk)[0][1]
    with pytest.raises(ValueError, match="3-D"):
        rdf.transform(da.zeros((4, 3), chunks=2))


@pytest.mark.parametrize("index", [0, 2, 24])
def test_empty_set_in_lazy_bags_raises_eagerly(emk, index):
    sizes = SET_SIZES.copy()
    sizes[index] = 0
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    counter = Counter()
    points = counter.array(POINTS[: offsets[-1]], [10, int(offsets[-1]) - 10])
    bags = km.Bags(points, offsets)
    for name, fmap, kwargs in set_maps(emk):
        kwargs = {k: (v[: offsets[-1]] if k == "positions" else v)
                  for k, v in kwargs.items()}
        with pytest.raises(ValueError, match=rf"\[{index}\] is empty"):
            fmap.transform(bags, **kwargs)
        assert counter.calls == 0, name


def test_no_set_in_lazy_bags_raises(emk):
    rdf = set_maps(emk)[0][1]
    with pytest.raises(ValueError, match="at least one set"):
        rdf.transform(km.Bags(da.zeros((0, 3), chunks=1), [0]))


def test_nonfinite_lazy_set_named_in_all_the_sets(emk):
    # The set with a NaN is named by its index in all the sets, not in its
    # block (its blocks read by ItemBlocks, as the Gram's): set 20, in the
    # second block of points.
    bad = POINTS.copy()
    bad[SET_OFFSETS[20] + SET_SIZES[20] - 1, 1] = np.nan
    lazy = km.Bags(da.from_array(bad, chunks=(SET_OFFSETS[12] + 1, 3)),
                   SET_OFFSETS)
    for name, fmap, kwargs in set_maps(emk):
        Z = fmap.transform(lazy, **kwargs)
        assert Z.numblocks[0] == 2, name
        with pytest.raises(ValueError, match=r"^(X|sets)\[20\] contains NaN "
                                             r"or infinity$"):
            Z.compute()


# ---------------------------------------------------------------- 3. laziness


def test_rows_transform_does_not_compute_input(row_maps):
    counter = Counter()
    Xd = counter.array(X64, [25, 20, 15])
    for name, fmap in row_maps.items():
        Z = fmap.transform(Xd)
        assert counter.calls == 0, name
        assert_close(Z.compute(), fmap.transform(X64), 1e-12, name)
        assert counter.calls > 0, name
        counter.calls = 0


def test_sets_transform_does_not_compute_input(emk):
    counter = Counter()
    points = counter.array(POINTS, [30, 30, N_POINTS - 60])
    pos_counter = Counter()
    positions = pos_counter.array(POSITIONS, [50, N_POINTS - 50])
    bags = km.Bags(points, SET_OFFSETS)
    assert counter.calls == 0
    for name, fmap, kwargs in set_maps(emk):
        if "positions" in kwargs:
            kwargs = dict(kwargs, positions=positions)
        Z = fmap.transform(bags, **kwargs)
        assert counter.calls == 0 and pos_counter.calls == 0, name
        if "positions" in kwargs:
            kwargs = dict(kwargs, positions=POSITIONS)
        ref = fmap.transform(km.Bags(POINTS, SET_OFFSETS), **kwargs)
        assert_close(Z.compute(), ref, 1e-13, name)
        assert counter.calls > 0, name
        if "positions" in kwargs:
            assert pos_counter.calls > 0, name
        counter.calls = 0


# ---------------------------------------------------------------- 4. graph


def _count_map_nodes(Z, fmap):
    graph = dict(Z.__dask_graph__())
    by_value = [k for k, v in graph.items() if node_value(v) is fmap]
    by_name = [k for k in graph
               if key_name(k).startswith(type(fmap).__name__ + "-")]
    return graph, by_value, by_name


def test_map_enters_graph_once(row_maps, emk):
    Xd = da.from_array(X64, chunks=(7, 2))
    lazy = km.Bags(da.from_array(POINTS, chunks=9), SET_OFFSETS)
    cases = [(fmap, fmap.transform(Xd)) for fmap in row_maps.values()]
    cases += [(fmap, fmap.transform(lazy, **kwargs))
              for _, fmap, kwargs in set_maps(emk)]
    for fmap, Z in cases:
        name = type(fmap).__name__
        assert Z.numblocks[0] > 1, name
        graph, by_value, by_name = _count_map_nodes(Z, fmap)
        assert len(by_value) == 1, (name, by_value)
        assert by_name == by_value, (name, by_name)
        # every task that calls the map refers to that one key
        (map_key,) = by_value
        users = [k for k, v in graph.items()
                 if map_key in getattr(v, "dependencies", ())]
        assert len(users) >= Z.numblocks[0], name


def test_map_in_graph_is_the_same_key_for_equal_maps():
    # Two equal maps (same parameters) give the same key: the graph of the
    # transform is deterministic.
    a = km.ExpChi2Features(16, rng=0).fit(X64)
    b = km.ExpChi2Features(16, rng=0).fit(X64)
    Xd = da.from_array(X64, chunks=20)
    assert a.transform(Xd).name == b.transform(Xd).name
    c = km.ExpChi2Features(16, rng=1).fit(X64)
    assert a.transform(Xd).name != c.transform(Xd).name


def test_tokenize_deterministic(row_maps, emk):
    maps = [*row_maps.values(), *(m for _, m, _ in set_maps(emk))]
    tokens = set()
    for fmap in maps:
        token = tokenize(fmap)
        assert token == tokenize(fmap), type(fmap).__name__
        assert token == tokenize(pickle.loads(pickle.dumps(fmap)))
        tokens.add(token)
    # different maps (HKM kernels, per_dimension, ...) give different tokens;
    # the EMK map is listed twice.
    assert len(tokens) == len(maps) - 1
    pairs = [
        (km.ExpChi2Features(64, rng=0).fit(X64),
         km.ExpChi2Features(64, rng=1).fit(X64)),
        (km.RandomFourierFeatures(64, rng=0, gamma=1.0).fit(X64),
         km.RandomFourierFeatures(64, rng=1, gamma=1.0).fit(X64)),
        (km.RandomDistributionFeatures(32, rng=0, gamma=1 / 3).fit(train),
         km.RandomDistributionFeatures(32, rng=1, gamma=1 / 3).fit(train)),
        (km.DoublyRandomDistributionFeatures(32, 16, rng=0, gamma=1 / 3).fit(train),
         km.DoublyRandomDistributionFeatures(32, 16, rng=1, gamma=1 / 3).fit(train)),
        (km.EMKFeatures(10, n_iter=5, rng=0).fit(POINTS),
         km.EMKFeatures(10, n_iter=5, rng=1).fit(POINTS)),
    ]
    for a, b in pairs:
        assert tokenize(a) != tokenize(b), type(a).__name__
    # same seed, built twice: same token
    assert tokenize(km.RandomFourierFeatures(64, rng=7, gamma=1.0).fit(np.eye(D))) == (
        tokenize(km.RandomFourierFeatures(64, rng=7, gamma=1.0).fit(np.eye(D))))
    # same arrays, different class
    assert tokenize(km.RandomFourierFeatures(32, rng=0, gamma=1.0).fit(np.eye(3))) != (
        tokenize(km.RandomDistributionFeatures(32, gamma=1.0, rng=0).fit([np.eye(3)])))
    # a map fitted again with other parameters: another token; back to the
    # first: the first token
    fmap = km.RandomFourierFeatures(32, rng=0, gamma=1.0).fit(X64)
    token = tokenize(fmap)
    assert tokenize(fmap.set_params(gamma=2.0).fit(X64)) != token
    assert tokenize(fmap.set_params(gamma=1.0).fit(X64)) == token


def test_tokenize_same_in_another_process(tmp_path):
    fmap = km.ExpChi2Features(16, rng=0).fit(X64)
    path = tmp_path / "map.pkl"
    path.write_bytes(pickle.dumps(fmap))
    code = (
        "import pickle, sys\n"
        "from dask.base import tokenize\n"
        "print(tokenize(pickle.loads(open(sys.argv[1], 'rb').read())))\n"
    )
    env = dict(os.environ, PYTHONHASHSEED="123")
    out = subprocess.run([sys.executable, "-P", "-c", code, str(path)],
                         capture_output=True, text=True, check=True, env=env,
                         timeout=300)
    assert out.stdout.strip() == tokenize(fmap)


# ---------------------------------------------------------------- 6. rf_pca
# and rf_ridge with the default (threaded) scheduler


def _regression_data(n=240, seed=6):
    X = histograms(n, D, seed)
    rng = np.random.default_rng(seed)
    y = np.stack([X @ rng.normal(size=D), np.sin(4 * X[:, 0])], axis=1)
    return X, y + 0.01 * rng.normal(size=y.shape)


def _assert_pca_equal(got, ref, tol=1e-10):
    assert got.n_samples_ == ref.n_samples_
    for attr in ("components_", "explained_variance_", "mean_"):
        assert_close(getattr(got, attr), getattr(ref, attr), tol, attr)


def test_rf_pca_dask_equals_numpy():
    X, y = _regression_data()
    fmap = km.ExpChi2Features(48, rng=0).fit(X)
    ref = km.rf_pca(X, fmap, 6)
    ev = ref.explained_variance_
    assert np.all(-np.diff(ev) > 1e-3 * ev[0])  # separated: axes well defined
    got = km.rf_pca(da.from_array(X, chunks=((50, 90, 7, 93), (4, 2))), fmap, 6)
    _assert_pca_equal(got, ref)
    # with targets, dask y chunked differently
    ref_y = km.rf_pca(X, fmap, 6, y=y)
    got_y = km.rf_pca(da.from_array(X, chunks=60), fmap, 6,
                      y=da.from_array(y, chunks=(37, 1)))
    _assert_pca_equal(got_y, ref_y)
    assert_close(got_y.projected_target_, ref_y.projected_target_, 1e-10)
    assert_close(got_y.y_mean_, ref_y.y_mean_, 1e-12)
    # transform of a Dask array: lazy, equal
    Xd = da.from_array(X, chunks=70)
    T = got.transform(Xd)
    assert isinstance(T, da.Array)
    assert_close(T.compute(), ref.transform(X), 1e-10)


def test_rf_pca_dask_no_map():
    X, _ = _regression_data()
    ref = km.rf_pca(X, None, 3)
    got = km.rf_pca(da.from_array(X, chunks=(45, 6)), None, 3)
    _assert_pca_equal(got, ref)


def test_rf_pca_dask_zero_row_chunk():
    # A Dask array with a block of 0 rows: NumPy input skips empty blocks.
    X, _ = _regression_data()
    ref = km.rf_pca(X, None, 3)
    Xd = da.from_array(X, chunks=((0, 100, 140), (D,)))
    _assert_pca_equal(km.rf_pca(Xd, None, 3), ref)


def test_rf_pca_lazy_bags_equals_numpy():
    rdf = km.RandomDistributionFeatures(24, gamma=0.5, rng=0).fit(train)
    ref = km.rf_pca(km.Bags(POINTS, SET_OFFSETS), rdf, 4)
    lazy = km.Bags(da.from_array(POINTS, chunks=17), SET_OFFSETS)
    got = km.rf_pca(lazy, rdf, 4)
    assert got.n_samples_ == len(SET_SIZES)
    _assert_pca_equal(got, ref)


def test_rf_ridge_dask_equals_numpy():
    X, y = _regression_data()
    fmaps = [km.ExpChi2Features(48, rng=0).fit(X), km.Chi2DirectMap().fit(X)]
    blocks = [X[:100], X[100:]]
    y_blocks = [y[:100], y[100:]]
    Xd = da.from_array(X, chunks=(80, 3))
    for maps, k in [(fmaps[0], 12), (fmaps, [10, 8])]:
        ref = km.rf_ridge(blocks, y_blocks, maps, k, alpha=1e-3)
        for yd in (da.from_array(y, chunks=(80, 2)),
                   da.from_array(y, chunks=(33, 1)), y):
            got = km.rf_ridge(Xd, yd, maps, k, alpha=1e-3)
            assert_close(got.coef_, ref.coef_, 1e-9)
            assert_close(got.intercept_, ref.intercept_, 1e-9)
        pred = got.predict(Xd)
        assert isinstance(pred, da.Array)
        assert pred.shape == (X.shape[0], 2)
        assert_close(pred.compute(), ref.predict(X), 1e-9)
    # 1-D targets
    ref = km.rf_ridge(blocks, [y[:100, 0], y[100:, 0]], fmaps, [10, 8])
    got = km.rf_ridge(Xd, da.from_array(y[:, 0], chunks=50), fmaps, [10, 8])
    assert got.coef_.ndim == 1
    assert_close(got.coef_, ref.coef_, 1e-9)
    assert_close(got.intercept_, ref.intercept_, 1e-9)


def test_rf_ridge_dask_y_wrong_length():
    X, y = _regression_data()
    fmap = km.ExpChi2Features(16, rng=0).fit(X)
    Xd = da.from_array(X, chunks=80)
    for bad in (y[:-1], da.from_array(y[:-1], chunks=50),
                da.from_array(np.vstack([y, y[:1]]), chunks=50)):
        with pytest.raises(ValueError, match="rows"):
            km.rf_ridge(Xd, bad, fmap, 4)
        with pytest.raises(ValueError, match="rows"):
            km.rf_ridge(Xd, bad, [fmap, km.Chi2DirectMap().fit(X)], 4)
        with pytest.raises(ValueError, match="rows"):
            km.rf_pca(Xd, fmap, 4, y=bad)


def test_rf_ridge_predict_is_lazy():
    X, y = _regression_data()
    fmaps = [km.ExpChi2Features(16, rng=0).fit(X), km.Chi2DirectMap().fit(X)]
    counter = Counter()
    Xd = counter.array(X, [80, 80, 80])
    model = km.rf_ridge(Xd, y, fmaps, 4)
    assert counter.calls >= 3  # every block read
    counter.calls = 0
    pred = model.predict(Xd)
    assert isinstance(pred, da.Array)
    assert counter.calls == 0
    assert_close(pred.compute(), model.predict(X), 1e-12)
    assert counter.calls >= 3


# ---------------------------------------------------------------- 7. Bags


def test_lazy_bags_properties_without_compute():
    counter = Counter()
    points = counter.array(POINTS, [30, N_POINTS - 30])
    bags = km.Bags(points, SET_OFFSETS)
    assert len(bags) == len(SET_SIZES)
    assert bags.dim == 3
    assert bags.n_points == N_POINTS
    assert bags.dtype == np.float64
    assert_array_equal(bags.sizes, SET_SIZES)
    assert_array_equal(bags.offsets, SET_OFFSETS)
    assert isinstance(bags.points, da.Array)
    assert "n_sets=25" in repr(bags)
    part = bags[2:5]
    assert isinstance(part.points, da.Array) and len(part) == 3
    assert isinstance(bags[3], da.Array)
    assert counter.calls == 0
    assert_array_equal(bags[3].compute(),
                       POINTS[SET_OFFSETS[3] : SET_OFFSETS[4]])
    assert_array_equal(part.points.compute(),
                       POINTS[SET_OFFSETS[2] : SET_OFFSETS[5]])


def test_lazy_bags_dtypes():
    ints = np.arange(12).reshape(6, 2)
    bags = km.Bags(da.from_array(ints, chunks=3), [0, 2, 6])
    assert isinstance(bags.points, da.Array)
    assert bags.dtype == np.float64
    assert_array_equal(bags.points.compute(), ints.astype(np.float64))
    f32 = km.Bags(da.from_array(POINTS.astype(np.float32), chunks=10),
                  SET_OFFSETS)
    assert f32.dtype == np.float32
    with pytest.raises(TypeError, match="real numbers"):
        km.Bags(da.from_array(np.full((4, 2), "x"), chunks=2), [0, 4])
    with pytest.raises(TypeError, match="real numbers"):
        km.Bags(da.from_array(np.full((4, 2), None, dtype=object), chunks=2),
                [0, 4])
    with pytest.raises(ValueError, match="offsets"):
        km.Bags(da.from_array(POINTS, chunks=10), SET_OFFSETS[:-1])
    with pytest.raises(ValueError, match="2-D"):
        km.Bags(da.zeros(5, chunks=2), [0, 5])


def test_lazy_bags_pickle_stays_lazy():
    points = da.from_array(POINTS, chunks=13)
    bags = km.Bags(points, SET_OFFSETS)
    back = pickle.loads(pickle.dumps(bags))
    assert isinstance(back.points, da.Array)
    assert back.points.chunks == points.chunks
    assert_array_equal(back.offsets, SET_OFFSETS)
    assert_array_equal(back.points.compute(), POINTS)


def test_functions_needing_points_refuse_lazy_points_without_computing():
    """Functions that need the points in memory raise a TypeError naming the
    argument, and never compute a Dask graph behind the caller's back (the
    exact kernels take lazy input: section 9)."""
    calls = []

    def traced(block):
        calls.append(block.shape)
        return block

    points = da.from_array(POINTS, chunks=13).map_blocks(
        traced, dtype=POINTS.dtype, meta=np.empty((0, 0)))
    lazy = km.Bags(points, SET_OFFSETS)
    for call in (lambda: km.median_heuristic(lazy, rng=0),
                 lambda: km.RandomDistributionFeatures(8, gamma=1.0).fit(lazy)):
        with pytest.raises(TypeError, match=r"(X|Y) holds lazy Dask points.*"
                                            r"compute them first"):
            call()
    with pytest.raises(TypeError, match=r"sets\[1\] is a lazy Dask array"):
        km.Bags.from_list([POINTS[:3], da.from_array(POINTS[3:6], chunks=2)])
    # with a given gamma, an exact kernel builds its graph without computing
    K = km.sum_match_kernel(lazy, gamma=0.5)
    assert isinstance(K, da.Array)
    assert calls == []
    assert_close(K.compute(), km.sum_match_kernel(km.Bags(POINTS, SET_OFFSETS),
                                                  gamma=0.5), 1e-12)
    assert calls


# ---------------------------------------------------------------- 9. exact
# kernels on Dask input: lazy Gram matrices (_transforms.lazy_gram)

# Sets of 4 to 11 points in 3-D (the kNN divergence with k=3 needs more than
# 3), each about its own mean, so that no MMD is near 0 (where the square
# root would magnify the rounding of MMD^2).
_rng = np.random.default_rng(8)
GRAM_SIZES = _rng.integers(4, 12, size=23)
GRAM_OFFSETS = np.concatenate([[0], np.cumsum(GRAM_SIZES)])
GRAM_POINTS = (_rng.normal(size=(int(GRAM_OFFSETS[-1]), 3))
               + np.repeat(_rng.normal(scale=2.0, size=(23, 3)), GRAM_SIZES,
                           axis=0))
GRAM_Y_SIZES = _rng.integers(4, 12, size=9)
GRAM_Y_OFFSETS = np.concatenate([[0], np.cumsum(GRAM_Y_SIZES)])
GRAM_Y_POINTS = (_rng.normal(size=(int(GRAM_Y_OFFSETS[-1]), 3))
                 + np.repeat(_rng.normal(scale=2.0, size=(9, 3)), GRAM_Y_SIZES,
                             axis=0))
N_GRAM = int(GRAM_OFFSETS[-1])
# Point chunks: 29 rows (cuts sets; the blocks of sets do not divide 23),
# ragged, columns split, one chunk.
GRAM_CHUNKS = [(29, 3), ((7, 60, 3, N_GRAM - 70), (2, 1)), ((N_GRAM,), (3,))]

SET_GRAMS = {
    "sum_match": (km.sum_match_kernel, {"gamma": 0.5}),
    "sum_match_default_gamma": (km.sum_match_kernel, {}),
    "sum_match_laplacian": (km.sum_match_kernel, {"kernel": "laplacian"}),
    "sum_match_linear": (km.sum_match_kernel, {"kernel": "linear"}),
    "sum_match_polynomial_sums": (km.sum_match_kernel,
                                  {"kernel": "polynomial", "normalize": False}),
    "mmd": (km.mmd, {}),
    "mmd_unbiased": (km.mmd, {"unbiased": True, "squared": True}),
    "mmd_kernel": (km.mmd_kernel, {"gamma2": 0.5, "kernel": "laplacian"}),
    "renyi": (km.renyi_divergence, {"k": 3}),
    "renyi_alphas": (km.renyi_divergence,
                     {"k": 3, "alpha": [0.5, 0.99, 1.5], "min_dist": 1e-3}),
    "sliced_wasserstein": (km.sliced_wasserstein, {"n_projections": 20, "rng": 0}),
    "sliced_wasserstein_p1": (km.sliced_wasserstein,
                              {"n_projections": 20, "p": 1, "rng": 0}),
    "sliced_wasserstein_kernel": (km.sliced_wasserstein_kernel,
                                  {"n_projections": 20, "gamma": 0.5, "rng": 0}),
}

HIST_GRAMS = {
    "additive_chi2": (km.additive_chi2_kernel, {}),
    "chi2_distance": (km.chi2_distance, {}),
    "exp_chi2": (km.exp_chi2_kernel, {"beta": 2.0}),
    "intersection": (km.intersection_kernel, {}),
    "hellinger": (km.hellinger_kernel, {}),
    "js": (km.js_kernel, {}),
}
HX, HY = histograms(47, D, 9), histograms(11, D, 10)
HIST_CHUNKS = [(10, 3), ((5, 30, 12), (D,)), ((47,), (D,))]


def gram_bags(dtype=np.float64, chunks=GRAM_CHUNKS[0], y=False):
    points, offsets = ((GRAM_Y_POINTS, GRAM_Y_OFFSETS) if y
                       else (GRAM_POINTS, GRAM_OFFSETS))
    points = points.astype(dtype)
    if chunks is None:
        return km.Bags(points, offsets)
    return km.Bags(da.from_array(points, chunks=chunks), offsets)


def assert_lazy_gram(Z, ref, rtol, msg):
    assert isinstance(Z, da.Array), msg
    assert Z.shape == ref.shape and Z.dtype == ref.dtype, msg
    assert isinstance(Z._meta, np.ndarray) and Z._meta.dtype == ref.dtype, msg
    got = Z.compute()
    assert isinstance(got, np.ndarray) and got.dtype == ref.dtype, msg
    assert_close(got, ref, rtol, msg)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", list(SET_GRAMS))
def test_set_gram_lazy_equals_numpy(name, dtype):
    # Each pair of sets' sums is computed as in memory but grouped in other
    # tiles: equal up to rounding (the kNN divergences bit for bit).
    f, kwargs = SET_GRAMS[name]
    rtol = RTOL[np.dtype(dtype)]
    X, Y = gram_bags(dtype, None), gram_bags(dtype, None, y=True)
    ref, ref_xy = f(X, **kwargs), f(X, Y, **kwargs)
    Yd = gram_bags(dtype, 13, y=True)
    for chunks in GRAM_CHUNKS:
        Xd = gram_bags(dtype, chunks)
        msg = f"{name}, {np.dtype(dtype)}, point chunks {chunks}"
        Z = f(Xd, **kwargs)
        blocks = expected_set_chunks(GRAM_OFFSETS, Xd.points.chunks[0])
        assert Z.chunks[-2:] == (blocks, blocks), msg
        assert_lazy_gram(Z, ref, rtol, msg)
        Z = f(Xd, Yd, **kwargs)
        assert Z.chunks[-2:] == (blocks, expected_set_chunks(
            GRAM_Y_OFFSETS, Yd.points.chunks[0])), msg
        assert_lazy_gram(Z, ref_xy, rtol, msg + ", Y given")
    # one side in memory
    assert_lazy_gram(f(X, Yd, **kwargs), ref_xy, rtol, name + ", X in memory")
    assert_lazy_gram(f(gram_bags(dtype), Y, **kwargs), ref_xy, rtol,
                     name + ", Y in memory")


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", list(HIST_GRAMS))
def test_histogram_gram_lazy_equals_numpy(name, dtype):
    # Each pair of rows is computed on its own, by the same tiles: the lazy
    # result is the in-memory one bit for bit.
    f, kwargs = HIST_GRAMS[name]
    X, Y = HX.astype(dtype), HY.astype(dtype)
    ref, ref_xy = f(X, **kwargs), f(X, Y, **kwargs)
    Yd = da.from_array(Y, chunks=4)
    for chunks in HIST_CHUNKS:
        Xd = da.from_array(X, chunks=chunks)
        msg = f"{name}, {np.dtype(dtype)}, chunks {chunks}"
        Z = f(Xd, **kwargs)
        assert Z.chunks == (Xd.chunks[0], Xd.chunks[0]), msg
        assert_lazy_gram(Z, ref, 0, msg)
        Z = f(Xd, Yd, **kwargs)
        assert Z.chunks == (Xd.chunks[0], Yd.chunks[0]), msg
        assert_lazy_gram(Z, ref_xy, 0, msg + ", Y given")
    assert_lazy_gram(f(X, Yd, **kwargs), ref_xy, 0, name + ", X in memory")
    assert_lazy_gram(f(da.from_array(X, chunks=9), Y, **kwargs), ref_xy, 0,
                     name + ", Y in memory")


def test_set_gram_lazy_other_engine_paths():
    # the rbf pair sums from BLAS products (d >= 128: each call centres its
    # points, so the blocks differ from the call in memory by rounding), and
    # the kNN search by kd-trees (large sets in 1-D, the method chosen once
    # for the whole call)
    rng = np.random.default_rng(14)
    sizes = rng.integers(20, 40, size=30)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    points = rng.normal(size=(int(offsets[-1]), 130)) + 3.0
    bags = km.Bags(points, offsets)
    lazy = km.Bags(da.from_array(points, chunks=(300, 130)), offsets)
    for f in (km.sum_match_kernel, km.mmd_kernel):
        assert_lazy_gram(f(lazy, gamma=1 / 130), f(bags, gamma=1 / 130), 1e-12,
                         f.__name__)
        assert_lazy_gram(f(lazy, lazy[:7], gamma=1 / 130),
                         f(bags, bags[:7], gamma=1 / 130), 1e-12, f.__name__)
    sets = rng.normal(size=(6, 900, 1))
    sd = da.from_array(sets, chunks=(2, 900, 1))
    assert_lazy_gram(km.renyi_divergence(sd), km.renyi_divergence(sets), 0,
                     "renyi, kd-trees")
    assert_lazy_gram(km.renyi_divergence(sd[:2], sd), km.renyi_divergence(
        sets[:2], sets), 0, "renyi, kd-trees, Y given")


def test_gram_integer_rows_and_3d_sets():
    counts = np.random.default_rng(12).integers(0, 5, size=(30, D))
    Z = km.additive_chi2_kernel(da.from_array(counts, chunks=7))
    assert Z.dtype == np.float64
    assert_array_equal(Z.compute(), km.additive_chi2_kernel(counts))
    sets = GRAM_POINTS[:60].reshape(12, 5, 3)
    for chunks in [(5, 5, 3), (5, 2, 1)]:  # whole sets, or points split
        sd = da.from_array(sets, chunks=chunks)
        for f, kwargs in [(km.sum_match_kernel, {}), (km.mmd, {"gamma": 0.3}),
                          (km.renyi_divergence, {"k": 2})]:
            Z = f(sd, **kwargs)
            assert Z.chunks == ((5, 5, 2), (5, 5, 2)), f.__name__
            assert_lazy_gram(Z, f(sets, **kwargs), 1e-12, f.__name__)


def _block_layer(Z, name, part="blocks"):
    layers = Z.__dask_graph__().layers
    found = [key for key in layers if key.startswith(f"{name}-{part}-")]
    assert len(found) == 1, (name, part, list(layers))
    return layers[found[0]]


def test_gram_one_task_per_unordered_block_pair():
    Xd, Yd = gram_bags(chunks=29), gram_bags(chunks=13, y=True)
    nb = len(expected_set_chunks(GRAM_OFFSETS, Xd.points.chunks[0]))
    ny = len(expected_set_chunks(GRAM_Y_OFFSETS, Yd.points.chunks[0]))
    assert nb >= 4 and ny >= 3
    for f, kwargs in [(km.sum_match_kernel, {"gamma": 0.5}),
                      (km.mmd, {"gamma": 0.5}),
                      (km.mmd_kernel, {"gamma": 0.5}),
                      (km.renyi_divergence, {"k": 3}),
                      (km.renyi_divergence, {"k": 3, "alpha": [0.5, 1.5]})]:
        name = f.__name__
        Z = f(Xd, **kwargs)
        assert Z.numblocks[-2:] == (nb, nb), name
        assert len(_block_layer(Z, name)) == nb * (nb + 1) // 2, name
        # every output block comes from one of those tasks
        assert len(dict(Z.__dask_graph__().layers[Z.name])) == nb * nb, name
        Z = f(Xd, Yd, **kwargs)
        assert len(_block_layer(Z, name)) == nb * ny, name
        if f is not km.renyi_divergence and f is not km.sum_match_kernel:
            # the within-set means: one task per block of sets
            assert len(_block_layer(f(Xd, **kwargs), name, "x-prepared")) == nb
            assert len(_block_layer(Z, name, "x-prepared")) == nb
            assert len(_block_layer(Z, name, "y-prepared")) == ny
    Z = km.js_kernel(da.from_array(HX, chunks=10))
    assert len(_block_layer(Z, "js_kernel")) == 5 * 6 // 2


def test_gram_does_not_compute_input():
    counter = Counter()
    lazy = km.Bags(counter.array(GRAM_POINTS, [50, N_GRAM - 50]), GRAM_OFFSETS)
    rows = counter.array(HX, [20, 27])
    Ks = [km.sum_match_kernel(lazy, gamma=0.5), km.mmd(lazy, lazy, gamma=0.5),
          km.renyi_divergence(lazy, k=3), km.chi2_distance(rows)]
    assert counter.calls == 0
    assert_close(Ks[0].compute(), km.sum_match_kernel(gram_bags(chunks=None),
                                                      gamma=0.5), 1e-12)
    assert counter.calls > 0


def test_gram_default_gamma_from_the_sample():
    # gamma=None: the median heuristic on the same 1000 of the 1500 points as
    # in memory, computed before the graph (only those rows asked for).
    sizes = np.full(50, 30)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    points = np.random.default_rng(13).normal(size=(1500, 4))
    bags = km.Bags(points, offsets)
    lazy = km.Bags(da.from_array(points, chunks=170), offsets)
    small = km.Bags(points[:300], offsets[:11])
    for f in (km.sum_match_kernel, km.mmd_kernel):
        assert_close(f(lazy).compute(), f(bags), 1e-12, f.__name__)
        # of Y when Y is given
        assert_close(f(small, lazy).compute(), f(small, bags), 1e-12, f.__name__)
    assert_close(km.sum_match_kernel(lazy, kernel="laplacian").compute(),
                 km.sum_match_kernel(bags, kernel="laplacian"), 1e-12)


def test_gram_dtype_workers_progress():
    X64, X32 = gram_bags(chunks=None), gram_bags(np.float32, None)
    L64, L32 = gram_bags(), gram_bags(np.float32)
    for f, kwargs in [(km.sum_match_kernel, {"gamma": 0.5}),
                      (km.mmd, {"gamma": 0.5}),
                      (km.renyi_divergence, {"k": 3})]:
        name = f.__name__
        Z = f(L32, **kwargs)
        assert Z.dtype == np.float32, name
        assert_lazy_gram(Z, f(X32, **kwargs), 1e-5, name)
        Z = f(L32, dtype=np.float64, **kwargs)  # computed in float32
        assert_lazy_gram(Z, f(X32, dtype=np.float64, **kwargs), 1e-5, name)
        Z = f(L64, dtype="float32", **kwargs)
        assert_lazy_gram(Z, f(X64, dtype="float32", **kwargs), 1e-5, name)
        # float32 against float64: float64
        Z = f(L32, gram_bags(y=True), **kwargs)
        assert Z.dtype == np.float64, name
        # workers: threads per task; progress: ignored, as in the maps'
        # transform (Dask shows its own progress)
        ref = f(X64, **kwargs)
        assert_lazy_gram(f(L64, workers=2, **kwargs), ref, 1e-12, name)
        assert_lazy_gram(f(L64, progress=True, **kwargs), ref, 1e-12, name)
        with pytest.raises(ValueError, match="workers"):
            f(L64, workers=0, **kwargs)
    Hd = da.from_array(HX.astype(np.float32), chunks=10)
    Z = km.exp_chi2_kernel(Hd, dtype=np.float64, workers=2, progress=True)
    assert_lazy_gram(Z, km.exp_chi2_kernel(HX.astype(np.float32),
                                           dtype=np.float64), 0, "exp_chi2")
    with pytest.raises(TypeError, match="progress"):
        km.exp_chi2_kernel(Hd, progress="yes")


def test_gram_blocks_fit_the_working_memory_budget():
    X = histograms(600, D, 11)
    Xd = da.from_array(X, chunks=-1)  # one block of 600 rows
    assert km.additive_chi2_kernel(Xd).numblocks == (1, 1)
    with km.config_context(working_memory=1):  # 1 MiB: 600 x 600 too large
        Z = km.additive_chi2_kernel(Xd)
    # blocks of at most a few hundred kB each, of about equal sizes
    assert Z.numblocks[0] > 1
    assert max(Z.chunks[0]) ** 2 * 8 < 2**20 / 2
    assert max(Z.chunks[0]) - min(Z.chunks[0]) <= 1
    # the sizes were fixed when the graph was built
    assert_array_equal(Z.compute(), km.additive_chi2_kernel(X))
    with km.config_context(working_memory=1):
        L = km.sum_match_kernel(gram_bags(chunks=-1), gamma=0.5)
    assert L.numblocks == (1, 1)  # small: not split
    too_small = km.config_context(working_memory=2**-12)  # 256 bytes
    with too_small, pytest.raises(ValueError, match=r"X\[0\] has 9 points.*"
                                                    r"working-memory budget"):
        km.sum_match_kernel(gram_bags(), gamma=0.5)


def test_gram_values_checked_in_the_tasks():
    points = GRAM_POINTS.copy()
    points[GRAM_OFFSETS[17] + 1, 2] = np.nan
    bad = km.Bags(da.from_array(points, chunks=29), GRAM_OFFSETS)
    message = r"X\[17\] contains NaN or infinity"
    with pytest.raises(ValueError, match=message):  # the in-memory error
        km.sum_match_kernel(km.Bags(points, GRAM_OFFSETS), gamma=0.5)
    for f, kwargs in [(km.sum_match_kernel, {"gamma": 0.5}),
                      (km.mmd, {"gamma": 0.5}),
                      (km.renyi_divergence, {"k": 3})]:
        Z = f(bad, **kwargs)  # built: the values are checked in the tasks
        with pytest.raises(ValueError, match=message):
            Z.compute()
        with pytest.raises(ValueError, match=message.replace("X", "Y")):
            f(gram_bags(), bad, **kwargs).compute()
    # gamma=None computes the sample (here every point) first: raises then
    with pytest.raises(ValueError, match=message):
        km.sum_match_kernel(bad)
    H = HX.copy()
    H[30, 2] = -0.1
    with pytest.raises(ValueError, match="X contains negative values"):
        km.intersection_kernel(da.from_array(H, chunks=10)).compute()
    H[30, 2] = np.inf
    with pytest.raises(ValueError, match="Y contains NaN or infinity"):
        km.js_kernel(HX, da.from_array(H, chunks=10)).compute()


def test_gram_bad_lazy_input():
    counter = Counter()
    lazy = km.Bags(counter.array(GRAM_POINTS, [50, N_GRAM - 50]), GRAM_OFFSETS)
    strings = da.from_array(np.full((4, 3, 2), "a"), chunks=2)
    with pytest.raises(TypeError, match="X must hold real numbers"):
        km.sum_match_kernel(strings)
    with pytest.raises(TypeError, match="Y must hold real numbers"):
        km.mmd(lazy, strings)
    with pytest.raises(ValueError, match=r"X must be a sequence of 2-D arrays.*3-D"):
        km.sum_match_kernel(da.zeros((4, 3), chunks=2))
    other = km.Bags(da.zeros((6, 2), chunks=3), [0, 3, 6])
    with pytest.raises(ValueError, match="Incompatible dimension for X and Y"):
        km.sum_match_kernel(lazy, other, gamma=1.0)
    with pytest.raises(ValueError, match="Incompatible dimension for X and Y"):
        km.renyi_divergence(gram_bags(chunks=None), other, k=1)
    sizes = GRAM_SIZES.copy()
    sizes[2] = 0
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    empty = km.Bags(counter.array(GRAM_POINTS[: offsets[-1]], [offsets[-1]]),
                    offsets)
    with pytest.raises(ValueError, match=r"X\[2\] is empty"):
        km.mmd(empty, gamma=1.0)
    first_small = int(np.flatnonzero(GRAM_SIZES <= 4)[0])
    with pytest.raises(ValueError, match=rf"X\[{first_small}\] has 4 point"):
        km.renyi_divergence(lazy, k=4)
    with pytest.raises(ValueError, match=rf"Y\[{first_small}\] has 4 point"):
        km.renyi_divergence(da.zeros((3, 8, 3), chunks=2), lazy, k=5)
    for kwargs, error in [({"gamma": -1.0}, "gamma"), ({"kernel": "x"}, "kernel"),
                          ({"degree": 0, "kernel": "polynomial"}, "degree")]:
        with pytest.raises(ValueError, match=error):
            km.sum_match_kernel(lazy, **kwargs)
    with pytest.raises(ValueError, match="unbiased"):
        km.mmd(lazy, unbiased=True)
    with pytest.raises(ValueError, match="alpha"):
        km.renyi_divergence(lazy, alpha=1.0)
    assert counter.calls == 0
    # histograms
    with pytest.raises(ValueError, match="X must be a 2-D array"):
        km.additive_chi2_kernel(da.zeros((4, 3, 2), chunks=2))
    with pytest.raises(TypeError, match="X must hold real numbers"):
        km.hellinger_kernel(da.from_array(np.full((4, 3), "a"), chunks=2))
    with pytest.raises(TypeError, match="Y must hold real numbers"):
        km.js_kernel(HX, da.from_array(np.full((4, D), 1 + 1j), chunks=2))
    with pytest.raises(ValueError, match="Incompatible dimension for X and Y"):
        km.chi2_distance(da.from_array(HX, chunks=10), HY[:, :3])
    with pytest.raises(ValueError, match="X is empty"):
        km.intersection_kernel(da.zeros((0, 3), chunks=2))
    rows = da.from_array(HX, chunks=10)
    with pytest.raises(ValueError, match="X is a Dask array of unknown chunk"):
        km.intersection_kernel(rows[rows[:, 0] >= 0])
    with pytest.raises(ValueError, match="beta"):
        km.exp_chi2_kernel(da.from_array(HX, chunks=10), beta=0.0)
    import scipy.sparse

    with pytest.raises(TypeError, match=r"Y is a scipy\.sparse matrix"):
        km.additive_chi2_kernel(da.from_array(HX, chunks=10),
                                scipy.sparse.csr_matrix(HY))


# ---------------------------------------------------------------- 8. import


def test_import_does_not_import_dask():
    code = (
        "import sys\n"
        "import numpy as np\n"
        "import kernelmaps\n"
        "assert 'dask' not in sys.modules\n"
        "X = np.full((3, 4), 0.25)\n"
        "kernelmaps.HomogeneousKernelMap('chi2').transform(X)\n"
        "kernelmaps.RandomDistributionFeatures(8, rng=0).fit([X]).transform([X])\n"
        "kernelmaps.rf_pca(X, None, 2)\n"
        "assert 'dask' not in sys.modules, sorted(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-P", "-c", code], check=True, timeout=300)


# ---------------------------------------------------------------- 5. cluster


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1,
        dashboard_address=None)
    client = distributed.Client(cluster, set_as_default=False)
    try:
        with dask.config.set(scheduler=client):
            yield client
    finally:
        client.close()
        cluster.close()


def _on_workers(client):
    """Whether computations now run on the workers of `client`."""
    pids = set(client.run(os.getpid).values())
    return dask.delayed(os.getpid)().compute() in pids


@PORT_IN_USE
@UNCLOSED_SOCKET
@SLOW_SCRATCH
def test_cluster_transform(client):
    assert _on_workers(client)
    X = histograms(200, D, 7)
    fmap = km.ExpChi2Features(32, rng=0).fit(X)
    Z = fmap.transform(da.from_array(X, chunks=(50, 3)))
    assert isinstance(Z, da.Array)
    assert_close(Z.compute(), fmap.transform(X), 1e-12)
    rdf = km.RandomDistributionFeatures(32, gamma=0.5, rng=0).fit(train)
    lazy = km.Bags(da.from_array(POINTS, chunks=40), SET_OFFSETS)
    F = rdf.transform(lazy)
    assert F.chunks[0] == expected_set_chunks(SET_OFFSETS, (40, 40, 40,
                                                            N_POINTS - 120))
    assert_close(F.compute(), rdf.transform(km.Bags(POINTS, SET_OFFSETS)),
                 1e-13)


@PORT_IN_USE
@UNCLOSED_SOCKET
@SLOW_SCRATCH
def test_cluster_rf_pca(client):
    X, _ = _regression_data()
    fmap = km.ExpChi2Features(32, rng=0).fit(X)
    ref = km.rf_pca(X, fmap, 5)
    got = km.rf_pca(da.from_array(X, chunks=60), fmap, 5)
    _assert_pca_equal(got, ref)


@PORT_IN_USE
@UNCLOSED_SOCKET
@SLOW_SCRATCH
def test_cluster_rf_ridge(client):
    X, y = _regression_data()
    fmaps = [km.ExpChi2Features(32, rng=0).fit(X), km.Chi2DirectMap().fit(X)]
    ref = km.rf_ridge([X[:120], X[120:]], [y[:120], y[120:]], fmaps, [8, 6],
                      alpha=1e-3)
    Xd = da.from_array(X, chunks=60)
    got = km.rf_ridge(Xd, da.from_array(y, chunks=(90, 1)), fmaps, [8, 6],
                      alpha=1e-3)
    assert_close(got.coef_, ref.coef_, 1e-9)
    assert_close(got.intercept_, ref.intercept_, 1e-9)
    pred = got.predict(Xd)
    assert isinstance(pred, da.Array)
    assert_close(pred.compute(), ref.predict(X), 1e-9)


@PORT_IN_USE
@UNCLOSED_SOCKET
@SLOW_SCRATCH
def test_cluster_gram(client):
    # the block functions and the checked blocks travel between processes
    assert _on_workers(client)
    Xd, Yd = gram_bags(chunks=29), gram_bags(chunks=13, y=True)
    X, Y = gram_bags(chunks=None), gram_bags(chunks=None, y=True)
    for f, kwargs in [(km.sum_match_kernel, {}), (km.mmd, {"gamma": 0.5}),
                      (km.renyi_divergence, {"k": 3})]:
        assert_close(f(Xd, **kwargs).compute(), f(X, **kwargs), 1e-12,
                     f.__name__)
        assert_close(f(Xd, Yd, **kwargs).compute(), f(X, Y, **kwargs), 1e-12,
                     f.__name__)
    Hd = da.from_array(HX, chunks=10)
    assert_array_equal(km.additive_chi2_kernel(Hd).compute(),
                       km.additive_chi2_kernel(HX))
    # a value error in a task reaches the caller
    points = GRAM_POINTS.copy()
    points[0, 0] = np.inf
    bad = km.Bags(da.from_array(points, chunks=29), GRAM_OFFSETS)
    with pytest.raises(ValueError, match=r"X\[0\] contains NaN or infinity"):
        km.sum_match_kernel(bad, gamma=0.5).compute()


# ---------------------------------------------------------------- 9. mmd_test
# on Dask input: the block passes as Dask tasks (one per pair of ranges and
# batch of resamples). The same rng gives the p-value of NumPy input, and
# the statistics of the NumPy block path bit for bit, run with the same
# plan: ranges of at most 7 objects, forced as the on_blocks fixture of
# test_two_sample.py forces them.


@pytest.fixture
def numpy_blocks(monkeypatch):
    """Ranges of at most 7 objects for every block pass, Dask's threaded
    scheduler (the cluster fixture sets its client for the rest of the
    module); returns mmd_test forced onto the NumPy block path (threads,
    `run_blocks`)."""
    monkeypatch.setattr(resampling, "MIN_BLOCK", 7)
    monkeypatch.setattr(resampling, "RESAMPLE_TASK_WORK", 1.0)

    def call(*args, **kwargs):
        with monkeypatch.context() as m:
            m.setattr(resampling, "_in_memory_bytes", lambda *a: np.inf)
            return km.mmd_test(*args, **kwargs)

    with dask.config.set(scheduler="threads"):
        yield call


def _lazy_sets(sets, chunk):
    """A Bags of the sets, its points a Dask array of `chunk` rows a chunk
    (chunks cutting sets)."""
    bags = km.Bags.from_list(sets)
    return km.Bags(da.from_array(np.array(bags.points), chunks=(chunk, 1)),
                   bags.offsets)


def _sets(rng, count, scale=1.0):
    return [scale * rng.normal(size=(rng.integers(6, 12), 2))
            for _ in range(count)]


def assert_same_test(got, ref):
    """The same test: p-value, statistics and scales bit for bit."""
    assert got.pvalue == ref.pvalue
    for name in ("statistic", "null_distribution", "pvalues", "thresholds"):
        assert_array_equal(getattr(got, name), getattr(ref, name), err_msg=name)
    assert_array_equal(np.asarray(got.gamma, dtype=float),
                       np.asarray(ref.gamma, dtype=float))
    assert_array_equal(got.kernel, ref.kernel)


def _check_lazy_test(numpy_blocks, X, Y, Xd, Yd, **kwargs):
    got = km.mmd_test(Xd, Yd, **kwargs)
    assert_same_test(got, numpy_blocks(X, Y, **kwargs))
    assert got.pvalue == km.mmd_test(X, Y, **kwargs).pvalue  # in memory
    return got


@pytest.mark.parametrize("method, n, m", [
    ("permutation", 23, 17), ("wild_bootstrap", 13, 13),
    ("aggregated", 13, 13), ("aggregated", 13, 20), ("aggregated", 20, 13),
    ("fuse", 16, 19)])
def test_mmd_test_dask_points(numpy_blocks, method, n, m):
    rng = np.random.default_rng(n * m)
    X, Y = rng.normal(size=(n, 3)), 1.3 * rng.normal(size=(m, 3))
    B = (130, 300) if method == "aggregated" else 300
    _check_lazy_test(numpy_blocks, X, Y, da.from_array(X, chunks=(5, 2)),
                     da.from_array(Y, chunks=(8, 3)), method=method,
                     n_resamples=B, rng=3)


@pytest.mark.parametrize("kernel, method, n, m", [
    ("chi2", "permutation", 13, 10), ("js", "wild_bootstrap", 12, 12),
    ("exp_chi2", "aggregated", 11, 15), ("exp_chi2", "fuse", 13, 10)])
def test_mmd_test_dask_histograms(numpy_blocks, kernel, method, n, m):
    X, Y = histograms(n, 5, 1), histograms(m, 5, 2)
    grid = method in ("aggregated", "fuse")
    _check_lazy_test(numpy_blocks, X, Y, da.from_array(X, chunks=(4, 2)),
                     da.from_array(Y, chunks=6), method=method,
                     kernel=[kernel] if grid else kernel, n_resamples=260,
                     rng=5)


@pytest.mark.parametrize("kernel, method, n, m", [
    ("mean_map", "permutation", 11, 9), ("mmd", "wild_bootstrap", 10, 10),
    ("mean_map", "aggregated", 9, 12), ("renyi", "aggregated", 10, 8),
    ("mmd", "fuse", 11, 9)])
def test_mmd_test_dask_sets(numpy_blocks, kernel, method, n, m):
    rng = np.random.default_rng(7)
    A, B = _sets(rng, n), _sets(rng, m, 1.3)
    grid = method in ("aggregated", "fuse")
    _check_lazy_test(numpy_blocks, A, B, _lazy_sets(A, 13), _lazy_sets(B, 9),
                     method=method, kernel=[kernel] if grid else kernel,
                     kernel_params={"k": 3} if kernel == "renyi" else None,
                     n_resamples=260, rng=6)


def test_mmd_test_dask_mixed_and_float32_input(numpy_blocks):
    rng = np.random.default_rng(8)
    X = rng.normal(size=(15, 2)).astype(np.float32)
    Y = rng.normal(size=(12, 2)) + 0.5
    _check_lazy_test(numpy_blocks, X, Y, X, da.from_array(Y, chunks=5),
                     n_resamples=99, rng=1)
    _check_lazy_test(numpy_blocks, X, Y, da.from_array(X, chunks=4), Y,
                     method="aggregated", n_resamples=99, rng=1)
    A, B = _sets(rng, 9), _sets(rng, 7, 1.5)
    _check_lazy_test(numpy_blocks, A, B, A, _lazy_sets(B, 20), n_resamples=99,
                     rng=1)


def _result_shapes(call):
    """The result of `call()` and the shapes of the arrays every Dask task
    it ran gave (local scheduler)."""
    from dask.callbacks import Callback

    shapes = []

    def posttask(key, result, dsk, state, worker_id):
        shapes.append(getattr(result, "shape", None))

    with Callback(posttask=posttask):
        return call(), shapes


@pytest.mark.parametrize("kind", ["points", "histograms", "sets"])
def test_mmd_test_dask_default_scales_from_samples(numpy_blocks, monkeypatch,
                                                   kind):
    """The default scales from a value sample of the pooled objects (here
    of 10; 1000 in use) computed from the projections of all of them, then
    the sampled ones only: never a whole sample in one piece, the same
    scales as input in memory."""
    monkeypatch.setattr(fam, "BANDWIDTH_SAMPLE", 10)
    rng = np.random.default_rng(9)
    if kind == "sets":
        X, Y = _sets(rng, 30), _sets(rng, 26, 1.2)
        Xd, Yd = _lazy_sets(X, 31), _lazy_sets(Y, 40)
        kwargs = {"kernel": ["mmd"]}  # point sample and set sample
        rows, width = sum(len(x) for x in X + Y), 2
    else:
        X, Y = ((rng.normal(size=(40, 3)), rng.normal(size=(33, 3)) + 0.3)
                if kind == "points" else (histograms(40, 3, 3),
                                          histograms(33, 3, 4)))
        Xd, Yd = da.from_array(X, chunks=9), da.from_array(Y, chunks=8)
        kwargs = {"kernel": ["exp_chi2"]} if kind == "histograms" else {}
        rows, width = 73, 3
    got, shapes = _result_shapes(lambda: km.mmd_test(
        Xd, Yd, method="fuse", n_resamples=99, rng=2, **kwargs))
    assert_same_test(got, numpy_blocks(X, Y, method="fuse", n_resamples=99,
                                       rng=2, **kwargs))
    largest = max(s[0] for s in shapes
                  if s is not None and len(s) == 2 and s[1] == width)
    assert largest < rows // 3


def _pass_graphs(monkeypatch):
    """The graphs the block passes ran (threaded scheduler), recorded; the
    in-memory path refused."""
    from dask.callbacks import Callback

    graphs = []

    def refused(*args):
        raise AssertionError("lazy input on the in-memory path")

    monkeypatch.setattr(resampling, "in_memory", refused)
    layouts = []
    run = resampling.run_blocks_dask

    def spy(spec, Z, scales, layout, draws, bar):
        layouts.append((layout, len(draws)))
        with Callback(start=lambda dsk: graphs.append(list(dsk))):
            return run(spec, Z, scales, layout, draws, bar)

    monkeypatch.setattr(resampling, "run_blocks_dask", spy)
    return graphs, layouts


def _count(keys, part):
    prefix = f"mmd_test-{part}-"
    return sum(1 for k in keys if key_name(k).startswith(prefix)
               and key_name(k)[len(prefix):].isalnum())


@pytest.mark.parametrize("method, n, m", [
    ("permutation", 30, 26), ("wild_bootstrap", 20, 20),
    ("aggregated", 17, 25)])
def test_mmd_test_dask_graph_one_task_per_block_pair_and_batch(
        numpy_blocks, monkeypatch, method, n, m):
    """A budget that holds the draws of one block of 256 resamples only:
    several batches, each pass a graph of one block task per pair of ranges
    (and unpaired ranges) of the layout, one draw task per block of 256
    resamples, a getitem task per block and range of draws, and one task
    reading each range of objects."""
    rng = np.random.default_rng(10)
    X, Y = rng.normal(size=(n, 2)), rng.normal(size=(m, 2)) + 0.2
    kwargs = {"method": method, "n_resamples": 700, "rng": 8, "workers": 2,
              "kernel": ["rbf"] if method == "aggregated" else "rbf"}
    monkeypatch.setattr(draws, "CAST_ROWS", 8)
    monkeypatch.setattr(draws, "RESAMPLE_BLOCK", 256)
    # make_plan's memory at ranges of 7 and a batch of 256 resamples, on 2
    # threads: the draws and their casts, the contributions, the tasks
    rows = n + m if method == "permutation" else min(n, m)
    L, blocks = (1, 4) if method == "permutation" else (
        10 if method == "aggregated" else 1, 13)
    need = (rows * 256 + 16 * 8 * 256 + 5 * 8 * L * (256 + rows)
            + 2 * (8 * blocks * 7**2 + 24 * 256 * 7))
    budget = 1.05 * need / 2**20
    ref = numpy_blocks(X, Y, working_memory=budget, **kwargs)
    graphs, layouts = _pass_graphs(monkeypatch)
    got = km.mmd_test(da.from_array(X, chunks=6), da.from_array(Y, chunks=6),
                      working_memory=budget, **kwargs)
    assert_same_test(got, ref)
    # one pass per batch (the aggregated test's 10 scales in one pass)
    total = 1 + 700 * (2 if method == "aggregated" else 1)
    assert len(graphs) == len(layouts) > 1
    assert sum(b for _, b in layouts) == -(-total // 256)
    for keys, (layout, blocks) in zip(graphs, layouts, strict=True):
        assert layout.size == 7 and len(layout.tasks) >= 6
        assert _count(keys, "block") == len(layout.tasks)
        assert _count(keys, "draw") == blocks
        assert _count(keys, "draw-rows") == blocks * len(layout.ranges)
        # one read per range of objects, from the chunks of the samples
        assert _count(keys, "objects") == len(layout.ranges) * (
            1 if layout.mode == "pooled" else 2) + len(layout.unpaired)
        assert _count(keys, "spec") == 1


def test_mmd_test_dask_task_keys_are_block_tasks():
    """The keys the graph reduces for a task (`task_keys`) are those of
    its contributions."""
    from kernelmaps._two_sample import blocks

    rng = np.random.default_rng(11)
    spec = fam.spec_for("rbf")
    for mode, n, N, linear in [("pooled", 9, 20, False), ("pairs", 9, 18, False),
                               ("pairs", 9, 23, True), ("pairs", 14, 23, True)]:
        Z = rng.normal(size=(N, 2))
        layout = blocks.Layout(mode, n, N, 4, linear=linear)
        draws = rng.integers(0, 2, size=(N, 3)).astype(np.int8)
        for task in layout.tasks:
            rows = layout.draw_rows(task)
            di, dj = (None, None) if rows is None else (draws[rows[0]],
                                                        draws[rows[1]])
            out = blocks.block_task(spec, Z, [1.0], layout, task, di, dj, 1)
            keys = [key for key, _ in blocks.task_keys(layout, task)]
            assert [k for k, _ in out] == [("flags",), *keys]


def test_mmd_test_dask_progress_bar(numpy_blocks, monkeypatch):
    """On the threaded scheduler the bar moves at each block task."""
    import contextlib

    updates = []

    class Bar:
        def update(self, k):
            updates.append(k)

    @contextlib.contextmanager
    def progress_bar(progress, total, desc):
        updates.append(("total", total))
        yield Bar()

    monkeypatch.setattr(resampling, "progress_bar", progress_bar)
    rng = np.random.default_rng(12)
    X, Y = rng.normal(size=(20, 2)), rng.normal(size=(15, 2))
    km.mmd_test(da.from_array(X, chunks=7), da.from_array(Y, chunks=7),
                n_resamples=99, rng=0, progress=True)
    (_, total), *steps = updates
    assert total == 15 and steps == [1] * 15 + [0]  # 5 ranges: 15 pairs


@pytest.mark.parametrize("make, error, match", [
    (lambda X, Y: (X, _with(Y, (4, 1), np.nan)), ValueError,
     "^Y contains NaN or infinity$"),
    (lambda X, Y: (_with(X, (9, 0), np.inf), Y), ValueError,
     "^X contains NaN or infinity$"),
    (lambda X, Y: (X, Y[:, :2]), ValueError,
     "X and Y must have the same number of features, got 3 and 2"),
    (lambda X, Y: (X[:, 0], Y), ValueError,
     r"X must be a 2-D array of vectors \(one per row\), got 1 dimension"),
    (lambda X, Y: (X, Y[:1]), ValueError, "Y must hold at least 2 points, got 1"),
    (lambda X, Y: (X, Y.astype(complex)), TypeError, "Y must hold real numbers"),
    (lambda X, Y: (X[X[:, 0] > 0], Y), ValueError,
     r"X is a Dask array of unknown shape.*compute_chunk_sizes"),
])
def test_mmd_test_dask_bad_points(make, error, match):
    rng = np.random.default_rng(13)
    X = da.from_array(rng.normal(size=(20, 3)), chunks=6)
    Y = da.from_array(rng.normal(size=(15, 3)), chunks=6)
    with pytest.raises(error, match=match):
        km.mmd_test(*make(X, Y), n_resamples=19, rng=0)


def _with(A, index, value):
    """A Dask array like `A` with ``A[index] = value``."""
    values = np.array(A.compute())
    values[index] = value
    return da.from_array(values, chunks=A.chunks)


def test_mmd_test_dask_bad_histograms_and_sets():
    H = histograms(20, 4, 14)
    bad = H.copy()
    bad[13, 2] = -0.5
    with pytest.raises(ValueError, match=r"^Y contains negative values; "
                                         r"histograms must be >= 0$"):
        km.mmd_test(da.from_array(H, chunks=6), da.from_array(bad, chunks=6),
                    kernel="chi2", n_resamples=19)
    with pytest.raises(ValueError, match="same number of bins, got 4 and 3"):
        km.mmd_test(da.from_array(H, chunks=6), da.from_array(H[:, :3], chunks=6),
                    kernel="chi2", n_resamples=19)
    rng = np.random.default_rng(15)
    A = _sets(rng, 8)
    A[5] = A[5].copy()
    A[5][2, 1] = np.nan
    for X, Y, name in ((A, A[:4], "X"), (A[:4], A, "Y")):
        with pytest.raises(ValueError, match=rf"^{name}\[5\] contains NaN or "
                                             rf"infinity$"):
            km.mmd_test(_lazy_sets(X, 7), _lazy_sets(Y, 7), n_resamples=19)
    big, small = rng.normal(size=(12, 2)), rng.normal(size=(7, 2))
    with pytest.raises(ValueError, match=r"^Y\[1\] has 7 point\(s\); the kNN"):
        km.mmd_test(_lazy_sets([big, big], 7), _lazy_sets([big, small], 7),
                    kernel="renyi", kernel_params={"k": 7}, n_resamples=19)


def test_mmd_test_dask_shape_errors_compute_nothing():
    counter = Counter()
    X = counter.array(np.ones((10, 3)), (4, 6))
    Y = counter.array(np.ones((8, 2)), (8,))
    with pytest.raises(ValueError, match="same number of features"):
        km.mmd_test(X, Y)
    lazy = km.Bags(counter.array(np.ones((10, 2)), (3, 7)), [0, 5, 5, 10])
    with pytest.raises(ValueError, match=r"X\[1\] is empty"):
        km.mmd_test(lazy, lazy)
    assert counter.calls == 0


@PORT_IN_USE
@UNCLOSED_SOCKET
@SLOW_SCRATCH
def test_cluster_mmd_test(client, numpy_blocks):
    """On a LocalCluster of 2 workers of 1 thread each: the tasks run on
    the workers, the same statistics, a bad value said from a worker."""
    rng = np.random.default_rng(16)
    X, Y = rng.normal(size=(17, 2)), rng.normal(size=(24, 2)) + 0.3
    A, B = _sets(rng, 9), _sets(rng, 11, 1.2)
    bad = _with(da.from_array(Y, chunks=7), (3, 0), np.nan)
    with dask.config.set(scheduler=client):
        assert _on_workers(client)
        _check_lazy_test(numpy_blocks, X, Y, da.from_array(X, chunks=5),
                         da.from_array(Y, chunks=7), method="aggregated",
                         n_resamples=(99, 120), rng=4)
        _check_lazy_test(numpy_blocks, A, B, _lazy_sets(A, 13),
                         _lazy_sets(B, 9), kernel="mean_map", n_resamples=99,
                         rng=4)
        with pytest.raises(ValueError, match=r"^Y contains NaN or infinity$"):
            km.mmd_test(da.from_array(X, chunks=5), bad, n_resamples=19,
                        gamma=1.0)


def test_item_blocks_read_their_items_from_any_chunks():
    """`ItemBlocks` (the blocks of the lazy Gram and of the tests' Dask
    passes): each block is its items, read from every row chunk it spans
    (empty chunks, chunks cut by blocks and blocks across chunks), as an
    ndarray or a Bags of its sets; checked in its task, naming the set."""
    import dask

    from kernelmaps._lazy import ItemBlocks

    rng = np.random.default_rng(21)
    P = rng.normal(size=(40, 3))
    points = da.from_array(P, chunks=((7, 0, 13, 20), 3))
    bounds = [0, 5, 7, 21, 22, 40]
    got = dask.compute(*ItemBlocks(points, None, bounds=bounds).delayed("t", "a"))
    for block, (a, b) in zip(got, itertools.pairwise(bounds), strict=True):
        assert_array_equal(block, P[a:b])
        assert block.flags.c_contiguous
    offsets = np.array([0, 3, 9, 10, 18, 30, 40])
    sets = km.Bags(points, offsets)
    got = dask.compute(*ItemBlocks(sets, None, bounds=[0, 2, 3, 6]).delayed(
        "t", "b"))
    for block, (a, b) in zip(got, [(0, 2), (2, 3), (3, 6)], strict=True):
        assert_array_equal(block.points, P[offsets[a]:offsets[b]])
        assert_array_equal(block.offsets, offsets[a:b + 1] - offsets[a])
    bad = P.copy()
    bad[20, 1] = np.nan  # in set 4 (points 18 to 30)
    sets = km.Bags(da.from_array(bad, chunks=((7, 0, 13, 20), 3)), offsets)
    blocks = ItemBlocks(sets, "X", bounds=[0, 3, 6]).delayed("t", "c")
    with pytest.raises(ValueError, match=r"^X\[4\] contains NaN or infinity$"):
        dask.compute(*blocks)
