"""Input checks, one per kind of input. Every public function validates here;
the Cython layer trusts what it is given.

- sets of vectors: `check_sets`, `check_set_pair`
- points (rows of a 2-D array, or pooled from sets): `check_points`
- histograms (dense or sparse rows): `check_histograms`
- kernel and divergence matrices: `check_kernel_matrix`
- scalar parameters: `check_scalar`, `check_choice`, `check_bool`
- random generators: `check_rng`
- sizes and ranges: `check_size`, `check_fourier_range`
- finite (and non-negative) values, naming the set: `check_values`
- computed results that overflowed: `check_finite_output`
- the output dtype of the exact kernels: `check_dtype`, `cast_output`
"""

import math
import numbers
import os

import numpy as np
import scipy.sparse

from ._bags import Bags, pack_sets
from ._engine._gather import gather_plain
from ._engine.layout import COPY_BLOCK_BYTES
from ._probes import (
    all_finite,
    any_negative,
    as_float_array,
    check_not_sparse,
    float_dtype,
    is_dask_array,
)

__all__ = [
    "COVARIANCE_ATOL",
    "COVARIANCE_RTOL",
    "DTYPE_DOC",
    "cast_output",
    "check_array_matrix",
    "check_bool",
    "check_choice",
    "check_dtype",
    "check_finite_output",
    "check_fourier_range",
    "check_gaussian_shapes",
    "check_histograms",
    "check_kernel_matrix",
    "check_matrix_form",
    "check_points",
    "check_rng",
    "check_rows",
    "check_scalar",
    "check_set_pair",
    "check_sets",
    "check_size",
    "check_values",
    "fill_docs",
    "gaussian_error",
    "machine_memory",
    "memory_limit",
    "not_finite_message",
    "pair_names",
]


def check_sets(X, name="X", *, min_size=1, lazy=False, weighted=False):
    """Validate a collection of sets and return it as a `Bags`.

    Accepts a `Bags`, a sequence of 2-D arrays ``(n_i, d)`` with the same
    ``d``, or a 3-D array ``(n_sets, n_points, d)``. float32 stays float32,
    other real dtypes become float64. Raises ValueError (naming `name` and
    the set) for non-finite values, sets with fewer than `min_size` points,
    zero features or no set at all, and TypeError for non-numeric data and
    for lazy (Dask) points, which are never computed here. With `lazy`,
    lazy points (a Bags of Dask points, or a 3-D Dask array) are taken and
    checked without their values (the caller checks those, block by
    block), and stay lazy. A `Bags` with weights is refused (ValueError)
    unless `weighted` is True; then a set whose points all weigh 0 is
    refused as an empty set is.
    """
    plain = gather_plain(X, COPY_BLOCK_BYTES)
    if plain is not None:  # finite arrays, all with points: a fast path
        bags = Bags._trusted(*plain)
        if min_size <= 1:
            return bags
        return check_set_sizes(bags, name, min_size)
    if is_dask_array(X) and X.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got a Dask array of "
                        f"dtype {X.dtype}")
    bags = pack_sets(X, name)
    lazy_points = is_dask_array(bags.points)
    if lazy_points and not lazy:
        raise TypeError(
            f"{name} holds lazy Dask points; this function needs them in "
            f"memory: compute them first (for a Bags, Bags(points.compute(), "
            f"offsets)). The feature maps' transform and the exact kernels "
            f"take lazy sets and stay lazy."
        )
    if len(bags) == 0:
        raise ValueError(f"{name} must contain at least one set")
    if bags.dim == 0:
        raise ValueError(f"{name}: the sets have no feature (d == 0)")
    check_set_sizes(bags, name, min_size)
    if bags.weights is not None:
        check_set_weights(bags, name, weighted)
        if lazy_points:
            raise TypeError(
                f"{name} is a Bags of lazy Dask points with weights; weighted "
                f"sets need their points in memory: compute them first "
                f"(Bags(points.compute(), offsets, weights))"
            )
    if not lazy_points:  # (lazy values: checked by the tasks that read them)
        check_values(bags.points, name, offsets=bags.offsets)
    return bags


