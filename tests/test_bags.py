import pickle

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import kernelmaps as km
from kernelmaps import Bags

from ._helpers import sets


def test_from_list_packs_points_and_offsets():
    sets = [np.arange(6.0).reshape(3, 2), np.array([[10.0, 11.0]])]
    bags = Bags.from_list(sets)
    assert len(bags) == 2
    assert bags.dim == 2
    assert bags.n_points == 4
    assert bags.dtype == np.float64
    assert_array_equal(bags.sizes, [3, 1])
    assert_array_equal(bags.offsets, [0, 3, 4])
    assert_array_equal(bags[0], sets[0])
    assert_array_equal(bags[-1], sets[1])
    assert_array_equal(np.vstack(list(bags)), bags.points)


def test_items_are_read_only_views():
    bags = Bags(np.arange(8.0).reshape(4, 2), [0, 1, 4])
    view = bags[1]
    assert np.shares_memory(view, bags.points)
    assert not view.flags.writeable
    assert not bags.offsets.flags.writeable


def test_dtypes():
    assert Bags.from_list([np.ones((2, 3), np.float32)]).dtype == np.float32
    mixed = [np.ones((2, 3), np.float32), np.ones((1, 3))]
    assert Bags.from_list(mixed).dtype == np.float64
    assert Bags.from_list([np.ones((2, 3), np.int32)]).dtype == np.float64
    assert Bags.from_list([[[1, 2]], [[3, 4]]]).dtype == np.float64


def test_three_dimensional_array_is_equal_sized_sets():
    arr = np.arange(24.0).reshape(2, 4, 3)
    bags = Bags.from_list(arr)
    assert_array_equal(bags.sizes, [4, 4])
    assert_array_equal(bags[1], arr[1])


def test_slices_give_bags_of_views():
    bags = Bags.from_list([np.full((i + 1, 2), i, dtype=float) for i in range(5)])
    sub = bags[1:3]
    assert isinstance(sub, Bags)
    assert_array_equal(sub.sizes, [2, 3])
    assert_array_equal(sub[1], bags[2])
    assert np.shares_memory(sub.points, bags.points)
    assert len(bags[3:1]) == 0
    # other steps: a Bags of copies of those sets
    for step in (slice(None, None, 2), slice(None, None, -1), slice(4, 0, -3)):
        sub = bags[step]
        want = list(range(5))[step]
        assert_array_equal(sub.sizes, [i + 1 for i in want])
        assert_array_equal(sub.points, np.concatenate([bags[i] for i in want]))


def test_from_list_of_bags_is_identity_and_repr():
    bags = Bags.from_list([np.ones((2, 3))])
    assert Bags.from_list(bags) is bags
    assert repr(bags) == "Bags(n_sets=1, dim=3, n_points=2, dtype=float64)"


def test_pickle_round_trip():
    bags = Bags.from_list([np.ones((2, 3)), np.zeros((1, 3))])
    back = pickle.loads(pickle.dumps(bags))
    assert_array_equal(back.points, bags.points)
    assert_array_equal(back.offsets, bags.offsets)


def test_non_contiguous_points_are_copied_contiguous():
    pts = np.asfortranarray(np.arange(12.0).reshape(6, 2))
    bags = Bags(pts, [0, 6])
    assert bags.points.flags.c_contiguous
    assert_array_equal(bags.points, pts)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8])
def test_bags_offsets_are_copied(dtype):
    points = np.arange(12.0).reshape(6, 2)
    offsets = np.array([0, 2, 6], dtype=dtype)
    bags = km.Bags(points, offsets)
    offsets[1] = 5  # the caller edits its array: the Bags keeps its sets
    assert_array_equal(bags.offsets, [0, 2, 6])
    assert not np.shares_memory(bags.offsets, offsets)
    assert not bags.offsets.flags.writeable
    assert offsets.flags.writeable  # the caller's array is not frozen
    assert_array_equal(bags.sizes, [2, 4])


def test_bags_points_are_a_documented_read_only_view():
    # Notes of the Bags docstring: C-contiguous float points are not copied;
    # the caller's array stays writeable and the Bags sees its changes.
    points = np.arange(12.0).reshape(6, 2)
    bags = km.Bags(points, [0, 2, 6])
    assert np.shares_memory(bags.points, points)
    assert points.flags.writeable and not bags.points.flags.writeable
    points[0, 0] = -1.0
    assert bags[0][0, 0] == -1.0
    assert "copy the points first" in km.Bags.__doc__


def test_empty_sets_are_allowed_in_the_container():
    bags = Bags(np.ones((2, 1)), [0, 0, 2])
    assert_array_equal(bags.sizes, [0, 2])
    assert bags[0].shape == (0, 1)


@pytest.mark.parametrize(
    ("points", "offsets", "error", "match"),
    [
        (np.ones(3), [0, 3], ValueError, "points must be 2-D"),
        (np.ones((3, 2)), [0, 2], ValueError, "end at the number of points"),
        (np.ones((3, 2)), [1, 3], ValueError, "start at 0"),
        (np.ones((3, 2)), [0, 2, 1, 3], ValueError, "non-decreasing"),
        (np.ones((3, 2)), [[0, 3]], ValueError, "offsets must be 1-D"),
        (np.ones((3, 2)), [0.0, 3.0], TypeError, "offsets must be integers"),
        (np.array([["a", "b"]]), [0, 1], TypeError, "points must hold real"),
        (np.ones((3, 2), complex), [0, 3], TypeError, "points must hold real"),
    ],
)
def test_bad_structure(points, offsets, error, match):
    with pytest.raises(error, match=match):
        Bags(points, offsets)


@pytest.mark.parametrize(
    ("sets", "error", "match"),
    [
        ([], ValueError, "at least one set"),
        ([np.ones((2, 2)), np.ones((2, 3))], ValueError, "same number of features"),
        ([np.ones(3)], ValueError, r"sets\[0\] must be a 2-D array.*wrap it"),
        ([np.ones((2, 2, 2))], ValueError, r"sets\[0\] must be a 2-D array"),
        (np.ones((4, 2)), ValueError, "wrap it in a list"),
        (5, TypeError, "sequence of 2-D arrays"),
        ("abc", TypeError, "sequence of 2-D arrays"),
    ],
)
def test_bad_lists(sets, error, match):
    with pytest.raises(error, match=match):
        Bags.from_list(sets)


@pytest.mark.parametrize("index", [1.0, "a", None, True])
def test_bad_index(index):
    bags = Bags.from_list([np.ones((2, 2)), np.ones((1, 2))])
    with pytest.raises(TypeError, match="Bags indices must be integers, slices"):
        bags[index]


def test_bags_index_must_be_an_integer():
    bags = km.Bags.from_list(sets())
    for index in ("0", b"0", 0.0, True, np.array([0.0]), [0.5], [[0]], (0, 1)):
        with pytest.raises(TypeError, match=r"Bags (indices must be integers|takes "
                                            r"one index)"):
            bags[index]
    assert_array_equal(bags[np.int64(1)], bags[1])
    assert_array_equal(bags[np.array(2)], bags[-1])


def test_index_out_of_range():
    bags = Bags.from_list([np.ones((2, 2))])
    with pytest.raises(IndexError, match="out of range"):
        bags[1]
    assert_array_equal(bags[np.int64(0)], bags[0])


def test_weights_are_copied_read_only_and_kept_by_slices_and_pickles():
    w = [np.array([1.0, 3.0]), np.array([0.5, 0.5, 0.5, 0.5])]
    bags = Bags.from_list([np.zeros((2, 3)), np.ones((4, 3))], weights=w)
    w[0][0] = 7.0  # the caller's array changes; the Bags does not
    assert_array_equal(bags.weights, [1.0, 3.0, 0.5, 0.5, 0.5, 0.5])
    assert bags.weights.dtype == np.float64 and not bags.weights.flags.writeable
    assert_array_equal(bags.set_weights(), [4.0, 2.0])
    assert_array_equal(bags[1:].weights, [0.5] * 4)
    assert_array_equal(pickle.loads(pickle.dumps(bags)).weights, bags.weights)
    assert repr(bags).endswith(", weighted)")
    assert bags.with_weights(None).weights is None
    assert np.shares_memory(bags.with_weights(None).points, bags.points)
    assert_array_equal(Bags.from_list([np.zeros((2, 3))]).set_weights(), [2.0])