def check_values(values, name, *, nonnegative=False, offsets=None, start=0,
                 first=0):
    """A ValueError unless the `values` of `name` are finite and, with
    `nonnegative`, not negative. Rows of `values` that are the points of
    sets (`offsets`) name the set that holds the first bad point: the set
    ``first + i`` of the last ``offsets[i]`` at or before it, the rows
    counted from `start` (a block of points checked in its task: `offsets`
    of its own sets, or of all the sets, with `start` its first row)."""
    if not all_finite(values):
        if offsets is None:
            raise ValueError(not_finite_message(name))
        bad = start + np.flatnonzero(~np.isfinite(values).all(axis=1))[0]
        i = first + np.searchsorted(offsets, bad, side="right") - 1
        raise ValueError(f"{name}[{i}] contains NaN or infinity")
    if nonnegative and any_negative(values):
        raise ValueError(f"{name} contains negative values; histograms must be >= 0")


def check_set_sizes(bags, name, min_size):
    """`bags`, or a ValueError naming its first set with fewer than
    `min_size` points."""
    sizes = bags.sizes
    if sizes.min() < min_size:
        i = np.flatnonzero(sizes < min_size)[0]
        what = "is empty" if sizes[i] == 0 else f"has {sizes[i]} point(s)"
        need = "" if min_size == 1 else f"; at least {min_size} are needed here"
        raise ValueError(f"{name}[{i}] {what}{need}")
    return bags


def check_set_weights(bags, name, weighted):
    """A ValueError if the weighted `bags` may not be taken, or has a set
    of total weight 0."""
    if not weighted:
        raise ValueError(
            f"{name} is a Bags with point weights, which this function does "
            f"not take; pass the sets without weights (bags.with_weights(None))"
        )
    with np.errstate(over="ignore"):  # (a total beyond float64: inf, not 0)
        zero = bags.set_weights() == 0
    if zero.any():
        raise ValueError(
            f"{name}[{np.flatnonzero(zero)[0]}]: the weights of its points are "
            f"all 0 (a set needs a positive total weight)"
        )


def check_set_pair(X, Y, *, min_size=1, lazy=False, weighted=False):
    """Validate `X` and `Y` (None: `Y` is `X`) as collections of sets of the
    same dimension and dtype; returns ``(X, Y)`` as `Bags` (``Y`` None when
    it was None). Mixed float32/float64 input is computed in float64. With
    `lazy`, lazy points are taken as `check_sets` takes them (and cast
    lazily); weighted sets (in memory) beside lazy ones are refused, as
    the tasks of a lazy result carry no weights."""
    X = check_sets(X, "X", min_size=min_size, lazy=lazy, weighted=weighted)
    if Y is not None:
        Y = check_sets(Y, "Y", min_size=min_size, lazy=lazy, weighted=weighted)
    if lazy:
        for name, B in (("X", X), ("Y", Y)):
            check_unweighted_beside_lazy(B, name)
    if Y is None:
        return X, None
    check_set_widths(X, Y)
    if X.dtype != Y.dtype:
        X = Bags(X.points.astype(np.float64), X.offsets, X.weights)
        Y = Bags(Y.points.astype(np.float64), Y.offsets, Y.weights)
    return X, Y


def check_set_widths(X, Y):
    """A ValueError where the sets X and Y (anything with ``dim``) have
    points of different widths."""
    if X.dim != Y.dim:
        raise ValueError(
            f"Incompatible dimension for X and Y: the sets of X have "
            f"{X.dim} features while those of Y have {Y.dim}"
        )


def check_unweighted_beside_lazy(bags, name):
    """A TypeError naming `name` where the sets `bags` (in memory; None:
    none) are weighted beside lazy Dask sets: the tasks of a lazy result
    rebuild the sets from points and offsets, without weights."""
    if bags is not None and bags.weights is not None:
        raise TypeError(
            f"{name} is a weighted Bags beside lazy Dask sets; weighted "
            f"sets are computed in memory only: compute the Dask points "
            f"first"
        )