@pytest.mark.parametrize("weights, error, match", [
    ([[1.0, 3.0]], ValueError, r"one array per set \(2\)"),
    ([[1.0, -3.0], [1.0] * 4], ValueError, "non-negative"),
    ([[1.0, np.nan], [1.0] * 4], ValueError, "NaN"),
    ([[1.0, 3.0], [1.0] * 3], ValueError, r"weights\[1\].*shape \(4,\)"),
    (5, TypeError, "sequence of 1-D arrays"),
    ([["a", "b"], [1.0] * 4], TypeError, "real numbers"),
])
def test_bad_weights(weights, error, match):
    with pytest.raises(error, match=match):
        Bags.from_list([np.zeros((2, 3)), np.ones((4, 3))], weights=weights)
    with pytest.raises(ValueError, match=r"shape \(6,\)"):
        Bags(np.zeros((6, 3)), [0, 2, 6], np.ones(5))


def test_weighted_bags_are_refused_where_weights_are_not_taken():
    from kernelmaps import renyi_divergence

    bags = Bags(np.arange(12.0).reshape(6, 2), [0, 3, 6], np.ones(6))
    with pytest.raises(ValueError, match="X is a Bags with point weights"):
        renyi_divergence(bags)


def test_weighted_lazy_sets_are_refused():
    from kernelmaps._validation import check_sets

    da = pytest.importorskip("dask.array")
    bags = Bags(da.from_array(np.ones((6, 2)), chunks=3), [0, 3, 6], np.ones(6))
    with pytest.raises(TypeError, match="weighted sets need their points in memory"):
        check_sets(bags, lazy=True, weighted=True)


def weighted_sets(n_sets=6, seed=0):
    """Sets of 1 to 5 points in 2-D with random weights (some 0), packed,
    and the arrays they were packed from."""
    rng = np.random.default_rng(seed)
    sets = [rng.normal(size=(rng.integers(1, 6), 2)) for _ in range(n_sets)]
    weights = [rng.uniform(size=len(s)) * (rng.random(len(s)) < 0.8) for s in sets]
    return Bags.from_list(sets, weights=weights), sets, weights


@pytest.mark.parametrize("index", [
    [3, 0, 5], [-1, -6, 2, 2], np.array([4, 1], dtype=np.uint8),
    np.array([[1], [2]])[:, 0], np.array([True, False, True, True, False, True]),
    [False] * 6, [], np.zeros(0, dtype=np.int64), (Ellipsis,), Ellipsis,
    range(1, 5, 2),
], ids=repr)
def test_fancy_indices_give_bags_with_their_weights(index):
    # as NumPy indexes rows: a list or array of integers (any order,
    # negative, repeated), a boolean mask; scikit-learn writes bags[key, ...]
    bags, sets, weights = weighted_sets()
    everything = isinstance(index, tuple) or index is Ellipsis  # bags[...]
    key = np.asarray(index)
    chosen = np.arange(6) if everything else np.arange(6)[
        key if key.dtype == bool else key.astype(int)]
    for key in ([index] if everything else [index, (index, Ellipsis)]):
        sub = bags[key]
        assert isinstance(sub, Bags)
        assert len(sub) == len(chosen) == sub.shape[0]
        assert_array_equal(sub.sizes, [len(sets[i]) for i in chosen])
        for got, i in zip(sub, chosen):
            assert_array_equal(got, sets[i])
        assert_array_equal(sub.weights, np.concatenate(
            [weights[i] for i in chosen] + [np.zeros(0)]))
        # (a copy, where NumPy's fancy indices copy; bags[...] is a view)
        assert np.shares_memory(sub.points, bags.points) == everything


def test_fancy_indices_of_unweighted_and_float32_bags():
    bags = Bags.from_list([np.full((i + 1, 3), i, dtype=np.float32) for i in range(4)])
    sub = bags[[2, 1]]
    assert sub.weights is None and sub.dtype == np.float32
    assert_array_equal(sub.points[:, 0], [2, 2, 2, 1, 1])
    assert_array_equal(bags[[2]][0], bags[2])  # one set: still a Bags