def check_points(X, name="X"):
    """Validate points given as the rows of a 2-D array, or pooled from a
    collection of sets (anything `check_sets` takes); returns a finite 2-D
    float32 or float64 array.

    A nested list (or tuple) of numbers that forms a 2-D array, such as
    ``[[0.0, 1.0], [2.0, 3.0]]``, is the rows of that array; a sequence of
    2-D arrays is a collection of sets. Lazy (Dask) arrays are refused
    (TypeError), never computed.
    """
    if is_dask_array(X):
        as_float_array(X, name)  # raises: never computed here
    check_not_sparse(X, name, "dense points")
    arr = None
    if isinstance(X, np.ndarray):
        arr = X
    elif isinstance(X, (list, tuple)) and len(X) > 0 and _is_row(X[0]):
        try:
            arr = np.asarray(X)
        except ValueError:  # ragged
            raise ValueError(
                f"{name} must be a 2-D array of points (rows of equal length) "
                f"or a collection of 2-D sets; got a ragged sequence"
            ) from None
    elif not isinstance(X, (list, tuple, Bags)):
        try:
            arr = np.asarray(X)
        except (TypeError, ValueError):
            arr = None
    if arr is not None and arr.ndim == 2:
        points = as_float_array(arr, name)
        if points.shape[0] == 0:
            raise ValueError(f"{name} is empty (shape {points.shape})")
        if points.shape[1] == 0:
            raise ValueError(f"{name}: the points have no feature (d == 0)")
        check_values(points, name)
        return points
    return check_sets(X, name).points


def _is_row(item):
    """Whether `item`, an element of a sequence, looks like one point (a
    1-D sequence of numbers) rather than a set (2-D)."""
    if isinstance(item, (str, bytes)) or is_dask_array(item):
        return False
    if isinstance(item, np.ndarray):
        return item.ndim == 1
    if isinstance(item, (list, tuple)):
        return len(item) == 0 or not hasattr(item[0], "__len__") or isinstance(
            item[0], (str, bytes))
    return False


def check_scalar(value, name, *, kind="real", low=None, high=None,
                 low_inclusive=True):
    """Validate a scalar parameter and return it as a Python float or int.

    `kind` is "real" or "int"; `low`/`high` bound it (None: unbounded).
    Python and NumPy scalars and 0-d arrays are taken; an int may also be
    given as an integral float (``2.0``). Raises TypeError for the wrong
    type (bools, strings, None, complex numbers, arrays of more than one
    value) and ValueError for NaN, infinity (a Python int too large for a
    float is infinite here) or a value out of bounds, naming `name`.
    """
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]  # a 0-d array: its NumPy scalar
    if kind == "int":
        if type(value) is not int:  # (the common case, first: no ABC checks)
            if isinstance(value, (bool, np.bool_)) or not (
                    isinstance(value, numbers.Integral)
                    or (isinstance(value, numbers.Real) and _is_integral(value))):
                raise TypeError(f"{name} must be an int, got {value!r}")
            value = int(value)
    else:
        if type(value) is float:
            pass  # the common case, first: no ABC checks
        elif isinstance(value, (bool, np.bool_)) or not isinstance(
            value, numbers.Real
        ):
            raise TypeError(f"{name} must be a real number, got {value!r}")
        try:
            value = float(value)
        except OverflowError:  # an int beyond the float range
            value = math.inf if value > 0 else -math.inf
        if not math.isfinite(value):
            raise ValueError(f"{name} must be finite, got {value}")
    if low is not None and (value < low or (value == low and not low_inclusive)):
        op = ">=" if low_inclusive else ">"
        raise ValueError(f"{name} must be {op} {_bound(low)}, got "
                         f"{_short_int(value)}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be <= {high}, got {_short_int(value)}")
    return value


def _is_integral(value):
    """Whether the real number `value` is finite and integral."""
    try:
        return float(value).is_integer()
    except OverflowError:
        return False


def check_choice(value, name, choices):
    """Validate a string option against `choices` (a 0-d array of a string
    is taken as the string)."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if not isinstance(value, str) or value not in choices:
        options = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {options}; got {value!r}")
    return str(value)


def check_bool(value, name):
    """Validate a True/False option (a bool, NumPy bool or 0-d bool
    array)."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_rng(rng, name="rng"):
    """`rng` (None, a non-negative int seed, a `numpy.random.Generator`, or
    anything else `numpy.random.default_rng` takes) as a Generator; a
    TypeError or ValueError naming `name` otherwise (bools are refused).
    A Generator is returned as it is (its state is shared)."""
    refused = TypeError(f"{name} must be None, an int seed or a "
                        f"numpy.random.Generator, got {rng!r}")
    if isinstance(rng, (bool, np.bool_)):
        raise refused
    if isinstance(rng, np.ndarray) and rng.ndim == 0:
        rng = rng[()]
    try:
        return np.random.default_rng(rng)
    except TypeError:
        raise refused from None
    except ValueError as err:
        raise ValueError(f"{name}: {err}") from None


def check_size(copies=1, hint="", **factors):
    """Refuse (ValueError naming the arguments, then the `hint`) sizes whose
    product, the number of float64 entries of an array to allocate (held
    `copies` times at once, with the temporaries of its computation), needs
    more memory than this process may have (NumPy's own MemoryError would
    name nothing). The factors are Python ints of any size (10**400
    included)."""
    total = math.prod(factors.values())
    limit, owner = memory_limit()
    if total * 8 * copies > limit:
        names = " * ".join(factors)
        values = ", ".join(f"{k}={_short_int(v)}" for k, v in factors.items())
        held = "" if copies == 1 else f", {copies} copies at once"
        raise ValueError(
            f"{names} = {_short_int(total)} entries ({values}{held}): "
            f"{_gib(total * 8 * copies)} GiB, more than the "
            f"{limit / 2**30:.3g} GiB of memory of {owner}{hint}"
        )


def _bound(b):
    """A bound for a message, one way whether given as an int or a float:
    0 and 0.0 both as 0."""
    return int(b) if isinstance(b, float) and b.is_integer() and abs(b) < 2**53 \
        else b


def _short_int(n):
    """A number for a message: as it is, or an int of more than 20 digits
    as about 10**k."""
    text = str(n)
    if not isinstance(n, int) or len(text) <= 20:
        return text
    return f"about {'-' if n < 0 else ''}10**{len(text.lstrip('-')) - 1}"