@pytest.mark.parametrize(("index", "error", "match"), [
    ([6], IndexError, "set index 6 out of range for 6 sets"),
    (np.array([-7, 0]), IndexError, "set index -7 out of range"),
    (np.array([2**64 - 1], dtype=np.uint64), IndexError, "out of range"),
    ([True, False], IndexError, "boolean index of 2 entries for 6 sets"),
    (np.zeros(0, dtype=bool), IndexError, "boolean index of 0 entries"),
    (["a"], TypeError, "of integers or booleans, got an array of dtype <U1"),
    (np.array([1.0]), TypeError, "got an array of dtype float64"),
    ((0, 1), TypeError, "takes one index"),
])
def test_bad_fancy_indices(index, error, match):
    bags, _, _ = weighted_sets()
    with pytest.raises(error, match=match):
        bags[index]


def test_large_fancy_index_copies_in_blocks(monkeypatch):
    # (beyond one block of rows: the same values, gathered block by block)
    from kernelmaps._engine import layout

    monkeypatch.setattr(layout, "COPY_BLOCK_BYTES", 64)
    bags, sets, weights = weighted_sets(40, seed=1)
    order = np.random.default_rng(2).permutation(40)[:25]
    sub = bags[order]
    assert_array_equal(sub.points, np.concatenate([sets[i] for i in order]))
    assert_array_equal(sub.weights, np.concatenate([weights[i] for i in order]))


def test_fancy_index_of_lazy_points_stays_lazy():
    da = pytest.importorskip("dask.array")
    points = np.arange(24.0).reshape(12, 2)
    for weights in (None, np.arange(12.0)):
        bags = Bags(da.from_array(points, chunks=5), [0, 3, 4, 9, 12], weights)
        sub = bags[[3, 0]]
        assert isinstance(sub.points, da.Array)
        assert_array_equal(sub.offsets, [0, 3, 6])
        assert_array_equal(sub.points.compute(), points[[9, 10, 11, 0, 1, 2]])
        if weights is not None:  # (the weights kept, in memory)
            assert_array_equal(sub.weights, weights[[9, 10, 11, 0, 1, 2]])


def test_array_likes_index_as_arrays():
    pandas = pytest.importorskip("pandas")
    bags, sets, _ = weighted_sets()
    for key in (pandas.Index([4, 1]), pandas.Series([4, 1], index=[7, 8])):
        sub = bags[key]  # positions, as NumPy takes them
        assert_array_equal(sub.points, np.concatenate([sets[4], sets[1]]))


@pytest.mark.parametrize("index", [
    np.array([4, 0, 2]), [1, 3], np.array([True, False] * 3), slice(1, 4), 2,
])
def test_scikit_learns_safe_indexing_keeps_the_weights(index):
    # what cross-validation, train_test_split and the searches index with
    indexing = pytest.importorskip("sklearn.utils")
    bags, sets, weights = weighted_sets()
    sub = indexing._safe_indexing(bags, index)
    if isinstance(index, int):
        assert_array_equal(sub, sets[index])
        return
    chosen = np.arange(6)[index]
    assert isinstance(sub, Bags)
    assert_array_equal(sub.points, np.concatenate([sets[i] for i in chosen]))
    assert_array_equal(sub.weights, np.concatenate([weights[i] for i in chosen]))
    assert indexing._safe_indexing(bags, None) is bags
    from sklearn.utils.validation import _num_samples, check_consistent_length

    assert _num_samples(bags) == 6
    check_consistent_length(bags, np.zeros(6))


@pytest.mark.parametrize("order", [">", "<"])
def test_float32_in_either_byte_order_stays_float32(order):
    points = np.arange(6.0).reshape(3, 2)
    a = points.astype(f"{order}f4")
    for bags in (Bags.from_list([a, a[:1]]), Bags(a, [0, 3])):
        assert bags.dtype == np.float32 and bags.points.dtype.isnative
        assert_array_equal(bags.points[:3], points)
    wide = Bags.from_list([points.astype(f"{order}f8")])
    assert wide.dtype == np.float64 and wide.points.dtype.isnative