def _gib(nbytes):
    """nbytes in GiB, for a message (any int, also beyond the float range)."""
    try:
        return f"{nbytes / 2**30:.3g}"
    except OverflowError:
        return _short_int(nbytes // 2**30)


def memory_limit():
    """Bytes of memory this process may have, and whose limit it is: the
    machine's memory (2**59 where unknown), or the process's address-space
    limit (``ulimit -v``) where lower."""
    limit = machine_memory()
    soft = -1
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY:
            soft = -1
    except (ImportError, OSError, ValueError):  # (not on Windows)
        pass
    if 0 <= soft < limit:
        return soft, "this process (its address-space limit, ulimit -v)"
    return limit, "this machine"


def machine_memory():
    """Bytes of memory of this machine (2**59 where unknown)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return 2**59


def check_fourier_range(top, weight_norm, dtype, name="X"):
    """Refuse inputs whose largest absolute value `top` could make the
    argument ``x W + b`` of random Fourier features overflow `dtype`
    (`weight_norm`: the largest L1 norm of a column of W): a ValueError
    naming `name`, instead of a cosine of infinity."""
    bound = top * weight_norm + 2 * math.pi
    if not bound <= float(np.finfo(dtype).max) / 2:
        raise ValueError(
            f"{name} has values too large for these random frequencies: x W "
            f"would overflow {np.dtype(dtype).name} (largest |x| {top:.3g}, "
            f"largest column norm of W {weight_norm:.3g}); scale {name} down "
            f"or use a smaller gamma"
        )


def check_finite_output(values, message):
    """`values`, or a ValueError with `message` (which names the inputs and
    what to do) if one of them is not finite: a result that overflowed
    float64. Checked in blocks (`all_finite`): no temporary as large as the
    result, and Ctrl-C stops between blocks."""
    if not all_finite(values):
        raise ValueError(message)
    return values


def check_kernel_matrix(K, name="K", *, square=True, keep_float32=False):
    """Validate a kernel (or divergence) matrix: a non-empty, finite, real
    2-D array, square unless `square` is False; returned as float64 (float32
    kept as it is with `keep_float32`)."""
    if scipy.sparse.issparse(K):
        raise TypeError(f"{name} must be a dense 2-D array of real numbers: sparse "
                        f"kernel matrices are not supported (toarray() first)")
    try:
        arr = np.asarray(K)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a 2-D array of real numbers") from None
    # kind, not np.issubdtype: timedelta64 is a subtype of np.integer
    check_matrix_form(arr.shape, arr.dtype, arr.dtype.kind in "biuf", name,
                      square=square)
    arr = arr.astype(float_dtype(arr.dtype) if keep_float32 else np.float64,
                     copy=False)
    check_values(arr, name)
    return arr


def check_matrix_form(shape, dtype, real, name="K", *, square=True):
    """The checks of `check_kernel_matrix` of a matrix's `dtype` (`real`:
    whether it holds bools, integers or real floats) and `shape`, for an
    array of any library: a TypeError or ValueError naming `name`."""
    shape = tuple(shape)
    if not real:
        raise TypeError(f"{name} must be a 2-D array of real numbers, got dtype "
                        f"{dtype}")
    if len(shape) != 2:
        raise ValueError(f"{name} must be 2-D, got {len(shape)} dimension(s)")
    if math.prod(shape) == 0:
        raise ValueError(f"{name} is empty (shape {shape})")
    if square and shape[0] != shape[1]:
        raise ValueError(f"{name} must be square, got shape {shape}")


def check_array_matrix(library, K, name="K", *, square=True):
    """`check_kernel_matrix` of `K` of another library (`library`, a
    `kernelmaps._libraries.ArrayLibrary`), computed there: the same
    messages, its values checked on its device where they can be read
    (one boolean copied); float32 kept, any other real dtype float64."""
    xp = library.xp
    check_matrix_form(K.shape, K.dtype, xp.isdtype(
        K.dtype, ("bool", "integral", "real floating")), name, square=square)
    if K.dtype not in (xp.float32, xp.float64):
        K = xp.astype(K, xp.float64)
    if not library.all_finite(K):
        raise ValueError(not_finite_message(name))
    return K


def not_finite_message(name):
    """The message of values of `name` that are not all finite."""
    return f"{name} contains NaN or infinity"


def check_histograms(X, name="X", *, lazy=False):
    """Validate histograms given as the rows of a 2-D array or a
    `scipy.sparse` matrix: non-empty, finite, non-negative, real. Returns a
    C-contiguous array, or a CSR matrix in canonical format (sorted indices,
    no duplicates; the input is never modified); float32 stays float32,
    other real dtypes become float64. With `lazy`, a Dask array stays lazy
    (`check_rows`)."""
    return check_rows(X, name, nonnegative=True, lazy=lazy)


def check_rows(X, name="X", *, nonnegative=False, lazy=False, what=None):
    """`check_histograms` for vectors that may be negative (unless
    `nonnegative`). With `lazy`, a Dask array is taken and checked without
    its values (2-D, real, not empty, known chunks; the caller checks the
    values block by block), cast lazily to float64 unless float32. The
    rows are `what` in messages ("features": the features of the
    out-of-core models; None: vectors, or histograms)."""
    what = what or ("histograms" if nonnegative else "vectors")
    if lazy and is_dask_array(X):
        return _check_lazy_rows(X, name, what)
    if scipy.sparse.issparse(X):
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D, got {X.ndim} dimension(s)")
        X = scipy.sparse.csr_matrix(X)  # a new object: the input is kept
        if X.dtype.kind not in "biuf":
            raise TypeError(f"{name} must hold real numbers, got dtype {X.dtype}")
        # e.g. data a strided view: the compiled code needs contiguous
        # arrays (copied only here, when they are not; X is a new object)
        X.data, X.indices, X.indptr = (np.ascontiguousarray(a) for a in (
            X.data, X.indices, X.indptr))
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
        if X.dtype not in (np.float32, np.float64):
            X = X.astype(float_dtype(X.dtype))
        values = X.data
    else:
        X = as_float_array(X, name)
        if X.ndim != 2 and what == "features":
            raise ValueError(f"{name} must be 2-D (rows of features), got "
                             f"shape {X.shape}")
        if X.ndim != 2:
            raise ValueError(
                f"{name} must be a 2-D array of {what} (one per row), got "
                f"{X.ndim} dimension(s){reshape_hint(X, name)}"
            )
        X = np.ascontiguousarray(X)
        values = X
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {X.shape})")
    check_values(values, name, nonnegative=nonnegative)
    return X


def reshape_hint(X, name):
    """For 1-D `X`, how to make it 2-D (as scikit-learn says it)."""
    if X.ndim != 1:
        return ""
    return (f". Reshape your data: {name}.reshape(-1, 1) if it has a single "
            f"feature, {name}.reshape(1, -1) if it is a single sample")


def _check_lazy_rows(X, name, what):
    if X.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got a Dask array of "
                        f"dtype {X.dtype}")
    if X.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array of {what} (one per row), got "
            f"{X.ndim} dimension(s)"
        )
    if any(math.isnan(c) for c in X.chunks[0]):
        raise ValueError(
            f"{name} is a Dask array of unknown chunk sizes; call "
            f"{name}.compute_chunk_sizes() first"
        )
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {X.shape})")
    return X if X.dtype == np.float32 else X.astype(float_dtype(X.dtype))


# The `dtype` argument of the exact kernels, for their Parameters sections
# (the rule of `check_dtype`, worded once).
DTYPE_DOC = """dtype : {None, numpy.float32, numpy.float64}, optional
        Type of the result. None means float32 when every floating input
        is float32 (as in scikit-learn's pairwise kernels), else float64
        (integer and other input counts as float64); float32 or float64
        (a type, name or `numpy.dtype`) forces it. The arithmetic does not
        depend on it (sums in float64): float32 is the float64 result
        rounded once. A value beyond the float32 range raises a ValueError
        (pass ``dtype=np.float64``); values below it may become subnormal
        or 0."""


def check_dtype(dtype, *inputs):
    """The output dtype of an exact kernel from its `dtype` argument and
    its validated floating `inputs` (arrays, CSR matrices or Bags, of
    float32 or float64; None entries are skipped): float32 when `dtype` is
    None and every input is float32, as scikit-learn's
    ``check_pairwise_arrays`` does; else float64. `dtype` may also be
    float32 or float64 given as a type, a name or a `numpy.dtype`; any
    other value is a TypeError or ValueError naming `dtype`."""
    if dtype is None:
        float32 = all(a.dtype == np.float32 for a in inputs if a is not None)
        return np.dtype(np.float32 if float32 else np.float64)
    message = f"dtype must be None, numpy.float32 or numpy.float64, got {dtype!r}"
    if isinstance(dtype, (bool, np.bool_)):
        raise TypeError(message)
    try:
        resolved = np.dtype(dtype)
    except (TypeError, ValueError, SyntaxError):
        raise TypeError(message) from None
    if resolved not in (np.float32, np.float64) or not resolved.isnative:
        raise ValueError(message)
    return np.dtype(resolved.type)


def pair_names(Y):
    """The inputs of a kernel of ``(X, Y)``, for a message."""
    return "X" if Y is None else "X and Y"


def fill_docs(functions, *, indent=0, **fields):
    """Write ``fields[name]`` in place of ``{name}`` in the docstrings of
    `functions` (with `indent` more spaces after each of its newlines, for
    methods); docstrings that ``python -OO`` removed stay None."""
    for f in functions:
        if f.__doc__ is None:
            continue
        doc = f.__doc__
        for name, text in fields.items():
            doc = doc.replace("{" + name + "}",
                              text.replace("\n", "\n" + " " * indent))
        f.__doc__ = doc


# Values cast at a time by `cast_output`: a few hundred kB, in cache.
CAST_BLOCK_VALUES = 1 << 16


def cast_output(values, dtype, names):
    """The finite float64 result `values` as `dtype` (rounded once; the
    array itself for float64), or a ValueError naming `dtype` where a value
    is beyond the float32 range. `names` names the inputs, for the
    message."""
    if dtype == np.float64:
        return values
    values = np.ascontiguousarray(values)
    out = np.empty(values.shape, dtype)
    source, target = values.reshape(-1), out.reshape(-1)
    # Cast and checked a block at a time, while the block is in cache (a
    # quarter of the time of a cast, then a check), and Ctrl-C stops
    # between blocks.
    finite = True
    with np.errstate(over="ignore"):  # reported below
        for start in range(0, source.size, CAST_BLOCK_VALUES):
            block = target[start:start + CAST_BLOCK_VALUES]
            block[...] = source[start:start + CAST_BLOCK_VALUES]
            if not all_finite(block):
                finite = False
                break
    if not finite:
        raise ValueError(float32_range_message(names, float(np.abs(values).max())))
    return out


def float32_range_message(names, top):
    """The message of a float32 result for `names` with values up to `top`,
    beyond the float32 range."""
    return (f"dtype=float32: the result for {names} has values up to "
            f"{top:.3g}, beyond the float32 range "
            f"({float(np.finfo(np.float32).max):.3g}); pass dtype=np.float64")


def check_gaussians(means, covs, mname, cname):
    """Gaussians given by their means (n, d) and covariances ((n, d, d)
    matrices, (n, d) diagonals or (n,) isotropic variances), validated
    (finite, symmetric positive semi-definite covariances, non-negative
    variances): ``(means, covs, given)``, the first two in float64, `given`
    the arrays as given (for `check_dtype`); `mname` and `cname` name them
    in the errors."""
    given = as_float_array(means, mname), as_float_array(covs, cname)
    m = given[0].astype(np.float64, copy=False)
    c = given[1].astype(np.float64, copy=False)
    check_gaussian_shapes(m.shape, c.shape, mname, cname)
    if not (np.isfinite(m).all() and np.isfinite(c).all()):
        raise gaussian_error("finite", mname, cname)
    if c.ndim == 3:
        if not np.allclose(c, c.transpose(0, 2, 1), rtol=COVARIANCE_RTOL,
                           atol=COVARIANCE_ATOL):
            raise gaussian_error("symmetric", mname, cname)
        low = np.linalg.eigvalsh(c)[:, 0]
        scale = np.abs(c).max(axis=(1, 2))
        bad = np.flatnonzero(low < -COVARIANCE_RTOL * np.maximum(scale, 1e-300))
        if bad.size:
            raise gaussian_error("psd", mname, cname, bad[0], low[bad[0]])
    elif (c < 0).any():
        raise gaussian_error("variances", mname, cname)
    return m, c, given


# The tolerances of `check_gaussians`: covariances symmetric to
# ``|S - S^T| <= ATOL + RTOL |S^T|``, and PSD to a smallest eigenvalue of
# ``-RTOL`` times their largest magnitude.
COVARIANCE_RTOL, COVARIANCE_ATOL = 1e-10, 1e-12


def check_gaussian_shapes(mshape, cshape, mname, cname):
    """The shape checks of `check_gaussians` (for arrays of any library):
    means (n, d), not empty, and covariances (n, d, d), (n, d) or (n,)."""
    mshape, cshape = tuple(mshape), tuple(cshape)
    if len(mshape) != 2 or 0 in mshape:
        raise ValueError(f"{mname} must be a non-empty 2-D array (n, d), got shape "
                         f"{mshape}")
    n, d = mshape
    if cshape not in ((n, d, d), (n, d), (n,)):
        raise ValueError(
            f"{cname} must have shape ({n}, {d}, {d}), ({n}, {d}) or ({n},) for "
            f"{mname} of shape {mshape}; got {cshape}"
        )


def gaussian_error(problem, mname, cname, index=None, low=None):
    """The ValueError of `check_gaussians` for its `problem`: "finite",
    "symmetric", "psd" (the covariance `index`, of smallest eigenvalue
    `low`) or "variances"."""
    if problem == "psd":
        return ValueError(f"{cname}[{index}] is not positive semi-definite "
                          f"(smallest eigenvalue {low:.3g})")
    return ValueError({"finite": f"{mname} and {cname} must be finite",
                       "symmetric": f"{cname} must hold symmetric matrices",
                       "variances": f"{cname} must be >= 0 (variances)"}[problem])


def full_covariances(c, d):
    """Covariances of any form of `check_gaussians` as (n, d, d) matrices."""
    if c.ndim == 3:
        return c
    return c.reshape(*c.shape, *(1,) * (3 - c.ndim)) * np.eye(d)
